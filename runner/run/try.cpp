// `prereg try`: a protocol file run as it is, unfrozen, with the same engine, into an
// EXPLORATORY report that is neither signed nor in the ledger.
#include "run/run.hpp"

#include "arms/outside_arm.hpp"
#include "base/fs.hpp"
#include "base/rng.hpp"
#include "base/time.hpp"
#include "crypto/crypto.hpp"
#include "crypto/keyring.hpp"
#include "engine/measure.hpp"
#include "prereg/build_info.hpp"
#include "prereg/error.hpp"
#include "report/report.hpp"
#include "report/report_text.hpp"
#include "run/ceiling_cache.hpp"
#include "run/isolate.hpp"
#include "run/operation_check.hpp"
#include "run/phases.hpp"
#include "run/progress.hpp"
#include "spec/operation.hpp"
#include "spec/operation_file.hpp"
#include "spec/registry.hpp"

#include <fmt/format.h>

#include <unistd.h>

#include <chrono>
#include <ctime>
#include <optional>

namespace prereg {
namespace fs = std::filesystem;
namespace {

/// The file as it is: validated like a freeze, but nothing is stored, signed or ledgered.
frozen_protocol tried_protocol(const std::string &target, const run_options &o) {
  frozen_protocol fp;
  fp.source = read_file(target);
  fp.proto = parse_protocol(fp.source, target);
  const fs::path dir = fs::absolute(target).parent_path();
  const operation_desc *op = nullptr;
  if (!fp.proto.op_file.empty()) { // an operation file, read as freeze reads it
    const operation_load loaded =
        load_operation_here(fp.proto, dir,
                            {o.key_path.empty() ? default_key_path("") : o.key_path,
                             o.store_root.empty() ? store::default_root("") : o.store_root});
    if (const std::string notice = isolation_notice(loaded.isolation, "the operation file");
        !notice.empty())
      fmt::print(stderr, "prereg: notice: {}\n", escape_control(notice));
    op = &loaded.op;
    fp.proto = parse_protocol(fp.source, target);
  }
  fp.body = to_json(fp.proto);
  fp.canonical = canonical_json(fp.body);
  fp.hash = sha256_hex(fp.canonical);
  json kernels = json::object();
  for (const auto &arm : fp.proto.arms) {
    if (arm.outside()) { // the file as it is now, hashed like a freeze would
      const fs::path file = outside_file(fs::absolute(target).parent_path(), arm.file);
      kernels[arm.id] = {{arm.source == arm_source::plugin ? "plugin" : "python", arm.file},
                         {"entry", arm.entry},
                         {"file", file.string()},
                         {"sha256", outside_file_sha256(file, arm.id)}};
      continue;
    }
    kernels[arm.id] = {{"kernel", arm.kernel},
                       {"source_sha256", find_arm(fp.proto.device, arm.kernel)->source_sha256}};
  }
  fp.freeze = {{"exploratory", "not frozen: `prereg try` ran the file as it was"},
               {"protocol_hash", fp.hash},
               {"source_sha256", sha256_hex(fp.source)},
               {"kernels", kernels},
               {"tool_version", build_info::version}};
  if (op != nullptr) {
    const fs::path file = outside_file(dir, fp.proto.op_file);
    fp.freeze["operation"] = operation_record(fp.proto, *op, file.string(),
                                              outside_file_sha256(file, "operation " + op->name));
  }
  return fp;
}

/// The signing key a run from here would use, when there is one and it loads: `try` signs no
/// report, only the copy ceilings it keeps in the cache (run/ceiling_cache.hpp). Loaded after
/// the measuring process started, as a run loads it.
std::optional<signing_key> key_if_any() {
  try {
    const fs::path path = default_key_path("");
    std::error_code ec;
    if (!fs::is_regular_file(path, ec))
      return std::nullopt;
    return signing_key::load(path);
  } catch (const std::exception &) {
    return std::nullopt;
  }
}

} // namespace

fs::path try_protocol(const run_options &o) {
  using clock = std::chrono::steady_clock;
  const auto ms = [](clock::time_point a, clock::time_point b) {
    return std::chrono::duration<double, std::milli>(b - a).count();
  };
  const auto start = clock::now();
  const frozen_protocol fp = tried_protocol(o.target, o);
  const protocol &proto = fp.proto;

  if (!o.make_device)
    throw std::logic_error("run_options.make_device is not set");
  if (!o.resolve_arm)
    throw std::logic_error("run_options.resolve_arm is not set");
  // The measuring side: with o.isolate (the CLI) the same sandboxed measuring process as a run.
  run_options measuring = o;
  measuring.load_outside = [dir = fs::absolute(o.target).parent_path(),
                            &proto](const arm_spec &spec) {
    const fs::path file = outside_file(dir, spec.file); // unfrozen: the file as it is now
    return spec.source == arm_source::plugin ? load_plugin_arm(file, spec.entry, proto, spec.id)
                                             : load_python_arm(file, spec.entry, proto, spec.id);
  };
  const std::unique_ptr<measuring_side> side =
      start_measuring(measuring, proto, seed_from_hash(fp.hash));
  const measuring_plan planned = side->plan();
  run_meta meta;
  meta.device_ordinal = o.device_ordinal;
  meta.deviations = planned.skipped;
  meta.scratch = planned.scratch;
  meta.isolation = planned.isolation; // the measuring process's walls (docs/engine.md)

  std::time_t t = std::time(nullptr);
  do {
    meta.run_id = "EXPLORATORY-" + utc_stamp(t++) + "-" + fp.hash.substr(0, 12);
  } while (fs::exists(o.out_dir / proto.id / meta.run_id));
  meta.started_at = utc_now_rfc3339();
  // A try reuses a ceiling of this device and build measured within the hour (docs/engine.md).
  const std::optional<signing_key> key = key_if_any();
  const json identity = ceiling_identity(planned.environment, proto.device);
  const json offered = key ? find_ceiling(identity, *key, meta.started_at) : json();
  if (offered.is_object())
    side->offer_ceiling(offered);
  const fs::path final_dir = o.out_dir / proto.id / meta.run_id;
  const fs::path temp_dir = o.out_dir / proto.id / ("." + meta.run_id + ".partial");
  try {
    detail::signal_guard guard;
    detail::terminal_progress progress(!o.quiet && ::isatty(STDERR_FILENO));
    const auto measure_start = clock::now();
    raw_run raw = side->measure(progress);
    const auto measure_end = clock::now();
    meta.watchdog = side->watchdog();
    detail::throw_if_signalled();
    check_ceiling_reuse(raw.instrument, offered);
    meta.finished_at = utc_now_rfc3339();
    report_document report = build_report_document(fp, raw, meta);
    report.exploratory = true;
    const auto built = clock::now();
    report.phases = make_report_phases(ms(start, measure_start), ms(measure_start, measure_end),
                                       raw, ms(measure_end, built), ms(start, built));
    const std::string payload = canonical_json(to_json(report));
    write_file_atomic(temp_dir / "report.json", payload);
    write_file_atomic(temp_dir / "report.md", render_markdown(report));
    write_file_atomic(temp_dir / "report.html", render_html(report));
    fs::rename(temp_dir, final_dir);
    if (key)
      remember_ceiling(identity, raw.instrument, meta.started_at, "try " + meta.run_id, *key);
  } catch (...) {
    std::error_code ec;
    fs::remove_all(temp_dir, ec); // ours alone: the name is unique to this attempt
    throw;
  }
  return final_dir;
}

} // namespace prereg
