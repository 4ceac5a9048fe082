// Checks report pages in one headless Chromium session (DevTools protocol over
// --remote-debugging-pipe): per page, what a reader's browser would do with it. Run by
// check_report.sh, which checks its arguments and that chromium and node exist.
//
// Usage: node check_pages.js CHROMIUM WORK_DIR HTML PNG [HTML PNG]...
// Exit: 0 every page passed, 1 a check failed on some page (each failing page is named).
//
// Per page, in a fresh tab of a 1280x2000 viewport: the DOM as --dump-dom serialises it (after
// the load event), a screenshot of the viewport, every console message (console API, uncaught
// exception, or one Chromium adds itself: CSP, failed load, deprecation) and every request the
// page starts. Two session-wide backstops catch what the tab's events might not: Chromium's own
// log (--enable-logging=stderr) and its net log (--log-net-log), checked as the one-page-per-launch
// checker did; a hit there is charged to the page whose URL it names, else to the session.
'use strict';
const fs = require('fs');
const path = require('path');
const { spawn } = require('child_process');
const { pathToFileURL } = require('url');

const [chromium, work, ...rest] = process.argv.slice(2);
const pages = [];
for (let i = 0; i + 1 < rest.length; i += 2) {
  const url = pathToFileURL(fs.realpathSync(rest[i])).href;
  pages.push({ html: rest[i], shot: rest[i + 1], url });
}

const pageTimeoutMs = 60000; // the old checker gave each chromium launch 120 s, two per page
const dumpDom =
  "(document.doctype ? new XMLSerializer().serializeToString(document.doctype) + '\\n' : '') + " +
  'document.documentElement.outerHTML';

// ---- the checks (unchanged from the one-page-per-launch checker) -----------------------------

const decode = (s) =>
  s.replace(/&lt;/g, '<').replace(/&gt;/g, '>').replace(/&quot;/g, '"').replace(/&#39;/g, "'")
   .replace(/&nbsp;/g, '\u00a0').replace(/&amp;/g, '&');
const attr = (tag, name) => {
  const m = tag.match(new RegExp(`\\s${name}="([^"]*)"`));
  return m ? decode(m[1]) : null;
};

// The DOM checks: the arms table, one series group per arm in every chart, renderer 2's summary.
function checkDom(dom, check) {
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
      // A point's x: its rows in "ARM · PASS ROWS×COLS ·", or over named axes its whole shape in
      // "ARM · PASS b=4 n=256 d=128 ·" (one chart holds one extent of the last axis).
      const xs = new Set([...svg.matchAll(
        /<g class="pt[^"]*"><title>[^<]*?· \S+ (?:(\d+)×\d+|((?:[a-z][a-z0-9_]*=\d+ )*[a-z][a-z0-9_]*=\d+)) ·/g)]
        .map((m) => m[1] ?? m[2]));
      // Renderer 4: no ring where every arm drawn at those rows is flagged (excluded cells are
      // not drawn), so at most one per rows.
      const ok = renderer >= 4 ? winners <= xs.size : winners > 0 && winners === xs.size;
      check(`${id}: one fastest arm ringed per rows (${winners} of ${xs.size})`,
            ok, `${winners} rings, ${xs.size} rows with data`);
    }
    if (attr(mainTag, 'data-exploratory') === 'true')
      check('an exploratory page says so', /<p class="exploratory">EXPLORATORY:/.test(dom) &&
            /<title>EXPLORATORY: /.test(dom), 'no EXPLORATORY banner or title');
  }
}

// The DOM checks of a `prereg site` page (PREREG_PAGE_KIND=site, tests/browser/check_site.sh): the
// index links a page per protocol and each link's file exists, and the versions of each id carry
// distinct revision labels; a protocol page has its four sections in order. On both: every link
// to a report resolves to a file that exists; every verdict badge shows its prediction's id, not a
// lone letter, with a tooltip naming id, claim and verdict and text for screen readers; every
// trend chart draws its line, its interquartile band and one dated point per run.
const stripTags = (s) => decode(s.replace(/<[^>]*>/g, '')).trim();

function checkSiteLinks(dom, check, html) {
  const hrefs = [...dom.matchAll(/\shref="([^"]*\/report\.(?:html|md))"/g)].map((m) => decode(m[1]));
  const missing = hrefs.filter((h) => /^[a-z]+:/i.test(h) ||
    !fs.existsSync(path.resolve(path.dirname(html), decodeURIComponent(h))));
  check(`every link to a report leads to its page (${hrefs.length})`, missing.length === 0,
        [...new Set(missing)].slice(0, 5).join(', '));
  return hrefs.length;
}

