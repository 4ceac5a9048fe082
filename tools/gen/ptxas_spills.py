#!/usr/bin/env python3
"""Register use and spills of every kernel of prereg's CUDA arms, by ptxas (issue 15, goal 4:
"no spills: show -Xptxas -v evidence"). Compiles each kernels/cuda/*.cu for one architecture
with the build's flags plus -Xptxas -v (no GPU needed) and prints one Markdown row per kernel
that spills, or per kernel with --all.

Usage: python3 tools/gen/ptxas_spills.py [--arch 90] [--all] [BUILD_DIR (default build-cuda)]
"""
import glob
import os
import re
import subprocess
import sys

args = sys.argv[1:]
arch = "90"
show_all = False
if "--arch" in args:
    i = args.index("--arch")
    arch = args[i + 1]
    del args[i:i + 2]
if "--all" in args:
    args.remove("--all")
    show_all = True
root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
build = os.path.abspath(args[0] if args else os.path.join(root, "build-cuda"))
rsp = os.path.join(build, "kernels/CMakeFiles/prereg_kernels.dir/includes_CUDA.rsp")
if not os.path.exists(rsp):
    sys.exit(f"ptxas_spills: {rsp} is missing: configure a CUDA build first (cmake -B {build})")
nvcc = os.environ.get("NVCC", "/usr/local/cuda/bin/nvcc")
rows = []
for cu in sorted(glob.glob(os.path.join(root, "kernels/cuda/*.cu")) +
                 glob.glob(os.path.join(root, "runner/device/*.cu"))):
    cmd = [nvcc, "-DFMT_HEADER_ONLY=1", "-DPREREG_HAVE_CUDA=1", "--options-file", rsp, "-O3",
           "-DNDEBUG", f"--generate-code=arch=compute_{arch},code=[sm_{arch}]",
           "--expt-relaxed-constexpr", "-std=c++20", "-Xptxas", "-v", "-c", cu, "-o", os.devnull]
    p = subprocess.run(cmd, cwd=build, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"ptxas_spills: nvcc failed on {cu}:\n{p.stderr[-2000:]}")
    entry = None
    lines = p.stderr.splitlines()
    for i, line in enumerate(lines):
        m = re.search(r"Compiling entry function '([^']+)'", line)
        if m:
            entry = m.group(1)
            continue
        m = re.search(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads", line)
        if m and entry:
            stack, stores, loads = map(int, m.groups())
            regs = next((int(x.group(1)) for x in (re.search(r"Used (\d+) registers", l)
                                                     for l in lines[i + 1:i + 3]) if x), None)
            if show_all or stores or loads:
                name = subprocess.run(["c++filt", entry], capture_output=True, text=True).stdout.strip()
                name = re.sub(r"\(.*", "", name.replace("prereg::cuda::(anonymous namespace)::", ""))
                rows.append((os.path.basename(cu), name, regs, stack, stores, loads))
            entry = None
print(f"sm_{arch}, {nvcc}")
print()
print("| file | kernel | registers | stack [B] | spill stores [B] | spill loads [B] |")
print("| --- | --- | ---: | ---: | ---: | ---: |")
for r in rows:
    print("| {} | `{}` | {} | {} | {} | {} |".format(*r))
if not rows:
    print("| (none) | no kernel spills | | | | |")
