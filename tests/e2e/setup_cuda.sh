#!/usr/bin/env bash
# tools/cuda_choice.sh, what tools/setup.sh builds of the CUDA code (docs/cuda.md, "Targets"):
# native for a usable GPU, nothing without one or without nvcc, the portable binary or a list
# when PREREG_CUDA_ARCHS asks, one line saying which, and one error line when CUDA is asked for
# without nvcc. nvidia-smi is a stand-in on PATH; nvcc is named by PREREG_SETUP_NVCC.
source "$(dirname "$0")/lib.bash"
choice=$PREREG_SOURCE_DIR/tools/cuda_choice.sh
bin=$work/bin # the only PATH the choice sees: the tools it uses, and a stand-in nvidia-smi
mkdir -p "$bin"
for tool in bash awk sort uniq paste sed head; do ln -s "$(command -v "$tool")" "$bin/$tool"; done
fake_smi() { # fake_smi EXIT OUTPUT: an nvidia-smi that prints OUTPUT and exits EXIT
  printf '#!/bin/sh\nprintf "%%s\\n" "%s"\nexit %s\n' "$2" "$1" >"$bin/nvidia-smi"
  chmod +x "$bin/nvidia-smi"
}
# run_choice DESCRIPTION ARCHS NVCC: runs the choice with PREREG_CUDA_ARCHS=ARCHS.
run_choice() {
  expect_exit "${4:-0}" "$1" -- env PATH="$bin" PREREG_CUDA_ARCHS="$2" \
    PREREG_SETUP_NVCC="$3" PREREG_CMAKE_ARGS="${5:-}" bash "$choice"
}
args() { paste -sd' ' "$work/out"; }
one_line() { [ "$(wc -l <"$work/err")" -eq 1 ] && pass "$1: one line" || fail "$1: $(cat "$work/err")"; }

fake_smi 0 'NVIDIA H200, 9.0'
run_choice "a usable GPU" "" /usr/local/cuda/bin/nvcc
[ "$(args)" = "-DPREREG_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=native" ] && pass "native for the GPU here" ||
  fail "args: $(args)"
expect_err "^prereg setup: CUDA for this machine's GPU: NVIDIA H200 \(sm_90\) \(CMAKE_CUDA_ARCHITECTURES=native" \
  "says which GPU"
one_line "GPU"

printf '#!/bin/sh\nprintf "NVIDIA H200, 9.0\\nNVIDIA H200, 9.0\\nNVIDIA L40S, 8.9\\n"\n' >"$bin/nvidia-smi"
run_choice "two kinds of GPU" "" /usr/local/cuda/bin/nvcc
expect_err "GPU: 2 x NVIDIA H200 \(sm_90\), NVIDIA L40S \(sm_89\) " "counts the GPUs of each kind"

fake_smi 9 "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver."
run_choice "a driver that does not answer" "" /usr/local/cuda/bin/nvcc
[ "$(args)" = "-DPREREG_CUDA=OFF" ] && pass "no CUDA without a usable GPU" || fail "args: $(args)"
expect_err "^prereg setup: no usable GPU \(nvidia-smi: NVIDIA-SMI has failed .*\): building without CUDA; PREREG_CUDA_ARCHS=all builds the portable CUDA binary$" \
  "says why and how to ask for the portable binary"
one_line "no GPU"

rm -f "$bin/nvidia-smi"
run_choice "no nvidia-smi" "" /usr/local/cuda/bin/nvcc
expect_err "no usable GPU \(nvidia-smi not found\)" "nvidia-smi not found"
run_choice "no nvcc" "" ""
[ "$(args)" = "-DPREREG_CUDA=OFF" ] && expect_err "^prereg setup: no CUDA compiler" "no nvcc: CPU only" ||
  fail "args: $(args)"

run_choice "the portable binary, asked for" all /usr/local/cuda/bin/nvcc
[ "$(args)" = "-DPREREG_CUDA=ON -UCMAKE_CUDA_ARCHITECTURES" ] && pass "all: the CMake default (fat)" ||
  fail "args: $(args)"
expect_err "^prereg setup: the portable CUDA binary" "says portable"
run_choice "CI's list" "90-real;80-virtual" /usr/local/cuda/bin/nvcc
[ "$(args)" = "-DPREREG_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90-real;80-virtual" ] &&
  pass "a list: those architectures, without a GPU" || fail "args: $(args)"
run_choice "off" off /usr/local/cuda/bin/nvcc
[ "$(args)" = "-DPREREG_CUDA=OFF" ] && pass "off" || fail "args: $(args)"
run_choice "PREREG_CMAKE_ARGS naming architectures" "" /usr/local/cuda/bin/nvcc 0 \
  "-DCMAKE_CUDA_ARCHITECTURES=90-real"
[ "$(args)" = "-DPREREG_CUDA=ON" ] && pass "counts as asking for CUDA" || fail "args: $(args)"
run_choice "CUDA asked for without nvcc" all "" 2
expect_err "^prereg: error: PREREG_CUDA_ARCHS=all asks for CUDA, but there is no nvcc" "one error line"
[ ! -s "$work/out" ] && pass "no arguments printed" || fail "printed $(args)"
finish
