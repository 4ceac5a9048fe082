#!/usr/bin/env bash
# Session 7, device call B.
# 1. Issue 13: the confirmatory run of protocols/qwen_decode_levers.yaml (frozen 76448efb:
#    the kernel clock off, the arms back to back), signed with the carried project key in the
#    committed store, audited there.
# 2. Issue 13, item 1: is the interpreter the difference? The same probes (tools/host_probe.py)
#    under Debian/Ubuntu's python3 (libpython linked statically into the executable) and under
#    `pyshared`, a python CLI built here against the shared libpython3.12.so that prereg
#    embeds (Py_BytesMain, installed into the venv's bin/ so it sees the same packages); and a
#    microbench protocol (pure Python; 200 tiny torch ops; eager LayerNorm) inside prereg.
# Usage: bash tools/device_s7b.sh BIN_DIR
set -uo pipefail
SECONDS=0
bin=${1:-.devbin}
final=${OUT:-out}
mkdir -p "$final"
out=/tmp/logs-s7b
mkdir -p "$out"
pack() { tar czf "$final/results.tgz" reports .prereg -C /tmp logs-s7b; }
chmod 600 .keys/signing.key
export PREREG_KEY=$PWD/.keys/signing.key PREREG_STORE=$PWD/.prereg
export PATH=/opt/torch/.venv/bin:$PATH PREREG_PYTHON=python3 PYTHONUNBUFFERED=1
S="$out/summary.txt"
step() { echo "== $* ($(date +%T), ${SECONDS}s)" | tee -a "$S"; }
"$bin/prereg" --version | tee -a "$S"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv | tee -a "$S"

step "qwen_decode_levers (frozen 76448efb): run, signed"
timeout 330 "$bin/prereg" run 76448efb --out reports --quiet >"$out/levers.out" 2>"$out/levers.err"
echo "run rc=$?" | tee -a "$S"; tail -n 3 "$out/levers.err" | tee -a "$S"; tail -n 1 "$out/levers.out" | tee -a "$S"
dir=$(tail -n 1 "$out/levers.out")
if [ -n "$dir" ] && [ -d "$dir" ]; then
  "$bin/prereg" audit "$dir" >"$out/levers_audit.txt" 2>&1
  echo "audit rc=$?" | tee -a "$S"; tail -n 3 "$out/levers_audit.txt" | tee -a "$S"
  grep -E '^\| `L[0-9]`' "$dir/report.md" | tee -a "$S"
fi
pack

step "pyshared: a python CLI on the shared libpython"
ldd "$(readlink -f "$(command -v python3)")" | grep -i python | tee -a "$S"
printf '#include <Python.h>\nint main(int argc, char **argv) { return Py_BytesMain(argc, argv); }\n' >/tmp/pyshared.c
inc=$(python3 -c 'import sysconfig; print(sysconfig.get_paths()["include"])')
libdir=$(python3 -c 'import sysconfig; print(sysconfig.get_config_var("LIBDIR"))')
gcc -O2 -I"$inc" /tmp/pyshared.c -o /opt/torch/.venv/bin/pyshared -L"$libdir" -lpython3.12 2>&1 | tee -a "$S"
ldd /opt/torch/.venv/bin/pyshared | grep -i python | tee -a "$S"
/opt/torch/.venv/bin/pyshared -c 'import sys, torch; print(sys.executable, sys.prefix, torch.__version__)' 2>&1 | tee -a "$S"

probe=$PWD/tools/host_probe.py
for kind in micro ln decode; do
  for py in python3 pyshared; do
    step "plain $kind under $py"
    timeout 150 "/opt/torch/.venv/bin/$py" "$probe" $kind "$out/plain_${kind}_$py.json" >"$out/plain_${kind}_$py.out" 2>&1
    echo "rc=$?" | tee -a "$S"; tail -n 6 "$out/plain_${kind}_$py.out" | tee -a "$S"
    pack
  done
  if [ $kind = micro ]; then
    mkdir -p exploratory
    cat >exploratory/probe_micro.yaml <<EOF
prereg: 2
id: probe_micro
title: "Host-path microbenches inside prereg (exploratory)"
hypothesis: "probe"
device: cuda
operation: layernorm
dtype: fp32
axes:
  rows: [128]
  cols: [1024]
passes: [fwd]
arms:
  - id: pybench
    python: $probe
    function: pybench
  - id: torchbench
    python: $probe
    function: torchbench
  - id: eager
    python: $probe
    function: ln_eager
measurement:
  repetitions: 200
  warmup: 20
  order: sequential
  kernel_clock: false
predictions:
  - id: X
    claim: "probe"
    expect: "eager < pybench"
EOF
    step "prereg try micro"
    timeout 120 env PREREG_PROBE_LOG="$out/probe_micro_prereg.json" "$bin/prereg" try exploratory/probe_micro.yaml \
      --quiet --out /tmp/try-micro >"$out/try_micro.out" 2>&1
    echo "rc=$?" | tee -a "$S"; tail -n 2 "$out/try_micro.out" | tee -a "$S"
    pack
  fi
done
echo "== done (${SECONDS}s)" | tee -a "$S"
pack
