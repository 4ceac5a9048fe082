#!/usr/bin/env bash
# Installs the Debian packages prereg needs and builds it into ./build.
#
# CUDA (tools/cuda_choice.sh, docs/cuda.md "Targets"): built for this machine's GPUs
# (CMAKE_CUDA_ARCHITECTURES=native) when nvcc exists and a GPU is usable, else not built (the main
# job then runs the CPU protocol); PREREG_CUDA_ARCHS=all asks for the portable binary, a CMake
# list for those architectures, off for none. One line says which. PREREG_CMAKE_ARGS adds
# configure arguments (after these, so they win).
set -euo pipefail
cd "$(dirname "$0")/.."
sudo=""
if [ "$(id -u)" -ne 0 ]; then sudo=sudo; fi
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq cmake g++ make libyaml-cpp-dev libssl-dev nlohmann-json3-dev \
  doctest-dev libcli11-dev libfmt-dev libdlpack-dev openssl python3 python3-jsonschema python3-venv python3-pytest \
  python3-numpy libpython3-dev clang-format libseccomp-dev >/dev/null

# scikit-build-core, the wheel's build backend (pyproject.toml, docs/python.md): Debian 13 has it;
# Debian 12 only in bookworm-backports (with python3-packaging 25 from there), so it is installed
# when the configured sources offer it (.ci/run adds bookworm-backports; nothing else comes from
# there). Without it the wheel's test (e2e_python_wheel) is skipped outside CI.
skbuild=$(apt-cache policy python3-scikit-build-core 2>/dev/null | awk '/Candidate:/ {print $2}')
if [[ -n $skbuild && $skbuild != "(none)" ]]; then
  target=()
  if [[ $skbuild == *bpo* ]]; then target=(-t "$(. /etc/os-release && echo "$VERSION_CODENAME")-backports"); fi
  $sudo apt-get install -y -qq "${target[@]}" python3-scikit-build-core >/dev/null
fi

cuda_args=$(bash tools/cuda_choice.sh) || exit $?
mapfile -t cuda <<<"$cuda_args"
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release "${cuda[@]}" ${PREREG_CMAKE_ARGS:-}
cmake --build build -j"$(nproc)"
