// `prereg export` / `prereg import`: a frozen protocol as one self-contained, verifiable JSON.
#include "store/bundle.hpp"

#include "base/fs.hpp"
#include "crypto/signed_json.hpp"
#include "prereg/build_info.hpp"
#include "prereg/error.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace prereg {
namespace fs = std::filesystem;
namespace {

const json &member(const json &b, const char *name, const std::string &where) {
  const auto it = b.find(name);
  if (it == b.end())
    throw invalid_input(fmt::format("bundle lacks member {}", name), where);
  return *it;
}

std::string text(const json &b, const char *name, const std::string &where) {
  const json &v = member(b, name, where);
  if (!v.is_string())
    throw invalid_input(fmt::format("bundle member {} is not a string", name), where);
  return v.get<std::string>();
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
  if (!b.is_object())
    throw invalid_input("a bundle is a JSON object", where);
  for (const auto &[k, v] : b.items())
    if (k != "prereg_bundle" && k != "protocol_hash" && k != "protocol" && k != "source" &&
        k != "freeze" && k != "public_key" && k != "tool_version")
      throw invalid_input(fmt::format("bundle has the unknown member {}", message_excerpt(k)),
                          where);
  const json &version = member(b, "prereg_bundle", where);
  if (!version.is_number_integer() || version.get<std::int64_t>() != bundle_version)
    throw invalid_input(fmt::format("prereg_bundle must be {} (this build reads version {})",
                                    bundle_version, bundle_version),
                        where);
  const std::string hash = text(b, "protocol_hash", where);
  const json &body = member(b, "protocol", where);
  const std::string source = text(b, "source", where);
  const json &record = member(b, "freeze", where);
  const std::string pem = text(b, "public_key", where);
  (void)text(b, "tool_version", where);
  if (!body.is_object() || !record.is_object())
    throw invalid_input("bundle members protocol and freeze must be objects", where);

  // 1. The protocol is the one its hash names, and this build validates it.
  if (protocol_hash(body) != hash)
    throw integrity_error(fmt::format("the bundle's protocol hashes to {}, not to its "
                                      "protocol_hash {}",
                                      protocol_hash(body), hash),
                          where);
  const protocol proto = protocol_from_json(body, where + "#/protocol");
  for (const auto &a : proto.arms)
    if (a.outside())
      throw invalid_input(fmt::format("arm {} is an outside arm: bundles do not carry them", a.id),
                          where);
  // 2. The freeze record names it and the source, and is signed by the key carried.
  if (record.value("protocol_hash", "") != hash)
    throw integrity_error("the bundle's freeze record does not name its protocol hash", where);
  if (record.value("source_sha256", "") != sha256_hex(source))
    throw integrity_error("the bundle's source does not match its freeze record's source_sha256",
                          where);
  const std::string signer = record_signer(record);
  const public_key pub = public_key::from_pem(pem, where + "#/public_key");
  if (signer.empty() || pub.fingerprint() != signer)
    throw integrity_error(fmt::format("the bundle's public key {} is not the freeze record's "
                                      "signer {}",
                                      pub.fingerprint(), signer.empty() ? "(none)" : signer),
                          where);
  if (!verify_record(record, pub))
    throw integrity_error("the bundle's freeze record signature does not verify (tampered)", where);
  // 3. Trust: when the store pins its signers (trust.json or --trust), the signer must be one.
  if (trust.pinned() &&
      std::none_of(trust.keys.begin(), trust.keys.end(),
                   [&](const public_key &k) { return k.fingerprint() == signer; }))
    throw integrity_error(fmt::format("the freeze record's signer {} is not pinned by {}: pin it "
                                      "to import (docs/store.md, trust.json)",
                                      signer, trust.source),
                          where);

  import_outcome out{hash, proto.id, signer, false};
  const std::string canonical = canonical_json(body);
  file_lock lock(s.lock_path());
  ledger l = s.get_ledger();
  l.verify_for_append(&key);
  const fs::path dir = s.protocol_dir(hash);
  std::error_code ec;
  if (fs::exists(dir / "freeze.json", ec)) {
    const frozen_protocol here = s.load(hash);
    if (canonical_json(here.freeze) != canonical_json(record))
      throw integrity_error(fmt::format("protocol {} is already frozen in this store with another "
                                        "freeze record (frozen_at {}, signer {})",
                                        hash, here.freeze.value("frozen_at", "?"),
                                        record_signer(here.freeze)),
                            (dir / "freeze.json").string());
    if (ledger_records_freeze(l.entries(), hash)) {
      out.already_present = true;
      return out;
    }
  } else {
    s.add_key(pub);
    try {
      write_file_atomic(dir / "source.yaml", source);
      write_file_atomic(dir / "protocol.json", canonical);
      write_file_atomic(dir / "freeze.json", canonical_json(record)); // last: marks it stored
    } catch (...) {
      fs::remove_all(dir, ec);
      throw;
    }
  }
  s.add_key(pub);
  l.append({{"event", ledger_event::import},
            {"protocol_hash", hash},
            {"protocol_id", proto.id},
            {"freeze_signer", signer},
            {"frozen_at", record.value("frozen_at", "")},
            {"freeze_sha256", sha256_hex(canonical_json(record))}},
           key);
  return out;
}

} // namespace prereg
