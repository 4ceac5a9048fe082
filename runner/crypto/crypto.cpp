// SHA-256, base64, DSSE PAE and Ed25519 keys and signatures, all through OpenSSL 3 EVP.
#include "crypto/crypto.hpp"

#include "base/fs.hpp"
#include "prereg/error.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/bio.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509.h>

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>

namespace prereg {
namespace detail {

struct pkey_free {
  void operator()(EVP_PKEY *p) const noexcept { EVP_PKEY_free(p); }
};
struct md_ctx_free {
  void operator()(EVP_MD_CTX *p) const noexcept { EVP_MD_CTX_free(p); }
};
struct bio_free {
  void operator()(BIO *p) const noexcept { BIO_free(p); }
};
struct p8_free {
  void operator()(PKCS8_PRIV_KEY_INFO *p) const noexcept { PKCS8_PRIV_KEY_INFO_free(p); }
};
using pkey_ptr = std::unique_ptr<EVP_PKEY, pkey_free>;
using md_ctx_ptr = std::unique_ptr<EVP_MD_CTX, md_ctx_free>;
using bio_ptr = std::unique_ptr<BIO, bio_free>;
using p8_ptr = std::unique_ptr<PKCS8_PRIV_KEY_INFO, p8_free>;

/// Bytes that may hold private key material: wiped before they are freed.
struct secret {
  std::string bytes;
  secret() = default;
  secret(const secret &) = delete;
  secret &operator=(const secret &) = delete;
  ~secret() { OPENSSL_cleanse(bytes.data(), bytes.size()); }
};

/// The oldest queued OpenSSL error as text (the queue is then cleared), for exit-1 messages.
std::string openssl_error() {
  const unsigned long e = ERR_get_error();
  ERR_clear_error();
  if (e == 0)
    return "unknown OpenSSL error";
  std::array<char, 256> buf{};
  ERR_error_string_n(e, buf.data(), buf.size());
  return buf.data();
}

[[noreturn]] void fail(const char *what) {
  throw io_error(fmt::format("{} failed: {}", what, openssl_error()));
}

/// One PEM block; `der` may be private key material.
struct pem_block {
  std::string label;
  secret der;
};

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

/// Reads exactly one PEM block without headers, with nothing but whitespace around it.
bool read_one_pem(std::string_view text, pem_block &out) {
  std::size_t start = 0;
  while (start < text.size() && is_space(text[start]))
    ++start;
  if (text.substr(start).rfind("-----BEGIN ", 0) != 0)
    return false;
  if (text.size() > static_cast<std::size_t>(INT32_MAX))
    return false;
  bio_ptr bio(BIO_new_mem_buf(text.data(), static_cast<int>(text.size())));
  if (!bio)
    fail("BIO_new_mem_buf");
  char *name = nullptr;
  char *header = nullptr;
  unsigned char *data = nullptr;
  long len = 0;
  if (PEM_read_bio(bio.get(), &name, &header, &data, &len) != 1) {
    ERR_clear_error();
    return false;
  }
  out.label = name;
  out.der.bytes.assign(reinterpret_cast<const char *>(data), static_cast<std::size_t>(len));
  const bool has_header = header != nullptr && header[0] != '\0';
  OPENSSL_free(name);
  OPENSSL_free(header);
  OPENSSL_clear_free(data, static_cast<std::size_t>(len));
  if (has_header)
    return false; // e.g. an encrypted legacy key ("Proc-Type: 4,ENCRYPTED")
  char *rest = nullptr;
  const long rest_len = BIO_get_mem_data(bio.get(), &rest);
  for (long i = 0; i < rest_len; ++i)
    if (!is_space(rest[i]))
      return false;
  return true;
}

/// The PEM text of `pkey`'s SubjectPublicKeyInfo.
std::string public_pem_of(EVP_PKEY *pkey) {
  bio_ptr bio(BIO_new(BIO_s_mem()));
  if (!bio || PEM_write_bio_PUBKEY(bio.get(), pkey) != 1)
    fail("PEM_write_bio_PUBKEY");
  char *p = nullptr;
  const long n = BIO_get_mem_data(bio.get(), &p);
  return {p, static_cast<std::size_t>(n)};
}

} // namespace detail

using namespace detail;

namespace {
std::string to_hex(const unsigned char *md, unsigned int md_len) {
  static constexpr char hex[] = "0123456789abcdef";
  std::string out;
  out.reserve(2 * md_len);
  for (unsigned int i = 0; i < md_len; ++i) {
    out.push_back(hex[md[i] >> 4]);
    out.push_back(hex[md[i] & 0xf]);
  }
  return out;
}
} // namespace

std::string hmac_sha256_hex(std::string_view key, std::string_view bytes) {
  std::array<unsigned char, EVP_MAX_MD_SIZE> md{};
  unsigned int md_len = 0;
  if (HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()),
           reinterpret_cast<const unsigned char *>(bytes.data()), bytes.size(), md.data(),
           &md_len) == nullptr)
    fail("HMAC(SHA-256)");
  return to_hex(md.data(), md_len);
}

