# The FP8 GEMM of operations/fp8_gemm.py through cuBLASLt directly (docs/operations.md, "The LLM
# step's operations"), the peer of torch._scaled_mm (kernels/python/typed_torch.py), which calls
# the same library through torch's dispatcher.
#
# A Python arm that calls the cuBLASLt library torch has loaded through ctypes: its setup (outside
# every timed window) creates the handle, the matmul descriptor (compute fp32, scale type fp32,
# the per-tensor scale pointers), the three matrix layouts and the workspace, and asks the
# heuristic for its best algorithm once; the step is one cublasLtMatmul call on prereg's stream.
# Why a Python arm and not a C plugin: the freeze pins this file's text, so the frozen arm is the
# same on every machine with no binary to build or carry, and it needs neither a compiler nor
# CUDA's headers on the GPU machine; the cost is one ctypes call's host time (a few microseconds)
# in each step, small beside a GEMM of the protocol's shapes (docs/operations.md).
#
# Layouts: cuBLASLt is column-major. Row-major c [m, n] = a [m, k] b[n, k]^T is, column-major,
# c^T [n, m] = b a^T: cuBLASLt's A operand is our b (k x n, ld k, transposed: op(A) = b [n, k]),
# its B operand our a (k x m, ld k, not transposed), D our c (n x m, ld n). That is the "TN"
# layout Hopper's FP8 tensor cores take. Enum values from CUDA's cublasLt.h, cublas_api.h and
# library_types.h (stable across CUDA 12 and 13).
import ctypes

try:
    import torch
except ImportError:  # the CPU tests import-check this file without torch
    torch = None

CUDA_R_32F, CUDA_R_16F, CUDA_R_16BF, CUDA_R_8F_E4M3 = 0, 2, 14, 28
CUBLAS_COMPUTE_32F = 68
CUBLAS_OP_N, CUBLAS_OP_T = 0, 1
DESC_TRANSA, DESC_TRANSB = 3, 4
DESC_A_SCALE_POINTER, DESC_B_SCALE_POINTER = 17, 18
DESC_FAST_ACCUM = 25
PREF_MAX_WORKSPACE_BYTES = 1
WORKSPACE_BYTES = 32 << 20  # cuBLAS's advice for Hopper


class _Heuristic(ctypes.Structure):
    """cublasLtMatmulHeuristicResult_t."""
    _fields_ = [("algo", ctypes.c_uint64 * 8), ("workspaceSize", ctypes.c_size_t),
                ("state", ctypes.c_int), ("wavesCount", ctypes.c_float),
                ("reserved", ctypes.c_int * 4)]


_P, _I, _SZ = ctypes.c_void_p, ctypes.c_int, ctypes.c_size_t
# The signatures called (every argument typed: a size_t or uint64 passed untyped would leave the
# upper half of its register undefined).
_SIGNATURES = {
    "cublasLtCreate": [_P],
    "cublasLtMatmulDescCreate": [_P, _I, _I],
    "cublasLtMatmulDescSetAttribute": [_P, _I, _P, _SZ],
    "cublasLtMatrixLayoutCreate": [_P, _I, ctypes.c_uint64, ctypes.c_uint64, ctypes.c_int64],
    "cublasLtMatmulPreferenceCreate": [_P],
    "cublasLtMatmulPreferenceSetAttribute": [_P, _I, _P, _SZ],
    "cublasLtMatmulAlgoGetHeuristic": [_P] * 7 + [_I, _P, _P],
    # handle, desc, alpha, A, Adesc, B, Bdesc, beta, C, Cdesc, D, Ddesc, algo, workspace, its
    # size, stream
    "cublasLtMatmul": [_P] * 14 + [_SZ, _P],
}


def _library():
    """The libcublasLt torch has loaded (its path from /proc/self/maps), as a ctypes library
    with the signatures above."""
    torch.cuda.current_blas_handle()  # makes torch load cuBLAS and cuBLASLt
    lib = None
    with open("/proc/self/maps") as maps:
        for line in maps:
            path = line.split()[-1]
            if "libcublasLt.so" in path:
                lib = ctypes.CDLL(path)
                break
    lib = lib or ctypes.CDLL("libcublasLt.so")
    for name, args in _SIGNATURES.items():
        fn = getattr(lib, name)
        fn.argtypes, fn.restype = args, ctypes.c_int
    return lib


def _call(fn, *args):
    status = fn(*args)
    if status != 0:
        raise RuntimeError(f"{fn.__name__} returned cublasStatus_t {status}")


