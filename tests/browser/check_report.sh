#!/usr/bin/env bash
# Opens a report.html in headless Chromium and checks what a reader's browser would do with it:
# every chart has one series group per arm of the page's arms table, the console stays silent,
# the page requests nothing over the network; keeps a 1280-px-wide screenshot.
#
# Usage: tests/browser/check_report.sh REPORT.html SCREENSHOT.png
# Exit: 0 all checks passed, 1 a check failed, 2 usage, 77 chromium or node missing (skipped).
# Environment: CHROMIUM (default chromium), NODE (default node).
set -euo pipefail

if [[ $# -ne 2 ]]; then
  echo "usage: $0 REPORT.html SCREENSHOT.png" >&2
  exit 2
fi
html=$1
shot=$2
chromium=${CHROMIUM:-chromium}
node=${NODE:-node}
for tool in "$chromium" "$node"; do
  if ! command -v "$tool" >/dev/null 2>&1; then
    echo "SKIP: $tool not found"
    exit 77
  fi
done
if [[ ! -f $html ]]; then
  echo "check_report: no such file: $html" >&2
  exit 2
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
url="file://$(realpath "$html")"
mkdir -p "$(dirname "$shot")"

# No name resolves, so nothing can leave the machine even if the page asked; the net log
# still records every request the page made.
flags=(--headless --no-sandbox --disable-gpu --disable-background-networking
  --disable-component-update --disable-sync --no-first-run --user-data-dir="$work/profile"
  "--host-resolver-rules=MAP * ~NOTFOUND" --enable-logging=stderr --v=0)

timeout 120 "$chromium" "${flags[@]}" --log-net-log="$work/net-dom.json" --dump-dom "$url" \
  >"$work/dom.html" 2>"$work/dom.log" || {
  echo "FAIL chromium --dump-dom exited $?"
  cat "$work/dom.log" >&2
  exit 1
}
rm -f "$shot"
timeout 120 "$chromium" "${flags[@]}" --log-net-log="$work/net-shot.json" --hide-scrollbars \
  --screenshot="$shot" --window-size=1280,2000 "$url" >"$work/shot.out" 2>"$work/shot.log" || {
  echo "FAIL chromium --screenshot exited $?"
  cat "$work/shot.log" >&2
  exit 1
}

"$node" - "$work" "$shot" <<'EOF'
// The checks, on the serialised DOM, Chromium's log and its net logs.
const fs = require('fs');
const [work, shot] = process.argv.slice(2);
let failed = 0;
const check = (name, ok, detail) => {
  console.log(`${ok ? 'PASS' : 'FAIL'} ${name}${ok || !detail ? '' : ': ' + detail}`);
  if (!ok) failed++;
};
const decode = (s) =>
  s.replace(/&lt;/g, '<').replace(/&gt;/g, '>').replace(/&quot;/g, '"').replace(/&#39;/g, "'")
   .replace(/&nbsp;/g, '\u00a0').replace(/&amp;/g, '&');
const attr = (tag, name) => {
  const m = tag.match(new RegExp(`\\s${name}="([^"]*)"`));
  return m ? decode(m[1]) : null;
};

const dom = fs.readFileSync(`${work}/dom.html`, 'utf8');
check('the DOM was dumped', dom.includes('</html>'), `${dom.length} bytes`);

// The arms, read from the page's arms table (not from the charts).
const armsTable = dom.match(/<table class="arms">[\s\S]*?<tbody>([\s\S]*?)<\/tbody>/);
const arms = armsTable
  ? [...armsTable[1].matchAll(/<th scope="row"[^>]*><code>([\s\S]*?)<\/code>/g)].map((m) => decode(m[1]))
  : [];
check('the arms table lists arms', arms.length > 0, 'no table.arms rows');

const charts = [...dom.matchAll(/<svg\b[^>]*\bclass="chart"[^>]*>[\s\S]*?<\/svg>/g)].map((m) => m[0]);
check('the page has charts', charts.length > 0, 'no svg.chart');
const want = [...arms].sort().join('\n');
for (const svg of charts) {
  const tag = svg.slice(0, svg.indexOf('>') + 1);
  const id = attr(tag, 'id') || '?';
  const series = [...svg.matchAll(/<g\b[^>]*\bclass="series"[^>]*>/g)].map((m) => attr(m[0], 'data-arm'));
  const declared = Number(attr(tag, 'data-arms'));
  check(`${id}: one series group per arm (${arms.length})`,
        series.length === arms.length && declared === arms.length &&
          [...series].sort().join('\n') === want,
        `data-arms=${declared}, series=[${series.join(', ')}], arms=[${arms.join(', ')}]`);
}

// Renderer 2 pages (main[data-renderer]): the summary is above the fold — before the results
// and the environment — with a time and a speedup chart per pass, the fastest arm ringed.
const mainTag = (dom.match(/<main\b[^>]*>/) || [''])[0];
const renderer = Number(attr(mainTag, 'data-renderer') || 1);
if (renderer >= 2) {
  const at = (re) => { const m = dom.search(re); return m < 0 ? Infinity : m; };
  const summary = at(/<section id="summary">/);
  check('summary section present', summary !== Infinity, 'no section#summary');
  check('summary before results and environment',
        summary < at(/<section id="results">/) && summary < at(/<section id="environment">/) &&
          at(/<section id="correctness">/) < at(/<section id="environment">/),
        'section order');
  const summaryHtml = dom.slice(summary, dom.indexOf('</section>', summary));
  const kinds = [...summaryHtml.matchAll(/<svg\b[^>]*\bclass="chart"[^>]*>/g)].map((m) => attr(m[0], 'data-kind'));
  const times = kinds.filter((k) => k === 'time').length;
  const speedups = kinds.filter((k) => k === 'speedup').length;
  check(`summary: a time and a speedup chart per pass (${times}, ${speedups})`,
        times > 0 && times === speedups, `kinds=[${kinds.join(', ')}]`);
  for (const svg of charts.filter((c) => attr(c.slice(0, c.indexOf('>') + 1), 'data-kind') === 'speedup')) {
    const id = attr(svg.slice(0, svg.indexOf('>') + 1), 'id');
    const winners = [...svg.matchAll(/<circle\b[^>]*\bclass="winner"/g)].length;
    const xs = new Set([...svg.matchAll(/<g class="pt[^"]*"><title>[^<]*?· \S+ (\d+)×\d+ ·/g)].map((m) => m[1]));
    check(`${id}: one fastest arm ringed per rows (${winners} of ${xs.size})`,
          winners > 0 && winners === xs.size, `${winners} rings, ${xs.size} rows with data`);
  }
  if (attr(mainTag, 'data-exploratory') === 'true')
    check('an exploratory page says so', /<p class="exploratory">EXPLORATORY:/.test(dom) &&
          /<title>EXPLORATORY: /.test(dom), 'no EXPLORATORY banner or title');
}

// Console: the page has no scripts, so any console message is an error (Chromium logs
// console.error and uncaught exceptions as INFO:CONSOLE lines with --enable-logging).
const logs = ['dom.log', 'shot.log'].map((f) => fs.readFileSync(`${work}/${f}`, 'utf8')).join('\n');
const consoleLines = logs.split('\n').filter((l) => /:CONSOLE|ERROR:CONSOLE|Uncaught|Content Security Policy/.test(l));
check('no console messages or errors', consoleLines.length === 0, '\n  ' + consoleLines.join('\n  '));

// Network: every URL request the page (a file:// document) started, from both runs.
const fetched = [];
for (const f of ['net-dom.json', 'net-shot.json']) {
  const text = fs.readFileSync(`${work}/${f}`, 'utf8').trim();
  const log = JSON.parse(text.endsWith(']}') || text.endsWith('}') ? text : text.replace(/,?\s*$/, ']}'));
  const start = log.constants.logEventTypes.URL_REQUEST_START_JOB;
  for (const e of log.events || []) {
    const p = e.params || {};
    if (e.type === start && typeof p.url === 'string' && !p.url.startsWith('file:') &&
        String(p.site_for_cookies || '').includes('site=file://')) fetched.push(p.url);
  }
}
check('the page requested nothing from the network', fetched.length === 0, fetched.join(', '));

const png = fs.existsSync(shot) ? fs.readFileSync(shot) : Buffer.alloc(0);
const isPng = png.length > 8 && png.subarray(0, 8).equals(Buffer.from([137, 80, 78, 71, 13, 10, 26, 10]));
check(`screenshot ${shot}`, isPng && png.readUInt32BE(16) === 1280, `${png.length} bytes`);

console.log(failed === 0 ? 'check_report: all checks passed' : `check_report: ${failed} check(s) failed`);
process.exit(failed === 0 ? 0 : 1);
EOF
