#!/usr/bin/env bash
# Session 6, device call D (issue 14): why do short kernels read ~1 us longer under ncu than by
# the kernel clock? The LayerNorm variant of call B under ncu (--cache-control none, clocks not
# touched: --clock-control none) with the SM and DRAM clock of every profiled kernel
# (sm__cycles_elapsed.avg.per_second, dram__cycles_elapsed.avg.per_second) beside its
# duration; prereg's cells ran at 1980 MHz (clock_mhz). Comes back in $OUT/logs.tgz.
set -uo pipefail
SECONDS=0
bin=${1:-.devbin}
final=${OUT:-out}
mkdir -p "$final"
out=/tmp/logs-s6d
mkdir -p "$out"
pack() { tar czf "$final/logs.tgz" -C /tmp logs-s6d; }
export PATH=/opt/torch/.venv/bin:$PATH
python3 - <<'PY'
s = open("protocols/validity/ncu_agreement.yaml").read()
s = s.replace("  rows: [4096, 16384, 65536]", "  rows: [16384, 65536]").replace("passes: [fwd, fwd+bwd]", "passes: [fwd]")
s = s.replace("  repetitions: 40", "  repetitions: 15").replace("  warmup: 5", "  warmup: 2")
a, b = s.index("  - id: K3"), s.index("  - id: K4")
open("/tmp/ncu_ln.yaml", "w").write(s[:a] + s[b:])
PY
timeout 150 env PREREG_WINDOW_MARKS=1 ncu --clock-control none --cache-control none \
  --kernel-name regex:'ln_|prereg_window' \
  --metrics gpu__time_duration.sum,sm__cycles_elapsed.avg.per_second,dram__cycles_elapsed.avg.per_second \
  --csv --page raw --target-processes all --log-file "$out/ncu_clk.csv" \
  "$bin/prereg" try /tmp/ncu_ln.yaml --quiet --out /tmp/ncu-clk >"$out/ncu_clk.out" 2>&1
echo "ncu rc=$? ${SECONDS}s" | tee "$out/summary.txt"
python3 - "$out/ncu_clk.csv" <<'PY'
import sys, csv
rows = list(csv.reader(open(sys.argv[1], newline="")))
head = next((i for i, r in enumerate(rows) if "Kernel Name" in r), None)
if head is not None:
    cols = ("ID", "Kernel Name", "Grid Size", "Block Size", "gpu__time_duration.sum",
            "sm__cycles_elapsed.avg.per_second", "dram__cycles_elapsed.avg.per_second")
    keep = [rows[head].index(k) for k in cols if k in rows[head]]
    with open(sys.argv[1] + ".slim.csv", "w", newline="") as f:
        w = csv.writer(f, quoting=csv.QUOTE_ALL)
        for r in rows[head:]:
            if len(r) > max(keep):
                w.writerow([r[k] for k in keep])
PY
rm -f "$out/ncu_clk.csv"
u=$(ls -d /tmp/ncu-clk/*/*/ | head -n 1); cp "$u/report.json" "$out/ncu_clk_report.json"
pack
