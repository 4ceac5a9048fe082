"""Where the prereg binary is: $PREREG_BIN, else the one installed beside this package (the
wheel's scripts folder), else `prereg` on PATH."""
import os
import shutil
import sys
import sysconfig


def _candidates():
    env = os.environ.get("PREREG_BIN")
    if env:
        yield env
    default = getattr(sysconfig, "get_default_scheme", None)
    schemes = [default()] if default else []
    user = f"{os.name}_user"
    if user in sysconfig.get_scheme_names():
        schemes.append(user)
    for scheme in schemes:
        yield os.path.join(sysconfig.get_path("scripts", scheme), "prereg")
    yield os.path.join(os.path.dirname(sys.executable), "prereg")


def binary_path():
    """The path of the prereg binary this package runs; FileNotFoundError if there is none."""
    for path in _candidates():
        if path and os.path.isfile(path) and os.access(path, os.X_OK):
            return path
    found = shutil.which("prereg")
    if found:
        return found
    raise FileNotFoundError(
        "no prereg binary: install the prereg-gpu wheel, or set PREREG_BIN to a built prereg")
