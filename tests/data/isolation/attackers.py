"""Planted attackers for tests/e2e/isolation.sh (docs/audit.md, "The threat model").

`hunt` looks for the signing key, the parent's environment, memory and descriptors, and tries to
write the store, the ledger and the reports folder, from inside the measuring process; it writes
what it saw to $ATTACK_LOOT/python.json (a folder outside everything the sandbox protects) and
then behaves as an honest LayerNorm. `forge_and_exit` and `forge_and_go_on` write a raw result
into the pipe to the parent. The test checks the loot and the run's outcome.
"""
import json
import os
import sys
import numpy as np

KEY_MARK = b"PRIVATE" + b" KEY"  # (not spelled out: the store keeps a copy of this file)


def _config():
    """What the test tells the attacker (in a file: an environment variable would itself put the
    key's path into every environment block the attacker reads)."""
    with open(os.path.join(os.environ["ATTACK_LOOT"], "config.json")) as f:
        return json.load(f)


def _try(what, fn):
    try:
        return {"what": what, "got": fn()}
    except Exception as e:  # the attacker records every refusal
        return {"what": what, "error": type(e).__name__ + ": " + str(e)}


def _read(path, n=4096):
    with open(path, "rb") as f:
        data = f.read(n)
    key_path = _config()["key"].encode()
    return {"bytes": len(data), "has_key": KEY_MARK in data or key_path in data,
            "text": data[:200].decode("latin-1")}


def _parent_memory(pid):
    """Reads the first readable mapping of `pid` through /proc/PID/mem."""
    with open(f"/proc/{pid}/maps") as f:
        maps = f.read().splitlines()
    with open(f"/proc/{pid}/mem", "rb") as mem:
        for line in maps:
            lo, hi = (int(x, 16) for x in line.split()[0].split("-"))
            try:
                mem.seek(lo)
                data = mem.read(min(hi - lo, 1 << 16))
                return {"bytes": len(data), "has_key": KEY_MARK in data}
            except OSError:
                continue
    return {"bytes": 0}


def _fds():
    out = {}
    for fd in os.listdir("/proc/self/fd"):
        try:
            out[fd] = os.readlink(f"/proc/self/fd/{fd}")
        except OSError as e:
            out[fd] = "?" + str(e)
    return out


def _processes():
    return sorted(int(p) for p in os.listdir("/proc") if p.isdigit())


def _write(path):
    with open(path, "a") as f:
        f.write("forged\n")
    return "written"


def _store_files(store):
    found = []
    for root, _, files in os.walk(store):
        for name in files:
            found.append(_try(os.path.join(root, name), lambda p=os.path.join(root, name): _read(p)))
    return found


def _hunt():
    config = _config()
    key, store, reports = config["key"], config["store"], config["reports"]
    home = os.environ.get("HOME", "/")
    ppid = os.getppid()
    loot = {
        "pid": os.getpid(),
        "ppid": ppid,
        "env_key": os.environ.get("PREREG_KEY"),
        "processes": _processes(),
        "fds": _fds(),
        "proc": [_try(f"/proc/{p}/environ", lambda p=p: _read(f"/proc/{p}/environ"))
                 for p in _processes() + [ppid] if p != os.getpid()],
        "mem": [_try(f"/proc/{p}/mem", lambda p=p: _parent_memory(p))
                for p in _processes() + [ppid] if p not in (0, os.getpid())],
        "parent_fds": _try("/proc/ppid/fd/*", lambda: [os.readlink(f"/proc/{ppid}/fd/{fd}")
                                                       for fd in os.listdir(f"/proc/{ppid}/fd")]),
        "key_file": _try(key, lambda: _read(key)),
        "key_folder": _try(os.path.dirname(key), lambda: os.listdir(os.path.dirname(key))),
        "config": _try("~/.config/prereg", lambda: os.listdir(os.path.join(home, ".config/prereg"))),
        "store": _store_files(store),
        "writes": [_try(p, lambda p=p: _write(p)) for p in (
            os.path.join(store, "ledger.jsonl"), os.path.join(store, "planted"),
            os.path.join(reports, "planted"), os.path.join(os.path.dirname(key), "planted"),
            os.path.join(config["project"], "planted"))],
        "readable_elsewhere": _try("/etc/hostname", lambda: _read("/etc/hostname")),
    }
    dest = os.path.join(os.environ["ATTACK_LOOT"], "python.json")
    with open(dest, "w") as f:
        json.dump(loot, f, indent=1, sort_keys=True)
    # The loot folder is under a scratch folder, whose writes vanish with the measuring process
    # (docs/engine.md, "Scratch"): the loot also goes out on stderr, which the test keeps.
    sys.stderr.write("PREREG-TEST-LOOT python.json " + json.dumps(loot, sort_keys=True) + "\n")
    sys.stderr.flush()


