"""The escapes the attack cases plant (tests/attacks/README.md), callable from a Python arm, an
operation file or a daemon they start. Each escape records what it tried and what came back into
a dict; `loot()` writes them into the case's loot folder (outside everything prereg protects,
so that a case can read what the attacker got) and, since that folder lies under a scratch folder
whose writes vanish with the sandbox (docs/engine.md, "Scratch"), also on stderr as one
`PREREG-LOOT NAME LINE` line, which lib.sh's run_prereg copies into the loot folder. Raw Linux system calls through ctypes: nothing
here needs more than the standard library.

The case tells the attacker where things are in attack.json beside this file (a file: an
environment variable would itself put the key's path into every environment block).
"""
import ctypes
import ctypes.util
import errno
import json
import os
import struct
import sys

_libc = ctypes.CDLL(None, use_errno=True)
_libc.syscall.restype = ctypes.c_long
_HERE = os.path.dirname(os.path.abspath(__file__))

# x86_64 and aarch64 system call numbers of what glibc may not wrap.
_NR = {
    "x86_64": {"mount_setattr": 442, "ptrace": 101, "process_vm_readv": 310, "unshare": 272,
               "umount2": 166, "mount": 165},
    "aarch64": {"mount_setattr": 442, "ptrace": 117, "process_vm_readv": 270, "unshare": 97,
                "umount2": 39, "mount": 40},
}[os.uname().machine]

MNT_DETACH = 2
MS_RDONLY, MS_REMOUNT, MS_BIND, MS_REC = 1, 32, 4096, 16384
AT_FDCWD, AT_RECURSIVE = -100, 0x8000
MOUNT_ATTR_RDONLY = 1
PTRACE_SEIZE, PTRACE_DETACH = 0x4206, 17
CLONE_NEWNS, CLONE_NEWUSER = 0x00020000, 0x10000000


def config():
    with open(os.path.join(_HERE, "attack.json")) as f:
        return json.load(f)


def _sys(name, *args):
    ctypes.set_errno(0)
    r = _libc.syscall(_NR[name], *args)
    return r, ctypes.get_errno()


def _outcome(r, e):
    return "ok" if r >= 0 else errno.errorcode.get(e, str(e))


def umount(path):
    r, e = _sys("umount2", path.encode(), MNT_DETACH)
    return _outcome(r, e)


def unmount_masks(paths, rounds=4):
    """umount2(MNT_DETACH) on every path, a few rounds (masks may be stacked)."""
    return {p: [umount(p) for _ in range(rounds)] for p in paths}


def read_bytes(path, n=65536):
    try:
        with open(path, "rb") as f:
            data = f.read(n)
        return data
    except OSError as e:
        return ("refused " + errno.errorcode.get(e.errno, str(e.errno))).encode()


def clear_read_only(paths):
    """mount_setattr(AT_RECURSIVE, clear MOUNT_ATTR_RDONLY) and a read-write bind remount."""
    out = {}
    attr = struct.pack("QQQQ", 0, MOUNT_ATTR_RDONLY, 0, 0)
    buf = ctypes.create_string_buffer(attr, len(attr))
    for p in paths:
        r, e = _sys("mount_setattr", AT_FDCWD, p.encode(), AT_RECURSIVE, buf, len(attr))
        r2, e2 = _sys("mount", None, p.encode(), None, MS_REMOUNT | MS_BIND, None)
        out[p] = [_outcome(r, e), _outcome(r2, e2)]
    return out


def write_files(paths, text=b"planted by an attacker\n"):
    out = {}
    for p in paths:
        try:
            with open(p, "ab") as f:
                f.write(text)
            out[p] = "written"
        except OSError as e:
            out[p] = errno.errorcode.get(e.errno, str(e.errno))
    return out


def capabilities():
    caps = {}
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(("Cap", "NoNewPrivs", "Seccomp")):
                k, v = line.split(":", 1)
                caps[k] = v.strip()
    return caps


def ptrace_seize(pid):
    r, e = _sys("ptrace", PTRACE_SEIZE, pid, 0, 0)
    if r >= 0:
        _sys("ptrace", PTRACE_DETACH, pid, 0, 0)
    return _outcome(r, e)


def vm_read(pid):
    """process_vm_readv of 16 bytes at the first readable mapping of `pid` (or its stack)."""
    addr = 0
    try:
        with open(f"/proc/{pid}/maps") as f:
            addr = int(f.readline().split("-")[0], 16)
    except (OSError, ValueError):
        addr = 0x400000
    dst = ctypes.create_string_buffer(16)

    class iovec(ctypes.Structure):
        _fields_ = [("base", ctypes.c_void_p), ("len", ctypes.c_size_t)]

    local = iovec(ctypes.cast(dst, ctypes.c_void_p), 16)
    remote = iovec(addr, 16)
    r, e = _sys("process_vm_readv", pid, ctypes.byref(local), 1, ctypes.byref(remote), 1, 0)
    return _outcome(r, e)