function checkBadges(dom, check) {
  const badges = [...dom.matchAll(/<(a|span) class="b v (?:ok|bad|mid)"([^>]*)>([\s\S]*?)<\/\1>/g)];
  const bad = [];
  for (const [, , attrs, inner] of badges) {
    const title = attr(attrs, 'title') || '';
    const hidden = (inner.match(/<span class="vh">([\s\S]*?)<\/span>/) || [])[1];
    const shown = stripTags(inner.replace(/<span class="vh">[\s\S]*?<\/span>/, ''));
    const id = shown.replace(/\s*[\u2713\u2717?]$/, '');
    const ok = id.length > 0 && /[\u2713\u2717?]$/.test(shown) && !/^[cri]$/.test(shown) &&
      title.startsWith(id) && /: (confirmed|refuted|inconclusive|no verdict)( |$)/.test(title) &&
      hidden !== undefined && stripTags(hidden).length > 0;
    if (!ok) bad.push(`${shown} [${title}]`);
  }
  check(`every verdict badge names its prediction and claim (${badges.length})`, bad.length === 0,
        bad.slice(0, 3).join('; '));
  return badges.length;
}

function checkSiteDom(dom, check, html) {
  check('the DOM was dumped', dom.includes('</html>'), `${dom.length} bytes`);
  checkBadges(dom, check);
  const reportLinks = checkSiteLinks(dom, check, html);
  if (path.basename(html) === 'index.html') {
    const links = [...dom.matchAll(/<a href="(p-[0-9a-f]{16}\.html)">/g)].map((m) => m[1]);
    check('the index links protocol pages', links.length > 0, 'no p-*.html links');
    const missing = links.filter((l) => !fs.existsSync(path.join(path.dirname(html), l)));
    check('every linked page exists', missing.length === 0, missing.join(', '));
    const groups = [...dom.matchAll(/<tbody class="id">([\s\S]*?)<\/tbody>/g)].map((m) => m[1]);
    const twins = [];
    for (const g of groups) {
      const labels = [...g.matchAll(/<tr>(?:<th[^>]*>[\s\S]*?<\/th>)?<td>([\s\S]*?)<\/td>/g)]
        .map((m) => stripTags(m[1]).replace(/\s*\(newest\)$/, ''));
      if (new Set(labels).size !== labels.length || labels.some((l) => !/^revision \d+/.test(l)))
        twins.push(labels.join(' | '));
    }
    check(`every id's versions carry distinct revision labels (${groups.length} ids)`,
          groups.length > 0 && twins.length === 0, twins.slice(0, 3).join('; '));
    return;
  }
  const at = (text) => dom.indexOf(text);
  const order = ['>Attempts, in order<', '>Verdicts over time<', '>Steps<', '>Trends per cell'];
  const pos = order.map(at);
  check('the four sections, in order', pos.every((p, i) => p >= 0 && (i === 0 || p > pos[i - 1])),
        order.map((o, i) => `${o}@${pos[i]}`).join(' '));
  check('the heading names the revision', /<h1>[^<]*<span class="rev">revision \d+/.test(dom),
        'no revision label in h1');
  const charts = [...dom.matchAll(/<figcaption>[\s\S]*?, (\d+) runs[^<]*<\/figcaption><svg\b[^>]*\bclass="trend"[^>]*>[\s\S]*?<\/svg>/g)];
  const wrong = [];
  for (const [svg, runs] of charts) {
    const line = /<polyline\b[^>]*\bpoints="[0-9.]+,[0-9.]+/.test(svg);
    const band = /<(polygon|line) class="iqr"/.test(svg);
    const points = [...svg.matchAll(/<circle class="pt"[^>]*><title>([^<]*)<\/title>/g)].map((m) => m[1]);
    const dated = points.every((t) => /\d{4}-\d\d-\d\dT\d\d:\d\d/.test(t));
    if (!line || !band || points.length !== Number(runs) || !dated)
      wrong.push(`line=${line} band=${band} points=${points.length}/${runs} dated=${dated}`);
  }
  check(`every trend chart draws its line, band and dated points (${charts.length})`,
        wrong.length === 0, wrong.slice(0, 3).join('; '));
  if (charts.length > 0)
    check('a page with audited runs links their reports', reportLinks > 0, 'no report link');
}

