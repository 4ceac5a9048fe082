"""The attacker corpus on the GPU machine (tools/device/plans/sandbox.plan): tests/e2e/attacks.sh
with the carried prereg, as root and as the unprivileged user it makes, in this kernel (the
Firecracker VM's: its namespaces, Landlock and seccomp as they really are). The Python arms run
in this python3's interpreter (the device's torch venv, which has numpy).

    python3 tools/device/attacks.py [PREREG] [REGEX]

PREREG defaults to $BIN/prereg (else .devbin/prereg); REGEX picks cases by name (all without).
Exit status: the driver's (0 every case contained, 1 one was not, 77 nothing could run).
"""
import os
import subprocess
import sys

root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
prereg = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.environ.get("BIN", ".devbin"), "prereg")
# The cases' CPU runs plan with the tests' 8 MiB cache, as ctest runs them (docs/cpu.md).
env = dict(os.environ, PREREG=os.path.abspath(prereg), PREREG_SOURCE_DIR=root,
           PREREG_TEST_PYTHON=sys.executable, PREREG_CPU_LLC_MB="8")
if len(sys.argv) > 2:
    env["PREREG_ATTACKS"] = sys.argv[2]
for k in ("PREREG_STORE", "PREREG_KEY"):  # the cases make their own: never the committed store
    env.pop(k, None)
sys.exit(subprocess.call(["bash", os.path.join(root, "tests", "e2e", "attacks.sh")], env=env))
