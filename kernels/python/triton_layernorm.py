# A Triton LayerNorm with the lock-group backward of the Triton layer-norm tutorial, written
# for prereg (the design of kernels/cuda/layernorm_lockgroup.cu, in Triton).
#
# Forward (`_fwd_kernel`, one program per row): three loops over the row in BLOCK_SIZE chunks,
# the tutorial's way: the mean; the biased variance of x - mean; then y = (x - mean) * rstd *
# gamma + beta. The statistics are computed in fp32 and saved into prereg's mean and rstd
# buffers (fp32, one per row), which the backward reads. BLOCK_SIZE = next_pow2(cols), at most
# 64 KB of the row's elements (wider rows are refused); num_warps = min(max(BLOCK_SIZE / 256,
# 1), 8), the tutorial's heuristic.
#
# Backward, two kernels:
# 1. `_bwd_dx_kernel`, one program per row, the whole row in one block: xhat = (x - mean) *
#    rstd, wdy = gamma * dy, dx = (wdy - (xhat * mean(xhat * wdy) + mean(wdy))) * rstd. The
#    row's contributions to dgamma (dy * xhat) and dbeta (dy) go into one of GROUP_SIZE_M
#    partial rows, row % GROUP_SIZE_M, under a spin lock for that partial row
#    (atomic_cas(lock, 0, 1) until it succeeds). A count word per partial row says whether it
#    has been written yet: the first row of a group stores its contribution, later ones add to
#    what is there. A barrier, then atomic_xchg(lock, 0) releases the lock.
#    GROUP_SIZE_M: 256 for cols <= 1024, 128 for <= 4096, 96 for <= 8192, else 64.
# 2. `_bwd_dwdb_kernel`, one program per 128 columns: sums the min(GROUP_SIZE_M, rows)
#    partial rows, 32 at a time, into dgamma and dbeta.
# The locks, counts and partial rows are allocated and zeroed on every backward (torch's
# caching allocator and one memset each), as the tutorial does; so a step launches the
# forward, two memsets and the two backward kernels.
#
# Where this departs from the tutorial, and why:
# - the partial rows are fp32 whatever the dtype (the tutorial keeps them in x's dtype, which
#   rounds every partial sum to fp16 or bf16; prereg's CUDA layernorm.lockgroup arm also keeps
#   fp32 partials);
# - the partial rows and the count are read with cache_modifier=".cg" (L2, not the SM's L1):
#   another program on another SM wrote them under the lock, and L1 is not coherent;
# - row offsets are 64-bit (row * stride overflows int32 past 2^31 elements).
#
# Entry points: `layernorm(t)` for prereg (fwd, or fwd then bwd), writing y, mean, rstd, dx,
# dgamma, dbeta in place into t's tensors and returning None. Every kernel launches on torch's
# current stream, which prereg has made its own; the step makes no host synchronisation, so it
# can be captured into a CUDA graph once the kernels are compiled (the first call of a shape
# JIT-compiles them; prereg records that call apart). Triton is imported when this file is;
# without it the file still imports and the entry raises, naming the import error.
try:
    import torch
    import triton
    import triton.language as tl
except ImportError as error:  # a machine without triton: the entry function says so
    triton = None
    _import_error = f"{type(error).__name__}: {error}"
else:
    _import_error = None