// The DOM checks of a leaderboard's page (PREREG_PAGE_KIND=board, tests/browser/check_board.sh;
// docs/grading.md): the board table has a row per entry; an excluded row shows no rank and comes
// after every ranked one; each ranked row draws its interval and shows its confirmed re-timing.
function checkBoardDom(dom, check) {
  check('the DOM was dumped', dom.includes('</html>'), `${dom.length} bytes`);
  const table = dom.match(/<table class="board">[\s\S]*?<tbody>([\s\S]*?)<\/tbody>/);
  const rows = table ? [...table[1].matchAll(/<tr data-name="([^"]*)" data-excluded="(true|false)">([\s\S]*?)<\/tr>/g)] : [];
  check('the board table lists entries', rows.length > 0, 'no table.board rows');
  let seenExcluded = false;
  for (const [, name, excluded, cells] of rows) {
    const rank = (cells.match(/<td class="rank">([^<]*)<\/td>/) || [, '?'])[1];
    if (excluded === 'true') {
      seenExcluded = true;
      check(`${decode(name)}: an excluded entry has no rank`, rank === '-', `rank ${rank}`);
    } else {
      check(`${decode(name)}: a ranked entry after no excluded one`, !seenExcluded, 'order');
      check(`${decode(name)}: a ranked entry has a rank`, /^[0-9]+$/.test(rank), `rank ${rank}`);
      check(`${decode(name)}: its interval is drawn`, /<svg class="interval"[\s\S]*?<line /.test(cells),
            'no svg.interval');
      check(`${decode(name)}: a ranked entry's timing was confirmed by its re-timing`,
            /<td class="retime" data-confirmed="yes"/.test(cells), 'no confirmed re-timing');
    }
  }
}

const isPngOfWidth = (png, width) =>
  png.length > 24 && png.subarray(0, 8).equals(Buffer.from([137, 80, 78, 71, 13, 10, 26, 10])) &&
  png.readUInt32BE(16) === width;

// Chromium's log lines that are console output (the page has no scripts, so any console message
// is an error; Chromium logs console.error and uncaught exceptions as INFO:CONSOLE lines).
const consoleLine = /:CONSOLE|ERROR:CONSOLE|Uncaught|Content Security Policy/;

// ---- the DevTools protocol over the pipe ------------------------------------------------------

class Browser {
  constructor(exe, flags) {
    this.next = 1;
    this.waiting = new Map(); // id -> {resolve, reject, method}
    this.listeners = new Set(); // (message) => void, for events
    this.exited = null;
    this.dead = new Promise((_, reject) => { this.onDead = reject; }); // rejects when it exits
    this.dead.catch(() => {});
    const out = fs.openSync(`${work}/chromium.out`, 'w');
    const log = fs.openSync(`${work}/chromium.log`, 'w');
    // fd 3: commands to Chromium, fd 4: its replies and events, each JSON ending in a NUL.
    this.proc = spawn(exe, flags, { stdio: ['ignore', out, log, 'pipe', 'pipe'] });
    let pending = '';
    this.proc.stdio[4].setEncoding('utf8');
    this.proc.stdio[4].on('data', (chunk) => {
      pending += chunk;
      let end;
      while ((end = pending.indexOf('\0')) >= 0) {
        const msg = JSON.parse(pending.slice(0, end));
        pending = pending.slice(end + 1);
        if (msg.id !== undefined && this.waiting.has(msg.id)) {
          const w = this.waiting.get(msg.id);
          this.waiting.delete(msg.id);
          if (msg.error) w.reject(new Error(`${w.method}: ${msg.error.message}`));
          else w.resolve(msg.result);
        } else {
          for (const l of this.listeners) l(msg);
        }
      }
    });
    this.proc.stdio[3].on('error', () => {}); // a dead chromium is reported through 'exit'
    this.proc.on('error', (e) => this.fail(`chromium did not start: ${e.message}`));
    this.proc.on('exit', (code, signal) => this.fail(`chromium exited (${signal || code})`));
  }
  fail(why) {
    if (this.exited) return;
    this.exited = why;
    this.onDead(new Error(why));
    for (const w of this.waiting.values()) w.reject(new Error(why));
    this.waiting.clear();
  }
  send(method, params = {}, sessionId) {
    if (this.exited) return Promise.reject(new Error(this.exited));
    const id = this.next++;
    const msg = { id, method, params };
    if (sessionId) msg.sessionId = sessionId;
    return new Promise((resolve, reject) => {
      this.waiting.set(id, { resolve, reject, method });
      this.proc.stdio[3].write(JSON.stringify(msg) + '\0');
    });
  }
  close() {
    if (this.exited) return Promise.resolve();
    return new Promise((resolve) => {
      const kill = setTimeout(() => this.proc.kill('SIGKILL'), 10000);
      this.proc.once('exit', () => { clearTimeout(kill); resolve(); });
      this.send('Browser.close').catch(() => {});
    });
  }
}