def _set(setter, desc, attribute, value):
    _call(setter, desc, attribute, ctypes.byref(value), ctypes.sizeof(value))


_OUT_TYPES = {"torch.bfloat16": CUDA_R_16BF, "torch.float16": CUDA_R_16F, "torch.float32": CUDA_R_32F}


def _arm(t, fast_accum):
    if torch is None:
        raise RuntimeError("cublaslt_fp8: torch is not importable here")
    lt = _library()
    m, n, k = t.axes["m"], t.axes["n"], t.axes["k"]
    handle, op, pref = ctypes.c_void_p(), ctypes.c_void_p(), ctypes.c_void_p()
    la, lb, lc = ctypes.c_void_p(), ctypes.c_void_p(), ctypes.c_void_p()
    _call(lt.cublasLtCreate, ctypes.byref(handle))
    _call(lt.cublasLtMatmulDescCreate, ctypes.byref(op), CUBLAS_COMPUTE_32F, CUDA_R_32F)
    _set(lt.cublasLtMatmulDescSetAttribute, op, DESC_TRANSA, ctypes.c_int(CUBLAS_OP_T))
    _set(lt.cublasLtMatmulDescSetAttribute, op, DESC_TRANSB, ctypes.c_int(CUBLAS_OP_N))
    # cuBLASLt's A is our b, its B our a: their scales follow them
    _set(lt.cublasLtMatmulDescSetAttribute, op, DESC_A_SCALE_POINTER,
         ctypes.c_void_p(t.scale_b.data_ptr()))
    _set(lt.cublasLtMatmulDescSetAttribute, op, DESC_B_SCALE_POINTER,
         ctypes.c_void_p(t.scale_a.data_ptr()))
    _set(lt.cublasLtMatmulDescSetAttribute, op, DESC_FAST_ACCUM, ctypes.c_int8(1 if fast_accum else 0))
    out_type = _OUT_TYPES[str(t.c.dtype)]
    _call(lt.cublasLtMatrixLayoutCreate, ctypes.byref(la), CUDA_R_8F_E4M3, k, n, k)
    _call(lt.cublasLtMatrixLayoutCreate, ctypes.byref(lb), CUDA_R_8F_E4M3, k, m, k)
    _call(lt.cublasLtMatrixLayoutCreate, ctypes.byref(lc), out_type, n, m, n)
    workspace = torch.empty(WORKSPACE_BYTES, dtype=torch.uint8, device=t.c.device)
    _call(lt.cublasLtMatmulPreferenceCreate, ctypes.byref(pref))
    _set(lt.cublasLtMatmulPreferenceSetAttribute, pref, PREF_MAX_WORKSPACE_BYTES,
         ctypes.c_uint64(WORKSPACE_BYTES))
    best, found = _Heuristic(), ctypes.c_int(0)
    _call(lt.cublasLtMatmulAlgoGetHeuristic, handle, op, la, lb, lc, lc, pref, 1,
          ctypes.byref(best), ctypes.byref(found))
    if found.value < 1 or best.state != 0:
        raise RuntimeError(f"cuBLASLt has no FP8 algorithm for m={m} n={n} k={k} "
                           f"(found {found.value}, state {best.state})")
    alpha, beta = ctypes.c_float(1.0), ctypes.c_float(0.0)
    matmul = lt.cublasLtMatmul
    stream = torch.cuda.current_stream(t.c.device).cuda_stream  # prereg's (made current)
    args = (handle, op, ctypes.byref(alpha), t.b.data_ptr(), la, t.a.data_ptr(), lb,
            ctypes.byref(beta), t.c.data_ptr(), lc, t.c.data_ptr(), lc, ctypes.byref(best.algo),
            workspace.data_ptr(), WORKSPACE_BYTES, stream)
    keep = (lt, workspace, alpha, beta, best, handle, op, pref, la, lb, lc)  # alive with the step

    def step():
        status = matmul(*args)
        if status != 0:
            raise RuntimeError(f"cublasLtMatmul returned cublasStatus_t {status}")
    step.keep = keep
    return step


def fp8_gemm_cublaslt(t):
    """cuBLASLt's FP8 GEMM, the heuristic's first algorithm, full fp32 accumulation."""
    return _arm(t, False)


def fp8_gemm_cublaslt_fast(t):
    """The same with CUBLASLT_MATMUL_DESC_FAST_ACCUM (torch's use_fast_accum=True)."""
    return _arm(t, True)
