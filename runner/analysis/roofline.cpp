// The roofs of a cell (roofline.hpp).
#include "analysis/roofline.hpp"

#include "spec/bytes_model.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace prereg {
namespace {

bool usable(double ceiling) { return ceiling > 0.0 && std::isfinite(ceiling); }

constexpr double nan = std::numeric_limits<double>::quiet_NaN();

} // namespace

double mix_roof_gbps(std::uint64_t read, std::uint64_t write, double copy_gbps, double read_gbps,
                     double write_gbps) {
  const std::uint64_t paired = std::min(read, write);
  const std::uint64_t rest = std::max(read, write) - paired;
  double t = 0.0;
  if (paired > 0) {
    if (!usable(copy_gbps))
      return nan;
    t = (2.0 * static_cast<double>(paired)) / copy_gbps;
  }
  if (rest > 0) {
    const double alone = read > write ? read_gbps : write_gbps;
    if (!usable(alone))
      return nan;
    t = t + static_cast<double>(rest) / alone;
  }
  if (!(t > 0.0))
    return nan;
  return static_cast<double>(read + write) / t;
}

double compute_ceiling_tflops(const instrument_record &in, const std::string &type) {
  if (!in.roofs)
    return nan;
  const auto it = in.roofs->compute.find(type);
  if (it == in.roofs->compute.end() || !it->second.unknown.empty())
    return nan;
  return it->second.tflops;
}

report_roofline roofline_of(const protocol &proto, const cell_key &key, std::int64_t repeat,
                            double statistic_ms, double gbps, std::uint64_t bytes_per_step,
                            const instrument_record &in) {
  report_roofline r;
  const op_traffic t = traffic_per_step(proto.op, proto.type, key, repeat);
  r.read_bytes_per_step = t.read;
  r.write_bytes_per_step = t.write;
  r.roof_gbps =
      mix_roof_gbps(t.read, t.write, in.ceiling_gbps, in.roofs->read.gbps, in.roofs->write.gbps);
  r.pct_roof = pct_ceiling(gbps, r.roof_gbps);
  r.flops_per_step = flops_per_step(proto.op, proto.type, key, repeat);
  if (!r.flops_per_step)
    return r;
  r.compute = compute_type(proto.op, proto.type, key.pass);
  r.tflops = tflops(*r.flops_per_step, statistic_ms);
  r.pct_compute = pct_ceiling(r.tflops, compute_ceiling_tflops(in, *r.compute));
  if (bytes_per_step > 0)
    r.intensity = static_cast<double>(*r.flops_per_step) / static_cast<double>(bytes_per_step);
  return r;
}

} // namespace prereg
