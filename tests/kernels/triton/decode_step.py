"""A decode step's kernels in Triton, as an engine writes them, with a NumPy reference each.

scripts/ptx-fixtures compiles the kernels of FIXTURES to PTX for sm_90 (tests/kernels/triton/ptx):
libsk fuses them from that PTX. The references describe what the fused run must compute; this
module imports without Triton (CI has none): the kernels then stay plain, uncompiled functions.
The decode kernels run one row / head / output tile per program, fp32 throughout (grid2d on a 2-D
grid); matmul_ws is warp-specialized by Triton, its warpgroups trading registers (setmaxnreg),
which a link's relocatable compile leaves out.
"""
import types

import numpy as np

try:
    import triton
    import triton.language as tl
    from triton.language.extra.cuda import gdc_launch_dependents, gdc_wait
except ImportError:  # Only the references and shapes are usable without Triton.
    triton = types.SimpleNamespace(jit=lambda fn: fn, cdiv=lambda a, b: (a + b - 1) // b)
    tl = types.SimpleNamespace(constexpr=None)

# The decode shape: BATCH sequences decode one token each.
BATCH = 4
HIDDEN = 1024
HEADS = 8
HEAD_DIM = 128
KV_LEN = 256  # cache capacity; seq_len <= KV_LEN entries are valid
GEMV_OUT = 1024
EPS = 1e-6


@triton.jit
def rmsnorm_kernel(x_ptr, w_ptr, out_ptr, n_cols, eps, BLOCK: tl.constexpr):
    """One program normalises one row of x (n_cols wide): out = x / rms(x) * w."""
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=0.0)
    rms = tl.sqrt(tl.sum(x * x, axis=0) / n_cols + eps)
    w = tl.load(w_ptr + cols, mask=mask, other=0.0)
    tl.store(out_ptr + row * n_cols + cols, x / rms * w, mask=mask)


@triton.jit
def rope_kernel(x_ptr, cos_ptr, sin_ptr, out_ptr, n_heads, head_dim, HALF: tl.constexpr):
    """One program rotates one (token, head) row of head_dim values, rotate-half style; the
    token's cos/sin rows hold head_dim / 2 values."""
    row = tl.program_id(0)
    token = row // n_heads
    half = head_dim // 2
    i = tl.arange(0, HALF)
    mask = i < half
    base = x_ptr + row * head_dim
    x1 = tl.load(base + i, mask=mask, other=0.0)
    x2 = tl.load(base + half + i, mask=mask, other=0.0)
    c = tl.load(cos_ptr + token * half + i, mask=mask, other=0.0)
    s = tl.load(sin_ptr + token * half + i, mask=mask, other=0.0)
    tl.store(out_ptr + row * head_dim + i, x1 * c - x2 * s, mask=mask)
    tl.store(out_ptr + row * head_dim + half + i, x2 * c + x1 * s, mask=mask)


@triton.jit
def decode_attention_kernel(q_ptr, k_ptr, v_ptr, out_ptr, seq_len, n_heads, head_dim, kv_len, scale,
                            BLOCK_L: tl.constexpr, BLOCK_D: tl.constexpr):
    """One program attends one (sequence, head): its query row against the first seq_len
    entries of that sequence's K/V cache ([kv_len, n_heads, head_dim]), online softmax over
    BLOCK_L cache entries at a time."""
    pid = tl.program_id(0)
    seq = pid // n_heads
    head = pid % n_heads
    d = tl.arange(0, BLOCK_D)
    dmask = d < head_dim
    q = tl.load(q_ptr + pid * head_dim + d, mask=dmask, other=0.0)
    row_stride = n_heads * head_dim
    cache = seq * kv_len * row_stride + head * head_dim
    m = -float("inf")
    denom = 0.0
    acc = tl.zeros([BLOCK_D], dtype=tl.float32)
    for start in range(0, seq_len, BLOCK_L):
        pos = start + tl.arange(0, BLOCK_L)
        lmask = pos < seq_len
        offs = cache + pos[:, None] * row_stride + d[None, :]
        tmask = lmask[:, None] & dmask[None, :]
        k = tl.load(k_ptr + offs, mask=tmask, other=0.0)
        score = tl.sum(k * q[None, :], axis=1) * scale
        score = tl.where(lmask, score, -float("inf"))
        m_new = tl.maximum(m, tl.max(score, axis=0))
        p = tl.exp(score - m_new)
        alpha = tl.exp(m - m_new)
        v = tl.load(v_ptr + offs, mask=tmask, other=0.0)
        acc = acc * alpha + tl.sum(p[:, None] * v, axis=0)
        denom = denom * alpha + tl.sum(p, axis=0)
        m = m_new
    tl.store(out_ptr + pid * head_dim + d, acc / denom, mask=dmask)


