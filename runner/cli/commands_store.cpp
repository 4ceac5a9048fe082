// The commands on the store: keygen, list, show, ledger, export, import.
#include "cli/command_functions.hpp"

#include "base/fs.hpp"
#include "base/json.hpp"
#include "crypto/keyring.hpp"
#include "prereg/error.hpp"
#include "store/bundle.hpp"
#include "store/ledger.hpp"
#include "store/store.hpp"
#include "store/trust.hpp"

#include <fmt/format.h>

#include <string>
#include <string_view>
#include <vector>

namespace prereg::cli::detail {

int cmd_keygen(args_t args) {
  CLI::App app{"create an Ed25519 signing key pair", "keygen"};
  common_options o;
  bool force = false;
  o.add_key(app);
  app.add_flag("--force", force, "replace an existing key");
  if (!parse(app, args))
    return 0;
  const auto path = default_key_path(o.key_file);
  const signing_key key = signing_key::generate();
  key.save(path, force); // without --force: refused if the key, its .pub or a link is there
  fmt::print(stderr, "prereg: wrote {} (mode 0600) and its public key beside it\n", path.string());
  fmt::print("{}\n", key.fingerprint());
  return 0;
}

int cmd_list(args_t args) {
  CLI::App app{"list frozen protocols", "list"};
  common_options o;
  o.add_store(app);
  if (!parse(app, args))
    return 0;
  const store s = o.open_store();
  const auto &entries = s.get_ledger().entries();
  fmt::print("{:<64}  {:<24}  {:>3}  {:<27}  {:>4}  {}\n", "hash", "id", "rev", "frozen-at", "runs",
             "title");
  for (const auto &h : s.hashes()) {
    const frozen_protocol fp = s.load(h);
    fmt::print("{:<64}  {:<24}  {:>3}  {:<27}  {:>4}  {}\n", h, fp.proto.id, fp.proto.revision,
               fp.freeze.value("frozen_at", ""), attempts_of(entries, h),
               escape_control(fp.proto.title));
  }
  return 0;
}

namespace {

// An outside arm as the protocol names it: "python: FILE  function: F" or
// "plugin: FILE  name: N".
std::string outside_arm_text(std::string_view kind, const std::string &file,
                             const std::string &entry) {
  return fmt::format("{}: {}  {}: {}", kind, escape_control(file),
                     kind == "plugin" ? "name" : "function", escape_control(entry));
}

// One freeze record kernels entry: a kernel and its build's source hash, or an outside arm's
// resolved file, entry and SHA-256.
std::string frozen_arm_text(const json &k) {
  for (const std::string kind : {"python", "plugin"})
    if (k.contains(kind))
      return fmt::format(
          "{}  sha256: {}",
          outside_arm_text(kind, k.value("file", k.value(kind, "")), k.value("entry", "")),
          k.value("sha256", ""));
  return fmt::format("{} {}", k.value("kernel", ""), k.value("source_sha256", ""));
}

} // namespace

int cmd_show(args_t args) {
  CLI::App app{"show a frozen protocol, its freeze record and its runs", "show"};
  common_options o;
  std::string hash;
  o.add_store(app);
  app.add_option("HASH", hash, "hash, unique prefix or id")->required();
  if (!parse(app, args))
    return 0;
  const store s = o.open_store();
  std::string which;
  const frozen_protocol fp = s.load(s.resolve(hash, &which));
  if (!which.empty())
    fmt::print(stderr, "prereg: notice: {}\n", which);
  const auto versions = s.versions_of(fp.proto.id);
  fmt::print("protocol {}\n  id: {}\n  revision: {} ({} frozen version{} of this id)\n  title: "
             "{}\n  hypothesis: {}\n  device: {}  operation: {}  dtype: {}\n",
             fp.hash, fp.proto.id, fp.proto.revision, versions.size(),
             versions.size() == 1 ? "" : "s", escape_control(fp.proto.title),
             escape_control(fp.proto.hypothesis), fp.proto.device, fp.proto.op,
             to_string(fp.proto.type));
  fmt::print("  arms:\n");
  for (const auto &a : fp.proto.arms)
    fmt::print("    {}: {}\n", a.id,
               a.outside() ? outside_arm_text(a.source == arm_source::plugin ? "plugin" : "python",
                                              a.file, a.entry)
                           : "kernel " + a.kernel);
  fmt::print("  predictions:\n");
  for (const auto &pr : fp.proto.predictions)
    fmt::print("    {}: {}  [expect {}]\n", pr.id, escape_control(pr.claim),
               escape_control(pr.expect));
  fmt::print("freeze record\n  frozen_at: {}\n  signer: {}\n  source_sha256: {}\n  tool_version: "
             "{}\n  kernels:\n",
             fp.freeze.value("frozen_at", ""), fp.freeze.value("signer", ""),
             fp.freeze.value("source_sha256", ""), fp.freeze.value("tool_version", ""));
  for (const auto &[arm, k] : fp.freeze.at("kernels").items())
    fmt::print("    {}: {}\n", arm, frozen_arm_text(k));
  fmt::print("runs\n");
  std::size_t n = 0;
  for (const auto &e : s.get_ledger().entries()) {
    if (e.value("protocol_hash", "") != fp.hash || e.value("event", "") == "freeze")
      continue;
    ++n;
    fmt::print(
        "  seq {:>4}  {}  {:<13} {}{}\n", e.value("seq", 0), e.value("time", ""),
        e.value("event", ""), e.value("run_id", ""),
        e.contains("report_sha256")
            ? " report " + e.value("report_sha256", "").substr(0, 16)
            : (e.contains("reason") ? " (" + escape_control(e.value("reason", "")) + ")" : ""));
  }
  if (n == 0)
    fmt::print("  (none)\n");
  return 0;
}

int cmd_ledger(args_t args) {
  CLI::App app{"check the ledger, or write a signed checkpoint of its head", "ledger"};
  common_options o;
  std::string action;
  std::vector<std::string> trust;
  std::vector<std::string> checkpoints;
  std::string out;
  o.add_store(app);
  o.add_key(app);
  app.add_option("ACTION", action, "verify | checkpoint")
      ->required()
      ->check(CLI::IsMember({"verify", "checkpoint"}));
  app.add_option("--trust", trust,
                 "verify: accept only this signer: a PEM FILE, a DIR of *.pub or a FINGERPRINT "
                 "(repeatable)");
  app.add_option("--checkpoint", checkpoints,
                 "verify: fail unless the ledger still holds this checkpoint FILE (repeatable)");
  app.add_option("--out", out, "checkpoint: write it to FILE (else stdout)");
  if (!parse(app, args))
    return 0;
  const store s = o.open_store();
  const ledger l = s.get_ledger();
  if (action == "checkpoint") {
    const signing_key key = load_or_create_key(default_key_path(o.key_file));
    const std::string text = canonical_json(make_checkpoint(l, key)) + "\n";
    if (out.empty())
      fmt::print("{}", text);
    else
      write_file_atomic(out, text);
    return 0;
  }
  const trust_root t = resolve_trust(trust, s);
  const key_lookup keys = [&](const std::string &fp) { return t.find(s, fp); };
  const auto n = l.verify(keys);
  const std::vector<std::string> signers = l.last_signers();
  std::string held;
  for (const auto &c : checkpoints) {
    const json cp = parse_json_strict(read_file(c, 1 << 16), c);
    held += fmt::format(", holds checkpoint seq {}", check_checkpoint(l, cp, keys, c));
  }
  fmt::print("ok {} entries{}\n", n, held);
  fmt::print("trust: {}\n", escape_control(t.describe(s, signers)));
  return 0;
}

int cmd_export(args_t args) {
  CLI::App app{"write a frozen protocol as a self-contained, verifiable JSON bundle", "export"};
  common_options o;
  std::string hash;
  o.add_store(app);
  app.add_option("HASH", hash, "hash, unique prefix or id")->required();
  if (!parse(app, args))
    return 0;
  const store s = o.open_store();
  std::string which;
  const std::string full = s.resolve(hash, &which);
  if (!which.empty())
    fmt::print(stderr, "prereg: notice: {}\n", which);
  fmt::print("{}\n", canonical_json(export_bundle(s, full)));
  return 0;
}

int cmd_import(args_t args) {
  CLI::App app{"verify a bundle from `prereg export` and store its frozen protocol", "import"};
  common_options o;
  std::string file;
  std::vector<std::string> trust;
  o.add_store(app);
  o.add_key(app);
  app.add_option("FILE", file, "a bundle written by `prereg export`")->required();
  app.add_option("--trust", trust,
                 "accept only this freeze signer: a PEM FILE, a DIR of *.pub or a FINGERPRINT "
                 "(repeatable; default: the store's trust.json, if any)");
  if (!parse(app, args))
    return 0;
  const store s = o.open_store();
  const json bundle = parse_json_strict(read_file(file, 1 << 24), file);
  const signing_key key = load_or_create_key(default_key_path(o.key_file));
  s.add_key(key.public_part());
  const trust_root t = resolve_trust(trust, s);
  const import_outcome r = import_bundle(s, bundle, file, t, key);
  if (r.already_present)
    fmt::print("{} is already in this store (nothing written)\n", r.protocol_id);
  else
    fmt::print("imported {} frozen by {} into {}{}\n", r.protocol_id, r.signer.substr(0, 16),
               s.root().string(),
               t.pinned() ? "" : " (signer not pinned: no trust.json, no --trust)");
  fmt::print("{}\n", r.hash);
  return 0;
}

} // namespace prereg::cli::detail
