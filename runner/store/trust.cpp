// The trust root: which keys an audit, an import or `ledger verify` accepts as signers.
#include "store/trust.hpp"

#include "base/fs.hpp"
#include "base/json.hpp"
#include "prereg/error.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

namespace fs = std::filesystem;

namespace prereg {

std::vector<public_key> load_trusted_keys(const std::vector<fs::path> &paths) {
  std::vector<public_key> keys;
  const auto load = [&](const fs::path &file) {
    try {
      keys.push_back(public_key::from_pem(read_file(file), file.string()));
    } catch (const error &e) {
      throw invalid_input(fmt::format("--trust: not an Ed25519 public key: {}", e.what()),
                          file.string());
    }
  };
  for (const auto &p : paths) {
    std::error_code ec;
    if (fs::is_directory(p, ec)) {
      std::vector<fs::path> files;
      for (const auto &entry : fs::directory_iterator(p))
        if (entry.is_regular_file() && entry.path().extension() == ".pub")
          files.push_back(entry.path());
      std::sort(files.begin(), files.end());
      for (const auto &f : files)
        load(f);
    } else if (fs::is_regular_file(p, ec)) {
      load(p);
    } else {
      throw invalid_input("--trust: no such key file or folder", p.string());
    }
  }
  return keys;
}

std::optional<public_key> trust_root::find(const store &s, const std::string &fingerprint) const {
  if (pinned()) {
    for (const auto &k : keys)
      if (k.fingerprint() == fingerprint)
        return k;
    return std::nullopt;
  }
  try {
    return s.find_key(fingerprint);
  } catch (const std::exception &) {
    return std::nullopt; // a key file that does not match its name is no key
  }
}

std::string trust_root::describe(const store &s, const std::vector<std::string> &signers) const {
  const std::string who = signers.empty() ? std::string("no signer was accepted")
                                          : fmt::format("signer(s) {}", fmt::join(signers, ", "));
  if (pinned())
    return fmt::format("{}; pinned by {} ({} key(s))", who, source, keys.size());
  return fmt::format("{}; NOT PINNED: accepted because {} holds the key, and anyone who can write "
                     "the store can add one; pin with --trust KEY.pub|FINGERPRINT or {}",
                     who, (s.root() / "keys").string(), (s.root() / "trust.json").string());
}

trust_root resolve_trust(const std::vector<std::string> &args, const store &s) {
  trust_root t;
  const auto by_fingerprint = [&](const std::string &fp, const std::string &where,
                                  bool from_policy) {
    std::optional<public_key> k;
    try {
      k = s.find_key(fp);
    } catch (const error &e) {
      throw integrity_error(e.what(), e.where());
    }
    if (!k) {
      const std::string why =
          fmt::format("fingerprint {} names no key in {}", fp, (s.root() / "keys").string());
      if (from_policy)
        throw integrity_error("trust.json: " + why, where);
      throw invalid_input("--trust: " + why, where);
    }
    t.keys.push_back(*k);
  };
  if (!args.empty()) {
    t.source = "--trust";
    std::vector<fs::path> paths;
    for (const auto &a : args) {
      std::error_code ec;
      if (a.size() == 64 && is_full_hash(a) && !fs::exists(a, ec))
        by_fingerprint(a, a, false);
      else
        paths.emplace_back(a);
    }
    for (auto &k : load_trusted_keys(paths))
      t.keys.push_back(std::move(k));
    return t;
  }
  const fs::path policy = s.root() / "trust.json";
  std::error_code ec;
  if (!fs::exists(fs::symlink_status(policy, ec)))
    return t;
  json doc;
  try {
    doc = parse_json_strict(read_file(policy, 1 << 20), policy.string());
  } catch (const error &e) {
    throw integrity_error(fmt::format("trust.json does not parse: {}", e.what()), policy.string());
  }
  const auto keys = doc.is_object() && doc.size() == 1 ? doc.find("trusted_keys") : doc.end();
  if (keys == doc.end() || !keys->is_array() || keys->empty())
    throw integrity_error("trust.json must be {\"trusted_keys\": [FINGERPRINT, ...]} with at "
                          "least one fingerprint",
                          policy.string());
  t.source = "the store's trust.json";
  for (const auto &fp : *keys) {
    if (!fp.is_string() || !is_full_hash(fp.get<std::string>()))
      throw integrity_error("trust.json: every trusted key is a 64-hex fingerprint",
                            policy.string());
    by_fingerprint(fp.get<std::string>(), policy.string(), true);
  }
  return t;
}

} // namespace prereg