std::string random_bytes(std::size_t n) {
  std::string out(n, '\0');
  if (RAND_bytes(reinterpret_cast<unsigned char *>(out.data()), static_cast<int>(n)) != 1)
    fail("RAND_bytes");
  return out;
}

std::string sha256_hex(std::string_view bytes) {
  std::array<unsigned char, EVP_MAX_MD_SIZE> md{};
  unsigned int md_len = 0;
  if (EVP_Digest(bytes.data(), bytes.size(), md.data(), &md_len, EVP_sha256(), nullptr) != 1)
    fail("EVP_Digest(SHA-256)");
  static constexpr char hex[] = "0123456789abcdef";
  std::string out;
  out.reserve(2 * md_len);
  for (unsigned int i = 0; i < md_len; ++i) {
    out.push_back(hex[md[i] >> 4]);
    out.push_back(hex[md[i] & 0xf]);
  }
  return out;
}

std::string base64_encode(std::string_view bytes) {
  std::string out;
  // EVP_EncodeBlock takes an int length; encode in chunks of a multiple of 3 bytes.
  constexpr std::size_t chunk = 3 * (1u << 20);
  out.reserve(4 * ((bytes.size() + 2) / 3));
  for (std::size_t pos = 0; pos < bytes.size(); pos += chunk) {
    const std::size_t n = std::min(chunk, bytes.size() - pos);
    std::string buf(4 * ((n + 2) / 3) + 1, '\0');
    const int written = EVP_EncodeBlock(reinterpret_cast<unsigned char *>(buf.data()),
                                        reinterpret_cast<const unsigned char *>(bytes.data() + pos),
                                        static_cast<int>(n));
    out.append(buf.data(), static_cast<std::size_t>(written));
  }
  return out;
}

namespace {

int base64_value(char c) {
  if (c >= 'A' && c <= 'Z')
    return c - 'A';
  if (c >= 'a' && c <= 'z')
    return c - 'a' + 26;
  if (c >= '0' && c <= '9')
    return c - '0' + 52;
  if (c == '+')
    return 62;
  if (c == '/')
    return 63;
  return -1;
}

} // namespace

