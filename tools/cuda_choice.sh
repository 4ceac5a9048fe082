#!/usr/bin/env bash
# What tools/setup.sh builds of the CUDA code (docs/cuda.md, "Targets"): prints the CMake
# arguments, one per line, on stdout and one line saying what it chose on stderr.
#
# With nvcc and a usable GPU (nvidia-smi lists one) the CUDA code is built for this machine's GPUs
# only (CMAKE_CUDA_ARCHITECTURES=native); without a usable GPU it is not built at all. Without
# nvcc it is not built. PREREG_CUDA_ARCHS overrides:
#   all       the portable binary: SASS for every supported architecture + compute_80 PTX
#   native    this machine's GPUs (CMake's detection must find one)
#   off       no CUDA
#   LIST      a CMake architecture list, e.g. "90-real;80-virtual" (what .ci/run asks for)
# A choice that needs nvcc exits 2 with one error line when there is none. PREREG_CMAKE_ARGS
# naming CMAKE_CUDA_ARCHITECTURES (without PREREG_CUDA_ARCHS) counts as asking for CUDA.
# PREREG_SETUP_NVCC names the nvcc to look for ("" = none; tests/e2e/setup_cuda.sh).
set -euo pipefail
if [ -n "${PREREG_SETUP_NVCC+set}" ]; then
  nvcc=$PREREG_SETUP_NVCC
elif [ -x /usr/local/cuda/bin/nvcc ]; then
  nvcc=/usr/local/cuda/bin/nvcc
else
  nvcc=$(command -v nvcc || true)
fi
# The GPUs nvidia-smi lists ("NAME (sm_XY)", "2 x NAME (sm_XY)", comma-separated), or why there
# are none (exit 1).
gpus() {
  if ! command -v nvidia-smi >/dev/null; then
    echo "nvidia-smi not found"
    return 1
  fi
  local out
  if ! out=$(nvidia-smi --query-gpu=name,compute_cap --format=csv,noheader 2>&1) || [ -z "$out" ]; then
    echo "nvidia-smi: $(echo "${out:-lists no GPU}" | head -n 1)"
    return 1
  fi
  echo "$out" | awk -F', *' '{cc = $2; sub(/\./, "", cc); print $1 " (sm_" cc ")"}' | sort | uniq -c |
    awk '{n = $1; $1 = ""; sub(/^ /, ""); print (n > 1 ? n " x " : "") $0}' | paste -sd, - |
    sed 's/,/, /g'
}
archs=${PREREG_CUDA_ARCHS:-}
if [[ -z $archs && ${PREREG_CMAKE_ARGS:-} == *CMAKE_CUDA_ARCHITECTURES* ]]; then archs=given; fi
need_nvcc() {
  if [ -z "$nvcc" ]; then
    echo "prereg: error: PREREG_CUDA_ARCHS=$archs asks for CUDA, but there is no nvcc (/usr/local/cuda/bin/nvcc or on PATH)" >&2
    exit 2
  fi
}
say() { echo "prereg setup: $*" >&2; }
case $archs in
"")
  if [ -z "$nvcc" ]; then
    printf '%s\n' -DPREREG_CUDA=OFF
    say "no CUDA compiler (nvcc): building the CPU backend only"
  elif found=$(gpus); then
    printf '%s\n' -DPREREG_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=native
    say "CUDA for this machine's GPU: $found (CMAKE_CUDA_ARCHITECTURES=native; PREREG_CUDA_ARCHS=all builds the portable binary)"
  else
    printf '%s\n' -DPREREG_CUDA=OFF
    say "no usable GPU ($found): building without CUDA; PREREG_CUDA_ARCHS=all builds the portable CUDA binary"
  fi ;;
all | fat | portable)
  need_nvcc
  printf '%s\n' -DPREREG_CUDA=ON -UCMAKE_CUDA_ARCHITECTURES
  say "the portable CUDA binary: every supported architecture (docs/cuda.md; PREREG_CUDA_ARCHS=$archs)" ;;
native)
  need_nvcc
  printf '%s\n' -DPREREG_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=native
  say "CUDA for this machine's GPU (CMAKE_CUDA_ARCHITECTURES=native; PREREG_CUDA_ARCHS=native)" ;;
off | none)
  printf '%s\n' -DPREREG_CUDA=OFF
  say "building without CUDA (PREREG_CUDA_ARCHS=$archs)" ;;
given)
  need_nvcc
  printf '%s\n' -DPREREG_CUDA=ON
  say "CUDA for the architectures PREREG_CMAKE_ARGS names" ;;
*)
  need_nvcc
  printf '%s\n' -DPREREG_CUDA=ON "-DCMAKE_CUDA_ARCHITECTURES=$archs"
  say "CUDA for the architectures $archs (PREREG_CUDA_ARCHS)" ;;
esac
