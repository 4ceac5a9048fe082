// The site command: a static history of a store and its reports (docs/site.md).
#include "cli/command_functions.hpp"

#include "site/site.hpp"

#include <fmt/format.h>

namespace prereg::cli::detail {

int cmd_site(args_t args) {
  CLI::App app{"write a static, self-contained site: every protocol's attempts, verdicts over "
               "time and per-cell trends with steps",
               "site"};
  site::site_options o;
  std::string store_dir, reports_dir, out_dir;
  app.add_option("STORE", store_dir, "the store folder (e.g. .prereg)")->required();
  app.add_option("REPORTS", reports_dir, "the reports folder (REPORTS/ID/RUN_ID/)")->required();
  app.add_option("--out", out_dir, "the site's folder (created; rebuilt incrementally)")
      ->required();
  app.add_option("--trust", o.trust,
                 "audit the reports accepting only this signer: a PEM FILE, a DIR of *.pub or a "
                 "FINGERPRINT (repeatable)");
  app.add_option("--reports-url", o.reports_url,
                 "the URL under which the pages find REPORTS (default: the path from --out to "
                 "REPORTS, relative)");
  if (!parse(app, args))
    return 0;
  o.store_root = store_dir;
  o.reports_root = reports_dir;
  o.out_dir = out_dir;
  const site::site_summary s = site::build_site(o);
  fmt::print("{} protocols, {} reports ({} audited now, the rest from the cache; {} unreadable "
             "or failing their audit); {} pages written, {} unchanged\n",
             s.protocols, s.reports, s.audited_now, s.unreadable, s.pages_written, s.pages_kept);
  fmt::print("{}\n", (o.out_dir / "index.html").string());
  return 0;
}

} // namespace prereg::cli::detail
