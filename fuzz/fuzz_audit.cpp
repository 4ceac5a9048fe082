// Fuzzes the audit's readers of report.json and report.dsse.json: the input is written into a
// report folder next to a fixture store (fuzz/fixtures/audit) and audited. The audit must
// never crash, hang or throw: every malformed field is a FAIL of the check that reads it.
// The first byte picks what the rest is: 0 report.json (the fixture's envelope beside it),
// 1 report.dsse.json (the fixture's report.json beside it), 2 report.json with an envelope
// whose payload is those bytes (so the payload and canonical-form checks go further).
#include "fuzz_common.hpp"

#include "audit/audit.hpp"
#include "crypto/crypto.hpp"
#include "base/fs.hpp"
#include "base/json.hpp"
#include "report/report.hpp"
#include "store/store.hpp"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

namespace {

namespace fs = std::filesystem;

struct fixture {
  fs::path store_root;
  fs::path work;
  std::string report_json;
  std::string envelope;
  std::string signatures; // the envelope's signatures array, canonical JSON
};

fs::path g_work; // removed at exit

const fixture &the_fixture() {
  static const fixture f = [] {
    fixture x;
    const char *env = std::getenv("PREREG_FUZZ_AUDIT_FIXTURE");
    const fs::path root = env != nullptr ? fs::path(env) : fs::path(PREREG_FUZZ_AUDIT_FIXTURE);
    x.store_root = root / "store";
    x.report_json = prereg::read_file(root / "report" / "report.json");
    x.envelope = prereg::read_file(root / "report" / "report.dsse.json");
    x.signatures = prereg::canonical_json(
        prereg::parse_json_strict(x.envelope, "fixture envelope").at("signatures"));
    const fs::path base =
        fs::is_directory("/dev/shm") ? fs::path("/dev/shm") : fs::temp_directory_path();
    x.work = base / ("prereg-fuzz-audit-" + std::to_string(::getpid()));
    fs::create_directories(x.work);
    g_work = x.work;
    std::atexit([] {
      std::error_code ec;
      fs::remove_all(g_work, ec);
    });
    return x;
  }();
  return f;
}

void put(const fs::path &path, std::string_view bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data, std::size_t size) {
  using namespace prereg;
  if (size == 0)
    return 0;
  const fixture &fx = the_fixture();
  const std::string_view rest = fuzz::as_text(data + 1, size - 1);
  const fs::path dir = fx.work;
  switch (data[0] % 3) {
  case 0:
    put(dir / "report.json", rest);
    put(dir / "report.dsse.json", fx.envelope);
    break;
  case 1:
    put(dir / "report.json", fx.report_json);
    put(dir / "report.dsse.json", rest);
    break;
  default:
    put(dir / "report.json", rest);
    put(dir / "report.dsse.json", "{\"payload\":\"" + base64_encode(rest) +
                                      "\",\"payloadType\":\"" + dsse_payload_type +
                                      "\",\"signatures\":" + fx.signatures + "}");
    break;
  }
  const store s(fx.store_root);
  const audit_result r = audit_report(dir, s, {});
  if (r.checks.size() != audit_check_names().size())
    fuzz::broken("the audit did not run every check");
  (void)render_audit_text(r);
  (void)render_audit_json(r);
  return 0;
}
