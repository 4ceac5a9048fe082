// `prereg export` / `prereg import`: a frozen protocol as one self-contained, verifiable JSON.
#include "store/bundle.hpp"

#include "base/fs.hpp"
#include "base/json_reader.hpp"
#include "crypto/signed_json.hpp"
#include "prereg/build_info.hpp"
#include "prereg/error.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace prereg {
namespace fs = std::filesystem;
namespace {

constexpr std::string_view unknown_member = "is not a member of the bundle format";

/// A bundle's reading failure (base/json_reader.hpp): invalid_input at the bundle's file, in the
/// words import has always used.
class bundle_fault final : public json_fault {
public:
  explicit bundle_fault(const std::string &where) : m_where(where) {}
  [[noreturn]] void fail(const std::string &path, std::string_view problem) const override {
    if (path.empty()) // the root, which is not an object
      throw invalid_input("a bundle is a JSON object", m_where);
    if (problem == "is missing")
      throw invalid_input(fmt::format("bundle lacks member {}", path), m_where);
    if (problem == unknown_member)
      throw invalid_input(fmt::format("bundle has the unknown member {}", path), m_where);
    throw invalid_input(fmt::format("bundle member {} {}", path, problem), m_where);
  }

private:
  const std::string &m_where;
};

/// The members of a well-formed bundle; `body` and `record` point into the bundle.
struct bundle_members {
  std::string hash;
  const json *body = nullptr;
  std::string source;
  const json *record = nullptr;
  std::string pem;
};

// The member set, the version, and each member's type (exit 2).
bundle_members read_members(const json &b, const std::string &where) {
  const bundle_fault fault(where);
  const json_node root(b, "", fault);
  root.only({"prereg_bundle", "protocol_hash", "protocol", "source", "freeze", "public_key",
             "tool_version"},
            unknown_member);
  const json &version = root["prereg_bundle"].value();
  if (!version.is_number_integer() || version.get<std::int64_t>() != bundle_version)
    throw invalid_input(fmt::format("prereg_bundle must be {} (this build reads version {})",
                                    bundle_version, bundle_version),
                        where);
  bundle_members m;
  m.hash = root["protocol_hash"].str();
  m.body = &root["protocol"].value();
  m.source = root["source"].str();
  m.record = &root["freeze"].value();
  m.pem = root["public_key"].str();
  (void)root["tool_version"].str();
  if (!m.body->is_object() || !m.record->is_object())
    throw invalid_input("bundle members protocol and freeze must be objects", where);
  return m;
}

// 1. The protocol is the one its hash names, and this build validates it.
protocol verify_protocol(const bundle_members &m, const std::string &where) {
  if (protocol_hash(*m.body) != m.hash)
    throw integrity_error(fmt::format("the bundle's protocol hashes to {}, not to its "
                                      "protocol_hash {}",
                                      protocol_hash(*m.body), m.hash),
                          where);
  protocol proto = protocol_from_json(*m.body, where + "#/protocol");
  for (const auto &a : proto.arms)
    if (a.outside())
      throw invalid_input(fmt::format("arm {} is an outside arm: bundles do not carry them", a.id),
                          where);
  return proto;
}

// 2. The freeze record names the protocol and the source, and is signed by the key carried;
// 3. when the store pins its signers (trust.json or --trust), the signer must be one. Returns
// the key.
public_key verify_freeze(const bundle_members &m, const std::string &where,
                         const trust_root &trust) {
  const json &record = *m.record;
  if (record.value("protocol_hash", "") != m.hash)
    throw integrity_error("the bundle's freeze record does not name its protocol hash", where);
  if (record.value("source_sha256", "") != sha256_hex(m.source))
    throw integrity_error("the bundle's source does not match its freeze record's source_sha256",
                          where);
  const std::string signer = record_signer(record);
  public_key pub = public_key::from_pem(m.pem, where + "#/public_key");
  if (signer.empty() || pub.fingerprint() != signer)
    throw integrity_error(fmt::format("the bundle's public key {} is not the freeze record's "
                                      "signer {}",
                                      pub.fingerprint(), signer.empty() ? "(none)" : signer),
                          where);
  if (!verify_record(record, pub))
    throw integrity_error("the bundle's freeze record signature does not verify (tampered)", where);
  if (trust.pinned() &&
      std::none_of(trust.keys.begin(), trust.keys.end(),
                   [&](const public_key &k) { return k.fingerprint() == signer; }))
    throw integrity_error(fmt::format("the freeze record's signer {} is not pinned by {}: pin it "
                                      "to import (docs/store.md, trust.json)",
                                      signer, trust.source),
                          where);
  return pub;
}

// The protocol's files, the freeze record last (it marks the protocol stored); none is left
// behind when one cannot be written.
void write_protocol_files(const fs::path &dir, const bundle_members &m) {
  std::error_code ec;
  try {
    write_file_atomic(dir / "source.yaml", m.source);
    write_file_atomic(dir / "protocol.json", canonical_json(*m.body));
    write_file_atomic(dir / "freeze.json", canonical_json(*m.record)); // last: marks it stored
  } catch (...) {
    fs::remove_all(dir, ec);
    throw;
  }
}

// Under the store lock: stores the protocol (unless this very freeze record is stored), saves
// the key and appends the import entry (unless the ledger records this freeze already).
import_outcome store_bundle(const store &s, const bundle_members &m, const std::string &id,
                            const public_key &pub, const signing_key &key) {
  const json &record = *m.record;
  import_outcome out{m.hash, id, pub.fingerprint(), false};
  file_lock lock(s.lock_path());
  ledger l = s.get_ledger();
  l.verify_for_append(&key);
  const fs::path dir = s.protocol_dir(m.hash);
  std::error_code ec;
  if (fs::exists(dir / "freeze.json", ec)) {
    const frozen_protocol here = s.load(m.hash);
    if (canonical_json(here.freeze) != canonical_json(record))
      throw integrity_error(fmt::format("protocol {} is already frozen in this store with another "
                                        "freeze record (frozen_at {}, signer {})",
                                        m.hash, here.freeze.value("frozen_at", "?"),
                                        record_signer(here.freeze)),
                            (dir / "freeze.json").string());
    if (ledger_records_freeze(l.entries(), m.hash)) {
      out.already_present = true;
      return out;
    }
  } else {
    s.add_key(pub);
    write_protocol_files(dir, m);
  }
  s.add_key(pub);
  l.append({{"event", ledger_event::import},
            {"protocol_hash", m.hash},
            {"protocol_id", id},
            {"freeze_signer", out.signer},
            {"frozen_at", record.value("frozen_at", "")},
            {"freeze_sha256", sha256_hex(canonical_json(record))}},
           key);
  return out;
}

} // namespace

json export_bundle(const store &s, const std::string &hash) {
  const frozen_protocol fp = s.load(hash);
  for (const auto &a : fp.proto.arms)
    if (a.outside())
      throw invalid_input(fmt::format("protocol {} has the outside arm {} ({}): a bundle does not "
                                      "carry outside files, so it cannot be exported",
                                      fp.proto.id, a.id, a.label()));
  const std::string signer = record_signer(fp.freeze);
  const auto key = s.find_key(signer);
  if (!key)
    throw integrity_error(fmt::format("the store has no public key {} of the freeze record's "
                                      "signer",
                                      signer),
                          (s.root() / "keys").string());
  return {{"prereg_bundle", bundle_version},
          {"protocol_hash", fp.hash},
          {"protocol", fp.body},
          {"source", fp.source},
          {"freeze", fp.freeze},
          {"public_key", key->pem()},
          {"tool_version", build_info::version}};
}

import_outcome import_bundle(const store &s, const json &b, const std::string &where,
                             const trust_root &trust, const signing_key &key) {
  const bundle_members m = read_members(b, where);
  const protocol proto = verify_protocol(m, where);
  const public_key pub = verify_freeze(m, where, trust);
  return store_bundle(s, m, proto.id, pub, key);
}

} // namespace prereg
