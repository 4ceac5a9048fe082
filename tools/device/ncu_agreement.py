#!/usr/bin/env python3
"""The kernel clock against Nsight Compute (issue 14, item 2; docs/evidence/ncu-agreement.md).

Reads prereg's report of protocols/validity/ncu_agreement.yaml (run alone), the report of the
same protocol run without the L2 flush (`prereg try`, exploratory), and Nsight Compute's raw
CSV of the same protocol run under `ncu` with forced window marks (PREREG_WINDOW_MARKS=1), and
prints the agreement table as Markdown.

Matching ncu's kernels to prereg's cells: the protocol's order is `sequential`, so the engine
measures cell after cell, grouped by (pass, rows, cols) in plan order and by arm inside a group
(docs/engine.md). Every timed window is bounded by prereg_window_open / prereg_window_close;
consecutive windows with the same kernels (names and grids) are one cell, in that order; a
cell's last `repetitions` windows are its samples (warm-up windows come first). The ncu time of
a window is the sum of its kernels' gpu__time_duration (ncu serialises kernels, so the sum is
their union).
"""
import csv
import os
import json
import statistics
import sys

INSTRUMENT = ("read_sweep_kernel", "fill_kernel", "empty_kernel", "clock_probe_kernel")


def ncu_windows(path):
    # ncu names a kernel with its scope and signature ("void <unnamed>::ln_fused_fwd<...>(...)",
    # "(anonymous namespace)::prereg_window_open()", by version): match the bare name inside it.
    rows = list(csv.reader(open(path, newline="")))
    head = next(i for i, r in enumerate(rows) if "Kernel Name" in r)
    h = rows[head]
    name_i, grid_i, block_i = h.index("Kernel Name"), h.index("Grid Size"), h.index("Block Size")
    dur_i = h.index("gpu__time_duration.sum")
    id_i = h.index("ID")
    unit = rows[head + 1][dur_i] if not rows[head + 1][id_i].strip().isdigit() else "nsecond"
    scale = {"nsecond": 1e-6, "usecond": 1e-3, "msecond": 1.0, "ns": 1e-6, "us": 1e-3}.get(unit, 1e-6)
    kernels = []
    for r in rows[head + 1:]:
        if len(r) <= dur_i or not r[id_i].strip().isdigit():
            continue
        kernels.append((int(r[id_i]), r[name_i], r[grid_i], r[block_i],
                        float(r[dur_i].replace(",", "")) * scale))
    kernels.sort()
    windows, cur = [], None
    for _, name, grid, block, ms in kernels:
        if "prereg_window_open" in name:
            cur = []
        elif "prereg_window_close" in name:
            if cur is not None:
                windows.append(cur)
            cur = None
        elif cur is not None:
            cur.append((name, grid, block, ms))
    return windows


def short(name):
    """ln_fused_fwd<float, row_shape<float, 32, 8>> from ncu's "void <unnamed>::ln_fused_fwd<...>(args)"."""
    base = name.removeprefix("void ").strip()
    for scope in ("prereg::cuda::", "(anonymous namespace)::", "<unnamed>::", "unnamed>::"):
        base = base.replace(scope, "")  # also inside template arguments
    base = base.split("(")[0].replace("> >", ">>").strip()
    depth, cut = 0, 0
    for i, ch in enumerate(base):  # the last '::' outside template brackets
        if ch == "<":
            depth += 1
        elif ch == ">":
            depth -= 1
        elif depth == 0 and base.startswith("::", i):
            cut = i + 2
    return base[cut:]


def signature(w):
    return tuple(sorted((n, g, b) for n, g, b, _ in w))


