// Tests of SHA-256, base64, DSSE PAE and Ed25519 keys against known answers and the openssl CLI.
#include "crypto/crypto.hpp"

#include "base/fs.hpp"
#include "prereg/error.hpp"

#include <doctest/doctest.h>
#include <fmt/format.h>
#include <sys/stat.h>

#include <cstdlib>
#include <filesystem>
#include <random>
#include <string>

namespace fs = std::filesystem;
using prereg::exit_code;

namespace {

const fs::path data_dir = fs::path(PREREG_TEST_DATA) / "crypto";

std::string data(const std::string &name) { return prereg::read_file(data_dir / name); }

std::string trimmed(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' '))
    s.pop_back();
  return s;
}

std::string from_hex(std::string_view hex) {
  std::string out;
  for (std::size_t i = 0; i + 1 < hex.size(); i += 2)
    out.push_back(static_cast<char>(std::stoi(std::string(hex.substr(i, 2)), nullptr, 16)));
  return out;
}

/// A fresh folder under the system temp folder, removed with everything in it.
struct temp_dir {
  fs::path path;
  temp_dir() {
    std::string templ = (fs::temp_directory_path() / "prereg-crypto-XXXXXX").string();
    REQUIRE(::mkdtemp(templ.data()) != nullptr);
    path = templ;
  }
  ~temp_dir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

/// Copies a test data file into `dir` with `mode`.
fs::path copy_with_mode(const std::string &name, const fs::path &dir, unsigned mode) {
  const auto to = dir / name;
  fs::copy_file(data_dir / name, to, fs::copy_options::overwrite_existing);
  REQUIRE(::chmod(to.c_str(), mode) == 0);
  return to;
}

/// The exit code of a call expected to throw prereg::error; fails the test if it does not.
template <class F> prereg::error caught(F &&f) {
  try {
    f();
  } catch (const prereg::error &e) {
    return e;
  }
  FAIL("expected prereg::error");
  return prereg::error(exit_code::ok, "unreachable");
}

bool have_openssl_cli() { return std::system("openssl version >/dev/null 2>&1") == 0; }

std::string flip_bit(std::string s, std::size_t byte, int bit) {
  s[byte] = static_cast<char>(s[byte] ^ (1 << bit));
  return s;
}

} // namespace