if triton is not None:

    @triton.jit
    def _fwd_kernel(X, Y, W, B, Mean, Rstd, stride, N, eps, BLOCK_SIZE: tl.constexpr):
        row = tl.program_id(0).to(tl.int64)
        X += row * stride
        Y += row * stride
        acc = tl.zeros([BLOCK_SIZE], dtype=tl.float32)
        for off in range(0, N, BLOCK_SIZE):
            cols = off + tl.arange(0, BLOCK_SIZE)
            acc += tl.load(X + cols, mask=cols < N, other=0.0).to(tl.float32)
        mean = tl.sum(acc, axis=0) / N
        acc = tl.zeros([BLOCK_SIZE], dtype=tl.float32)
        for off in range(0, N, BLOCK_SIZE):
            cols = off + tl.arange(0, BLOCK_SIZE)
            x = tl.load(X + cols, mask=cols < N, other=0.0).to(tl.float32)
            x = tl.where(cols < N, x - mean, 0.0)
            acc += x * x
        var = tl.sum(acc, axis=0) / N
        rstd = 1 / tl.sqrt(var + eps)
        tl.store(Mean + row, mean)
        tl.store(Rstd + row, rstd)
        for off in range(0, N, BLOCK_SIZE):
            cols = off + tl.arange(0, BLOCK_SIZE)
            mask = cols < N
            w = tl.load(W + cols, mask=mask).to(tl.float32)
            b = tl.load(B + cols, mask=mask).to(tl.float32)
            x = tl.load(X + cols, mask=mask, other=0.0).to(tl.float32)
            y = (x - mean) * rstd * w + b
            tl.store(Y + cols, y.to(Y.dtype.element_ty), mask=mask)

    @triton.jit
    def _bwd_dx_kernel(DX, DY, DW, DB, X, W, Mean, Rstd, Lock, stride, N,
                       GROUP_SIZE_M: tl.constexpr, BLOCK_SIZE_N: tl.constexpr):
        row = tl.program_id(0).to(tl.int64)
        cols = tl.arange(0, BLOCK_SIZE_N)
        mask = cols < N
        X += row * stride
        DY += row * stride
        DX += row * stride
        lock_id = row % GROUP_SIZE_M
        Lock += lock_id
        Count = Lock + GROUP_SIZE_M
        DW = DW + lock_id * N + cols
        DB = DB + lock_id * N + cols
        x = tl.load(X + cols, mask=mask, other=0.0).to(tl.float32)
        dy = tl.load(DY + cols, mask=mask, other=0.0).to(tl.float32)
        w = tl.load(W + cols, mask=mask, other=0.0).to(tl.float32)
        mean = tl.load(Mean + row)
        rstd = tl.load(Rstd + row)
        xhat = tl.where(mask, (x - mean) * rstd, 0.0)
        wdy = tl.where(mask, w * dy, 0.0)
        c1 = tl.sum(xhat * wdy, axis=0) / N
        c2 = tl.sum(wdy, axis=0) / N
        dx = (wdy - (xhat * c1 + c2)) * rstd
        tl.store(DX + cols, dx.to(DX.dtype.element_ty), mask=mask)
        partial_dw = dy * xhat
        partial_db = dy
        while tl.atomic_cas(Lock, 0, 1) == 1:
            pass
        count = tl.load(Count, cache_modifier=".cg")
        if count == 0:
            tl.atomic_xchg(Count, 1)
        else:
            partial_dw += tl.load(DW, mask=mask, other=0.0, cache_modifier=".cg")
            partial_db += tl.load(DB, mask=mask, other=0.0, cache_modifier=".cg")
        tl.store(DW, partial_dw, mask=mask)
        tl.store(DB, partial_db, mask=mask)
        tl.debug_barrier()  # every thread's stores before the lock is released
        tl.atomic_xchg(Lock, 0)

    @triton.jit
    def _bwd_dwdb_kernel(DW, DB, FINAL_DW, FINAL_DB, M, N, BLOCK_SIZE_M: tl.constexpr,
                         BLOCK_SIZE_N: tl.constexpr):
        pid = tl.program_id(0)
        cols = pid * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N)
        dw = tl.zeros((BLOCK_SIZE_M, BLOCK_SIZE_N), dtype=tl.float32)
        db = tl.zeros((BLOCK_SIZE_M, BLOCK_SIZE_N), dtype=tl.float32)
        for i in range(0, M, BLOCK_SIZE_M):
            rows = i + tl.arange(0, BLOCK_SIZE_M)
            mask = (rows[:, None] < M) & (cols[None, :] < N)
            offs = rows[:, None] * N + cols[None, :]
            dw += tl.load(DW + offs, mask=mask, other=0.0)
            db += tl.load(DB + offs, mask=mask, other=0.0)
        sum_dw = tl.sum(dw, axis=0)
        sum_db = tl.sum(db, axis=0)
        tl.store(FINAL_DW + cols, sum_dw.to(FINAL_DW.dtype.element_ty), mask=cols < N)
        tl.store(FINAL_DB + cols, sum_db.to(FINAL_DB.dtype.element_ty), mask=cols < N)


def group_size_m(cols):
    """The tutorial's number of partial rows for dgamma/dbeta."""
    if cols <= 1024:
        return 256
    if cols <= 4096:
        return 128
    if cols <= 8192:
        return 96
    return 64


def layernorm(t):
    """prereg entry: Triton LayerNorm; fwd writes y, mean, rstd; fwd+bwd also dx, dgamma, dbeta."""
    if triton is None:
        raise RuntimeError(f"triton is not importable here ({_import_error})")
    if t.device != "cuda":
        raise RuntimeError(f"the Triton LayerNorm runs on the cuda device, not {t.device}")
    x, gamma, beta, y, mean, rstd = t.x, t.gamma, t.beta, t.y, t.mean, t.rstd
    rows, cols = int(t.rows), int(t.cols)
    if x.stride(-1) != 1:
        raise RuntimeError("the Triton LayerNorm needs rows stored contiguously")
    block = min(65536 // x.element_size(), triton.next_power_of_2(cols))
    if cols > block:
        raise RuntimeError(f"the Triton LayerNorm takes rows of at most 64 KB ({block} elements)")
    num_warps = min(max(block // 256, 1), 8)
    eps = float(t.eps)
    stride = x.stride(0)

    def forward():
        _fwd_kernel[(rows,)](x, y, gamma, beta, mean, rstd, stride, cols, eps,
                             BLOCK_SIZE=block, num_warps=num_warps)

    if t.pass_ == "fwd":
        return forward
    if t.pass_ != "fwd+bwd":
        raise RuntimeError(f"unknown pass {t.pass_!r}")

    dy, dx, dgamma, dbeta = t.dy, t.dx, t.dgamma, t.dbeta
    group = group_size_m(cols)
    partial_rows = min(group, rows)
    reduce_cols = 128
    reduce_grid = (triton.cdiv(cols, reduce_cols),)

    def step():
        forward()
        locks = torch.zeros(2 * group, dtype=torch.int32, device=x.device)  # locks, counts
        partials = torch.zeros((2, group, cols), dtype=torch.float32, device=x.device)
        _bwd_dx_kernel[(rows,)](dx, dy, partials[0], partials[1], x, gamma, mean, rstd, locks,
                                stride, cols, GROUP_SIZE_M=group, BLOCK_SIZE_N=block,
                                num_warps=num_warps)
        _bwd_dwdb_kernel[reduce_grid](partials[0], partials[1], dgamma, dbeta, partial_rows, cols,
                                      BLOCK_SIZE_M=32, BLOCK_SIZE_N=reduce_cols)

    return step
