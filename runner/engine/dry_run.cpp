// The dry run (dry_run.hpp): the arms bound as a run binds them, then the correctness gate.
#include "engine/dry_run.hpp"

#include "engine/context.hpp"
#include "engine/gate.hpp"
#include "prereg/error.hpp"

namespace prereg {
namespace {

/// The dry run reports nothing as it goes.
class silent_progress final : public progress_sink {
public:
  void phase(std::string_view) override {}
  void cell_done(std::size_t, std::size_t) override {}
};

} // namespace

dry_run_outcome dry_run(device &dev, const run_plan &plan, const arm_resolver &resolve) {
  if (plan.proto == nullptr)
    throw io_error("dry run: the plan has no protocol");
  silent_progress progress;
  const engine_hooks hooks;
  engine_detail::run_context ctx(dev, plan, resolve, progress, hooks);
  for (std::size_t i = 0; i < plan.cells.size(); ++i)
    if (ctx.skip[i])
      ctx.record_skip(i);
  engine_detail::check_correctness(ctx);
  dry_run_outcome out;
  out.correctness = std::move(ctx.raw.correctness);
  out.skipped = std::move(ctx.raw.deviations);
  if (ctx.reference_failure) {
    out.reference_failure = ctx.reference_failure->first;
    out.reference_where = ctx.reference_failure->second;
  }
  return out;
}

} // namespace prereg
