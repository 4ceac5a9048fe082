# Arms of the swiglu operation declared in examples/operations/swiglu.py (y = silu(a) * b; the
# backward da = dy * b * silu'(a), db = dy * silu(a)), for protocols/swiglu_h200.yaml.
#
# `torch_eager(t)`: PyTorch eager, the way a model writes it: F.silu(a) * b (two kernels, the
# silu written to a temporary); the backward as autograd would run it, one elementwise op at a
# time (sigmoid, silu, products), each a kernel with its own temporaries.
# `triton_fused(t)`: one Triton kernel per step: the forward reads a and b once and writes y;
# fwd+bwd reads a, b and dy once and writes y, da and db (the arithmetic in fp32, stored in the
# tensors' dtype). 1024 elements per program, 64-bit offsets. Triton is imported when this file
# is; without it the file still imports and the entry raises, naming the import error.
try:
    import torch
    import torch.nn.functional as F
except ImportError:  # the CPU tests import this file without torch
    torch = None
try:
    import triton
    import triton.language as tl
except ImportError as error:
    triton = None
    _import_error = f"{type(error).__name__}: {error}"
else:
    _import_error = None

BLOCK = 1024

if triton is not None:

    @triton.jit
    def _fwd(A, B, Y, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
        m = offs < n
        a = tl.load(A + offs, mask=m, other=0.0).to(tl.float32)
        b = tl.load(B + offs, mask=m, other=0.0).to(tl.float32)
        sig = 1.0 / (1.0 + tl.exp(-a))
        tl.store(Y + offs, (a * sig * b).to(Y.dtype.element_ty), mask=m)

    @triton.jit
    def _fwd_bwd(A, B, DY, Y, DA, DB, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
        m = offs < n
        a = tl.load(A + offs, mask=m, other=0.0).to(tl.float32)
        b = tl.load(B + offs, mask=m, other=0.0).to(tl.float32)
        dy = tl.load(DY + offs, mask=m, other=0.0).to(tl.float32)
        sig = 1.0 / (1.0 + tl.exp(-a))
        silu = a * sig
        tl.store(Y + offs, (silu * b).to(Y.dtype.element_ty), mask=m)
        tl.store(DA + offs, (dy * b * sig * (1.0 + a * (1.0 - sig))).to(DA.dtype.element_ty), mask=m)
        tl.store(DB + offs, (dy * silu).to(DB.dtype.element_ty), mask=m)


def torch_eager(t):
    a, b = t.a, t.b

    def fwd():
        torch.mul(F.silu(a), b, out=t.y)

    def fwd_bwd():
        sig = torch.sigmoid(a)
        silu = a * sig
        torch.mul(silu, b, out=t.y)
        torch.mul(t.dy, silu, out=t.db)
        torch.mul(t.dy * b, sig * (1 + a * (1 - sig)), out=t.da)

    return fwd if t.pass_ == "fwd" else fwd_bwd


def triton_fused(t):
    if triton is None:
        raise RuntimeError(f"triton is not importable here: {_import_error}")
    n = t.a.numel()
    grid = (triton.cdiv(n, BLOCK),)
    if t.pass_ == "fwd":
        def fwd():  # returns None: a step returns nothing or a dict of outputs, and a Triton
            _fwd[grid](t.a, t.b, t.y, n, BLOCK=BLOCK)  # launch returns its CompiledKernel

        return fwd

    def fwd_bwd():
        _fwd_bwd[grid](t.a, t.b, t.dy, t.y, t.da, t.db, n, BLOCK=BLOCK)

    return fwd_bwd