std::string base64_decode(std::string_view text) {
  // EVP_DecodeBlock skips surrounding whitespace and returns padding as zero bytes, so the text
  // is checked here first: canonical standard base64 only (RFC 4648 section 4, with padding, no
  // whitespace, unused bits of the last character zero).
  if (text.size() % 4 != 0)
    throw invalid_input(
        fmt::format("invalid base64: length {} is not a multiple of 4", text.size()));
  std::size_t pad = 0;
  if (!text.empty() && text.back() == '=')
    pad = text[text.size() - 2] == '=' ? 2 : 1;
  for (std::size_t i = 0; i < text.size() - pad; ++i) {
    if (base64_value(text[i]) < 0) {
      const unsigned char c = static_cast<unsigned char>(text[i]);
      throw invalid_input(
          c == '=' ? fmt::format("invalid base64: padding '=' before the end at offset {}", i)
                   : fmt::format("invalid base64: character {} at offset {}",
                                 c >= 0x20 && c < 0x7f ? fmt::format("'{}'", static_cast<char>(c))
                                                       : fmt::format("0x{:02x}", c),
                                 i));
    }
  }
  if (pad > 0) {
    const int last = base64_value(text[text.size() - pad - 1]);
    const int unused_mask = pad == 2 ? 0x0f : 0x03;
    if ((last & unused_mask) != 0)
      throw invalid_input("invalid base64: non-zero bits in the padding");
  }
  std::string out;
  constexpr std::size_t chunk = 4 * (1u << 20);
  out.reserve(3 * (text.size() / 4));
  for (std::size_t pos = 0; pos < text.size(); pos += chunk) {
    const std::size_t n = std::min(chunk, text.size() - pos);
    std::string buf(3 * (n / 4), '\0');
    const int written = EVP_DecodeBlock(reinterpret_cast<unsigned char *>(buf.data()),
                                        reinterpret_cast<const unsigned char *>(text.data() + pos),
                                        static_cast<int>(n));
    if (written < 0 || static_cast<std::size_t>(written) != buf.size())
      throw invalid_input("invalid base64");
    out += buf;
  }
  out.resize(out.size() - pad);
  return out;
}

std::string dsse_pae(std::string_view payload_type, std::string_view payload) {
  std::string out =
      fmt::format("DSSEv1 {} {} {} ", payload_type.size(), payload_type, payload.size());
  out.append(payload);
  return out;
}

// --- public_key ---------------------------------------------------------------------------

namespace {

pkey_ptr pkey_from_der(const std::string &der) {
  const auto *p = reinterpret_cast<const unsigned char *>(der.data());
  pkey_ptr pkey(d2i_PUBKEY(nullptr, &p, static_cast<long>(der.size())));
  if (!pkey)
    ERR_clear_error();
  return pkey;
}

} // namespace

public_key public_key::from_pem(std::string_view pem, const std::string &where) {
  const auto refuse = [&](const std::string &why) {
    return integrity_error("not an Ed25519 public key (PEM SubjectPublicKeyInfo): " + why, where);
  };
  pem_block block;
  if (!read_one_pem(pem, block))
    throw refuse("expected exactly one PEM block");
  if (block.label != "PUBLIC KEY")
    throw refuse(fmt::format("the PEM block is '{}', not 'PUBLIC KEY'", block.label));
  const auto &der = block.der.bytes;
  const auto *p = reinterpret_cast<const unsigned char *>(der.data());
  pkey_ptr pkey(d2i_PUBKEY(nullptr, &p, static_cast<long>(der.size())));
  if (!pkey) {
    ERR_clear_error();
    throw refuse("the DER does not parse");
  }
  if (p != reinterpret_cast<const unsigned char *>(der.data()) + der.size())
    throw refuse("trailing bytes after the DER");
  if (!EVP_PKEY_is_a(pkey.get(), "ED25519"))
    throw refuse(fmt::format("the key type is {}", EVP_PKEY_get0_type_name(pkey.get())));

  public_key key;
  unsigned char *out = nullptr;
  const int n = i2d_PUBKEY(pkey.get(), &out);
  if (n <= 0)
    fail("i2d_PUBKEY");
  key.m_der.assign(reinterpret_cast<const char *>(out), static_cast<std::size_t>(n));
  OPENSSL_free(out);
  key.m_pem = public_pem_of(pkey.get());
  key.m_fingerprint = sha256_hex(key.m_der);
  return key;
}

