// Tests of the shard rule: K/N parsing, shape groups, a partition that is disjoint and complete
// and keeps every prediction's compared cells together; the device list; the replication rule.
#include "base/fs.hpp"
#include "prereg/error.hpp"
#include "run/merge.hpp"
#include "run/run.hpp"
#include "spec/protocol.hpp"
#include "spec/shard.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <string>

namespace {

prereg::protocol shards_protocol() {
  return prereg::parse_protocol(prereg::read_file(PREREG_TEST_DATA "/protocols/cpu_shards.yaml"),
                                "cpu_shards.yaml");
}

} // namespace

TEST_CASE("parse_shard") {
  CHECK(prereg::parse_shard("1/3") == prereg::shard_spec{1, 3});
  CHECK(prereg::parse_shard("3/3") == prereg::shard_spec{3, 3});
  CHECK(prereg::to_string(prereg::shard_spec{2, 5}) == "2/5");
  for (const char *bad :
       {"0/3", "4/3", "1/0", "3", "/3", "1/", "a/3", "1/3x", "-1/3", " 1/3", "1/10001"})
    CHECK_THROWS_WITH((void)prereg::parse_shard(bad),
                      doctest::Contains("--shard must be K/N with 1 <= K <= N <= 10000"));
  const auto j = prereg::to_json(prereg::shard_spec{2, 3});
  CHECK(prereg::shard_from_json(j, "x") == prereg::shard_spec{2, 3});
  CHECK_THROWS((void)prereg::shard_from_json(prereg::json{{"index", 4}, {"count", 3}}, "x"));
  CHECK_THROWS((void)prereg::shard_from_json(prereg::json{{"index", 1}}, "x"));
}

TEST_CASE("shape groups are dealt round robin; the shards partition the plan") {
  const auto p = shards_protocol();
  const auto groups = prereg::shape_groups(p);
  REQUIRE(groups.size() == 3);
  CHECK(groups[0].rows == 1);
  CHECK(groups[1].rows == 16);
  CHECK(groups[2].rows == 64);
  for (const auto &g : groups)
    CHECK(g.cells.size() == 2); // one per arm
  for (std::int64_t n = 1; n <= 3; ++n) {
    std::vector<prereg::cell_key> all;
    for (std::int64_t k = 1; k <= n; ++k) {
      const auto cells = prereg::shard_cells(p, {k, n});
      CHECK(!cells.empty());
      for (const auto &c : cells) {
        CHECK(std::find(all.begin(), all.end(), c) == all.end()); // disjoint
        CHECK(prereg::shard_of_cell(p, c, n) == k);
        all.push_back(c);
      }
    }
    CHECK(all.size() == prereg::all_cells(p).size()); // complete
  }
  // Every arm at one shape lands in one shard: a prediction compares arms at one shape.
  const auto two = prereg::shard_cells(p, {2, 3});
  REQUIRE(two.size() == 2);
  CHECK(two[0].rows == 16);
  CHECK(two[1].rows == 16);
  CHECK(two[0].arm != two[1].arm);
  // Round robin: 3 groups in 2 shards -> groups 1 and 3 in shard 1.
  const auto first = prereg::shard_cells(p, {1, 2});
  CHECK(first.size() == 4);
  CHECK_THROWS_WITH((void)prereg::shard_cells(p, {1, 4}),
                    doctest::Contains("3 shape group(s) (pass x rows x cols), fewer than 4"));
}

TEST_CASE("parse_device_list") {
  CHECK(prereg::parse_device_list("0") == std::vector<int>{0});
  CHECK(prereg::parse_device_list("0,1,2,3") == std::vector<int>{0, 1, 2, 3});
  CHECK(prereg::parse_device_list("0,0,0") == std::vector<int>{0, 0, 0});
  for (const char *bad : {"", ",", "0,", "a", "0,,1", "-1", "0 1"})
    CHECK_THROWS_WITH((void)prereg::parse_device_list(bad), doctest::Contains("--devices must be"));
}

TEST_CASE("replication: prereg 2 only, normalised, pooled by its threshold") {
  const auto p = shards_protocol();
  REQUIRE(p.replication);
  CHECK(p.replication->devices == 3);
  CHECK(p.replication->rule == "majority");
  CHECK(p.replication->threshold == 2);
  CHECK(prereg::to_json(p).at("replication") == prereg::json{{"devices", 3}, {"rule", "majority"}});
  const auto round = prereg::protocol_from_json(prereg::to_json(p), "x");
  CHECK(prereg::protocol_hash(round) == prereg::protocol_hash(p));
  std::string text = prereg::read_file(PREREG_TEST_DATA "/protocols/cpu_shards.yaml");
  const auto with = [&](const std::string &rule) {
    std::string t = text;
    const std::string frozen = "replication: {devices: 3, rule: majority}";
    const auto at = t.find(frozen);
    REQUIRE(at != std::string::npos);
    return t.replace(at, frozen.size(), rule);
  };
  CHECK(prereg::parse_protocol(with("replication: {devices: 5, rule: all}"), "t")
            .replication->threshold == 5);
  CHECK(prereg::parse_protocol(with("replication: {devices: 5, rule: \"at least 2\"}"), "t")
            .replication->threshold == 2);
  CHECK_THROWS_WITH(
      (void)prereg::parse_protocol(with("replication: {devices: 2, rule: \"at least 3\"}"), "t"),
      doctest::Contains("asks more devices"));
  CHECK_THROWS_WITH(
      (void)prereg::parse_protocol(with("replication: {devices: 3, rule: most}"), "t"),
      doctest::Contains("replication.rule must be"));
  CHECK_THROWS_WITH((void)prereg::parse_protocol(with("replication: {devices: 1, rule: all}"), "t"),
                    doctest::Contains("replication.devices"));
  CHECK_THROWS_WITH(
      (void)prereg::parse_protocol(with("replication: {devices: 3, rule: all, x: 1}"), "t"),
      doctest::Contains("x"));
  // Without replication the key is absent, so earlier prereg: 2 hashes stay.
  const auto none = prereg::parse_protocol(with(""), "t");
  CHECK(!none.replication);
  CHECK(!prereg::to_json(none).contains("replication"));
  // prereg: 1 does not know it.
  const std::string v1 = prereg::read_file(PREREG_TEST_DATA "/protocols/cpu_minimal.yaml") +
                         "replication: {devices: 3, rule: all}\n";
  CHECK_THROWS_WITH((void)prereg::parse_protocol(v1, "t"), doctest::Contains("needs prereg: 2"));

  using prereg::pooled_verdict;
  CHECK(pooled_verdict(2, 1, 3, 2) == "confirmed"); // majority of 3
  CHECK(pooled_verdict(1, 2, 3, 2) == "refuted");   // 2 > 3 - 2
  CHECK(pooled_verdict(1, 1, 3, 2) == "inconclusive");
  CHECK(pooled_verdict(2, 0, 3, 3) == "inconclusive"); // all: one short
  CHECK(pooled_verdict(2, 1, 3, 3) == "refuted");      // all: one refuted is enough
  CHECK(pooled_verdict(3, 0, 3, 3) == "confirmed");
  CHECK(pooled_verdict(1, 4, 5, 1) == "confirmed"); // at least 1
  CHECK(pooled_verdict(0, 5, 5, 1) == "refuted");
  CHECK(pooled_verdict(0, 4, 5, 1) == "inconclusive");
}
