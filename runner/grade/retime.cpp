// The re-timings' loop (retime.hpp).
#include "grade/retime.hpp"

#include <thread>

namespace prereg::grade {

std::size_t
retime_until(const protocol &task, const report_document &baseline, const graded_run &first,
             const std::function<const retime_run *(std::size_t, const cell_key &)> &attempt,
             std::chrono::milliseconds pause) {
  graded_run run = first;
  run.first_only = true;
  const entry_score e = score_entry(task, baseline, run);
  if (e.excluded())
    return 0;
  const cell_key cell = retime_cell(*task.task, e);
  run.first_only = false;
  run.retimes.clear();
  for (std::size_t i = 0; i < retime_attempts; ++i) {
    if (i > 0)
      std::this_thread::sleep_for(pause);
    run.retimes.push_back(attempt(i, cell));
    if (!retime_again(score_entry(task, baseline, run)))
      break;
  }
  return run.retimes.size();
}

json nest_retimes(std::vector<json> in_order) {
  if (in_order.empty())
    return nullptr;
  json last = std::move(in_order.back());
  in_order.pop_back();
  if (!in_order.empty())
    last["earlier"] = std::move(in_order);
  return last;
}

json judged_retimes(std::vector<json> in_order, const entry_score &sc) {
  for (std::size_t i = 0; i < in_order.size(); ++i) {
    const json facts = i < sc.retimes.size() ? retime_facts_json(sc.retimes[i]) : json(nullptr);
    for (const char *k : {"first", "second", "factor", "confirmed"})
      in_order[i][k] = facts.is_null() ? json(nullptr) : facts.at(k);
  }
  return nest_retimes(std::move(in_order));
}

std::vector<json> flat_retimes(const json &retime) {
  if (retime.is_null())
    return {};
  std::vector<json> out;
  if (retime.contains("earlier"))
    out.assign(retime.at("earlier").begin(), retime.at("earlier").end());
  out.push_back(retime);
  out.back().erase("earlier");
  return out;
}

} // namespace prereg::grade
