"""Unpacks a pure-Python wheel into a folder for PYTHONPATH (device plans: Liger-Kernel 0.8.5 for
the Liger arms of kernels/python/llm_triton.py, tools/device/plans/llm.plan). A wheel is a zip of
the package's files; nothing is installed into the device's venv.
Usage: python3 tools/device/unpack_wheel.py WHEEL FOLDER"""
import os
import sys
import zipfile


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    wheel, folder = sys.argv[1], sys.argv[2]
    if not os.path.isfile(wheel):
        sys.exit(f"unpack_wheel: no wheel at {wheel} (carry .whl/ with the checkout)")
    os.makedirs(folder, exist_ok=True)
    with zipfile.ZipFile(wheel) as z:
        z.extractall(folder)
        print(f"unpack_wheel: {len(z.namelist())} files of {os.path.basename(wheel)} in {folder}")


main()
