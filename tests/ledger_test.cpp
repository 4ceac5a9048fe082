// The ledger: an append writes one line at the end and never rewrites earlier bytes; the chain
// and signature format; one read per command with appends by others noticed; the truncated-line
// refusal; attempt counting.
#include "base/fs.hpp"
#include "crypto/crypto.hpp"
#include "crypto/signed_json.hpp"
#include "prereg/error.hpp"
#include "store/ledger.hpp"
#include "store/store.hpp"

#include <doctest/doctest.h>

#include <sys/resource.h>
#include <sys/stat.h>

#include <csignal>

#include <cstdlib>
#include <fstream>

using namespace prereg;
namespace fs = std::filesystem;

namespace {

/// A temporary folder, removed on destruction.
struct temp_dir {
  fs::path path;
  temp_dir() {
    std::string tmpl = (fs::temp_directory_path() / "prereg-ledger-XXXXXX").string();
    REQUIRE(::mkdtemp(tmpl.data()) != nullptr);
    path = tmpl;
  }
  temp_dir(const temp_dir &) = delete;
  temp_dir &operator=(const temp_dir &) = delete;
  ~temp_dir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

ino_t inode_of(const fs::path &p) {
  struct stat st {};
  REQUIRE(::stat(p.c_str(), &st) == 0);
  return st.st_ino;
}

json start_of(const std::string &hash, const std::string &run_id, std::int64_t attempt) {
  return {{"event", ledger_event::run_start},
          {"protocol_hash", hash},
          {"run_id", run_id},
          {"attempt", attempt}};
}

exit_code code_of(const std::function<void()> &f) {
  try {
    f();
  } catch (const error &e) {
    return e.code();
  }
  return exit_code::ok;
}

} // namespace

TEST_CASE("an append writes exactly one line at the end and leaves earlier bytes alone") {
  temp_dir tmp;
  const signing_key key = signing_key::generate();
  const fs::path file = tmp.path / "store" / "ledger.jsonl";
  ledger l(file);
  CHECK(l.entries().empty());
  const json first = l.append({{"event", ledger_event::freeze}, {"protocol_hash", "aa"}}, key);
  REQUIRE(fs::exists(file));
  for (int i = 1; i <= 3; ++i) {
    const std::string before = read_file(file);
    const ino_t inode = inode_of(file);
    const json e = l.append(start_of("aa", "run" + std::to_string(i), i), key);
    const std::string after = read_file(file);
    CHECK(inode_of(file) == inode); // appended in place, not replaced by a new file
    REQUIRE(after.size() > before.size());
    CHECK(after.compare(0, before.size(), before) == 0); // every earlier byte unchanged
    const std::string added = after.substr(before.size());
    CHECK(added == canonical_json(e) + "\n"); // exactly one line: the entry's JCS bytes
    CHECK(added.find('\n') == added.size() - 1);
  }
  CHECK(first.at("seq") == 1);
  CHECK(first.at("prev") == ledger_genesis);
  CHECK(l.verify([&](const std::string &fp) -> std::optional<public_key> {
    if (fp == key.fingerprint())
      return key.public_part();
    return std::nullopt;
  }) == 4);
}

TEST_CASE("the line format: JCS bytes, prev hashes the previous line without its newline, the "
          "signature covers the entry without its signature member") {
  temp_dir tmp;
  const signing_key key = signing_key::generate();
  ledger l(tmp.path / "ledger.jsonl");
  const json a = l.append({{"event", ledger_event::freeze}, {"protocol_hash", "h"}}, key);
  const json b = l.append(start_of("h", "r1", 1), key);
  const std::string text = read_file(l.path());
  const auto nl = text.find('\n');
  const std::string line1 = text.substr(0, nl);
  CHECK(line1 == canonical_json(a));
  CHECK(b.at("prev") == sha256_hex(line1));
  CHECK(b.at("prev") != sha256_hex(line1 + "\n"));
  CHECK(b.at("seq") == 2);
  CHECK(b.at("signer") == key.fingerprint());
  CHECK(b.at("signature").at("keyid") == key.fingerprint());
  json body = b;
  body.erase("signature");
  CHECK(key.public_part().verify(canonical_json(body),
                                 base64_decode(b.at("signature").at("sig").get<std::string>())));
  CHECK(verify_record(b, key.public_part()));
}

TEST_CASE("handles share one read; an append by someone else is noticed and chained to") {
  temp_dir tmp;
  const signing_key key = signing_key::generate();
  const fs::path dir = tmp.path / "store";
  fs::create_directories(dir);
  // Another path to the same file has its own cache: it stands for another process.
  fs::create_directory_symlink(dir, tmp.path / "alias");
  const store s(dir);
  ledger mine = s.get_ledger();
  ledger other(tmp.path / "alias" / "ledger.jsonl");
  mine.append({{"event", ledger_event::freeze}, {"protocol_hash", "h"}}, key);
  CHECK(s.get_ledger().entries().size() == 1); // a second handle sees the first one's append
  const json *first = &s.get_ledger().entries().front();
  CHECK(&store(dir).get_ledger().entries().front() == first); // and reads nothing again

  other.append(start_of("h", "r1", 1), key);
  REQUIRE(mine.entries().size() == 2); // the file changed: reloaded
  const json e = mine.append(start_of("h", "r2", 2), key);
  CHECK(e.at("seq") == 3);
  CHECK(other.entries().size() == 3);
  const auto lookup = [&](const std::string &) -> std::optional<public_key> {
    return key.public_part();
  };
  CHECK(mine.verify(lookup) == 3);
  CHECK(other.verify(lookup) == 3);

  SUBCASE("a rewritten file is read afresh") {
    write_file_atomic(mine.path(), "");
    CHECK(mine.entries().empty());
    CHECK(mine.append(start_of("h", "r3", 1), key).at("prev") == ledger_genesis);
  }
}

TEST_CASE("a ledger whose last line lacks its newline is refused, and nothing is appended") {
  temp_dir tmp;
  const signing_key key = signing_key::generate();
  const fs::path file = tmp.path / "ledger.jsonl";
  {
    ledger l(file);
    l.append({{"event", ledger_event::freeze}, {"protocol_hash", "h"}}, key);
    l.append(start_of("h", "r1", 1), key);
  }
  std::string text = read_file(file);
  text.resize(text.size() - 20);
  write_file_atomic(file, text);
  ledger l(file);
  CHECK(code_of([&] { (void)l.entries(); }) == exit_code::integrity);
  CHECK(code_of([&] { l.append(start_of("h", "r2", 2), key); }) == exit_code::integrity);
  CHECK(read_file(file) == text);
  try {
    l.append(start_of("h", "r2", 2), key);
  } catch (const error &e) {
    CHECK(std::string(e.what()).find("ledger line 2 has no final newline") != std::string::npos);
  }
}

TEST_CASE("a write cut short (file size limit, as on a full disk) leaves the ledger as it was") {
  temp_dir tmp;
  const signing_key key = signing_key::generate();
  const fs::path file = tmp.path / "ledger.jsonl";
  ledger l(file);
  l.append({{"event", ledger_event::freeze}, {"protocol_hash", "h"}}, key);
  const std::string before = read_file(file);
  // Let the next write get 10 bytes in: a short write, then the cut back.
  rlimit old{};
  REQUIRE(::getrlimit(RLIMIT_FSIZE, &old) == 0);
  const auto old_handler = std::signal(SIGXFSZ, SIG_IGN);
  rlimit small = old;
  small.rlim_cur = static_cast<rlim_t>(before.size() + 10);
  REQUIRE(::setrlimit(RLIMIT_FSIZE, &small) == 0);
  const exit_code code = code_of([&] { l.append(start_of("h", "r1", 1), key); });
  ::setrlimit(RLIMIT_FSIZE, &old);
  std::signal(SIGXFSZ, old_handler);
  CHECK(code == exit_code::failure);
  CHECK(read_file(file) == before);
  CHECK(l.entries().size() == 1);
  // The next append chains to the intact ledger.
  const json e = l.append(start_of("h", "r1", 1), key);
  CHECK(e.at("seq") == 2);
  CHECK(l.verify([&](const std::string &) -> std::optional<public_key> {
    return key.public_part();
  }) == 2);
}

TEST_CASE("attempts_of counts the run-starts of one protocol; next_attempt is one more; "
          "attempt_numbers numbers them") {
  const std::vector<json> entries{
      {{"event", "freeze"}, {"protocol_hash", "a"}},
      start_of("a", "r1", 1),
      {{"event", "run-aborted"}, {"protocol_hash", "a"}, {"run_id", "r1"}},
      start_of("b", "s1", 1),
      start_of("a", "r2", 2),
      {{"event", "run-complete"}, {"protocol_hash", "a"}, {"run_id", "r2"}},
  };
  CHECK(attempts_of(entries, "a") == 2);
  CHECK(attempts_of(entries, "b") == 1);
  CHECK(attempts_of(entries, "c") == 0);
  CHECK(next_attempt(entries, "a") == 3);
  CHECK(next_attempt(entries, "c") == 1);
  // The attempt of the run whose run-start is entries[i]: the run-starts up to and including it.
  CHECK(attempts_of(std::span(entries).first(2), "a") == 1);
  CHECK(attempts_of(std::span(entries).first(5), "a") == 2);
  CHECK(attempts_of({}, "a") == 0);
  // attempt_numbers gives the same numbers in one pass.
  CHECK(attempt_numbers(entries, "a") == std::vector<std::int64_t>{0, 1, 0, 0, 2, 0});
  CHECK(attempt_numbers(entries, "b") == std::vector<std::int64_t>{0, 0, 0, 1, 0, 0});
  for (std::size_t i = 0; i < entries.size(); ++i)
    if (attempt_numbers(entries, "a")[i] != 0)
      CHECK(attempt_numbers(entries, "a")[i] == attempts_of(std::span(entries).first(i + 1), "a"));
}

TEST_CASE("issue 16: a store's appends verify the chain first; checkpoints; the prefix cache") {
  temp_dir tmp;
  const signing_key key = signing_key::generate();
  const store s(tmp.path / "store");
  s.add_key(key.public_part());
  ledger l = s.get_ledger();
  l.append({{"event", ledger_event::freeze}, {"protocol_hash", "h"}}, key);
  l.append(start_of("h", "r1", 1), key);
  const key_lookup keys = [&](const std::string &fp) { return s.find_key(fp); };
  REQUIRE(l.verify(keys) == 2);
  const json cp = make_checkpoint(l, key);
  CHECK(check_checkpoint(l, cp, keys, "cp") == 2);
  std::string text = read_file(l.path());

  SUBCASE("an edited line is refused before anything is appended, by a fresh process too") {
    const auto at = text.find("\"attempt\":1");
    REQUIRE(at != std::string::npos);
    text.replace(at, 11, "\"attempt\":7");
    write_file_atomic(l.path(), text);
    const store fresh(tmp.path / "store");
    CHECK_THROWS_WITH_AS(fresh.get_ledger().append(start_of("h", "r2", 2), key),
                         doctest::Contains("refusing to append: ledger entry seq 2"), error);
    CHECK(read_file(l.path()) == text);
    // the verified-prefix cache holds the old bytes: it is not taken for the new ones
    CHECK_THROWS_AS((void)l.verify(keys), error);
  }
  SUBCASE("a cut tail fails the checkpoint") {
    write_file_atomic(l.path(), text.substr(0, text.find('\n') + 1));
    CHECK_THROWS_WITH_AS((void)check_checkpoint(l, cp, keys, "cp"),
                         doctest::Contains("no longer reaches checkpoint seq 2"), error);
  }
  SUBCASE("a prefix verified with one key is not reused when that key is not accepted") {
    const key_lookup none = [](const std::string &) { return std::optional<public_key>(); };
    CHECK_THROWS_WITH_AS((void)l.verify(none), doctest::Contains("unknown key"), error);
  }
  SUBCASE("an edited checkpoint is refused") {
    json bad = cp;
    bad["seq"] = 1;
    CHECK_THROWS_WITH_AS((void)check_checkpoint(l, bad, keys, "cp"),
                         doctest::Contains("does not verify"), error);
  }
}

namespace {

/// XDG_CACHE_HOME set to `folder` for the life of the object (the verified-prefix cache's home).
struct cache_home {
  std::string old;
  bool had = false;
  explicit cache_home(const fs::path &folder) {
    if (const char *v = std::getenv("XDG_CACHE_HOME")) {
      old = v;
      had = true;
    }
    ::setenv("XDG_CACHE_HOME", folder.c_str(), 1);
  }
  cache_home(const cache_home &) = delete;
  cache_home &operator=(const cache_home &) = delete;
  ~cache_home() {
    if (had)
      ::setenv("XDG_CACHE_HOME", old.c_str(), 1);
    else
      ::unsetenv("XDG_CACHE_HOME");
  }
};

/// The one cache entry in `folder` (a *.json file).
fs::path entry_in(const fs::path &folder) {
  for (const auto &e : fs::directory_iterator(folder))
    if (e.path().extension() == ".json")
      return e.path();
  return {};
}

} // namespace

TEST_CASE("issue 43: the verified-prefix cache trusts only what this user's prereg wrote, and "
          "follows no symlink") {
  temp_dir tmp;
  const cache_home home(tmp.path / "cache");
  const signing_key key = signing_key::generate();
  const store s(tmp.path / "store");
  s.add_key(key.public_part());
  ledger l = s.get_ledger();
  l.append({{"event", ledger_event::freeze}, {"protocol_hash", "h"}}, key);
  l.append(start_of("h", "r1", 1), key);
  l.append({{"event", ledger_event::run_complete}, {"protocol_hash", "h"}, {"run_id", "r1"}}, key);
  const key_lookup keys = [&](const std::string &fp) { return s.find_key(fp); };
  // A lookup that gives every signer some other key: a signature checked with it fails, so a
  // verification passes only over a prefix the cache vouches for.
  const public_key other = signing_key::generate().public_part();
  const key_lookup wrong = [&](const std::string &) { return std::optional<public_key>(other); };
  REQUIRE(l.verify(keys) == 3);
  const fs::path folder = tmp.path / "cache" / "prereg" / "verified";
  REQUIRE(fs::is_directory(folder));
  CHECK((fs::status(folder).permissions() & fs::perms::all) == fs::perms::owner_all);
  CHECK((fs::status(folder.parent_path()).permissions() & fs::perms::all) == fs::perms::owner_all);
  const fs::path entry = entry_in(folder);
  REQUIRE(!entry.empty());
  const json written = parse_json_strict(read_file(entry), "entry");
  CHECK(written.at("lines") == 3);
  CHECK(written.at("mac").get<std::string>().size() == 64);
  CHECK(fs::exists(folder / "mac.key"));

  SUBCASE("an entry it wrote is trusted") { CHECK(ledger(l.path()).verify(wrong) == 3); }

  SUBCASE("a planted entry for a forged ledger is not") {
    // the first run's completion relabelled as an abort, and an entry that says it was verified
    std::string text = read_file(l.path());
    const auto at = text.find("run-complete");
    REQUIRE(at != std::string::npos);
    text.replace(at, 12, "run-aborted");
    write_file_atomic(l.path(), text);
    json planted = written;
    planted["sha256"] = sha256_hex(text);
    for (const bool keep_mac : {false, true}) {
      if (!keep_mac)
        planted.erase("mac"); // the format of before: no MAC at all
      else
        planted["mac"] = written.at("mac"); // the MAC of the honest entry
      write_file_atomic(entry, canonical_json(planted));
      CHECK_THROWS_WITH_AS((void)ledger(l.path()).verify(keys),
                           doctest::Contains("ledger entry seq 3 has an invalid signature"), error);
    }
    // and the MAC does not carry over to another ledger's name
    write_file_atomic(entry, canonical_json(written));
    const fs::path copy = tmp.path / "copy.jsonl";
    fs::copy_file(l.path(), copy);
    fs::copy_file(entry, folder / (sha256_hex(copy.string()) + ".json"));
    CHECK_THROWS_AS((void)ledger(copy).verify(wrong), error);
  }

  SUBCASE("a symlinked cache folder is not followed: nothing outside it changes") {
    const fs::path victim = tmp.path / "victim";
    fs::create_directory(victim);
    fs::permissions(victim, fs::perms::all | fs::perms::sticky_bit);
    fs::remove_all(folder);
    fs::create_directory_symlink(victim, folder);
    l.append(start_of("h", "r2", 2), key);
    CHECK(ledger(l.path()).verify(keys) == 4);
    CHECK((fs::status(victim).permissions() & (fs::perms::all | fs::perms::sticky_bit)) ==
          (fs::perms::all | fs::perms::sticky_bit));
    CHECK(fs::is_empty(victim));
    CHECK_THROWS_AS((void)ledger(l.path()).verify(wrong), error); // and no cache was used
  }

  SUBCASE("a cache folder others may write is closed first, through its descriptor") {
    fs::permissions(folder, fs::perms::all);
    l.append(start_of("h", "r2", 2), key);
    CHECK(ledger(l.path()).verify(keys) == 4);
    CHECK((fs::status(folder).permissions() & fs::perms::all) == fs::perms::owner_all);
  }
}