bool public_key::verify(std::string_view message, std::string_view signature) const {
  if (signature.size() != 64)
    return false;
  const pkey_ptr pkey = pkey_from_der(m_der);
  if (!pkey)
    return false;
  md_ctx_ptr ctx(EVP_MD_CTX_new());
  if (!ctx)
    fail("EVP_MD_CTX_new");
  if (EVP_DigestVerifyInit(ctx.get(), nullptr, nullptr, nullptr, pkey.get()) != 1)
    fail("EVP_DigestVerifyInit");
  const int rc = EVP_DigestVerify(
      ctx.get(), reinterpret_cast<const unsigned char *>(signature.data()), signature.size(),
      reinterpret_cast<const unsigned char *>(message.data()), message.size());
  ERR_clear_error();
  return rc == 1;
}

// --- signing_key --------------------------------------------------------------------------

struct signing_key::impl {
  pkey_ptr pkey;
};

signing_key::signing_key(std::unique_ptr<impl> p, public_key pub)
    : m_impl(std::move(p)), m_public(std::move(pub)) {}
signing_key::signing_key(signing_key &&) noexcept = default;
signing_key &signing_key::operator=(signing_key &&) noexcept = default;
signing_key::~signing_key() = default;

signing_key signing_key::generate() {
  pkey_ptr pkey(EVP_PKEY_Q_keygen(nullptr, nullptr, "ED25519"));
  if (!pkey)
    fail("EVP_PKEY_Q_keygen(ED25519)");
  auto pub = public_key::from_pem(public_pem_of(pkey.get()), "generated key");
  return signing_key(std::make_unique<impl>(impl{std::move(pkey)}), std::move(pub));
}

signing_key signing_key::from_pem(std::string_view pem, const std::string &where) {
  const auto refuse = [&](const std::string &why) {
    return integrity_error("not an Ed25519 PKCS#8 private key: " + why, where);
  };
  pem_block block;
  if (!read_one_pem(pem, block))
    throw refuse("expected exactly one PEM block");
  if (block.label != "PRIVATE KEY")
    throw refuse(
        fmt::format("the PEM block is '{}', not 'PRIVATE KEY' (unencrypted PKCS#8)", block.label));
  const auto &der = block.der.bytes;
  const auto *p = reinterpret_cast<const unsigned char *>(der.data());
  p8_ptr p8(d2i_PKCS8_PRIV_KEY_INFO(nullptr, &p, static_cast<long>(der.size())));
  if (!p8 || p != reinterpret_cast<const unsigned char *>(der.data()) + der.size()) {
    ERR_clear_error();
    throw refuse("the DER is not a PKCS#8 PrivateKeyInfo");
  }
  pkey_ptr pkey(EVP_PKCS82PKEY(p8.get()));
  if (!pkey) {
    ERR_clear_error();
    throw refuse("the PKCS#8 key does not parse");
  }
  if (!EVP_PKEY_is_a(pkey.get(), "ED25519"))
    throw refuse(fmt::format("the key type is {}", EVP_PKEY_get0_type_name(pkey.get())));
  auto pub = public_key::from_pem(public_pem_of(pkey.get()), where);
  return signing_key(std::make_unique<impl>(impl{std::move(pkey)}), std::move(pub));
}

signing_key signing_key::load(const std::filesystem::path &path) {
  const std::string where = path.string();
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    const int err = errno;
    if (err == ENOENT)
      throw io_error("no signing key file at this path", where);
    throw io_error(fmt::format("cannot open signing key: {}", std::strerror(err)), where);
  }
  const fd_closer closer{fd};
  struct stat st {};
  if (::fstat(fd, &st) != 0)
    throw io_error(fmt::format("cannot stat signing key: {}", std::strerror(errno)), where);
  if (!S_ISREG(st.st_mode))
    throw integrity_error("signing key is not a regular file", where);
  if (st.st_size > 64 * 1024)
    throw integrity_error("signing key file is over 64 KiB: not a key", where);
  check_key_folder(path);
  // Stat bits, not access(): the tests (and some users) run as root, who may read anything.
  if ((st.st_mode & 077) != 0)
    throw integrity_error(
        fmt::format("signing key is accessible by group or others (mode {:04o}); fix with: "
                    "chmod 600 {}",
                    st.st_mode & 07777, where),
        where);
  secret text;
  text.bytes.reserve(static_cast<std::size_t>(st.st_size) + 1);
  std::array<char, 4096> buf{};
  for (;;) {
    const ssize_t n = ::read(fd, buf.data(), buf.size());
    if (n < 0) {
      if (errno == EINTR)
        continue;
      OPENSSL_cleanse(buf.data(), buf.size());
      throw io_error(fmt::format("cannot read signing key: {}", std::strerror(errno)), where);
    }
    if (n == 0)
      break;
    text.bytes.append(buf.data(), static_cast<std::size_t>(n));
  }
  OPENSSL_cleanse(buf.data(), buf.size());
  try {
    return from_pem(text.bytes, where);
  } catch (const error &e) {
    throw integrity_error(
        fmt::format("{}; point --key or PREREG_KEY at your Ed25519 signing key, or make a new "
                    "one with: prereg keygen --force --key {}",
                    e.what(), where),
        where);
  }
}

