#!/usr/bin/env bash
# Installs the Debian packages prereg needs and builds it into ./build (CUDA on when nvcc exists).
set -euo pipefail
cd "$(dirname "$0")/.."
sudo=""
if [ "$(id -u)" -ne 0 ]; then sudo=sudo; fi
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq cmake g++ make libyaml-cpp-dev libssl-dev nlohmann-json3-dev \
  doctest-dev libcli11-dev libfmt-dev libdlpack-dev openssl python3 python3-jsonschema python3-venv python3-pytest \
  python3-numpy libpython3-dev clang-format libseccomp-dev >/dev/null
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release ${PREREG_CMAKE_ARGS:-}
cmake --build build -j"$(nproc)"
