#!/usr/bin/env python3
"""Builds the prereg-gpu wheel (docs/python.md): the prereg binary as the wheel's script (pip puts
it on PATH, as ruff and uv ship theirs) and the thin Python package prereg_gpu beside it.

usage: build_wheel.py BINARY [--out DIR] [--version V]

The platform tag is read from the binary: manylinux_2_X_<arch> when it needs no shared library
beyond glibc's (the static preset: cmake --preset static), X the newest GLIBC_2.X symbol version
it references; else linux_<arch> (a wheel for this machine only, e.g. CI's CPU build). Nothing is
downloaded; only the standard library is used.
"""
import argparse
import base64
import hashlib
import io
import os
import pathlib
import re
import stat
import subprocess
import sys
import zipfile

DIST = "prereg_gpu"
NAME = "prereg-gpu"
REPO = pathlib.Path(__file__).resolve().parents[2]
GLIBC_LIBS = {"libc.so.6", "libm.so.6", "libpthread.so.0", "libdl.so.2", "librt.so.1",
              "ld-linux-x86-64.so.2", "ld-linux-aarch64.so.1", "linux-vdso.so.1"}


def needed_libs(binary):
    """The binary's DT_NEEDED entries (readelf -d)."""
    out = subprocess.run(["readelf", "-d", binary], capture_output=True, text=True,
                         check=True).stdout
    return re.findall(r"\(NEEDED\)\s+Shared library: \[([^\]]+)\]", out)


def platform_tag(binary):
    arch = os.uname().machine
    needed = needed_libs(binary)
    if any(lib not in GLIBC_LIBS for lib in needed):
        return f"linux_{arch}"
    syms = subprocess.run(["readelf", "-V", "-W", binary], capture_output=True, text=True,
                          check=True).stdout
    minors = [int(m) for m in re.findall(r"GLIBC_2\.(\d+)", syms)]
    return f"manylinux_2_{max(minors, default=17)}_{arch}"


def binary_version(binary):
    out = subprocess.run([binary, "--version"], capture_output=True, text=True,
                         check=True).stdout
    m = re.match(r"prereg (\S+)", out)
    if not m:
        raise SystemExit(f"build_wheel: cannot read the version from {out!r}")
    return m.group(1)


def metadata(version):
    readme = (REPO / "docs" / "python.md").read_text(encoding="utf-8")
    return (f"Metadata-Version: 2.1\nName: {NAME}\nVersion: {version}\n"
            "Summary: prereg: pre-registered GPU kernel experiments (the binary and a thin "
            "Python API)\nRequires-Python: >=3.10\nLicense: see the repository\n"
            "Description-Content-Type: text/markdown\n\n" + readme)


def record_line(name, data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{name},sha256={digest},{len(data)}"


def add(zf, records, name, data, mode=0o644):
    info = zipfile.ZipInfo(name, date_time=(2026, 1, 1, 0, 0, 0))
    info.external_attr = (stat.S_IFREG | mode) << 16
    info.compress_type = zipfile.ZIP_DEFLATED
    zf.writestr(info, data)
    records.append(record_line(name, data))


def build(binary, out_dir, version):
    tag = platform_tag(binary)
    wheel_name = f"{DIST}-{version}-py3-none-{tag}.whl"
    info_dir = f"{DIST}-{version}.dist-info"
    data_dir = f"{DIST}-{version}.data"
    out_dir.mkdir(parents=True, exist_ok=True)
    buf = io.BytesIO()
    records = []
    with zipfile.ZipFile(buf, "w") as zf:
        for src in sorted((REPO / "python" / DIST).glob("*.py")):
            add(zf, records, f"{DIST}/{src.name}", src.read_bytes())
        add(zf, records, f"{data_dir}/scripts/prereg", pathlib.Path(binary).read_bytes(), 0o755)
        add(zf, records, f"{info_dir}/METADATA", metadata(version).encode())
        add(zf, records, f"{info_dir}/WHEEL",
            f"Wheel-Version: 1.0\nGenerator: tools/wheel/build_wheel.py\nRoot-Is-Purelib: false\n"
            f"Tag: py3-none-{tag}\n".encode())
        add(zf, records, f"{info_dir}/entry_points.txt",
            b"[pytest11]\nprereg_gpu = prereg_gpu.pytest_plugin\n")
        add(zf, records, f"{info_dir}/top_level.txt", f"{DIST}\n".encode())
        record = "\n".join(records + [f"{info_dir}/RECORD,,"]) + "\n"
        info = zipfile.ZipInfo(f"{info_dir}/RECORD", date_time=(2026, 1, 1, 0, 0, 0))
        info.external_attr = (stat.S_IFREG | 0o644) << 16
        zf.writestr(info, record)
    target = out_dir / wheel_name
    tmp = target.with_name(target.name + ".tmp")
    tmp.write_bytes(buf.getvalue())
    os.replace(tmp, target)
    return target


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("binary")
    ap.add_argument("--out", default="dist")
    ap.add_argument("--version", default=None, help="default: what `BINARY --version` says")
    a = ap.parse_args()
    if not os.access(a.binary, os.X_OK):
        print(f"build_wheel: error: not an executable ({a.binary})", file=sys.stderr)
        return 2
    print(build(a.binary, pathlib.Path(a.out), a.version or binary_version(a.binary)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