const withTimeout = (promise, ms, what) => {
  let timer;
  const late = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} took over ${ms / 1000} s`)), ms);
  });
  return Promise.race([promise, late]).finally(() => clearTimeout(timer));
};

// A page's result: its check lines and how many failed.
const newResult = (page) => {
  const r = { page, lines: [], failed: 0 };
  r.check = (name, ok, detail) => {
    r.lines.push(`${ok ? 'PASS' : 'FAIL'} ${name}${ok || !detail ? '' : ': ' + detail}`);
    if (!ok) r.failed++;
  };
  return r;
};

// Loads one page in a new tab and returns what the checks need.
async function loadPage(browser, page) {
  const { targetId } = await browser.send('Target.createTarget', { url: 'about:blank' });
  const { sessionId } = await browser.send('Target.attachToTarget', { targetId, flatten: true });
  const send = (method, params = {}) => browser.send(method, params, sessionId);
  const seen = { console: [], requests: [] };
  let loads = 0; // load events seen, and who waits for the next one
  let wake = null;
  const listener = (m) => {
    if (m.sessionId !== sessionId) return;
    const p = m.params || {};
    if (m.method === 'Page.loadEventFired') {
      loads++;
      if (wake) wake();
      wake = null;
    } else if (m.method === 'Runtime.consoleAPICalled') {
      const args = (p.args || []).map((a) => a.value ?? a.description ?? a.type);
      seen.console.push(`console.${p.type}: ${args.join(' ')}`);
    } else if (m.method === 'Runtime.exceptionThrown') {
      const d = p.exceptionDetails || {};
      seen.console.push(`uncaught exception: ${d.exception?.description || d.text}`);
    } else if (m.method === 'Log.entryAdded') {
      const e = p.entry;
      seen.console.push(`${e.source} ${e.level}: ${e.text}${e.url ? ` (${e.url})` : ''}`);
    } else if (m.method === 'Network.requestWillBeSent') {
      seen.requests.push(p.request.url);
    }
  };
  browser.listeners.add(listener);
  try {
    for (const domain of ['Page', 'Runtime', 'Log', 'Network']) await send(`${domain}.enable`);
    await send('Emulation.setDeviceMetricsOverride',
               { width: 1280, height: 2000, deviceScaleFactor: 1, mobile: false });
    await send('Emulation.setScrollbarsHidden', { hidden: true });
    const nav = await send('Page.navigate', { url: page.url });
    if (nav.errorText) throw new Error(`navigation failed: ${nav.errorText}`);
    // Loaded: the tab shows the page, not the about:blank it opened with (whose own load event
    // may come late), and the page's document is complete (set as its load event fires). An
    // evaluation that meets the navigation half-way fails; the next load event retries it.
    for (;;) {
      const before = loads;
      const expression = '[document.URL, document.readyState]';
      const state = await send('Runtime.evaluate', { expression, returnByValue: true })
        .catch(() => null);
      const [url, ready] = state?.result?.value || [];
      if (url && url !== 'about:blank' && ready === 'complete') break;
      if (loads === before) await Promise.race([new Promise((r) => { wake = r; }), browser.dead]);
    }
    const dom = await send('Runtime.evaluate', { expression: dumpDom, returnByValue: true });
    seen.dom = typeof dom.result?.value === 'string' ? dom.result.value : '';
    const shot = await send('Page.captureScreenshot', { format: 'png' });
    seen.png = Buffer.from(shot.data, 'base64');
    // One more round trip, so events sent before the screenshot's reply have all arrived.
    await send('Runtime.evaluate', { expression: '0' });
    return seen;
  } finally {
    browser.listeners.delete(listener);
    await browser.send('Target.closeTarget', { targetId }).catch(() => {});
  }
}

// Requests in a net log that a file:// document started for anything but a file (the old check).
function netLogFetches(file) {
  const text = fs.readFileSync(file, 'utf8').trim();
  const closed = text.endsWith(']}') || text.endsWith('}');
  const log = JSON.parse(closed ? text : text.replace(/,?\s*$/, ']}'));
  const start = log.constants.logEventTypes.URL_REQUEST_START_JOB;
  const fetched = [];
  for (const e of log.events || []) {
    const p = e.params || {};
    if (e.type === start && typeof p.url === 'string' && !p.url.startsWith('file:') &&
        String(p.site_for_cookies || '').includes('site=file://')) fetched.push(p.url);
  }
  return fetched;
}

async function main() {
  // No name resolves, so nothing can leave the machine even if a page asked; the net log still
  // records every request a page made.
  const flags = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking',
    '--disable-component-update', '--disable-sync', '--no-first-run',
    `--user-data-dir=${work}/profile`, '--host-resolver-rules=MAP * ~NOTFOUND',
    '--enable-logging=stderr', '--v=0', `--log-net-log=${work}/net.json`,
    '--remote-debugging-pipe', 'about:blank'];
  const browser = new Browser(chromium, flags);
  const results = [];
  let broken = null; // why the session ended early
  for (const page of pages) {
    const r = newResult(page);
    results.push(r);
    if (broken) {
      r.check('the page was loaded', false, broken);
      continue;
    }
    let seen;
    try {
      seen = await withTimeout(loadPage(browser, page), pageTimeoutMs, 'loading the page');
    } catch (e) {
      r.check('the page was loaded', false, e.message);
      broken = `the session ended at ${page.html}: ${e.message}`;
      continue;
    }
    if (process.env.PREREG_PAGE_KIND === 'site') checkSiteDom(seen.dom, r.check, r.page.html);
    else if (process.env.PREREG_PAGE_KIND === 'board') checkBoardDom(seen.dom, r.check);
    else checkDom(seen.dom, r.check);
    r.console = seen.console;
    r.fetched = seen.requests.filter((u) => !/^(file|data|about|blob):/.test(u));
    fs.mkdirSync(path.dirname(page.shot), { recursive: true });
    fs.writeFileSync(page.shot, seen.png);
    r.png = seen.png;
  }
  await browser.close();

  // Backstops: Chromium's log and net log of the whole session, charged to the page they name.
  const sessionLines = [];
  const logFile = `${work}/chromium.log`;
  const logText = fs.existsSync(logFile) ? fs.readFileSync(logFile, 'utf8') : '';
  for (const line of logText.split('\n').filter((l) => consoleLine.test(l))) {
    const r = results.find((x) => x.console && line.includes(x.page.url));
    if (r) r.console.push(`Chromium's log: ${line}`);
    else sessionLines.push(`console output in Chromium's log: ${line}`);
  }
  let netFetches = [];
  try { netFetches = netLogFetches(`${work}/net.json`); } catch (e) {
    if (!broken) sessionLines.push(`Chromium's net log could not be read: ${e.message}`);
  }
  for (const u of netFetches)
    if (!results.some((r) => (r.fetched || []).includes(u)))
      sessionLines.push(`a file:// page requested ${u} (net log; no page's events name it)`);

  let failedPages = 0;
  for (const r of results) {
    if (r.console) { // the page was loaded
      r.check('no console messages or errors', r.console.length === 0,
              '\n  ' + r.console.join('\n  '));
      r.check('the page requested nothing from the network', r.fetched.length === 0,
              r.fetched.join(', '));
      r.check(`screenshot ${r.page.shot}`, isPngOfWidth(r.png, 1280), `${r.png.length} bytes`);
    }
    console.log(`== ${r.page.html}`);
    for (const l of r.lines) console.log(l);
    console.log(r.failed === 0 ? 'page passed' : `page FAILED: ${r.failed} check(s) failed`);
    if (r.failed) failedPages++;
  }
  for (const l of sessionLines) console.log(`FAIL session: ${l}`);
  if (broken) {
    const tail = logText.split('\n').slice(-20).join('\n');
    process.stderr.write(`${broken}\nChromium's log, last lines:\n${tail}\n`);
  }
  if (failedPages === 0 && sessionLines.length === 0) {
    console.log(`check_report: all checks passed (${results.length} page(s))`);
    return 0;
  }
  const names = results.filter((r) => r.failed).map((r) => r.page.html);
  console.log(`check_report: FAILED: ${names.length} of ${results.length} page(s)` +
              (names.length ? `: ${names.join(' ')}` : '') +
              (sessionLines.length ? `; ${sessionLines.length} session-wide failure(s)` : ''));
  return 1;
}

main().then((rc) => process.exit(rc), (e) => {
  console.log(`check_report: FAILED: ${e.stack || e}`);
  process.exit(1);
});
