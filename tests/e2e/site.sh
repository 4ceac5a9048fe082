#!/usr/bin/env bash
# `prereg site` (docs/site.md) over a generated store (tools/gen/site_store.cpp: 2 protocols x 8
# runs through the real engine on the fake device, every 4th run aborted, a 25% step in odd
# protocols from run 5, the 4th of 6 audited reports): attempts in order with the aborted ones, verdicts, the step found,
# reports the site cannot read shown as such on their protocol's page, links from the pages to
# every report page (relative to the site, or under --reports-url), revision labels and verdict
# badges with ids and claims, incremental rebuilds, no page over 2 MB, and bad arguments as one
# error line.
source "$(dirname "$0")/lib.bash"
gen=${PREREG_BUILD_DIR:?}/tests/prereg_gen_site_store
[ -x "$gen" ] || { fail "no generator at $gen"; finish; }
g=$work/gen
"$gen" "$g" 2 8 4 2>"$work/gen.log" && pass "generated 2 protocols x 8 runs" ||
  { fail "generator"; cat "$work/gen.log"; finish; }
p1=$(ls "$g/reports/gen_001" | sort | sed -n 2p)

# Reports the site cannot take at face value: one changed after signing, one of an unknown
# schema, one whose signature is not base64 of a signature.
cp -r "$g/reports/gen_001/$p1" "$g/reports/gen_001/20990101T000000Z-changed-000001"
sed -i 's/"median_ms":[0-9.e-]*/"median_ms":7/' "$g/reports/gen_001/20990101T000000Z-changed-000001/report.json"
mkdir -p "$g/reports/gen_000/20990101T000000Z-future-000002"
echo '{"schema_version": 99}' >"$g/reports/gen_000/20990101T000000Z-future-000002/report.json"
cp -r "$g/reports/gen_000/$(ls "$g/reports/gen_000" | head -n 1)" "$g/reports/gen_000/20990101T000000Z-badsig-000003"
sed -i 's/"sig":"[^"]*"/"sig":"AAAA"/' "$g/reports/gen_000/20990101T000000Z-badsig-000003/report.dsse.json"
mkdir -p "$g/reports/nobody/20990101T000000Z-orphan-000004"
echo '{}' >"$g/reports/nobody/20990101T000000Z-orphan-000004/report.json"

expect_exit 0 "site builds" -- "$PREREG" site "$g/store" "$g/reports" --out "$work/site"
grep -q "^2 protocols, 16 reports (16 audited now" "$work/out" && pass "summary line" ||
  { fail "summary line"; cat "$work/out"; }
[ "$(tail -n 1 "$work/out")" = "$work/site/index.html" ] && pass "last line: the index" ||
  fail "last line"
ls "$work/site"/p-*.html >/dev/null && [ "$(ls "$work/site"/p-*.html | wc -l)" -eq 2 ] &&
  pass "one page per protocol" || fail "protocol pages"
page1=$(grep -l '<h1>gen_001' "$work/site"/p-*.html)
page0=$(grep -l '<h1>gen_000' "$work/site"/p-*.html)
grep -q '8 attempts (6 completed, 2 aborted, 0 without an end)' "$page1" &&
  pass "attempts: the aborted ones counted" || fail "attempt counts"
[ "$(grep -o '<span class="b bad">aborted</span> generated abort' "$page1" | wc -l)" -eq 2 ] &&
  pass "aborted attempts listed with their reason" || fail "aborted rows"
grep -q '<td>4</td><td><code>[^<]*</code></td><td>[^<]*</td><td>Fake Device 1</td><td><span class="b bad">aborted' "$page1" &&
  pass "attempt 4 is the aborted one, in order" || fail "attempt order"
grep -q 'unfused fwd 64x256</code></td><td>step</td><td>4 of 6: <a href="' "$page1" && grep -q '+25.[0-9]%' "$page1" &&
  pass "the 25% step found at the first slower run" || fail "step not found"
grep -q 'No steps' "$page0" && pass "no step where none was planted" || fail "false step"
grep -q 'title="[^"]*: confirmed' "$page1" && pass "verdicts over time" || fail "verdict grid"
grep -qE 'audit failed</span> <a href="[^"]*/report.html" title="open report.html"><code>gen_001/20990101T000000Z-changed-000001</code></a><div class="why">[^<]*statistics' "$page1" &&
  pass "a changed report: audit failed, on its protocol's page" || fail "changed report"
