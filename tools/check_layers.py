#!/usr/bin/env python3
"""Checks the layering of runner/ (docs/README.md, "The source tree").

Each folder runner/<component>/ is one library; its CMakeLists.txt names the components it
links (`prereg_component(NAME DEPS a b ...)`). A source may include headers of its own
component, of a component its library links (directly or through another), of
runner/include/prereg/ (what kernels and plugins include) and of the build's generated
prereg/ headers; nothing else of the project. Exit 0 when every include points down, else 1
with one line per offending include.
"""
import argparse
import pathlib
import re
import sys

RUNNER = pathlib.Path(__file__).resolve().parent.parent / "runner"
GENERATED = {"prereg/build_info.hpp", "prereg/build_commit.hpp", "prereg/arm_table.hpp",
             "prereg/python_glue.hpp", "prereg/arm_abi_text.hpp"}
# Outside runner/: what device/ shares with the CUDA arms (the CUDA-call wrapper, the fill).
SHARED_WITH_KERNELS = {"device": {"cuda/cuda_call.hpp", "cuda/common.cuh"}}


def declared_deps():
    deps = {}
    for cml in sorted(RUNNER.glob("*/CMakeLists.txt")):
        name = cml.parent.name
        text = cml.read_text()
        m = re.search(r"prereg_component\(\s*(\w+)(.*?)\)", text, re.S)
        if m:
            body = m.group(2)
            d = re.search(r"DEPS((?:\s+\w+)+?)(?=\s+(?:LIBS|SOURCES)\b|\s*$)", body, re.S)
            deps[name] = d.group(1).split() if d else []
        elif name == "cli":
            link = re.search(r"target_link_libraries\(prereg PRIVATE([^)]*)\)", text)
            deps[name] = [t[len("prereg_"):] for t in link.group(1).split()
                          if t.startswith("prereg_") and t != "prereg_kernels"]
    return deps


def closure(deps, name, seen=None):
    seen = set() if seen is None else seen
    for d in deps.get(name, []):
        if d not in seen:
            seen.add(d)
            closure(deps, d, seen)
    return seen


def main():
    global RUNNER
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--root", help="the repository to check (default: this script's)")
    a = ap.parse_args()
    if a.root:
        RUNNER = pathlib.Path(a.root).resolve() / "runner"
    deps = declared_deps()
    problems = []
    for name in deps:
        for d in deps[name]:
            if d not in deps:
                problems.append(f"runner/{name}/CMakeLists.txt: links unknown component {d}")
        if name in closure(deps, name):
            problems.append(f"runner/{name}/CMakeLists.txt: a cycle through {name}")
    include = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
    for src in sorted(RUNNER.rglob("*")):
        if src.suffix not in {".cpp", ".hpp", ".h", ".cu", ".cuh"}:
            continue
        rel = src.relative_to(RUNNER)
        comp = rel.parts[0]
        if comp == "include":
            allowed = {"include"}
        else:
            allowed = {comp, "include"} | closure(deps, comp)
        for lineno, line in enumerate(src.read_text().splitlines(), 1):
            m = include.match(line)
            if not m:
                continue
            path = m.group(1)
            if path in GENERATED:
                continue
            if path.startswith("prereg/"):
                if (RUNNER / "include" / path).exists():
                    continue
                problems.append(f"runner/{rel}:{lineno}: {path} is not in runner/include/")
                continue
            top = path.split("/")[0]
            if top in deps or top in {"base"}:
                if top not in allowed:
                    problems.append(f"runner/{rel}:{lineno}: includes {path}, but {comp} does not "
                                    f"link {top}")
                continue
            if path in SHARED_WITH_KERNELS.get(comp, set()):
                continue
            if (src.parent / path).exists():
                continue  # a sibling header named without its folder
            problems.append(f"runner/{rel}:{lineno}: includes {path}, outside the components")
    for p in problems:
        print(p)
    print(f"check_layers: {len(deps)} components, {len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
