#!/usr/bin/env bash
# Session 7, device call A.
# 1. The whole GPU suite (prereg_device_tests): kernels/cuda/cupti.cpp changed after the last
#    GPU run (the graph-node count, issue 14).
# 2. Issue 13, item 1: where a Python arm's host time goes inside prereg and outside it
#    (tools/host_probe.py): LayerNorm eager fwd+bwd at 128x1024 and the HF eager decode step,
#    each in a plain python3 loop under several window orders, then inside `prereg try`, alone
#    and interleaved with the protocol's other arms, with the host wall/CPU time of each call.
# 3. Issue 14: decode_graph with the kernel clock on (graph_kernels per sample, the defect),
#    and compute-sanitizer memcheck over a graph-launched LayerNorm try with the clock on.
# Everything is exploratory (`prereg try`): no report here is signed or frozen.
# Usage: bash tools/device_s7a.sh BIN_DIR
set -uo pipefail
SECONDS=0
bin=${1:-.devbin}
final=${OUT:-out}
mkdir -p "$final"
out=/tmp/logs-s7a
mkdir -p "$out"
pack() { tar czf "$final/logs.tgz" -C /tmp logs-s7a; }
export PATH=/opt/torch/.venv/bin:$PATH PREREG_PYTHON=python3 PYTHONUNBUFFERED=1
S="$out/summary.txt"
step() { echo "== $* ($(date +%T), ${SECONDS}s)" | tee -a "$S"; }
"$bin/prereg" --version | tee -a "$S"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv | tee -a "$S"
which python3 | tee -a "$S"; python3 -c 'import sys,torch; print(sys.version, torch.__version__)' | tee -a "$S"
nproc | tee -a "$S"

step "GPU tests"
timeout 170 "$bin/prereg_device_tests" >"$out/device_tests.log" 2>&1
echo "device_tests rc=$?" | tee -a "$S"; tail -n 3 "$out/device_tests.log" | tee -a "$S"
pack

probe=$PWD/tools/host_probe.py
mkdir -p exploratory
python3 - "$probe" <<'PY'
import sys
probe = sys.argv[1]
ln = open("protocols/ln_batch1_peers.yaml").read()
head = ln[:ln.index("\narms:") + 1].replace("rows: [128, 512, 1024, 4096, 16384, 65536]", "rows: [128]")
head = head.replace("passes: [fwd, fwd+bwd]", "passes: [fwd+bwd]")
tail = "measurement:\n  repetitions: 60\n  warmup: 10\n%spredictions:\n  - id: X\n    claim: \"probe\"\n    expect: \"%s\"\n"
alone = head.replace("id: ln_batch1_peers", "id: probe_ln_alone") + (
    f"arms:\n  - id: eager\n    python: {probe}\n    function: ln_eager\n"
    "  - id: eager_plain\n    python: ../kernels/python/torch_norms.py\n    function: layernorm_eager\n")
peers = ln[ln.index("\narms:") + 1:ln.index("\nmeasurement:") + 1].replace(
    "python: ../kernels/python/torch_norms.py\n    function: layernorm_eager",
    f"python: {probe}\n    function: ln_eager")
allarms = head.replace("id: ln_batch1_peers", "id: probe_ln_all") + peers
for name, text, expect in (("alone", alone, "eager > 0"), ("all", allarms, "eager > 0")):
    for order in ("", "  order: sequential\n"):
        suffix = "_seq" if order else ""
        open(f"exploratory/probe_ln_{name}{suffix}.yaml", "w").write(
            (text.replace("id: probe_ln_" + name, "id: probe_ln_" + name + suffix))
            + tail % (order, expect))
q = open("protocols/qwen_decode.yaml").read()
qhead = q[:q.index("\narms:") + 1].replace("id: qwen_decode", "id: probe_qwen")
qarms = lambda arms: "arms:\n" + "".join(
    f"  - id: {a}\n    python: {src}\n    function: {fn}\n" for a, src, fn in arms)
qp = "../kernels/python/qwen_decode.py"
alone = qarms([("decode_hf", probe, "decode_hf")])
four = qarms([("decode_hf", probe, "decode_hf"), ("decode_fused", probe, "decode_fused"),
              ("decode_graph", qp, "decode_graph"), ("prefill_hf", qp, "prefill_hf")])