def signal_probe(pid):
    """kill(pid, 0): whether this process may signal `pid` at all (nothing is sent)."""
    try:
        os.kill(pid, 0)
        return "ok"
    except OSError as e:
        return errno.errorcode.get(e.errno, str(e.errno))


def in_new_namespaces(fn):
    """Runs fn() in a forked child that first enters new user and mount namespaces (where
    the mounts it copies may be unmounted if they were not locked); returns what fn returned
    (through a pipe) and how unshare went."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        res, e = _sys("unshare", CLONE_NEWUSER | CLONE_NEWNS)
        out = {"unshare": _outcome(res, e)}
        if res >= 0:
            try:
                out["then"] = fn()
            except Exception as ex:  # the attacker records every refusal
                out["then"] = repr(ex)
        os.write(w, json.dumps(out, default=repr).encode())
        os._exit(0)
    os.close(w)
    data = b""
    while True:
        chunk = os.read(r, 65536)
        if not chunk:
            break
        data += chunk
    os.close(r)
    os.waitpid(pid, 0)
    return json.loads(data or b"{}")


def key_hunt(key):
    """Every way this corpus knows to the key's bytes: read it, unmount its masks and read it,
    unmount in new namespaces and read it."""
    folders = [key, os.path.dirname(key)]
    got = {"plain": read_bytes(key).decode("latin-1")}
    got["unmount"] = unmount_masks(folders)
    got["after_unmount"] = read_bytes(key).decode("latin-1")
    got["new_namespaces"] = in_new_namespaces(
        lambda: {"unmount": unmount_masks(folders), "read": read_bytes(key).decode("latin-1")})
    return got


def loot(name, data):
    """Writes `data` as JSON to the case's loot folder, and the same line on stderr (the module's
    docstring): nowhere else."""
    line = json.dumps(data, default=repr)
    dest = os.path.join(config()["loot"], name + ".json")
    try:
        with open(dest, "a") as f:
            f.write(line + "\n")
    except OSError as e:
        sys.stderr.write(f"attacker: cannot write its loot {dest}: {e}\n")
    loot_line(name + ".json", line)


def loot_line(file, line):
    """`PREREG-LOOT FILE LINE` on stderr (fd 2, unbuffered), copied into the loot folder's FILE by
    lib.sh; LINE must not hold a line end."""
    try:
        os.write(2, f"PREREG-LOOT {file} {line}\n".encode("utf-8", "backslashreplace"))
    except OSError:
        pass


def channel_fd():
    """The measuring process's channel to prereg: the socket it inherited (fd > 2), or None."""
    for fd in sorted(int(f) for f in os.listdir("/proc/self/fd")):
        try:
            if fd > 2 and os.readlink(f"/proc/self/fd/{fd}").startswith("socket:"):
                return fd
        except OSError:
            pass
    return None


def never_return():
    """Never returns, and swallows whatever interrupts it (a step or reference that hangs)."""
    import time
    while True:
        try:
            time.sleep(3600)
        except BaseException:
            pass


def watch_pages():
    """The addresses of this process's watch pages (docs/engine.md, "The watchdog"): every
    shared, writable, one-page mapping of /dev/zero in /proc/self/maps."""
    out = []
    with open("/proc/self/maps") as f:
        for line in f:
            parts = line.split()
            lo, hi = (int(x, 16) for x in parts[0].split("-"))
            if parts[1][:2] == "rw" and parts[1][3] == "s" and hi - lo == 4096 and "/dev/zero" in line:
                out.append(lo)
    return out


def layernorm_value(t):
    """The LayerNorm of the arm's inputs, computed now (numpy)."""
    import numpy as np
    x, g, b, eps = t.x, t.gamma, t.beta, t.eps
    mu = x.mean(axis=1, keepdims=True)
    rs = 1.0 / np.sqrt(((x - mu) ** 2).mean(axis=1, keepdims=True) + eps)
    return ((x - mu) * rs * g + b).astype(np.float32)


def layernorm_step(t):
    """An honest LayerNorm step for the arm to return after its attack."""
    import numpy as np
    x, g, b, eps = t.x, t.gamma, t.beta, t.eps

    def step():
        mu = x.mean(axis=1, keepdims=True)
        rs = 1.0 / np.sqrt(((x - mu) ** 2).mean(axis=1, keepdims=True) + eps)
        return {"y": ((x - mu) * rs * g + b).astype(np.float32)}

    return step
