// A grading's protocols: their bodies, built from the task, the grading and a submission, and
// their freeze (docs/grading.md, "A grading's protocols").
#include "grade/protocols.hpp"

#include "grade/score.hpp"
#include "prereg/error.hpp"

#include <algorithm>

#include <fmt/format.h>

namespace prereg::grade {

std::string grading_protocol_id(const std::string &task_id) {
  return task_id.substr(0, 58) + "-grade";
}

std::string arm_file_rel(const std::string &task_hash, const submission &sub,
                         const std::string &grade_id) {
  if (sub.kind == submission_kind::c_source)
    return fmt::format("builds/{}/{}/libsubmission.so", grade_id, sub.id);
  return fmt::format("{}/{}", submission_rel(task_hash, sub.id), sub.files.front().name);
}

json grading_body(const json &task_body, const std::string &task_hash, const json &axes,
                  const grading_facts &g, const std::string &role, const submission *sub) {
  json body = task_body;
  const json task = body.at("task");
  body.erase("task");
  body.erase("predictions");
  body["id"] = grading_protocol_id(body.at("id").get<std::string>());
  body["axes"] = axes;
  json grading = {{"task", task_hash},
                  {"grade", g.grade_id},
                  {"role", role},
                  {"nonce", g.nonce},
                  {"input_sets", task.at("input_sets")}};
  if (!g.seed.empty())
    grading["seed"] = g.seed;
  if (sub != nullptr) {
    grading["submission"] = sub->id;
    json arm = {
        {"id", sub->name}, {"launch", "stream"}, {"repeat", 1}, {"options", json::object()}};
    const std::string file = arm_file_rel(task_hash, *sub, g.grade_id);
    if (sub->kind == submission_kind::python) {
      arm["python"] = file;
      arm["function"] = sub->entry;
    } else {
      arm["plugin"] = file;
      arm["name"] = sub->entry;
    }
    body["arms"] = json::array({arm});
  }
  body["grading"] = std::move(grading);
  return to_json(protocol_from_json(body, "grading protocol")); // normalised: what is hashed
}

json retime_body(const json &first, const cell_key &cell, const std::string &nonce) {
  json body = first;
  body["passes"] = json::array({std::string(to_string(cell.pass))});
  for (auto &[axis, list] : body.at("axes").items()) {
    std::int64_t v = 0;
    if (!cell.named())
      v = axis == "rows" ? cell.rows : axis == "cols" ? cell.cols : 0;
    for (const auto &a : cell.shape)
      if (a.axis == axis)
        v = a.extent;
    if (v <= 0)
      throw invalid_input(
          fmt::format("the re-timed cell {} has no extent of axis {}", cell_label(cell), axis));
    list = json::array({v});
  }
  json &m = body.at("measurement");
  m.erase("stop");
  m["repetitions"] =
      std::max(retime_samples, body.at("grading").at("input_sets").get<std::int64_t>() - 1);
  body["grading"]["role"] = "retime";
  body["grading"]["nonce"] = nonce;
  return to_json(protocol_from_json(body, "re-timing protocol"));
}

std::string freeze_grading(const store &s, const json &body, const signing_key &key) {
  const protocol p = protocol_from_json(body, "grading protocol");
  const std::string source = canonical_json(to_json(p)) + "\n";
  return s.freeze(source, p, key, s.root()).hash;
}

} // namespace prereg::grade
