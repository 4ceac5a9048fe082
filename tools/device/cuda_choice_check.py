#!/usr/bin/env python3
"""On the GPU machine: what tools/setup.sh would build of the CUDA code there (tools/cuda_choice.sh,
docs/cuda.md "What tools/setup.sh builds"). With nvcc present it must choose
CMAKE_CUDA_ARCHITECTURES=native and name the GPU (e.g. NVIDIA H200 (sm_90)); PREREG_CUDA_ARCHS=all
must choose the portable binary. Prints each choice; exit 0 when both hold, 1 otherwise."""
import os
import subprocess
import sys

SCRIPT = os.path.join(os.path.dirname(__file__), "..", "cuda_choice.sh")


def choose(archs):
    env = dict(os.environ)
    env.pop("PREREG_CMAKE_ARGS", None)
    if archs is None:
        env.pop("PREREG_CUDA_ARCHS", None)
    else:
        env["PREREG_CUDA_ARCHS"] = archs
    # The choice needs nvcc only to be present; the device may have none, so name one if not.
    if not os.path.exists("/usr/local/cuda/bin/nvcc"):
        env["PREREG_SETUP_NVCC"] = "/bin/true"
    done = subprocess.run(["bash", SCRIPT], env=env, capture_output=True, text=True, check=False)
    print(f"PREREG_CUDA_ARCHS={archs or '(unset)'}: exit {done.returncode}")
    print("  args:", " ".join(done.stdout.split()))
    print("  line:", done.stderr.strip())
    return done


auto = choose(None)
fat = choose("all")
ok = (auto.returncode == 0 and "-DCMAKE_CUDA_ARCHITECTURES=native" in auto.stdout.split()
      and "(sm_" in auto.stderr and fat.returncode == 0
      and "-UCMAKE_CUDA_ARCHITECTURES" in fat.stdout.split())
print("cuda_choice_check:", "PASS" if ok else "FAIL")
sys.exit(0 if ok else 1)
