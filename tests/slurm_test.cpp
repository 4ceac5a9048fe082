// Tests of the Slurm submit script: the array, the afterok merge, quoting, the options.
#include "prereg/error.hpp"
#include "run/slurm.hpp"

#include <doctest/doctest.h>

#include <string>

namespace {

prereg::slurm_options options() {
  prereg::slurm_options o;
  o.prereg = "/opt/prereg bin/prereg";
  o.hash = std::string(64, 'a');
  o.protocol_id = "cpu_shards";
  o.shards = 3;
  o.store = "/s/store";
  o.key = "/s/key's/signing.key";
  o.out = "/s/reports";
  o.work = "/s/work";
  return o;
}

bool has(const std::string &s, const std::string &what) { return s.find(what) != s.npos; }

} // namespace

TEST_CASE("shell_quote") {
  CHECK(prereg::shell_quote("a b") == "'a b'");
  CHECK(prereg::shell_quote("it's") == "'it'\\''s'");
  CHECK(prereg::shell_quote("$(x)") == "'$(x)'");
}

TEST_CASE("slurm_script") {
  auto o = options();
  std::string s = prereg::slurm_script(o);
  CHECK(s.starts_with("#!/bin/bash\n"));
  CHECK(has(s, "N=3\n"));
  CHECK(has(s, "--array=1-$N"));
  CHECK(has(s, "--dependency=afterok:$array"));
  CHECK(has(s, "--shard \"$k/$N\""));
  CHECK(has(s, "PREREG='/opt/prereg bin/prereg'\n"));
  CHECK(has(s, "KEY='/s/key'\\''s/signing.key'\n"));
  CHECK(!has(s, "--partition"));
  CHECK(!has(s, "--gpus-per-task"));
  o.partition = "gpu";
  o.gpus_per_task = 1;
  s = prereg::slurm_script(o);
  CHECK(has(s, "--partition=gpu"));
  CHECK(has(s, "--gpus-per-task=1"));
  o.partition = "gpu;rm -rf /";
  CHECK_THROWS_WITH((void)prereg::slurm_script(o), doctest::Contains("is not a partition name"));
  o = options();
  o.shards = 0;
  CHECK_THROWS_WITH((void)prereg::slurm_script(o), doctest::Contains("--shards must be"));
}
