// The protocol's version and identity: `prereg` (which decides the schema), id, revision,
// title, hypothesis and device.
#include "spec/protocol_sections.hpp"

#include <limits>

namespace prereg::protocol_detail {
namespace {

constexpr std::int64_t max_revision = 1000000;
constexpr std::size_t max_title_bytes = 256; // free-text fields, in UTF-8 bytes
constexpr std::size_t max_hypothesis_bytes = 4096;

// Refuses the keys of the other schema at the key itself.
void refuse_other_schema_keys(const node &root, std::int64_t schema) {
  if (const node *k = schema == 1 ? key_node(root, "axes") : nullptr)
    fail(*k, "axes needs prereg: 2 (prereg: 1 names its shapes as shapes: {rows: [...], cols: "
             "[...]})");
  if (const node *k = schema == 1 ? key_node(root, "revision") : nullptr)
    fail(*k, "revision needs prereg: 2 (a prereg: 1 file becomes prereg: 2 by renaming shapes: "
             "to axes:)");
  if (const node *k = schema == 1 ? key_node(root, "replication") : nullptr)
    fail(*k, "replication needs prereg: 2");
  for (const char *key : {"task", "grading"})
    if (const node *k = schema == 1 ? key_node(root, key) : nullptr)
      fail(*k, fmt::format("{} needs prereg: 2", key));
  if (const node *k = schema == 2 ? key_node(root, "shapes") : nullptr)
    fail(*k, "shapes is prereg: 1; prereg: 2 names the operation's axes: use axes: {rows: [...], "
             "cols: [...]}");
}

} // namespace

std::int64_t read_schema(const node &root) {
  std::int64_t schema = 1; // a missing prereg is reported later, as a missing required key
  if (const node *version = root.k == node::kind::mapping ? root.find("prereg") : nullptr) {
    schema = as_int(*version, "prereg", std::numeric_limits<std::int64_t>::min(),
                    std::numeric_limits<std::int64_t>::max());
    if (schema != 1 && schema != 2)
      fail(*version, fmt::format("unsupported schema version prereg: {} (this tool reads "
                                 "prereg: 1 and prereg: 2)",
                                 schema));
  }
  refuse_other_schema_keys(root, schema);
  return schema;
}

std::vector<std::string_view> top_keys(std::int64_t schema) {
  std::vector<std::string_view> keys{"prereg",     "id",
                                     "title",      "hypothesis",
                                     "device",     "operation",
                                     "dtype",      schema == 1 ? "shapes" : "axes",
                                     "passes",     "operating_point",
                                     "arms",       "measurement",
                                     "analysis",   "correctness",
                                     "predictions"};
  if (schema >= 2) {
    keys.push_back("revision");
    keys.push_back("replication");
    keys.push_back("task");
    keys.push_back("grading");
  }
  return keys;
}

void read_identity(const fields &top, protocol &p) {
  p.schema = as_int(top.required("prereg"), "prereg", 1, 2);
  p.id = as_id(top.required("id"), "id");
  if (const node *r = top.optional("revision"))
    p.revision = as_int(*r, "revision", 1, max_revision);
  p.title = as_text(top.required("title"), "title", max_title_bytes);
  p.hypothesis = as_text(top.required("hypothesis"), "hypothesis", max_hypothesis_bytes);
  p.device =
      as_enum<std::string>(top.required("device"), "device", {{"cuda", "cuda"}, {"cpu", "cpu"}});
}

} // namespace prereg::protocol_detail