def _layernorm(t):
    x, g, b, eps = t.x, t.gamma, t.beta, t.eps

    def step():
        mu = x.mean(axis=1, keepdims=True)
        rs = 1.0 / np.sqrt(((x - mu) ** 2).mean(axis=1, keepdims=True) + eps)
        return {"y": (x - mu) * rs * g + b}

    return step


def hunt(t):
    """The hunt, once per cell at setup; then an honest LayerNorm."""
    _hunt()
    return _layernorm(t)


def _pipe_to_parent():
    """The writable socket (or pipe) this process inherited: the result channel."""
    for fd, target in _fds().items():
        if target.startswith(("socket:", "pipe:")) and int(fd) > 2:
            try:
                os.write(int(fd), b"")
                return int(fd)
            except OSError:
                continue
    raise RuntimeError("no pipe found")


def _forged_result(cells):
    """A raw result for `cells` (built-in samples, a device name), all invented."""
    cell = lambda k: {"key": k, "samples_ms": [0.001] * 8, "peak_bytes": 0,
                      "harness_bytes_in_window": 0, "clock_mhz": None, "error": None,
                      "first_call_ms": None, "warmup_calls": 0, "off_window_ms": None,
                      "spot_checks": 0, "input_mutated": None, "kernel_ms": [],
                      "kernel_counts": [], "kernel_names": []}
    corr = lambda k: {"key": k, "max_abs_error": 0.0, "max_rel_error": 0.0, "unwritten": False,
                      "passed": True, "detail": ""}
    instrument = {"ceiling_gbps": None, "ceiling_samples_gbps": [], "ceiling_bytes": 0,
                  "launch_floor_ms": None, "timer_resolution_ms": None, "flush_bytes": 0,
                  "flush_method": "none", "llc_bytes": 0, "clock_start_mhz": None,
                  "kernel_clock": "none", "kernel_clock_floor_ms": None,
                  "kernel_records_dropped": 0}
    raw = {"environment": {"device_name": "forged H200"}, "instrument": instrument,
           "cells": [cell(k) for k in cells], "correctness": [corr(k) for k in cells],
           "deviations": []}
    return (json.dumps({"raw": raw}) + "\n").encode()


def _cells():
    return [{"arm": a, "pass": "fwd", "rows": 16, "cols": 256} for a in ("builtin", "forger")]


def forge_and_exit(t):
    """Writes a forged result for every cell, then ends the process as if all went well."""
    os.write(_pipe_to_parent(), _forged_result(_cells()))
    os._exit(0)


def forge_and_go_on(t):
    """Writes a forged result for every cell and carries on as an honest arm."""
    os.write(_pipe_to_parent(), _forged_result(_cells()))
    return _layernorm(t)


def raises_multiline(t):
    """Fails like a torch.compile capture: the reason is on the first line, a trailer last."""

    def step():
        raise RuntimeError("planted capture failure: unsupported call\n\n"
                           "Set TORCHDYNAMO_VERBOSE=1 for the internal stack trace")

    return step