TEST_CASE("sha256_hex: FIPS 180-2 examples and the CLI") {
  CHECK(prereg::sha256_hex("") ==
        "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  CHECK(prereg::sha256_hex("abc") ==
        "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  CHECK(prereg::sha256_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq") ==
        "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  const std::string million_a(1000000, 'a');
  CHECK(prereg::sha256_hex(million_a) ==
        "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
  CHECK(prereg::sha256_hex(million_a) == trimmed(data("million_a.sha256")));
  SUBCASE("embedded NUL bytes count") {
    CHECK(prereg::sha256_hex(std::string_view("\0", 1)) !=
          prereg::sha256_hex(std::string_view("", 0)));
  }
}

TEST_CASE("base64: RFC 4648 section 10 vectors both ways") {
  const std::pair<const char *, const char *> vectors[] = {
      {"", ""},
      {"f", "Zg=="},
      {"fo", "Zm8="},
      {"foo", "Zm9v"},
      {"foob", "Zm9vYg=="},
      {"fooba", "Zm9vYmE="},
      {"foobar", "Zm9vYmFy"},
  };
  for (const auto &[plain, encoded] : vectors) {
    CAPTURE(plain);
    CHECK(prereg::base64_encode(plain) == encoded);
    CHECK(prereg::base64_decode(encoded) == plain);
  }
  SUBCASE("the CLI's encoding of the test signature") {
    CHECK(prereg::base64_encode(data("message.sig")) == trimmed(data("message.sig.b64")));
    CHECK(prereg::base64_decode(trimmed(data("message.sig.b64"))) == data("message.sig"));
  }
}

TEST_CASE("base64: round trips of every length and byte value") {
  std::mt19937 gen(12345);
  std::uniform_int_distribution<int> byte(0, 255);
  for (std::size_t n = 0; n <= 300; ++n) {
    std::string s(n, '\0');
    for (auto &c : s)
      c = static_cast<char>(byte(gen));
    CAPTURE(n);
    const auto enc = prereg::base64_encode(s);
    CHECK(enc.size() == 4 * ((n + 2) / 3));
    CHECK(prereg::base64_decode(enc) == s);
  }
  SUBCASE("larger than one internal chunk") {
    std::string big(7 * 1024 * 1024 + 4, '\0');
    for (std::size_t i = 0; i < big.size(); ++i)
      big[i] = static_cast<char>((i * 131 + i / 7) & 0xff);
    const auto enc = prereg::base64_encode(big);
    CHECK(enc.find('=') == enc.size() - 1); // only the final padding, no chunk padding
    CHECK(prereg::base64_decode(enc) == big);
  }
}

TEST_CASE("base64_decode rejects malformed text with exit 2") {
  using namespace std::string_view_literals;
  const std::string_view bad[] = {
      "Zg="sv,         // length not a multiple of 4
      "Zm9vY"sv,       // length
      "Zg=a"sv,        // padding before the end
      "Z==="sv,        // too much padding
      "===="sv,        // only padding
      "Zm9v\n"sv,      // whitespace
      " Zm9v"sv,       // leading space
      "Zm9-"sv,        // URL-safe alphabet
      "Zm9_"sv,        // URL-safe alphabet
      "Zh=="sv,        // non-zero unused bits (canonical form is Zg==)
      "Zm9="sv,        // non-zero unused bits (canonical form is Zm8=)
      "Zm9v\xff==="sv, // non-ASCII byte
      "Zm\0v"sv,       // NUL inside
  };
  for (const auto text : bad) {
    CAPTURE(text);
    const auto e = caught([&] { (void)prereg::base64_decode(text); });
    CHECK(e.code() == exit_code::invalid);
    CHECK(std::string(e.what()).find("invalid base64") == 0);
  }
  CHECK_THROWS_WITH(prereg::base64_decode("Zm9v!A=="), "invalid base64: character '!' at offset 4");
}

TEST_CASE("dsse_pae: the DSSE protocol example and edge cases") {
  // protocol.md of secure-systems-lab/dsse, "Test Vectors".
  CHECK(prereg::dsse_pae("http://example.com/HelloWorld", "hello world") ==
        "DSSEv1 29 http://example.com/HelloWorld 11 hello world");
  // An empty body still ends with the space after its length.
  CHECK(prereg::dsse_pae("application/vnd.in-toto+json", "") ==
        "DSSEv1 28 application/vnd.in-toto+json 0 ");
  CHECK(prereg::dsse_pae("", "") == "DSSEv1 0  0 ");
  // LEN counts bytes: "ä" is two bytes of UTF-8.
  CHECK(prereg::dsse_pae("t\xc3\xa4", "x") == "DSSEv1 3 t\xc3\xa4 1 x");
  // Binary bodies pass through unchanged, NUL bytes included.
  const std::string body("a\0b\n", 4);
  CHECK(prereg::dsse_pae("b", body) == std::string("DSSEv1 1 b 4 a\0b\n", 17));
  const std::string long_body(1234, 'z');
  CHECK(prereg::dsse_pae("x", long_body) == "DSSEv1 1 x 1234 " + long_body);
}

TEST_CASE("public_key: the CLI's key, its fingerprint and canonical PEM") {
  const auto key = prereg::public_key::from_pem(data("test.pub"), "test.pub");
  CHECK(key.fingerprint() == trimmed(data("test.fingerprint")));
  CHECK(key.pem() == data("test.pub"));
  const auto other = prereg::public_key::from_pem(data("other.pub"), "other.pub");
  CHECK(other.fingerprint() == trimmed(data("other.fingerprint")));
  CHECK(other.fingerprint() != key.fingerprint());
  SUBCASE("surrounding blank lines are allowed; the PEM is re-encoded") {
    const auto padded = prereg::public_key::from_pem("\n\n" + data("test.pub") + "\n \n", "p");
    CHECK(padded.fingerprint() == key.fingerprint());
    CHECK(padded.pem() == data("test.pub"));
  }
}

TEST_CASE("public_key::from_pem refuses anything but one Ed25519 SPKI (exit 3, where)") {
  const std::string der =
      from_hex("302a300506032b6570032100d75a980182b10ab7d54bfed3c964073a0ee172f3"
               "daa62325af021a68f707511a");
  REQUIRE(prereg::public_key::from_pem("-----BEGIN PUBLIC KEY-----\n" + prereg::base64_encode(der) +
                                           "\n-----END PUBLIC KEY-----\n",
                                       "x")
              .fingerprint() == trimmed(data("test.fingerprint")));
  const std::pair<std::string, std::string> bad[] = {
      {"rsa.pub", data("rsa.pub")},
      {"ec.pub", data("ec.pub")},
      {"x25519.pub", data("x25519.pub")},
      {"test.key (a private key)", data("test.key")},
      {"empty", ""},
      {"not PEM", "hello"},
      {"two keys", data("test.pub") + data("other.pub")},
      {"trailing text", data("test.pub") + "x\n"},
      {"leading text", "comment\n" + data("test.pub")},
      {"truncated", data("test.pub").substr(0, 60)},
      {"trailing DER bytes", "-----BEGIN PUBLIC KEY-----\n" +
                                 prereg::base64_encode(der + std::string(1, '\0')) +
                                 "\n-----END PUBLIC KEY-----\n"},
      {"truncated DER", "-----BEGIN PUBLIC KEY-----\n" +
                            prereg::base64_encode(der.substr(0, der.size() - 1)) +
                            "\n-----END PUBLIC KEY-----\n"},
  };
  for (const auto &[name, pem] : bad) {
    CAPTURE(name);
    const auto e = caught([&] { (void)prereg::public_key::from_pem(pem, "keys/abc.pub"); });
    CHECK(e.code() == exit_code::integrity);
    CHECK(e.where() == "keys/abc.pub");
    CHECK(std::string(e.what()).find("not an Ed25519 public key") == 0);
  }
  const auto e = caught([&] { (void)prereg::public_key::from_pem(data("rsa.pub"), "k"); });
  CHECK(std::string(e.what()).find("RSA") != std::string::npos);
}

TEST_CASE("verify: the CLI's signature and its forgeries") {
  const auto key = prereg::public_key::from_pem(data("test.pub"), "test.pub");
  const auto other = prereg::public_key::from_pem(data("other.pub"), "other.pub");
  const auto message = data("message.txt");
  const auto sig = data("message.sig");
  REQUIRE(sig.size() == 64);
  CHECK(key.verify(message, sig));
  CHECK_FALSE(other.verify(message, sig));
  for (std::size_t i : {std::size_t{0}, message.size() / 2, message.size() - 1}) {
    CAPTURE(i);
    CHECK_FALSE(key.verify(flip_bit(message, i, 0), sig));
  }
  for (std::size_t i = 0; i < 64; i += 7) {
    CAPTURE(i);
    CHECK_FALSE(key.verify(message, flip_bit(sig, i, static_cast<int>(i % 8))));
  }
  CHECK_FALSE(key.verify(message, ""));
  CHECK_FALSE(key.verify(message, sig.substr(0, 63)));
  CHECK_FALSE(key.verify(message, sig + std::string(1, '\0')));
  CHECK_FALSE(key.verify(message + "\n", sig));
  CHECK_FALSE(key.verify("", sig));
}

TEST_CASE("signing_key: deterministic signatures equal the CLI's and RFC 8032's") {
  const auto key = prereg::signing_key::from_pem(data("test.key"), "test.key");
  CHECK(key.fingerprint() == trimmed(data("test.fingerprint")));
  CHECK(key.public_part().pem() == data("test.pub"));
  CHECK(key.sign(data("message.txt")) == data("message.sig"));
  // RFC 8032 section 7.1 TEST 1 (test.key's seed), the empty message.
  CHECK(key.sign("") ==
        from_hex("e5564300c360ac729086e2cc806e828a84877f1eb8e5d974d873e06522490155"
                 "5fb8821590a33bacc61e39701cf9b46bd25bf5f0595bbe24655141438e7a100b"));
  // RFC 8032 TEST 2 (other.key's seed), message 0x72, as the CLI also signed it.
  const auto other = prereg::signing_key::from_pem(data("other.key"), "other.key");
  const auto test2 = other.sign("\x72");
  CHECK(test2 == from_hex(trimmed(data("rfc8032_test2.sig.hex"))));
  CHECK(test2 == from_hex("92a009a9f0d4cab8720e820b5f642540a2b27b5416503f8fb3762223ebdb69da"
                          "085ac1e43e15996e458f3613d0f11d8c387b2eaeb4302aeeb00d291612bb0c00"));
  CHECK(other.public_part().verify("\x72", test2));
  CHECK_FALSE(key.public_part().verify("\x72", test2));
}

TEST_CASE("signing_key::from_pem refuses other keys (exit 3)") {
  const char *bad[] = {"rsa.key", "ec.key", "x25519.key", "test.pub", "test_encrypted.key"};
  for (const char *name : bad) {
    CAPTURE(name);
    const auto e = caught([&] { (void)prereg::signing_key::from_pem(data(name), name); });
    CHECK(e.code() == exit_code::integrity);
    CHECK(e.where() == name);
    CHECK(std::string(e.what()).find("not an Ed25519 PKCS#8 private key") == 0);
  }
  CHECK_THROWS_WITH((void)prereg::signing_key::from_pem("", "k"),
                    "not an Ed25519 PKCS#8 private key: expected exactly one PEM block");
}

TEST_CASE("signing_key::generate: fresh keys sign and verify; keys differ") {
  const auto a = prereg::signing_key::generate();
  const auto b = prereg::signing_key::generate();
  CHECK(a.fingerprint().size() == 64);
  CHECK(a.fingerprint().find_first_not_of("0123456789abcdef") == std::string::npos);
  CHECK(a.fingerprint() != b.fingerprint());
  const auto pae = prereg::dsse_pae("application/vnd.prereg.report+json", "{\"x\":1}");
  const auto sig = a.sign(pae);
  CHECK(sig.size() == 64);
  CHECK(a.public_part().verify(pae, sig));
  CHECK_FALSE(b.public_part().verify(pae, sig));
  SUBCASE("moved-from and moved-to keys") {
    auto c = prereg::signing_key::generate();
    const auto fp = c.fingerprint();
    auto d = std::move(c);
    CHECK(d.fingerprint() == fp);
    CHECK(d.public_part().verify("m", d.sign("m")));
  }
}

TEST_CASE("signing_key::save and load round trip with modes 0600 and 0644") {
  temp_dir tmp;
  const auto key = prereg::signing_key::generate();
  const auto path = tmp.path / "config" / "prereg" / "signing.key";
  key.save(path);
  struct stat st {};
  REQUIRE(::stat(path.c_str(), &st) == 0);
  CHECK((st.st_mode & 07777) == 0600);
  const auto pub_path = tmp.path / "config" / "prereg" / "signing.pub";
  REQUIRE(::stat(pub_path.c_str(), &st) == 0);
  CHECK((st.st_mode & 07777) == 0644);
  CHECK(prereg::read_file(pub_path) == key.public_part().pem());
  CHECK(prereg::read_file(path).rfind("-----BEGIN PRIVATE KEY-----\n", 0) == 0);

  const auto loaded = prereg::signing_key::load(path);
  CHECK(loaded.fingerprint() == key.fingerprint());
  CHECK(loaded.sign("hello") == key.sign("hello"));
  CHECK(prereg::public_key::from_pem(prereg::read_file(pub_path), "p").fingerprint() ==
        key.fingerprint());

  SUBCASE("saving over an existing key needs force, and then replaces it") {
    const auto again = prereg::signing_key::generate();
    const auto e = caught([&] { again.save(path); });
    CHECK(e.code() == exit_code::invalid);
    CHECK(prereg::signing_key::load(path).fingerprint() == key.fingerprint());
    again.save(path, true);
    CHECK(prereg::signing_key::load(path).fingerprint() == again.fingerprint());
    CHECK(prereg::read_file(pub_path) == again.public_part().pem());
  }
  SUBCASE("an existing .pub or a dangling link is not overwritten without force") {
    const auto other = tmp.path / "other.key";
    prereg::write_file_atomic(tmp.path / "other.pub", "keep");
    CHECK(caught([&] { key.save(other); }).code() == exit_code::invalid);
    CHECK(prereg::read_file(tmp.path / "other.pub") == "keep");
    CHECK_FALSE(fs::exists(other));
    fs::create_symlink(tmp.path / "nowhere" / "x.key", tmp.path / "dangling.key");
    CHECK(caught([&] { key.save(tmp.path / "dangling.key"); }).code() == exit_code::invalid);
    CHECK(fs::is_symlink(tmp.path / "dangling.key"));
  }
  SUBCASE("a key in a folder writable by others is refused; a sticky one is not") {
    fs::create_directories(tmp.path / "open");
    fs::permissions(tmp.path / "open", fs::perms::all);
    try {
      key.save(tmp.path / "open" / "k2.key");
      FAIL("no error");
    } catch (const prereg::error &e) {
      CHECK(e.code() == exit_code::integrity);
      CHECK(std::string(e.what()).find("chmod o-w") != std::string::npos);
    }
    fs::permissions(tmp.path / "open", fs::perms::all | fs::perms::sticky_bit);
    key.save(tmp.path / "open" / "k3.key");
    CHECK(prereg::signing_key::load(tmp.path / "open" / "k3.key").fingerprint() ==
          key.fingerprint());
  }
  SUBCASE("a path ending in .pub is refused") {
    const auto e = caught([&] { key.save(tmp.path / "signing.pub"); });
    CHECK(e.code() == exit_code::invalid);
    CHECK_FALSE(fs::exists(tmp.path / "signing.pub"));
  }
}

TEST_CASE("signing_key::load refuses loose modes, missing files and other keys") {
  temp_dir tmp;
  SUBCASE("modes 0600 and 0400 load") {
    CHECK(prereg::signing_key::load(copy_with_mode("test.key", tmp.path, 0600)).fingerprint() ==
          trimmed(data("test.fingerprint")));
    CHECK(prereg::signing_key::load(copy_with_mode("test.key", tmp.path, 0400)).fingerprint() ==
          trimmed(data("test.fingerprint")));
  }
  SUBCASE("any group or other bit is exit 3 with the chmod fix") {
    for (unsigned mode : {0644u, 0640u, 0604u, 0620u, 0602u, 0601u, 0610u, 0666u}) {
      CAPTURE(mode);
      const auto path = copy_with_mode("test.key", tmp.path, mode);
      const auto e = caught([&] { (void)prereg::signing_key::load(path); });
      CHECK(e.code() == exit_code::integrity);
      CHECK(e.where() == path.string());
      CHECK(std::string(e.what()).find(fmt::format("mode {:04o}", mode)) != std::string::npos);
      CHECK(std::string(e.what()).find("chmod 600 " + path.string()) != std::string::npos);
    }
  }
  SUBCASE("a missing file is exit 1 naming the path") {
    const auto path = tmp.path / "absent.key";
    const auto e = caught([&] { (void)prereg::signing_key::load(path); });
    CHECK(e.code() == exit_code::failure);
    CHECK(e.where() == path.string());
  }
  SUBCASE("a directory is exit 3") {
    fs::create_directory(tmp.path / "dir.key");
    ::chmod((tmp.path / "dir.key").c_str(), 0700);
    CHECK(caught([&] { (void)prereg::signing_key::load(tmp.path / "dir.key"); }).code() ==
          exit_code::integrity);
  }
  SUBCASE("RSA, EC, X25519, encrypted and public keys at mode 0600 are exit 3") {
    for (const char *name : {"rsa.key", "ec.key", "x25519.key", "test_encrypted.key", "test.pub"}) {
      CAPTURE(name);
      const auto path = copy_with_mode(name, tmp.path, 0600);
      const auto e = caught([&] { (void)prereg::signing_key::load(path); });
      CHECK(e.code() == exit_code::integrity);
      CHECK(e.where() == path.string());
      CHECK(std::string(e.what()).find("not an Ed25519 PKCS#8 private key") == 0);
    }
  }
}

TEST_CASE("interop: the openssl CLI verifies our signatures, and we verify the CLI's") {
  if (!have_openssl_cli()) {
    MESSAGE("openssl CLI not found; interop test skipped");
    return;
  }
  temp_dir tmp;
  const auto key = prereg::signing_key::generate();
  key.save(tmp.path / "k.key");
  const auto payload = std::string("{\"schema_version\":1}");
  const auto pae = prereg::dsse_pae("application/vnd.prereg.report+json", payload);
  prereg::write_file_atomic(tmp.path / "pae.bin", pae);
  prereg::write_file_atomic(tmp.path / "sig.bin", key.sign(pae));
  prereg::write_file_atomic(tmp.path / "bad.bin", flip_bit(key.sign(pae), 10, 3));
  const auto verify_cmd = [&](const std::string &sig) {
    return fmt::format("openssl pkeyutl -verify -pubin -inkey '{}' -rawin -in '{}' -sigfile '{}' "
                       ">/dev/null 2>&1",
                       (tmp.path / "k.pub").string(), (tmp.path / "pae.bin").string(),
                       (tmp.path / sig).string());
  };
  CHECK(std::system(verify_cmd("sig.bin").c_str()) == 0);
  CHECK(std::system(verify_cmd("bad.bin").c_str()) != 0);

  // The CLI's fingerprint recipe on a key we wrote.
  const auto fp_cmd =
      fmt::format("openssl pkey -pubin -in '{}' -outform DER | sha256sum | cut -d' ' -f1 > '{}'",
                  (tmp.path / "k.pub").string(), (tmp.path / "fp.txt").string());
  REQUIRE(std::system(fp_cmd.c_str()) == 0);
  CHECK(trimmed(prereg::read_file(tmp.path / "fp.txt")) == key.fingerprint());

  // The CLI reads the private key file we wrote and signs as we do.
  const auto sign_cmd =
      fmt::format("openssl pkeyutl -sign -rawin -inkey '{}' -in '{}' -out '{}' 2>/dev/null",
                  (tmp.path / "k.key").string(), (tmp.path / "pae.bin").string(),
                  (tmp.path / "cli.sig").string());
  REQUIRE(std::system(sign_cmd.c_str()) == 0);
  CHECK(prereg::read_file(tmp.path / "cli.sig") == key.sign(pae));
  CHECK(key.public_part().verify(pae, prereg::read_file(tmp.path / "cli.sig")));
}
