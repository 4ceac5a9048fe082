#!/usr/bin/env python3
"""Nsight Compute's sections for the session-8 limit probes (issue 15; the ncu steps of
tools/device/plans/ncu-s8.plan, formerly tools/device_s8.sh with NCU=1) as one Markdown table:
per kernel name, the median over its profiled launches of duration, DRAM throughput (% of
peak), achieved and theoretical occupancy, registers, block, grid and waves per SM.

Usage: python3 tools/gen/ncu_s8_table.py --slim FULL.csv OUT.csv   (the columns and metrics used)
       python3 tools/gen/ncu_s8_table.py SLIM.csv...                (print the table)
"""
import csv
import os
import statistics
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "device"))
from ncu_agreement import short  # noqa: E402 (the kernel's bare name, as in the agreement table)

KEEP = ("ID", "Kernel Name", "Block Size", "Grid Size", "Section Name", "Metric Name", "Metric Unit",
        "Metric Value")
METRICS = [("Duration", "duration"), ("DRAM Throughput", "DRAM % of peak"),
           ("Compute (SM) Throughput", "SM % of peak"), ("Achieved Occupancy", "achieved occ. %"),
           ("Theoretical Occupancy", "theoretical occ. %"), ("Registers Per Thread", "registers"),
           ("Waves Per SM", "waves/SM"), ("L2 Hit Rate", "L2 hit %")]


# What --slim keeps: the table's metrics and the limits behind the occupancy.
SLIM_METRICS = {m for m, _ in METRICS} | {
    "Memory Throughput", "Mem Busy", "Max Bandwidth", "L1/TEX Hit Rate", "Elapsed Cycles",
    "Block Limit Registers", "Block Limit Shared Mem", "Block Limit Warps", "Block Limit SM",
    "Achieved Active Warps Per SM", "Threads", "SM Frequency", "DRAM Frequency"}


def rows_of(path):
    rows = list(csv.reader(open(path, newline="")))
    head = next(i for i, r in enumerate(rows) if "Kernel Name" in r and "Metric Name" in r)
    h = rows[head]
    n = h.index("Metric Value") + 1  # metric rows stop there; rule rows run to the last column
    return h, [r for r in rows[head + 1:] if len(r) >= n and r[h.index("Metric Name")]]


def slim(src, dst):
    h, rows = rows_of(src)
    idx = [h.index(k) for k in KEEP]
    with open(dst, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(KEEP)
        for r in rows:
            if r[h.index("Metric Name")] in SLIM_METRICS:
                w.writerow([r[i] for i in idx])


def table(paths):
    print("| probe | kernel | block | grid | " + " | ".join(t for _, t in METRICS) + " | launches |")
    print("| --- " * (len(METRICS) + 5) + "|")
    for p in paths:
        h, rows = rows_of(p)
        col = {k: h.index(k) for k in KEEP}
        per = {}
        for r in rows:
            key = (short(r[col["Kernel Name"]]), r[col["Block Size"]].strip(), r[col["Grid Size"]].strip())
            d = per.setdefault(key, {})
            d.setdefault(r[col["Metric Name"]], {}).setdefault(r[col["ID"]], (r[col["Metric Value"]], r[col["Metric Unit"]]))
        probe = p.rsplit("/", 1)[-1].removeprefix("ncu_").removesuffix(".csv")
        for (name, block, grid), d in per.items():
            cells = []
            for m, _ in METRICS:
                vals = d.get(m, {})
                nums = [float(v.replace(",", "")) for v, _ in vals.values() if v.replace(",", "").replace(".", "").isdigit()]
                unit = next(iter(vals.values()), ("", ""))[1]
                if not nums:
                    cells.append("—")
                elif m == "Duration":
                    scale = {"ns": 1e-3, "nsecond": 1e-3, "us": 1.0, "usecond": 1.0, "ms": 1e3}.get(unit, 1e-3)
                    cells.append(f"{statistics.median(nums) * scale:.1f} µs")
                else:
                    cells.append(f"{statistics.median(nums):g}")
            n = len(d.get("Duration", {}))
            print(f"| {probe} | `{name}` | {block} | {grid} | " + " | ".join(cells) + f" | {n} |")


if __name__ == "__main__":
    a = sys.argv[1:]
    if a[:1] == ["--slim"]:
        slim(a[1], a[2])
    else:
        table(a)
