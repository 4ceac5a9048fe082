// A generated store for `prereg site` at scale (docs/site.md, "Scale"): P small CPU protocols,
// R runs each through the real run engine on the tests' fake device (tests/fake_device.hpp), so
// every report is signed and audits clean. Every protocol's arm `unfused` gets 25% slower from
// run R/2 on in odd protocols (a step the site must find); every ABORT_EVERY-th run is aborted
// (a run-aborted entry, no report); the device's name changes at run 3R/4.
//
// usage: prereg_gen_site_store OUT_DIR [PROTOCOLS [RUNS [ABORT_EVERY [FIRST]]]]
//   (default 3 protocols, 8 runs, every 25th run aborted: runs 25, 50, ...; FIRST: the
//   protocols FIRST..PROTOCOLS-1 only, default 0, to continue a store generated in parts)
// writes OUT_DIR/store, OUT_DIR/reports, OUT_DIR/keys/signing.key.
#include "fake_device.hpp"

#include "base/rng.hpp"
#include "run/run.hpp"
#include "spec/protocol.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <exception>
#include <string>

using namespace prereg;
using namespace prereg::testing;
namespace fs = std::filesystem;

namespace {

std::string protocol_yaml(int i) {
  return fmt::format(R"yaml(prereg: 1
id: gen_{:03d}
title: "Generated protocol {}"
hypothesis: "The fused arm is faster than the unfused one"
device: cpu
operation: layernorm
dtype: fp32
shapes:
  rows: [64, 128]
  cols: [256]
passes: [fwd]
arms:
  - id: unfused
    kernel: layernorm.unfused
  - id: fused
    kernel: layernorm.fused
measurement:
  repetitions: 5
  warmup: 1
analysis:
  bootstrap_resamples: 100
predictions:
  - id: P1
    claim: "At 128 rows the fused forward is at least 10% faster"
    at: {{rows: 128, pass: fwd}}
    expect: "fused < 0.9 * unfused"
)yaml",
                     i, i);
}

/// The fake's plants for run `r` of protocol `p` out of `runs`.
fake_plants plants_for(int p, int r, int runs, int abort_every) {
  fake_plants f;
  f.device_name = r >= 3 * runs / 4 ? "Fake Device 2" : "Fake Device 1";
  const bool slower = p % 2 == 1 && r >= runs / 2;
  f.samples = [p, r, slower](const cell_key &k, std::int64_t n) {
    rng g(static_cast<std::uint64_t>(p) * 7919 + static_cast<std::uint64_t>(r));
    const double base = (k.arm == "fused" ? 0.8 : 1.0) * (1 + 0.1 * (p % 7)) *
                        (static_cast<double>(k.rows) / 64.0) *
                        (k.arm == "unfused" && slower ? 1.25 : 1.0);
    std::vector<double> v;
    for (std::int64_t i = 0; i < n; ++i)
      v.push_back(base * (1 + 0.01 * g.uniform()));
    return v;
  };
  if (r % abort_every == abort_every - 1)
    f.throw_in_measure = "generated abort";
  return f;
}

} // namespace

int main(int argc, char **argv) {
  if (argc < 2 || argc > 6) {
    std::fprintf(stderr,
                 "usage: prereg_gen_site_store OUT_DIR [PROTOCOLS [RUNS [ABORT_EVERY [FIRST]]]]\n");
    return 2;
  }
  try {
    const fs::path out = argv[1];
    const int protocols = argc > 2 ? std::stoi(argv[2]) : 3;
    const int runs = argc > 3 ? std::stoi(argv[3]) : 8;
    const int abort_every = argc > 4 ? std::max(1, std::stoi(argv[4])) : 25;
    const int first = argc > 5 ? std::max(0, std::stoi(argv[5])) : 0;
    const fs::path key_path = out / "keys" / "signing.key";
    fs::create_directories(key_path.parent_path());
    if (!fs::exists(key_path))
      signing_key::generate().save(key_path);
    const signing_key key = signing_key::load(key_path);
    const store st(out / "store");
    for (int p = first; p < protocols; ++p) {
      const std::string yaml = protocol_yaml(p);
      const std::string hash =
          st.freeze(yaml, parse_protocol(yaml, fmt::format("gen_{:03d}.yaml", p)), key).hash;
      for (int r = 0; r < runs; ++r) {
        run_options o;
        o.target = hash;
        o.store_root = out / "store";
        o.key_path = key_path;
        o.out_dir = out / "reports";
        o.quiet = true;
        use_fake(o, plants_for(p, r, runs, abort_every), 5);
        try {
          (void)run_protocol(o);
        } catch (const error &) {
          // the planted abort: the ledger records it, no report is written
        }
      }
      std::fprintf(stderr, "protocol %d of %d: %d runs\n", p + 1, protocols, runs);
    }
  } catch (const std::exception &e) {
    std::fprintf(stderr, "prereg_gen_site_store: error: %s\n", e.what());
    return 1;
  }
  return 0;
}