qt = "measurement:\n  repetitions: 20\n  warmup: 3\n%spredictions:\n  - id: X\n    claim: \"probe\"\n    expect: \"decode_hf > 0\"\n"
open("exploratory/probe_qwen_alone.yaml", "w").write(qhead.replace("probe_qwen", "probe_qwen_alone") + alone + qt % "")
open("exploratory/probe_qwen_four.yaml", "w").write(qhead.replace("probe_qwen", "probe_qwen_four") + four + qt % "")
open("exploratory/probe_qwen_four_seq.yaml", "w").write(qhead.replace("probe_qwen", "probe_qwen_four_seq") + four + qt % "  order: sequential\n")
t = open("protocols/validity/ncu_agreement.yaml").read()
t = t.replace("  rows: [4096, 16384, 65536]", "  rows: [128, 4096]").replace("  repetitions: 40", "  repetitions: 3")
t = t.replace("  warmup: 5", "  warmup: 1").replace("id: ncu_agreement", "id: tiny_graph")
a = t.index("\narms:") + 1
b = t.index("\nmeasurement:") + 1
t = t[:a] + "arms:\n  - id: fused\n    kernel: layernorm.fused\n    launch: graph\n    repeat: 4\n  - id: unfused\n    kernel: layernorm.unfused\n" + t[b:]
p = t.index("\npredictions:") + 1
open("exploratory/tiny_graph.yaml", "w").write(t[:p] + 'predictions:\n  - id: T1\n    claim: "fused is faster"\n    expect: "fused < unfused"\n')
PY
cp exploratory/probe_*.yaml exploratory/tiny_graph.yaml "$out/" 2>/dev/null

try() { # name yaml [env...]
  local name=$1 yaml=$2; shift 2
  step "prereg try $name"
  timeout "${T:-120}" env PREREG_PROBE_LOG="$out/probe_$name.json" "$@" "$bin/prereg" try "$yaml" --quiet \
    --out /tmp/try-$name >"$out/try_$name.out" 2>&1
  echo "try $name rc=$?" | tee -a "$S"; tail -n 2 "$out/try_$name.out" | tee -a "$S"
  local r; r=$(ls -d /tmp/try-$name/*/*/ 2>/dev/null | head -n 1)
  [ -n "$r" ] && cp "$r/report.json" "$out/try_${name}_report.json"
  pack
}

step "memcheck: graph-launched LayerNorm, kernel clock on"
timeout 120 compute-sanitizer --tool memcheck --error-exitcode 9 \
  "$bin/prereg" try exploratory/tiny_graph.yaml --quiet --out /tmp/tiny-graph >"$out/memcheck_graph_try.log" 2>&1
echo "memcheck graph try rc=$?" | tee -a "$S"; tail -n 4 "$out/memcheck_graph_try.log" | tee -a "$S"
r=$(ls -d /tmp/tiny-graph/*/*/ 2>/dev/null | head -n 1); [ -n "$r" ] && cp "$r/report.json" "$out/memcheck_graph_report.json"
step "tiny graph without the sanitizer (the clock's graph count)"
"$bin/prereg" try exploratory/tiny_graph.yaml --quiet --out /tmp/tiny-graph2 >"$out/tiny_graph.out" 2>&1
r=$(ls -d /tmp/tiny-graph2/*/*/ 2>/dev/null | head -n 1); [ -n "$r" ] && cp "$r/report.json" "$out/tiny_graph_report.json"
pack
step "plain python3: LayerNorm eager fwd+bwd 128x1024"
timeout 150 python3 "$probe" ln "$out/plain_ln.json" >"$out/plain_ln.out" 2>&1
echo "plain ln rc=$?" | tee -a "$S"; cat "$out/plain_ln.out" | tail -n 7 | tee -a "$S"
pack
try ln_alone exploratory/probe_ln_alone.yaml
try ln_all exploratory/probe_ln_all.yaml
try ln_all_seq exploratory/probe_ln_all_seq.yaml
T=60 try ln_alone_noclock exploratory/probe_ln_alone.yaml PREREG_KERNEL_CLOCK=off

step "plain python3: HF eager decode step"
timeout 170 python3 "$probe" decode "$out/plain_decode.json" >"$out/plain_decode.out" 2>&1
echo "plain decode rc=$?" | tee -a "$S"; cat "$out/plain_decode.out" | tail -n 7 | tee -a "$S"
pack
T=100 try qwen_alone exploratory/probe_qwen_alone.yaml
T=150 try qwen_four exploratory/probe_qwen_four.yaml
T=150 try qwen_four_seq exploratory/probe_qwen_four_seq.yaml PREREG_KERNEL_CLOCK=off

echo "== done (${SECONDS}s)" | tee -a "$S"
pack
