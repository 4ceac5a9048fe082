// Tests of export/import bundles: a round trip between two stores, then every refusal.
#include "fake_device.hpp"

#include "audit/audit.hpp"
#include "base/fs.hpp"
#include "run/run.hpp"
#include "store/bundle.hpp"
#include "store/ledger.hpp"

#include <doctest/doctest.h>

using namespace prereg;
using namespace prereg::testing;
namespace fs = std::filesystem;

namespace {

import_outcome import_into(temp_lab &lab, const json &bundle, std::vector<std::string> trust = {}) {
  const store s = lab.st();
  return import_bundle(s, bundle, "bundle.json", resolve_trust(trust, s), lab.key());
}

exit_code code_of(const std::function<void()> &f) {
  try {
    f();
  } catch (const error &e) {
    return e.code();
  }
  return exit_code::ok;
}

} // namespace

TEST_CASE("export, import into another store, run the imported hash") {
  temp_lab a;
  const std::string hash = a.freeze();
  const json bundle = export_bundle(a.st(), hash);
  CHECK(bundle.at("prereg_bundle") == 1);
  CHECK(bundle.at("protocol_hash") == hash);

  temp_lab b;
  const import_outcome r = import_into(b, bundle);
  CHECK(r.hash == hash);
  CHECK(!r.already_present);
  CHECK(r.signer == a.key().fingerprint());
  int imports = 0;
  for (const auto &e : b.st().get_ledger().entries())
    if (e.value("event", "") == ledger_event::import && e.value("protocol_hash", "") == hash)
      ++imports;
  CHECK(imports == 1);
  CHECK(import_into(b, bundle).already_present);
  b.hash = hash;
  const fs::path dir = b.run(); // a run of the same hash
  CHECK(read_report(dir).at("protocol").at("hash") == hash);
  const store sb = b.st();
  CHECK(audit_report(dir, sb, resolve_trust({}, sb)).passed());

  SUBCASE("refusals") {
    temp_lab c;
    auto changed = [&](const std::function<void(json &)> &edit) {
      json x = bundle;
      edit(x);
      return code_of([&] { (void)import_into(c, x); });
    };
    CHECK(changed([](json &x) { x["extra"] = 1; }) == exit_code::invalid);
    CHECK(changed([](json &x) { x["prereg_bundle"] = 2; }) == exit_code::invalid);
    CHECK(changed([](json &x) { x.erase("public_key"); }) == exit_code::invalid);
    CHECK(changed([](json &x) { x["source"] = x["source"].get<std::string>() + "#\n"; }) ==
          exit_code::integrity);
    CHECK(changed([](json &x) { x["protocol"]["title"] = "changed"; }) == exit_code::integrity);
    CHECK(changed([](json &x) { x["freeze"]["frozen_at"] = "2020-01-01T00:00:00Z"; }) ==
          exit_code::integrity);
    CHECK(changed([&](json &x) { x["public_key"] = c.key().public_part().pem(); }) ==
          exit_code::integrity);
    // Pinned signers: only a pinned one is imported.
    c.st().add_key(c.key().public_part());
    CHECK(code_of([&] { (void)import_into(c, bundle, {c.key().fingerprint()}); }) ==
          exit_code::integrity);
    c.st().add_key(a.key().public_part());
    CHECK(code_of([&] { (void)import_into(c, bundle, {a.key().fingerprint()}); }) == exit_code::ok);
    CHECK(c.st().hashes() == std::vector<std::string>{hash});
  }
}