void check_key_folder(const std::filesystem::path &key_path) {
  const auto dir = key_path.has_parent_path() ? key_path.parent_path() : ".";
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0)
    return; // no folder yet: creating the key creates it
  if ((st.st_mode & S_IWOTH) != 0 && (st.st_mode & S_ISVTX) == 0)
    throw integrity_error(
        fmt::format("the signing key's folder is writable by others (mode {:04o}): anyone can "
                    "replace the key; fix with: chmod o-w {}",
                    st.st_mode & 07777, dir.string()),
        dir.string());
}

void signing_key::save(const std::filesystem::path &path, bool force) const {
  if (path.extension() == ".pub")
    throw invalid_input("a private key file must not end in .pub", path.string());
  check_key_folder(path);
  auto pub_path = path;
  pub_path.replace_extension(".pub");
  if (!force) {
    std::error_code ec;
    // symlink_status: a dangling symlink is something there too.
    if (std::filesystem::exists(std::filesystem::symlink_status(path, ec)))
      throw invalid_input("a signing key (or a link) already exists there; use --force to "
                          "replace it",
                          path.string());
    if (std::filesystem::exists(std::filesystem::symlink_status(pub_path, ec)))
      throw invalid_input("a public key file already exists there; use --force to replace it",
                          pub_path.string());
  }
  secret pem;
  {
    bio_ptr bio(BIO_new(BIO_s_secmem()));
    if (!bio || PEM_write_bio_PKCS8PrivateKey(bio.get(), m_impl->pkey.get(), nullptr, nullptr, 0,
                                              nullptr, nullptr) != 1)
      fail("PEM_write_bio_PKCS8PrivateKey");
    char *p = nullptr;
    const long n = BIO_get_mem_data(bio.get(), &p);
    pem.bytes.assign(p, static_cast<std::size_t>(n));
  }
  write_file_atomic(path, pem.bytes, 0600);
  write_file_atomic(pub_path, m_public.pem(), 0644);
}

std::string signing_key::sign(std::string_view message) const {
  md_ctx_ptr ctx(EVP_MD_CTX_new());
  if (!ctx)
    fail("EVP_MD_CTX_new");
  if (EVP_DigestSignInit(ctx.get(), nullptr, nullptr, nullptr, m_impl->pkey.get()) != 1)
    fail("EVP_DigestSignInit");
  std::string sig(64, '\0');
  std::size_t sig_len = sig.size();
  if (EVP_DigestSign(ctx.get(), reinterpret_cast<unsigned char *>(sig.data()), &sig_len,
                     reinterpret_cast<const unsigned char *>(message.data()), message.size()) != 1)
    fail("EVP_DigestSign");
  if (sig_len != 64)
    throw io_error(fmt::format("Ed25519 signature of {} bytes", sig_len));
  return sig;
}

bool is_full_hash(std::string_view s) {
  return s.size() == 64 && std::all_of(s.begin(), s.end(), [](char c) {
           return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
         });
}

} // namespace prereg