def main(alone_path, noflush_path, ncu_csv, under_path=None, only_arms=None):
    alone = json.load(open(alone_path))
    noflush = json.load(open(noflush_path)) if noflush_path not in ("-", "") and os.path.exists(noflush_path) else None
    # The run under ncu: the protocol itself (then its plan is ALONE's) or, when given, a smaller
    # exploratory variant of it (`prereg try`; its report names the cells and repetitions ncu saw).
    under = json.load(open(under_path)) if under_path else alone
    body = under["protocol"]["body"]
    reps = body["measurement"]["repetitions"]
    arms = [a["id"] for a in body["arms"]]
    passes = body["passes"]
    rows = body["axes"]["rows"]
    cols = body["axes"]["cols"]
    by_key = {(c["arm"], c["pass"], c["rows"], c["cols"]): c for c in alone["cells"]}
    # ONLY_ARMS: the arms whose kernels ncu's --kernel-name filter let through (the others'
    # windows are empty under ncu and are skipped).
    keep = set(only_arms.split(",")) if only_arms else None
    order = sorted((by_key[(c["arm"], c["pass"], c["rows"], c["cols"])] for c in under["cells"]
                    if keep is None or c["arm"] in keep),
                   key=lambda c: (passes.index(c["pass"]), rows.index(c["rows"]),
                                  cols.index(c["cols"]), arms.index(c["arm"])))
    groups = []
    for w in ncu_windows(ncu_csv):
        if not w or all(any(k in n for k in INSTRUMENT) for n, _, _, _ in w):
            continue
        if groups and groups[-1][0] == signature(w):
            groups[-1][1].append(w)
        else:
            groups.append((signature(w), [w]))
    if len(groups) != len(order):
        sys.exit(f"ncu_agreement: {len(groups)} groups of windows under ncu for {len(order)} cells")
    nf = {}
    if noflush:
        for c in noflush["cells"]:
            nf[(c["arm"], c["pass"], c["rows"], c["cols"])] = c
    print("| cell | kernels | events median | kernel clock median | ncu median | events above kernel clock | kernel clock vs ncu | gap share | no flush: events / kernel clock |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    out = []
    for c, (sig, ws) in zip(order, groups):
        ws = ws[-reps:]
        ncu = statistics.median(sum(ms for _, _, _, ms in w) for w in ws)
        kc = c.get("kernel_clock") or {}
        ev = c["median_ms"]
        kt = kc.get("median_kernel_ms")
        names = sorted({short(n) for n, _, _ in sig})
        key = (c["arm"], c["pass"], c["rows"], c["cols"])
        nfc = nf.get(key)
        nft = "—"
        if nfc and nfc.get("kernel_clock"):
            nft = f'{nfc["median_ms"] * 1e3:.2f} / {nfc["kernel_clock"]["median_kernel_ms"] * 1e3:.2f} us'
        above = f"{100 * (ev / kt - 1):+.1f}%" if kt else "—"
        vs = f"{100 * (kt / ncu - 1):+.1f}%" if kt else "—"
        share = f'{kc["gap_share_pct"]:.1f}%' if kc else "—"
        print(f'| {c["arm"]} {c["pass"]} {c["rows"]}x{c["cols"]} | {len(ws[-1])} ({", ".join(names)}) | '
              f'{ev * 1e3:.2f} us | {kt * 1e3:.2f} us | {ncu * 1e3:.2f} us | {above} | {vs} | {share} | {nft} |'
              if kt else f'| {c["arm"]} {c["pass"]} {c["rows"]}x{c["cols"]} | ? | {ev * 1e3:.2f} us | — | {ncu * 1e3:.2f} us | — | — | — | {nft} |')
        out.append({"cell": key, "events_ms": ev, "kernel_ms": kt, "ncu_ms": ncu,
                    "ncu_windows": len(ws)})
    json.dump(out, open(ncu_csv + ".agreement.json", "w"), indent=1)
    # Per kernel: the kernel clock's per-name median (kernel_clock.names) beside ncu's median of
    # the same kernel over the same cell's last `repetitions` windows.
    print()
    print("| cell | kernel | kernel clock median | ncu median | kernel clock vs ncu |")
    print("| --- | --- | --- | --- | --- |")
    for c, (sig, ws) in zip(order, groups):
        ws = ws[-reps:]
        names = (c.get("kernel_clock") or {}).get("names") or []
        for e in names:
            bare = short(e["name"])
            got = [sum(ms for n, _, _, ms in w if short(n) == bare) for w in ws]
            if not any(got):
                continue
            ncu = statistics.median(got)
            print(f'| {c["arm"]} {c["pass"]} {c["rows"]}x{c["cols"]} | {bare} | {e["median_ms"] * 1e3:.2f} us | '
                  f'{ncu * 1e3:.2f} us | {100 * (e["median_ms"] / ncu - 1):+.1f}% |')
    ins = alone["instrument"]
    print()
    print(f'Launch floor (empty step, events): {ins["launch_floor_ms"] * 1e3:.2f} us without the kernel '
          f'clock, {ins.get("kernel_clock_floor_ms", float("nan")) * 1e3:.2f} us with it; '
          f'kernel clock: {ins.get("kernel_clock", "none")}; records dropped: {ins.get("kernel_records_dropped")}.')


if __name__ == "__main__":
    if len(sys.argv) not in (4, 5, 6):
        sys.exit("usage: ncu_agreement.py ALONE/report.json NOFLUSH/report.json|- NCU.csv "
                 "[UNDER_NCU/report.json [ONLY_ARMS]]")
    main(*sys.argv[1:])
