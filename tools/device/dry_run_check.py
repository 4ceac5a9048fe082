# The dry run of `prereg check` and `prereg freeze` on the GPU (issue 46; docs/engine.md, "The
# dry run"), for tools/device/plans/firsthour.plan: a CUDA protocol's built-in arms called once
# on the device (check prints `dry run on cuda: ...`), and torch arms of an own operation file
# (examples/walkthrough/l2norm.py on cuda): a correct one passes, one that reads `t.out` is
# refused with exit 2 and its one line, and nothing is stored. Prints one line per case and
# "N passed, N failed"; exit 1 when any failed. Uses `prereg` on PATH.
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile

REPO = pathlib.Path(__file__).resolve().parents[2]
results = []


def case(name, ok, detail=""):
    results.append(ok)
    print(f"{'PASS' if ok else 'FAIL'} {name}{': ' + detail if detail and not ok else ''}")


def prereg(*args, env=None):
    return subprocess.run(["prereg", *args], capture_output=True, text=True, env=env)


ARMS = '''import torch

def good(t):
    def step():
        t.y.copy_(t.x / torch.sqrt((t.x.float() ** 2).sum(dim=1, keepdim=True) + t.eps).to(t.x.dtype))
    return step

def wrong_name(t):
    def step():
        t.out.copy_(t.x)
    return step
'''

PROTOCOL = '''prereg: 2
id: dry_cuda_NAME
title: the dry run on the GPU
hypothesis: a mistake is refused before it is frozen
device: cuda
operation: {python: l2norm.py, name: l2norm}
dtype: fp32
axes:
  rows: [4096, 64]
  cols: [1024]
passes: [fwd]
arms:
  - id: mine
    python: arms.py
    function: FUNCTION
measurement:
  repetitions: 5
  warmup: 1
predictions:
  - id: P1
    claim: it moves its bytes
    expect: gbps(mine) > 0
'''

with tempfile.TemporaryDirectory() as tmp:
    tmp = pathlib.Path(tmp)
    env = dict(os.environ, PREREG_STORE=str(tmp / "store"), PREREG_KEY=str(tmp / "key"))
    r = prereg("check", str(REPO / "protocols/ln_batch1.yaml"), env=env)
    case("check of ln_batch1 (built-in CUDA arms) passes", r.returncode == 0, r.stderr)
    case("  ... its dry run ran on the GPU", "  dry run on cuda: each arm called once" in r.stdout,
         r.stdout + r.stderr)
    shutil.copy(REPO / "examples/walkthrough/l2norm.py", tmp)
    (tmp / "arms.py").write_text(ARMS)
    for name, fn in (("good", "good"), ("wrong", "wrong_name")):
        (tmp / f"{name}.yaml").write_text(PROTOCOL.replace("NAME", name).replace("FUNCTION", fn))
    r = prereg("freeze", str(tmp / "good.yaml"), env=env)
    case("freeze of a correct torch arm passes its dry run on the GPU",
         r.returncode == 0 and "dry run on cuda: each arm called once" in r.stdout, r.stdout + r.stderr)
    before = sorted(p.name for p in (tmp / "store" / "protocols").iterdir())
    r = prereg("freeze", str(tmp / "wrong.yaml"), env=env)
    want = ("prereg: error: dry run: arm mine (python arms.py:wrong_name) at fwd 64x1024: the arm "
            "failed in its correctness run: AttributeError: t has no tensor or field 'out' (the "
            "operation's tensors: x, y)")
    case("a torch arm that reads t.out is refused (exit 2)", r.returncode == 2, r.stderr)
    case("  ... with its one line", r.stderr.startswith(want) and r.stderr.count("\n") == 1, r.stderr)
    after = sorted(p.name for p in (tmp / "store" / "protocols").iterdir())
    case("  ... and nothing stored", before == after, f"{before} -> {after}")

print(f"{sum(results)} passed, {len(results) - sum(results)} failed")
sys.exit(0 if all(results) else 1)