@triton.jit
def silu_mul_kernel(gate_ptr, up_ptr, out_ptr, n, BLOCK: tl.constexpr):
    """One program computes BLOCK elements of out = silu(gate) * up."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    g = tl.load(gate_ptr + offs, mask=mask, other=0.0)
    u = tl.load(up_ptr + offs, mask=mask, other=0.0)
    tl.store(out_ptr + offs, g / (1.0 + tl.exp(-g)) * u, mask=mask)


@triton.jit
def residual_add_kernel(x_ptr, res_ptr, out_ptr, n, BLOCK: tl.constexpr):
    """One program computes BLOCK elements of out = x + res."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    r = tl.load(res_ptr + offs, mask=mask, other=0.0)
    tl.store(out_ptr + offs, x + r, mask=mask)


@triton.jit
def gemv_kernel(w_ptr, x_ptr, out_ptr, n_rows, n_cols, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    """One program computes BLOCK_N outputs of out = W x (W row-major [n_rows, n_cols]),
    BLOCK_K columns at a time."""
    rows = tl.program_id(0) * BLOCK_N + tl.arange(0, BLOCK_N)
    rmask = rows < n_rows
    acc = tl.zeros([BLOCK_N], dtype=tl.float32)
    for start in range(0, n_cols, BLOCK_K):
        cols = start + tl.arange(0, BLOCK_K)
        cmask = cols < n_cols
        w = tl.load(w_ptr + rows[:, None] * n_cols + cols[None, :], mask=rmask[:, None] & cmask[None, :], other=0.0)
        x = tl.load(x_ptr + cols, mask=cmask, other=0.0)
        acc += tl.sum(w * x[None, :], axis=1)
    tl.store(out_ptr + rows, acc, mask=rmask)


@triton.jit
def project_kernel(x_ptr, w_ptr, out_ptr, n_rows, n_out, n_in, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                   BLOCK_K: tl.constexpr):
    """One program computes BLOCK_N columns of out = x W^T for the n_rows (<= BLOCK_M) rows of x
    (W row-major [n_out, n_in]) with tl.dot: TF32 wgmma on sm_90, reading tiles that Triton
    stores in shared memory swizzled as the hardware addresses them."""
    rows = tl.arange(0, BLOCK_M)
    cols = tl.program_id(0) * BLOCK_N + tl.arange(0, BLOCK_N)
    rmask = rows < n_rows
    acc = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
    for start in range(0, n_in, BLOCK_K):
        k = start + tl.arange(0, BLOCK_K)
        x = tl.load(x_ptr + rows[:, None] * n_in + k[None, :], mask=rmask[:, None], other=0.0)
        w = tl.load(w_ptr + cols[None, :] * n_in + k[:, None])
        acc = tl.dot(x, w, acc)
    tl.store(out_ptr + rows[:, None] * n_out + cols[None, :], acc, mask=rmask[:, None])


@triton.jit
def scale_pdl_kernel(w_ptr, x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    """out = x * w, written for programmatic dependent launch (compiled with launch_pdl): the
    weights, which no kernel before writes, load before gdc_wait, while the kernel before ends;
    x, that kernel's output, after it; then the next kernel may launch."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    w = tl.load(w_ptr + offs, mask=mask, other=0.0)
    gdc_wait()
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    gdc_launch_dependents()
    tl.store(out_ptr + offs, x * w, mask=mask)


# A kernel of a two-dimensional grid, then one libsk must refuse.


@triton.jit
def grid2d_kernel(x_ptr, out_ptr, n_cols, BLOCK: tl.constexpr):
    """One program adds 1 to BLOCK elements of row program_id(1): a two-dimensional grid."""
    row = tl.program_id(1)
    cols = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=0.0)
    tl.store(out_ptr + row * n_cols + cols, x + 1.0, mask=mask)


@triton.jit
def tma_copy_kernel(x_ptr, out_ptr, n_rows, n_cols, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    """One program copies a BLOCK_M x BLOCK_N tile through tensor descriptors (TMA on sm_90),
    which it builds in its part of the global scratch (global_scratch_size bytes a program)."""
    pid = tl.program_id(0)
    src = tl.make_tensor_descriptor(x_ptr, shape=[n_rows, n_cols], strides=[n_cols, 1],
                                    block_shape=[BLOCK_M, BLOCK_N])
    dst = tl.make_tensor_descriptor(out_ptr, shape=[n_rows, n_cols], strides=[n_cols, 1],
                                    block_shape=[BLOCK_M, BLOCK_N])
    tile = src.load([pid * BLOCK_M, 0])
    dst.store([pid * BLOCK_M, 0], tile)


@triton.jit
def tma_scale_kernel(in_desc, out_desc, scale, BLOCK_M: tl.constexpr):
    """One program scales a BLOCK_M-row tile by `scale` through tensor descriptors the host
    built (TensorDescriptor arguments: each a 128-byte CUtensorMap parameter whose address the
    kernel takes, then the tensor's shape and strides)."""
    pid = tl.program_id(0)
    tile = in_desc.load([pid * BLOCK_M, 0])
    out_desc.store([pid * BLOCK_M, 0], tile * scale)


@triton.jit
def matmul_ws_kernel(a_ptr, b_ptr, c_ptr, M, N, K, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                     BLOCK_K: tl.constexpr):
    """C = A B^T in fp16 through TMA, its K loop warp-specialized: a producer warpgroup loads,
    two consumers multiply, and they trade registers (setmaxnreg), which a link ignores."""
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    a_desc = tl.make_tensor_descriptor(a_ptr, shape=[M, K], strides=[K, 1], block_shape=[BLOCK_M, BLOCK_K])
    b_desc = tl.make_tensor_descriptor(b_ptr, shape=[N, K], strides=[K, 1], block_shape=[BLOCK_N, BLOCK_K])
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in tl.range(0, K, BLOCK_K, warp_specialize=True):
        a = a_desc.load([pid_m * BLOCK_M, k])
        b = b_desc.load([pid_n * BLOCK_N, k])
        acc = tl.dot(a, b.T, acc)
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    tl.store(c_ptr + offs_m[:, None] * N + offs_n[None, :], acc.to(tl.float16))


@triton.jit
def qk_norm_kernel(q_ptr, k_ptr, qw_ptr, kw_ptr, out_ptr, n_q_rows, head_dim, eps, BLOCK: tl.constexpr):
    """One program normalises one head row: the first n_q_rows programs a row of q with qw, the
    others a row of k with kw, into out (q's rows, then k's). Choosing the weight by a condition
    is what an engine's fused q/k norm does; the compiler selects between the two parameters'
    addresses and loads the pointer through the one chosen."""
    row = tl.program_id(0)
    is_q = row < n_q_rows
    src = tl.where(is_q, q_ptr + row * head_dim, k_ptr + (row - n_q_rows) * head_dim)
    w_ptr = tl.where(is_q, qw_ptr, kw_ptr)
    cols = tl.arange(0, BLOCK)
    mask = cols < head_dim
    x = tl.load(src + cols, mask=mask, other=0.0)
    rms = tl.sqrt(tl.sum(x * x, axis=0) / head_dim + eps)
    w = tl.load(w_ptr + cols, mask=mask, other=0.0)
    tl.store(out_ptr + row * head_dim + cols, x / rms * w, mask=mask)


# References (fp32, shapes as the kernels take them).


def rmsnorm_ref(x, w, eps=EPS):
    x = x.astype(np.float32)
    rms = np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + np.float32(eps))
    return (x / rms * w).astype(np.float32)


def qk_norm_ref(q, k, qw, kw, eps=EPS):
    """q [q_rows, head_dim], k [k_rows, head_dim]: q's rows normalised with qw, then k's with kw."""
    return np.concatenate([rmsnorm_ref(q, qw, eps), rmsnorm_ref(k, kw, eps)]).astype(np.float32)


def rope_ref(x, cos, sin):
    """x [tokens, heads, head_dim]; cos, sin [tokens, head_dim // 2]."""
    half = x.shape[-1] // 2
    x1, x2 = x[..., :half], x[..., half:]
    c, s = cos[:, None, :], sin[:, None, :]
    return np.concatenate([x1 * c - x2 * s, x2 * c + x1 * s], axis=-1).astype(np.float32)


def decode_attention_ref(q, k, v, seq_len, scale):
    """q [batch, heads, head_dim]; k, v [batch, kv_len, heads, head_dim]."""
    kk, vv = k[:, :seq_len].astype(np.float64), v[:, :seq_len].astype(np.float64)
    score = np.einsum("bhd,blhd->bhl", q.astype(np.float64), kk) * scale
    p = np.exp(score - score.max(axis=-1, keepdims=True))
    p /= p.sum(axis=-1, keepdims=True)
    return np.einsum("bhl,blhd->bhd", p, vv).astype(np.float32)


def silu_mul_ref(gate, up):
    g = gate.astype(np.float32)
    return (g / (np.float32(1.0) + np.exp(-g)) * up).astype(np.float32)


def residual_add_ref(x, res):
    return (x + res).astype(np.float32)


def gemv_ref(w, x):
    return (w.astype(np.float64) @ x.astype(np.float64)).astype(np.float32)


def project_ref(x, w):
    """x W^T in float64: the kernel's TF32 products differ from it by about 1e-3 relative."""
    return (x.astype(np.float64) @ w.astype(np.float64).T).astype(np.float32)


def scale_pdl_ref(w, x):
    return (x * w).astype(np.float32)


def grid2d_ref(x):
    return (x + np.float32(1.0)).astype(np.float32)


def tma_copy_ref(x):
    return x.copy()


def tma_scale_ref(x, scale):
    return (x * np.float32(scale)).astype(np.float32)


# What scripts/ptx-fixtures compiles: fixture name -> kernel, Triton signature (runtime
# arguments), constexprs, num_warps, the grid (programs) of the decode shape, whether libsk
# must refuse it, and its reference. The pointers and the integer arguments listed in
# divisible_by_16 are marked divisible by 16, as Triton's launcher specialises them for the
# decode shape (16-byte aligned tensors, sizes that are multiples of 16): vectorised accesses.
FIXTURES = {
    "rmsnorm": dict(kernel=rmsnorm_kernel,
                    signature={"x_ptr": "*fp32", "w_ptr": "*fp32", "out_ptr": "*fp32", "n_cols": "i32",
                               "eps": "fp32"},
                    constexprs={"BLOCK": HIDDEN}, divisible_by_16=["n_cols"], num_warps=4, grid=[BATCH],
                    refused=False, reference=rmsnorm_ref),
    "rope": dict(kernel=rope_kernel,
                 signature={"x_ptr": "*fp32", "cos_ptr": "*fp32", "sin_ptr": "*fp32", "out_ptr": "*fp32",
                            "n_heads": "i32", "head_dim": "i32"},
                 constexprs={"HALF": HEAD_DIM // 2}, divisible_by_16=["head_dim"], num_warps=1,
                 grid=[BATCH * HEADS], refused=False, reference=rope_ref),
    "decode_attention": dict(kernel=decode_attention_kernel,
                             signature={"q_ptr": "*fp32", "k_ptr": "*fp32", "v_ptr": "*fp32", "out_ptr": "*fp32",
                                        "seq_len": "i32", "n_heads": "i32", "head_dim": "i32", "kv_len": "i32",
                                        "scale": "fp32"},
                             constexprs={"BLOCK_L": 32, "BLOCK_D": HEAD_DIM}, divisible_by_16=["head_dim", "kv_len"],
                             num_warps=4, grid=[BATCH * HEADS], refused=False, reference=decode_attention_ref),
    "silu_mul": dict(kernel=silu_mul_kernel,
                     signature={"gate_ptr": "*fp32", "up_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32"},
                     constexprs={"BLOCK": 512}, divisible_by_16=["n"], num_warps=4, grid=[BATCH * HIDDEN // 512],
                     refused=False, reference=silu_mul_ref),
    "residual_add": dict(kernel=residual_add_kernel,
                         signature={"x_ptr": "*fp32", "res_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32"},
                         constexprs={"BLOCK": 512}, divisible_by_16=["n"], num_warps=4,
                         grid=[BATCH * HIDDEN // 512], refused=False, reference=residual_add_ref),
    "gemv": dict(kernel=gemv_kernel,
                 signature={"w_ptr": "*fp32", "x_ptr": "*fp32", "out_ptr": "*fp32", "n_rows": "i32", "n_cols": "i32"},
                 constexprs={"BLOCK_N": 16, "BLOCK_K": 128}, divisible_by_16=["n_rows", "n_cols"], num_warps=4,
                 grid=[GEMV_OUT // 16], refused=False, reference=gemv_ref),
    # q [BATCH * HEADS, HEAD_DIM] and k [BATCH * HEADS, HEAD_DIM]: one program per row of either.
    "qk_norm": dict(kernel=qk_norm_kernel,
                    signature={"q_ptr": "*fp32", "k_ptr": "*fp32", "qw_ptr": "*fp32", "kw_ptr": "*fp32",
                               "out_ptr": "*fp32", "n_q_rows": "i32", "head_dim": "i32", "eps": "fp32"},
                    constexprs={"BLOCK": HEAD_DIM}, divisible_by_16=["n_q_rows", "head_dim"], num_warps=1,
                    grid=[2 * BATCH * HEADS], refused=False, reference=qk_norm_ref),
    # x [BATCH, HIDDEN] through W [GEMV_OUT, HIDDEN]: one program per 64 outputs.
    "project": dict(kernel=project_kernel,
                    signature={"x_ptr": "*fp32", "w_ptr": "*fp32", "out_ptr": "*fp32", "n_rows": "i32",
                               "n_out": "i32", "n_in": "i32"},
                    constexprs={"BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": 32},
                    divisible_by_16=["n_out", "n_in"], num_warps=4, grid=[GEMV_OUT // 64], refused=False,
                    reference=project_ref),
    # x [BATCH, HIDDEN]; `options`: what triton.compile takes besides num_warps.
    "scale_pdl": dict(kernel=scale_pdl_kernel,
                      signature={"w_ptr": "*fp32", "x_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32"},
                      constexprs={"BLOCK": 512}, divisible_by_16=["n"], num_warps=4,
                      options={"launch_pdl": True}, grid=[BATCH * HIDDEN // 512], refused=False,
                      reference=scale_pdl_ref),
    # x [BATCH, HIDDEN]: programs (HIDDEN / 256) x BATCH.
    "grid2d": dict(kernel=grid2d_kernel, signature={"x_ptr": "*fp32", "out_ptr": "*fp32", "n_cols": "i32"},
                   constexprs={"BLOCK": 256}, divisible_by_16=["n_cols"], num_warps=4, grid=[HIDDEN // 256, BATCH],
                   refused=False, reference=grid2d_ref),
    # x [BATCH * HIDDEN / 64, 64]: one program per 16 rows.
    "tma_copy": dict(kernel=tma_copy_kernel,
                     signature={"x_ptr": "*fp32", "out_ptr": "*fp32", "n_rows": "i32", "n_cols": "i32"},
                     constexprs={"BLOCK_M": 16, "BLOCK_N": 64}, divisible_by_16=["n_rows", "n_cols"], num_warps=4,
                     grid=[BATCH * HIDDEN // (16 * 64)], refused=False, reference=tma_copy_ref),
    "tma_scale": dict(kernel=tma_scale_kernel,
                      signature={"in_desc": "tensordesc<fp32[16, 64]>", "out_desc": "tensordesc<fp32[16, 64]>",
                                 "scale": "fp32"},
                      constexprs={"BLOCK_M": 16}, divisible_by_16=[], num_warps=4,
                      grid=[BATCH * HIDDEN // (16 * 64)], refused=False, reference=tma_scale_ref),
    # A [256, 256] x B [256, 256]^T, fp16: 128 x 128 tiles, warp-specialized.
    "matmul_ws": dict(kernel=matmul_ws_kernel,
                      signature={"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp16", "M": "i32", "N": "i32",
                                 "K": "i32"},
                      constexprs={"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 64}, divisible_by_16=["M", "N", "K"],
                      num_warps=4, grid=[2, 2], refused=False, reference=None),
}
