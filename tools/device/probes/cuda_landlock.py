"""Which of the sandbox's walls the CUDA driver's initialisation needs (session 13: every
sandboxed CUDA run failed with cudaErrorOperatingSystem on an H100). Each variant runs in a fresh
child: Landlock with the sandbox's write rights handled and only some folders allowed, then
cuInit(0) and cuDeviceGetCount through ctypes. Prints one line per variant.

    python3 tools/device/probes/cuda_landlock.py
"""
import ctypes
import os
import platform

libc = ctypes.CDLL(None, use_errno=True)
SYS_create, SYS_add, SYS_restrict = 444, 445, 446  # x86_64
WRITE = 0
for bit in (1, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14):  # write_file, remove_*, make_*, refer, truncate
    WRITE |= 1 << bit


class Attr(ctypes.Structure):
    _fields_ = [("handled_access_fs", ctypes.c_uint64)]


class Rule(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


def abi():
    return libc.syscall(SYS_create, None, 0, 1)


def landlock(allowed):
    a = abi()
    rights = WRITE if a >= 3 else WRITE & ~(1 << 14)
    attr = Attr(rights)
    rs = libc.syscall(SYS_create, ctypes.byref(attr), ctypes.c_size_t(8), 0)
    assert rs >= 0, os.strerror(ctypes.get_errno())
    keep = []
    for path, r in allowed:
        fd = os.open(path, os.O_PATH | os.O_DIRECTORY)
        rule = Rule(r & rights, fd)
        assert libc.syscall(SYS_add, rs, 1, ctypes.byref(rule), 0) == 0, (path, os.strerror(ctypes.get_errno()))
        keep.append(fd)  # held open: the inode (procfs's too) keeps its rule
    assert libc.prctl(38, 1, 0, 0, 0) == 0  # no_new_privs
    assert libc.syscall(SYS_restrict, rs, 0) == 0, os.strerror(ctypes.get_errno())
    return keep


def cuda():
    try:
        cu = ctypes.CDLL("libcuda.so.1")
    except OSError as e:
        return f"no libcuda ({e})"
    rc = cu.cuInit(0)
    n = ctypes.c_int(-1)
    rc2 = cu.cuDeviceGetCount(ctypes.byref(n)) if rc == 0 else None
    return f"cuInit={rc} cuDeviceGetCount={rc2} n={n.value}"


def comm_write():
    try:
        with open(f"/proc/self/task/{os.getpid()}/comm", "w") as f:
            f.write("probe")
        return "comm write ok"
    except OSError as e:
        return f"comm write {e.strerror}"


base = [("/dev", (1 << 1) | (1 << 14)), ("/tmp", WRITE), ("/dev/shm", WRITE)]
variants = {
    "no landlock": None,
    "landlock: /dev, /tmp, /dev/shm": base,
    "landlock: + /proc/self/task": base + [("/proc/self/task", (1 << 1) | (1 << 14))],
    "landlock: + /proc": base + [("/proc", (1 << 1) | (1 << 14))],
    "landlock: + /proc/self/task, not dumpable": base + [("/proc/self/task", (1 << 1) | (1 << 14))],
}
print(f"kernel {platform.release()}, landlock ABI {abi()}, yama",
      open("/proc/sys/kernel/yama/ptrace_scope").read().strip() if os.path.exists("/proc/sys/kernel/yama/ptrace_scope") else "absent",
      flush=True)
for name, allowed in variants.items():
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        try:
            if allowed is not None:
                landlock(allowed)
            if "not dumpable" in name:
                libc.prctl(4, 0, 0, 0, 0)
            out = comm_write() + "; " + cuda()
        except Exception as e:  # noqa: BLE001
            out = f"error {e!r}"
        os.write(w, out.encode())
        os._exit(0)
    os.close(w)
    text = os.read(r, 4096).decode()
    os.waitpid(pid, 0)
    print(f"{name}: {text}", flush=True)
