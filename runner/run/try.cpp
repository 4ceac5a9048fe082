// `prereg try`: a protocol file run as it is, unfrozen, with the same engine, into an
// EXPLORATORY report that is neither signed nor in the ledger.
#include "run/run.hpp"

#include "arms/outside_arm.hpp"
#include "base/fs.hpp"
#include "base/time.hpp"
#include "crypto/crypto.hpp"
#include "engine/measure.hpp"
#include "prereg/build_info.hpp"
#include "prereg/error.hpp"
#include "report/report.hpp"
#include "report/report_text.hpp"
#include "run/operation_check.hpp"
#include "run/progress.hpp"
#include "spec/operation.hpp"
#include "spec/operation_file.hpp"
#include "spec/registry.hpp"

#include <unistd.h>

#include <ctime>

namespace prereg {
namespace fs = std::filesystem;
namespace {

/// The file as it is: validated like a freeze, but nothing is stored, signed or ledgered.
frozen_protocol tried_protocol(const std::string &target) {
  frozen_protocol fp;
  fp.source = read_file(target);
  fp.proto = parse_protocol(fp.source, target);
  const fs::path dir = fs::absolute(target).parent_path();
  const operation_desc *op = nullptr;
  if (!fp.proto.op_file.empty()) { // an operation file, read as freeze reads it
    op = &load_operation_here(fp.proto, dir);
    fp.proto = parse_protocol(fp.source, target);
    refuse_named_axes(fp.proto);
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

} // namespace

fs::path try_protocol(const run_options &o) {
  const frozen_protocol fp = tried_protocol(o.target);
  const protocol &proto = fp.proto;

  if (!o.make_device)
    throw std::logic_error("run_options.make_device is not set");
  if (!o.resolve_arm)
    throw std::logic_error("run_options.resolve_arm is not set");
  std::unique_ptr<device> dev = o.make_device(proto.device, o.device_ordinal);
  json environment = dev->probe();
  run_meta meta;
  meta.device_ordinal = o.device_ordinal;
  run_plan plan = plan_run(proto, fp.hash, *dev, operation_named(proto.op), meta.deviations);
  plan.load_outside = [dir = fs::absolute(o.target).parent_path(), &proto](const arm_spec &spec) {
    const fs::path file = outside_file(dir, spec.file); // unfrozen: the file as it is now
    return spec.source == arm_source::plugin ? load_plugin_arm(file, spec.entry, proto, spec.id)
                                             : load_python_arm(file, spec.entry, proto, spec.id);
  };

  std::time_t t = std::time(nullptr);
  do {
    meta.run_id = "EXPLORATORY-" + utc_stamp(t++) + "-" + fp.hash.substr(0, 12);
  } while (fs::exists(o.out_dir / proto.id / meta.run_id));
  meta.started_at = utc_now_rfc3339();
  const fs::path final_dir = o.out_dir / proto.id / meta.run_id;
  const fs::path temp_dir = o.out_dir / proto.id / ("." + meta.run_id + ".partial");
  try {
    detail::signal_guard guard;
    detail::terminal_progress progress(!o.quiet && ::isatty(STDERR_FILENO));
    raw_run raw = measure(*dev, environment, plan, o.resolve_arm, progress, o.hooks);
    attach_regions(raw);
    detail::throw_if_signalled();
    meta.finished_at = utc_now_rfc3339();
    report_document report = build_report_document(fp, raw, meta);
    report.exploratory = true;
    const std::string payload = canonical_json(to_json(report));
    write_file_atomic(temp_dir / "report.json", payload);
    write_file_atomic(temp_dir / "report.md", render_markdown(report));
    write_file_atomic(temp_dir / "report.html", render_html(report));
    fs::rename(temp_dir, final_dir);
  } catch (...) {
    std::error_code ec;
    fs::remove_all(temp_dir, ec); // ours alone: the name is unique to this attempt
    throw;
  }
  return final_dir;
}

} // namespace prereg