grep -q 'unreadable</span> <code>gen_000/20990101T000000Z-future-000002</code><div class="why">[^<]*schema' "$page0" &&
  pass "an unknown schema: unreadable, on its protocol's page" || fail "unknown schema"
grep -qE 'audit failed</span> <a [^>]*><code>gen_000/20990101T000000Z-badsig-000003</code></a><div class="why">envelope' "$page0" &&
  pass "a bad signature: audit failed (envelope)" || fail "bad signature"
grep -q 'nobody/20990101T000000Z-orphan-000004' "$work/site/index.html" &&
  pass "a report of no protocol: listed on the index" || fail "orphan"
# Links: every report link resolves from the site's folder (the future report has no page: no
# link): 12 completed runs and the two copied folders; the pages name each version's revision;
# badges show the id and carry the claim.
links=$(grep -ohE 'href="[^"]*/report\.(html|md)"' "$work"/site/*.html | sed -E 's/^href="|"$//g' | sort -u)
[ "$(echo "$links" | grep -c .)" -eq 14 ] && pass "$(echo "$links" | grep -c .) distinct report links" ||
  fail "report links: $(echo "$links" | head -3)"
dead=0
for l in $links; do [ -f "$work/site/$l" ] || { dead=$((dead + 1)); echo "    dead: $l"; }; done
[ "$dead" -eq 0 ] && pass "every report link leads to a page" || fail "$dead dead report links"
echo "$links" | grep -q '^\.\./gen/reports/gen_001/' && pass "links relative to the site: ../gen/reports/" ||
  fail "links: $(echo "$links" | head -1)"
grep -q 'future-000002/report' "$page0" && fail "a link to a folder without a page" ||
  pass "no link where a folder has no page"
grep -q '<h1>gen_001 <span class="rev">revision 1</span>' "$page1" && pass "the heading names the revision" ||
  fail "revision label"
grep -qE 'class="b v (ok|bad|mid)" href="[^"]*/report.html" title="P1 \(At 128 rows the fused forward is at least 10% faster\): (confirmed|refuted|inconclusive) ' "$page1" &&
  pass "a badge: the prediction id, its claim and verdict, linked to its report" || fail "badge"
grep -q '<polygon class="iqr"' "$page1" && grep -q '<circle class="pt"[^>]*><title>run 1 of 6, 20' "$page1" &&
  pass "charts: the IQR band and dated points" || fail "chart band or points"
expect_exit 0 "site with --reports-url" -- "$PREREG" site "$g/store" "$g/reports" --out "$work/site-url" \
  --reports-url https://lab.example/reports
grep -q 'href="https://lab.example/reports/gen_001/' "$work/site-url/index.html" &&
  pass "--reports-url: the links under that URL" || fail "--reports-url links"

# The reports are audited on every core: one thread gives the same pages and cache entries.
PREREG_HOST_THREADS=1 "$PREREG" site "$g/store" "$g/reports" --out "$work/site1" >/dev/null &&
  diff -r "$work/site" "$work/site1" >/dev/null &&
  pass "one thread or many: the same pages and cache" || fail "pages depend on the thread count"
big=$(find "$work/site" -name '*.html' -size +2048k)
[ -z "$big" ] && pass "no page over 2 MB" || fail "pages over 2 MB: $big"

# Incremental: nothing audited or written again; one changed report audited again.
expect_exit 0 "rebuild" -- "$PREREG" site "$g/store" "$g/reports" --out "$work/site"
grep -q '(0 audited now.*0 pages written, 3 unchanged' "$work/out" &&
  pass "an unchanged rebuild audits and writes nothing" || { fail "rebuild"; cat "$work/out"; }
sed -i 's/"median_ms":7/"median_ms":8/' "$g/reports/gen_001/20990101T000000Z-changed-000001/report.json"
expect_exit 0 "rebuild after a change" -- "$PREREG" site "$g/store" "$g/reports" --out "$work/site"
grep -q '(1 audited now' "$work/out" && pass "only the changed report is audited again" ||
  { fail "incremental audit"; cat "$work/out"; }

expect_exit 2 "no store" -- "$PREREG" site "$work/none" "$g/reports" --out "$work/s2"
expect_err '^prereg: error: no store folder \(' "one error line naming the folder"
[ "$(wc -l <"$work/err")" -eq 1 ] && pass "one line" || fail "error lines"
[ ! -e "$work/s2" ] && pass "nothing written" || fail "wrote a site"
finish
