// The style sheets of report.html, inline in every page (the page fetches nothing).
#include "report/render/html_style.hpp"

namespace prereg::render {

const char *const html_css = R"(
:root { --fg: #1f2328; --muted: #59636e; --line: #d1d9e0; --bg-soft: #f6f8fa; }
* { box-sizing: border-box; }
body { margin: 0; color: var(--fg); background: #fff;
  font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif; }
main { max-width: 1240px; margin: 0 auto; padding: 24px 28px 48px; }
h1 { font-size: 26px; margin: 0 0 4px; }
h2 { font-size: 20px; margin: 32px 0 10px; padding-bottom: 4px; border-bottom: 1px solid var(--line); }
h3 { font-size: 16px; margin: 22px 0 8px; }
code { font: 12.5px/1.3 ui-monospace, "SFMono-Regular", Menlo, Consolas, "Liberation Mono", monospace;
  background: var(--bg-soft); padding: 1px 4px; border-radius: 4px; }
.sub { color: var(--muted); margin: 0 0 10px; }
blockquote { margin: 10px 0; padding: 6px 14px; border-left: 4px solid var(--line); color: #333; }
.badges { display: flex; flex-wrap: wrap; gap: 8px; margin: 12px 0; }
.badge { display: inline-block; padding: 2px 10px; border-radius: 12px; font-weight: 600;
  font-size: 13px; border: 1px solid transparent; white-space: nowrap; }
.badge.confirmed, td.verdict.confirmed strong { background: #dafbe1; color: #116329; border-color: #4ac26b; }
.badge.refuted, td.verdict.refuted strong { background: #ffebe9; color: #a40e26; border-color: #ff8182; }
.badge.inconclusive, td.verdict.inconclusive strong { background: #fff8c5; color: #7d4e00; border-color: #d4a72c; }
.badge.info { background: var(--bg-soft); color: var(--muted); border-color: var(--line); }
.badge.warn { background: #fff1e5; color: #953800; border-color: #fb8f44; }
td.verdict strong { padding: 1px 8px; border-radius: 10px; border: 1px solid; }
table { border-collapse: collapse; margin: 6px 0 14px; font-variant-numeric: tabular-nums; }
th, td { border: 1px solid var(--line); padding: 4px 9px; text-align: left; vertical-align: top; }
thead th { background: var(--bg-soft); }
th.num, td.num { text-align: right; white-space: nowrap; }
table.kv { width: 100%; }
table.kv tbody th { width: 170px; background: var(--bg-soft); font-weight: 600; }
table.kv thead th { background: #eaeef2; font-size: 13px; text-transform: uppercase; letter-spacing: .04em; }
td code, th code { white-space: nowrap; }
.op { background: #fff4c2; }
thead th.op { background: #fde68a; }
.suffix { font-weight: 400; }
td.flagged { color: #953800; }
td.unstable { font-style: italic; }
td.missing { color: var(--muted); }
td.fail { color: #a40e26; }
.kvgrid { display: grid; grid-template-columns: 1fr 1fr; gap: 0 24px; }
.charts { display: grid; grid-template-columns: repeat(3, 1fr); gap: 12px; margin: 8px 0 4px; }
figure { margin: 0; break-inside: avoid; }
figcaption { color: var(--muted); font-size: 12px; }
svg.chart { width: 100%; height: auto; display: block; }
svg.chart text { font: 12px system-ui, -apple-system, "Segoe UI", Roboto, Arial, sans-serif; fill: #333; stroke: none; }
svg.chart .ctitle { font-size: 14px; font-weight: 600; }
svg.chart .alabel { fill: var(--muted); }
svg.chart .oplabel { font-size: 11px; fill: #8a6100; }
svg.chart .grid line { stroke: #eaeef2; stroke-width: 1; }
svg.chart .axis rect { stroke: #8c959f; }
svg.chart .ref line { stroke: #a40e26; stroke-dasharray: 5 4; stroke-width: 1.2; }
svg.chart .ref text { fill: #a40e26; }
.tables { display: flex; flex-wrap: wrap; gap: 0 28px; align-items: flex-start; }
.tables > div { max-width: 100%; overflow-x: auto; }
.caption { color: var(--muted); font-size: 12.5px; margin: 2px 0; }
.prediction { border: 1px solid var(--line); border-radius: 8px; padding: 8px 16px; margin: 10px 0;
  break-inside: avoid; }
.prediction h3 { margin: 6px 0; }
.prediction p { margin: 4px 0; }
ul.flags { margin: 4px 0 12px; padding-left: 20px; color: #953800; }
footer { margin-top: 36px; color: var(--muted); font-size: 12px; }
@media (max-width: 1000px) { .charts { grid-template-columns: 1fr 1fr; } .kvgrid { grid-template-columns: 1fr; } }
@media print {
  body { font-size: 10pt; }
  main { max-width: none; padding: 0; }
  .charts { grid-template-columns: 1fr 1fr; }
  h2 { break-after: avoid; }
  section.block, table, figure { break-inside: avoid; }
  * { -webkit-print-color-adjust: exact; print-color-adjust: exact; }
}
)";

// Renderer 2's additions, after the renderer 1 sheet (which stays byte for byte).
const char *const html_css_r2 = R"(
p.exploratory { padding: 10px 14px; border: 2px solid #953800; background: #fff1e5; color: #953800; font-weight: 700; }
#summary .charts { margin-top: 8px; grid-template-columns: 1fr 1fr; max-width: 1000px; }
svg.chart circle.winner { fill: none; }
td.winner strong { color: #116329; }
table.predictions td code { white-space: normal; overflow-wrap: anywhere; }
)";

} // namespace prereg::render
