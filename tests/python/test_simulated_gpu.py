"""Super kernels run, not only linked: on the stand-in CUDA driver with tests/ptxsim as its
runner, each launch of a program libsk compiled from PTX (the generated entry, libsk's device
library and the sub-kernels' rewritten PTX, joined) executes on the host, thread by thread, on
the driver's device memory. Each test compares what a super kernel wrote, bit for bit, with the
same kernels' own PTX run by the same simulator as the driver would launch them one by one
(grid, block, parameters as compiled): what differs is libsk's doing (the entry's step loop and
grid barriers, virtual blocks, the rewrites of the kernels' PTX, argument slots, epochs).

The simulator's arithmetic is checked against numpy on the kernels alone first. Its global
memory is weakly ordered (tests/ptxsim/memory.py), so a missing release or acquire shows as a
difference on some interleaving, as do a wrong offset, count, index or argument; a
synchronisation that cannot complete is a Hang naming where each thread waits.
"""
import collections
import contextlib
import ctypes
import json
import os
import random
import re
import struct
import sys
import types

import numpy as np
import pytest

import superkernel as sk
from conftest import ROOT, cuda_kernel

sys.path.insert(0, os.path.join(ROOT, "tests"))
from ptxsim import Simulator  # noqa: E402
from ptxsim.driver import simulating  # noqa: E402

# The sanitized suite (python.sanitized) leaves these out: they run libsk's launch path as the
# stand-in driver's C++ tests do under the sanitizers, and the simulator's minutes are Python's.
pytestmark = pytest.mark.skipif("libasan" in os.environ.get("LD_PRELOAD", ""),
                                reason="the simulated runs are left to the unsanitized suite")

TRITON = os.path.join(ROOT, "tests", "kernels", "triton", "ptx")
SEED = 11  # the simulator interleaves the threads of a launch at random, from this seed on


def triton(name):
    """What triton.compile returns for a fixture (as test_triton.py builds it)."""
    with open(os.path.join(TRITON, name + ".json")) as f:
        meta = json.load(f)
    with open(os.path.join(TRITON, name + ".ptx")) as f:
        ptx = f.read()
    return types.SimpleNamespace(asm={"ptx": ptx}, metadata=meta,
                                 src=types.SimpleNamespace(signature=dict(meta["signature"])))


class Step(collections.namedtuple("Step", "kernel ptx grid block shared args options")):
    """A kernel, its PTX, its grid, block and dynamic shared bytes as its own launch has them,
    its arguments, and Scope.add's keyword options."""


def triton_step(gpu, name, grid, *args, **options):
    c = triton(name)
    return Step(gpu.load_triton(c), c.asm["ptx"], grid, (c.metadata["num_warps"] * 32, 1, 1),
                c.metadata["shared"], list(args), options)


@pytest.fixture
def gpu(fake_gpu):
    build = os.path.dirname(os.path.dirname(os.path.abspath(sk.library_path())))
    with simulating(os.path.join(build, "tests", "cpp", "libsk_fake_cuda_driver.so"), seed=SEED) as runs:
        fake_gpu.runs = runs
        yield fake_gpu
        runs.check()


@contextlib.contextmanager
def reopened(gpu, spec="cuda:0", driver_version=None):
    """The stand-in GPU opened again as `spec` (keys such as stack_bytes), on a driver of
    `driver_version` if given (12000: 4 KiB of kernel parameters), its launches run on the
    same simulator."""
    if driver_version:
        gpu.runs.lib.fake_cuda_set_driver_version(driver_version)
    try:
        with sk.Device(spec) as other:
            other.runs = gpu.runs
            yield other
    finally:
        if driver_version:
            gpu.runs.lib.fake_cuda_set_driver_version(13000)


class Memory:
    """Device buffers of float32 (or other) arrays, filled from numpy and read back."""

    def __init__(self, gpu):
        self.gpu, self.buffers = gpu, {}

    def put(self, name, array):
        array = np.ascontiguousarray(array)
        buf = self.gpu.alloc(max(array.nbytes, 4))
        ctypes.memmove(buf.address, array.ctypes.data, array.nbytes)
        self.buffers[name] = (buf, array.dtype, array.shape)
        return buf

    def get(self, name):
        buf, dtype, shape = self.buffers[name]
        n = int(np.prod(shape)) * np.dtype(dtype).itemsize
        return np.frombuffer(ctypes.string_at(buf.address, n), dtype).reshape(shape).copy()

    def set(self, name, array):
        buf, _, _ = self.buffers[name]
        array = np.ascontiguousarray(array)
        ctypes.memmove(buf.address, array.ctypes.data, array.nbytes)

    def snapshot(self):
        return {n: self.get(n) for n in self.buffers}

    def restore(self, snap):
        for n, a in snap.items():
            self.set(n, a)


def param_bytes(fn, args):
    """Each argument as the bytes of its PTX parameter: buffers by address, ints and floats
    packed to the parameter's size (a float for a 4-byte parameter given a Python float)."""
    out = []
    for p, a in zip(fn.params, args):
        if a is None:
            a = 0
        if hasattr(a, "address"):
            a = a.address
        if isinstance(a, float):
            out.append(struct.pack("<f" if p.size == 4 else "<d", a))
        elif isinstance(a, bytes):
            out.append(a)
        else:
            out.append((a & ((1 << (8 * p.size)) - 1)).to_bytes(p.size, "little"))
    return out


def run_alone(gpu, step):
    """A step's kernel launched as the driver launches it (its own PTX), on the simulator."""
    name = step.kernel.name
    sim = Simulator(step.ptx, name, gpu.runs.allocations)
    fn = sim.ptx.functions[name]
    args = list(step.args) + [None] * (len(fn.params) - len(step.args))  # Triton's scratch pointers
    grid = step.grid if isinstance(step.grid, tuple) else (step.grid, 1, 1)
    sim.launch(name, grid, step.block, step.shared, param_bytes(fn, args), seed=SEED,
               cooperative=step.options.get("cooperative", False))
    return sim


def fused_equals_alone(gpu, mem, steps, outputs, scope_options=None, launches=1, launch=None, alone=None):
    """Runs `steps` fused, `launches` times (or as `launch(super_kernel)` does), and alone
    in order as many times from the same inputs (or as `alone()` does); the `outputs` must be
    equal bit for bit. Returns the super kernel and the fused outputs."""
    start = mem.snapshot()
    with gpu.scope("simulated", scope_options) as scope:
        for step in steps:
            scope.add(step.kernel, step.grid, *step.args,
                      **{k: v for k, v in step.options.items() if k != "cooperative"})
    fused = scope.superkernel
    try:
        if launch:
            launch(fused)
        else:
            for _ in range(launches):
                fused.launch()
        gpu.synchronize()
    except sk.Error:
        gpu.runs.check()  # the simulator's error, where it failed the launch
        raise
    got = {n: mem.get(n) for n in outputs}
    mem.restore(start)
    if alone:
        alone()
    else:
        for _ in range(launches):
            for step in steps:
                run_alone(gpu, step)
    for n in outputs:
        want = mem.get(n)
        assert got[n].tobytes() == want.tobytes(), (
            f"{n}: fused differs from alone at {np.flatnonzero(got[n].view(np.uint32) != want.view(np.uint32))[:8]}")
    return fused, got


def differs(mem, got, names):
    return any(got[n].tobytes() != mem.get(n).tobytes() for n in names)


# ---- the simulator against numpy ---------------------------------------------------------------
def test_the_simulator_computes_triton_kernels_as_numpy_does(gpu):
    rng = np.random.default_rng(7)
    mem = Memory(gpu)
    n, rows, cols = 1024, 4, 256
    g, u, x, w = (rng.standard_normal(s).astype(np.float32) for s in (n, n, (rows, cols), cols))
    mem.put("g", g), mem.put("u", u), mem.put("x", x), mem.put("w", w)
    mem.put("silu", np.zeros(n, np.float32)), mem.put("norm", np.zeros((rows, cols), np.float32))
    b = {k: v[0] for k, v in mem.buffers.items()}
    run_alone(gpu, triton_step(gpu, "silu_mul", 2, b["g"], b["u"], b["silu"], n))
    run_alone(gpu, triton_step(gpu, "rmsnorm", rows, b["x"], b["w"], b["norm"], cols, 1e-6))
    silu = g / (np.float32(1) + np.exp(-g)) * u
    norm = x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + np.float32(1e-6)) * w
    np.testing.assert_allclose(mem.get("silu"), silu, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(mem.get("norm"), norm, rtol=1e-5, atol=1e-6)
    assert np.abs(mem.get("silu")).max() > 0.1  # not zeros


# ---- Triton kernels fused ------------------------------------------------------------------------
@pytest.mark.parametrize("block_local", [False, True], ids=["barrier", "block-local"])
def test_a_chain_of_triton_kernels_fused_equals_their_launches(gpu, block_local):
    # residual_add's program i reads only what silu_mul's program i wrote: block-local, it may
    # run without a grid barrier between them, with the same result.
    rng = np.random.default_rng(1)
    mem = Memory(gpu)
    n = 1024
    for name in ("gate", "up", "res"):
        mem.put(name, rng.standard_normal(n).astype(np.float32))
    mem.put("t", np.zeros(n, np.float32)), mem.put("out", np.zeros(n, np.float32))
    b = {k: v[0] for k, v in mem.buffers.items()}
    steps = [triton_step(gpu, "silu_mul", 2, b["gate"], b["up"], b["t"], n),
             triton_step(gpu, "residual_add", 2, b["t"], b["res"], b["out"], n, block_local=block_local)]
    fused, _ = fused_equals_alone(gpu, mem, steps, ["t", "out"], launches=2)
    assert [launch[0] for launch in gpu.runs.launches] == ["sk_superkernel_entry"] * 2
    assert fused.explain()["steps"][1]["edge"] == ("block-local" if block_local else "barrier")


def decode_step(gpu, mem, rng):
    """A decode step of one layer in miniature, as Triton compiled its kernels: norm, q/k norm
    (a select between two pointer parameters), RoPE, attention over a 32-entry cache, the
    output projection, SiLU-and-multiply and the residual added in place, so a second launch
    starts from the first one's result. Grids of 1 to 4 programs; 128 or 32 threads."""
    hidden, heads, head_dim, kv_len, out_rows = 256, 2, 128, 32, 32
    mem.put("x", rng.standard_normal((2, hidden)).astype(np.float32))
    mem.put("w", rng.uniform(0.5, 1.5, hidden).astype(np.float32))
    mem.put("qw", rng.uniform(0.5, 1.5, head_dim).astype(np.float32))
    mem.put("kw", rng.uniform(0.5, 1.5, head_dim).astype(np.float32))
    angles = rng.uniform(0, np.pi, (4, head_dim // 2))
    mem.put("cos", np.cos(angles).astype(np.float32)), mem.put("sin", np.sin(angles).astype(np.float32))
    mem.put("k", rng.standard_normal((1, kv_len, heads, head_dim)).astype(np.float32))
    mem.put("v", rng.standard_normal((1, kv_len, heads, head_dim)).astype(np.float32))
    mem.put("wo", (rng.standard_normal((out_rows, hidden)) / 16).astype(np.float32))
    for name, shape in (("h", (2, hidden)), ("qkn", (4, head_dim)), ("ro", (4, head_dim)),
                        ("att", (heads, head_dim)), ("proj", (out_rows,)), ("s", (2, hidden))):
        mem.put(name, np.zeros(shape, np.float32))
    b = {k: v[0] for k, v in mem.buffers.items()}
    return [
        triton_step(gpu, "rmsnorm", 2, b["x"], b["w"], b["h"], hidden, 1e-6),
        triton_step(gpu, "qk_norm", 4, b["h"], b["h"], b["qw"], b["kw"], b["qkn"], 2, head_dim, 1e-6),
        triton_step(gpu, "rope", 4, b["qkn"], b["cos"], b["sin"], b["ro"], heads, head_dim),
        triton_step(gpu, "decode_attention", 2, b["ro"], b["k"], b["v"], b["att"], kv_len, heads, head_dim,
                    kv_len, 0.088),
        triton_step(gpu, "gemv", 2, b["wo"], b["att"], b["proj"], out_rows, hidden),
        triton_step(gpu, "silu_mul", 1, b["h"], b["x"], b["s"], 2 * hidden),
        triton_step(gpu, "residual_add", 1, b["s"], b["x"], b["x"], 2 * hidden),
    ]


@pytest.mark.parametrize("options", [None, "debug-aiv-num=2"], ids=["own-blocks", "two-blocks"])
def test_a_decode_step_of_triton_kernels_fused_equals_their_launches(gpu, options):
    # On two blocks, a step of four programs runs two on each (virtual blocks); launched twice,
    # the second launch (the next epoch) starts from the residual the first one added.
    mem = Memory(gpu)
    steps = decode_step(gpu, mem, np.random.default_rng(3))
    fused, got = fused_equals_alone(gpu, mem, steps, ["h", "qkn", "ro", "att", "proj", "s", "x"],
                                    options, launches=2)
    assert fused.explain()["cuda_entry"]["compiled"] == "whole program"
    assert [launch[1][0] for launch in gpu.runs.launches] == [2 if options else 4] * 2
    assert np.abs(got["proj"]).max() > 0.01 and np.abs(got["att"]).max() > 0.01  # not zeros


def test_a_step_declared_block_local_that_is_not_races_and_the_simulator_shows_it(gpu):
    # gemv's both programs read the first row rmsnorm's program 0 writes: declared block-local,
    # program 1 does not wait for it. Over a few launches (each its own interleaving) one reads
    # the row before it is written. This is what the comparisons above would catch.
    rng = np.random.default_rng(6)
    mem = Memory(gpu)
    mem.put("x", rng.standard_normal((2, 256)).astype(np.float32))
    mem.put("w", rng.uniform(0.5, 1.5, 256).astype(np.float32))
    mem.put("wo", rng.standard_normal((32, 256)).astype(np.float32))
    mem.put("h", np.full((2, 256), np.nan, np.float32)), mem.put("proj", np.zeros(32, np.float32))
    b = {k: v[0] for k, v in mem.buffers.items()}
    steps = [triton_step(gpu, "rmsnorm", 2, b["x"], b["w"], b["h"], 256, 1e-6),
             triton_step(gpu, "gemv", 2, b["wo"], b["h"], b["proj"], 32, 256, block_local=True)]
    start = mem.snapshot()
    for step in steps:
        run_alone(gpu, step)
    want = mem.get("proj")
    assert not np.isnan(want).any()
    with gpu.scope("racy") as scope:
        for step in steps:
            scope.add(step.kernel, step.grid, *step.args,
                      **{k: v for k, v in step.options.items() if k != "cooperative"})
    results = []
    for _ in range(6):
        mem.restore(start)
        scope.superkernel.launch()
        gpu.synchronize()
        results.append(mem.get("proj"))
    assert any(r.tobytes() != want.tobytes() for r in results)
    assert any(np.isnan(r).any() for r in results)  # read before rmsnorm wrote it


# ---- nvcc's PTX of ordinary __global__ kernels --------------------------------------------------
def nvcc_step(gpu, file, name, grid, block, *args, shared=0, threads=None, options=None, ptx=None, **add):
    """A step of kernel `name` of the build's `file` (of tests/kernels/cuda: nvcc -ptx, or any
    container of PTX nvcc writes): taken with `threads` (None: its own) and launched alone on
    `block` from the PTX file `ptx` (None: `file` itself)."""
    path = cuda_kernel(file)
    cache = gpu.__dict__.setdefault("nvcc_modules", {})
    if path not in cache:
        with open(cuda_kernel(ptx or file)) as f:
            cache[path] = (gpu.load(path), f.read())
    mod, text = cache[path]
    k = mod.kernel(name, threads=threads, **(options or {})) if threads or options else mod.kernel(name)
    return Step(k, text, grid, block, shared, list(args), add)


def early_return_inputs(gpu, blocks):
    """Buffers for early_return_global.cu's kernels on `blocks` blocks of 128: in, out, wide,
    rounds (0 to 5 a thread, every block some of each); and the live count, past which
    er_guard's threads return."""
    n = blocks * 128
    i = np.arange(n)
    mem = Memory(gpu)
    mem.put("in", ((i % 23) - 9).astype(np.float32))
    mem.put("out", np.zeros(n, np.float32)), mem.put("wide", ((i % 7) - 3).astype(np.float32))
    mem.put("rounds", ((i * 7 + i // 128) % 6).astype(np.int32))
    return mem, {k: v[0] for k, v in mem.buffers.items()}, n - 37


def test_threads_that_return_before_a_barrier_fused_equal_their_launches(gpu):
    # er_guard's last block has threads past n that return before its __syncthreads (and its
    # __syncthreads_or/and/count); er_rounds' threads return after a count of rounds of their
    # own, between barriers in a called function. Fused, a returned thread only returns into
    # the super kernel: libsk's rewrite makes the others' barriers count it as gone.
    blocks = 4
    mem, b, live = early_return_inputs(gpu, blocks)
    steps = [nvcc_step(gpu, "early_return_global.ptx", "er_guard", blocks, (128, 1, 1), b["in"], b["out"], live),
             nvcc_step(gpu, "early_return_global.ptx", "er_rounds", blocks, (128, 1, 1), b["out"], b["rounds"])]
    _, got = fused_equals_alone(gpu, mem, steps, ["out"])
    assert got["out"][0] != 0 and got["out"][live - 1] != 0


def test_cooperative_grid_syncs_fused_equal_their_launches(gpu):
    # cg::this_grid().sync() reads the grid workspace of a cooperative launch (%envreg1/2),
    # which libsk gives each step in its sync buffer: the blocks of the step wait for each other
    # there, twice in gs_neighbour, once in gs_normalize.
    blocks, n = 3, 3 * 128
    rng = np.random.default_rng(9)
    mem = Memory(gpu)
    mem.put("in", rng.uniform(0.5, 1.5, n).astype(np.float32))
    mem.put("partial", np.zeros(blocks, np.float32)), mem.put("norm", np.zeros(n, np.float32))
    mem.put("data", np.zeros(n, np.float32)), mem.put("out", np.zeros(n, np.float32))
    b = {k: v[0] for k, v in mem.buffers.items()}
    steps = [nvcc_step(gpu, "grid_sync.ptx", name, (blocks, 1, 1), (128, 1, 1), *args, threads=(128, 1, 1))
             for name, args in (("gs_normalize", (b["in"], b["partial"], b["norm"])),
                                ("gs_neighbour", (b["data"], b["out"])))]
    for step in steps:
        step.options["cooperative"] = True  # launched alone as cooperative kernels
    _, got = fused_equals_alone(gpu, mem, steps, ["partial", "norm", "data", "out"], launches=2)
    np.testing.assert_allclose(got["norm"].sum(), 1.0, rtol=1e-5)
    assert got["out"][0] == 129.0  # data[128] + 1, written by the next block before its sync


@pytest.mark.parametrize("early", ["early-start=1", "early-start=0"])
def test_dependent_launch_kernels_fused_equal_their_launches(gpu, early):
    # Kernels written for programmatic dependent launch: pdl_mirror reads what other blocks of
    # pdl_scale wrote, after an early return and a wait in a helper; pdl_weighted loads its
    # weight before its wait; in pdl_one_waits thread 0 alone waits. Eight blocks of each on a
    # super kernel of two, so a block runs the next step's head while others run the step
    # before.
    n = 8 * 128 - 3
    i = np.arange(n)
    mem = Memory(gpu)
    mem.put("in", ((i % 97) * 0.25 - 3).astype(np.float32)), mem.put("w", ((i % 13) * 0.125 + 0.5).astype(np.float32))
    for name, size in (("mid", n), ("mirrored", n), ("weighted", n), ("sums", 8)):
        mem.put(name, np.zeros(size, np.float32))
    b = {k: v[0] for k, v in mem.buffers.items()}
    ptx = "dependent_launch.ptx"
    steps = [nvcc_step(gpu, ptx, "pdl_scale", 8, (128, 1, 1), b["in"], b["mid"], n),
             nvcc_step(gpu, ptx, "pdl_mirror", 8, (128, 1, 1), b["mid"], b["mirrored"], n),
             nvcc_step(gpu, ptx, "pdl_weighted", 8, (128, 1, 1), b["w"], b["mirrored"], b["weighted"], n),
             nvcc_step(gpu, ptx, "pdl_one_waits", 8, (128, 1, 1), b["weighted"], b["sums"], n)]
    _, got = fused_equals_alone(gpu, mem, steps, ["mid", "mirrored", "weighted", "sums"], early + ":debug-aiv-num=2")
    mid = np.float32(2) * mem.get("in") + np.float32(1)
    assert got["mid"].tobytes() == mid.tobytes() and got["sums"][0] != 0


def test_a_head_that_writes_what_the_step_before_reads_waits_for_it(gpu):
    # pdl_refill_acc writes acc before its wait; pdl_read_acc's blocks read acc across the grid
    # before their trigger. A block may not start the refill while others still read.
    n = 8 * 128
    i = np.arange(n)
    mem = Memory(gpu)
    mem.put("acc", ((i % 101) * 0.5 + 1).astype(np.float32)), mem.put("in", ((i % 89) * 0.25 - 7).astype(np.float32))
    mem.put("read", np.zeros(n, np.float32)), mem.put("out", np.zeros(n, np.float32))
    b = {k: v[0] for k, v in mem.buffers.items()}
    steps = [nvcc_step(gpu, "dependent_launch.ptx", "pdl_read_acc", 8, (128, 1, 1), b["acc"], b["read"], n),
             nvcc_step(gpu, "dependent_launch.ptx", "pdl_refill_acc", 8, (128, 1, 1), b["in"], b["acc"], b["read"],
                       b["out"], n)]
    fused_equals_alone(gpu, mem, steps, ["read", "acc", "out"], "debug-aiv-num=2", launches=3)


def test_two_and_three_dimensional_blocks_fused_equal_their_launches(gpu):
    # threadIdx.y/z and blockDim.y/z rebuilt from the flat thread index and the shape taken;
    # (32, 4, 1) blocks, then (32, 2, 2) ones on the first 128 threads of a super kernel of 256.
    rng = np.random.default_rng(4)
    blocks, n = 4, 4 * 128
    mem = Memory(gpu)
    mem.put("in", rng.standard_normal(n).astype(np.float32))
    for name, size in (("scaled", n), ("sums", blocks), ("copied", n), ("deep", blocks), ("wide", n)):
        mem.put(name, np.zeros(size, np.float32))
    b = {k: v[0] for k, v in mem.buffers.items()}
    two_d = (32, 4, 1)
    steps = [nvcc_step(gpu, "block2d.ptx", "scale_rows_2d", blocks, two_d, b["in"], b["scaled"], 32, threads=two_d),
             nvcc_step(gpu, "block2d.ptx", "sum_blocks_2d", blocks, two_d, b["in"], b["sums"], threads=two_d),
             nvcc_step(gpu, "block2d.ptx", "copy_1d", blocks, (128, 1, 1), b["in"], b["copied"], threads=(128, 1, 1))]
    fused_equals_alone(gpu, mem, steps, ["scaled", "sums", "copied"])
    steps = [nvcc_step(gpu, "block2d.ptx", "sum_blocks_2d", blocks, (32, 2, 2), b["in"], b["deep"], threads=(32, 2, 2)),
             nvcc_step(gpu, "block2d.ptx", "copy_1d", 2, (256, 1, 1), b["in"], b["wide"], threads=(256, 1, 1))]
    _, got = fused_equals_alone(gpu, mem, steps, ["deep", "wide"])
    assert got["wide"].tobytes() == mem.get("in").tobytes()


def test_structs_by_value_and_their_computed_addresses_fused_equal_their_launches(gpu):
    # multi_tensor_scale (PyTorch's shape): a 160-byte struct by value indexed by blockIdx, its
    # pointers loaded at addresses computed in the parameter; cat_rows on a (2, 3) grid;
    # table_lookup: a __grid_constant__ table read through a pointer in a helper.
    rng = np.random.default_rng(8)
    mem = Memory(gpu)
    sizes, chunk = [300, 5, 129, 64], 128
    for t, size in enumerate(sizes):
        mem.put(f"x{t}", rng.standard_normal(size).astype(np.float32))
        mem.put(f"y{t}", np.full(size, -1, np.float32))
    b = {k: v[0] for k, v in mem.buffers.items()}
    tensor_of, chunk_of = [], []
    for t, size in enumerate(sizes):
        for c in range((size + chunk - 1) // chunk):
            tensor_of.append(t), chunk_of.append(c)
    blocks = len(tensor_of)

    def meta(src, dst):
        return (struct.pack("<8Q", *[b[f"{src}{t}"].address for t in range(4)], *[b[f"{dst}{t}"].address for t in range(4)])
                + struct.pack("<4i", *sizes) + bytes(tensor_of + [0] * (16 - blocks))
                + struct.pack("<16i", *(chunk_of + [0] * (16 - blocks))))

    steps = [nvcc_step(gpu, "param_index.ptx", "multi_tensor_scale", blocks, (128, 1, 1), chunk, meta("x", "y"), 1.5, 0.25),
             nvcc_step(gpu, "param_index.ptx", "multi_tensor_scale", blocks, (128, 1, 1), chunk, meta("y", "x"), -0.5, 2.0)]
    _, got = fused_equals_alone(gpu, mem, steps, [f"x{t}" for t in range(4)] + [f"y{t}" for t in range(4)])
    assert (got["y1"] != -1).all()

    lengths, at, inputs = [300, 5, 100], 0, []
    offsets = []
    for t, length in enumerate(lengths):
        mem.put(f"cat{t}", (np.arange(length) * 0.5 + t * 1000).astype(np.float32))
        offsets.append(at)
        at += 2 * length
    mem.put("cat", np.full(at + 2, -1, np.float32))
    mem.put("idx", (np.arange(128) * 37 % 101).astype(np.int32)), mem.put("looked", np.zeros(128, np.float32))
    b = {k: v[0] for k, v in mem.buffers.items()}
    cat_meta = (struct.pack("<8Q", *[b[f"cat{t}"].address for t in range(3)], *[0] * 5)
                + struct.pack("<8q", *offsets, *[0] * 5) + struct.pack("<8q", *lengths, *[0] * 5))
    table = struct.pack("<32f", *[(i * i) * 0.25 - 3 for i in range(32)])
    steps = [nvcc_step(gpu, "param_index.ptx", "cat_rows", (2, 3, 1), (256, 1, 1), b["cat"], cat_meta, 2),
             nvcc_step(gpu, "param_index.ptx", "table_lookup", 2, (64, 1, 1), table, b["idx"], b["looked"])]
    _, got = fused_equals_alone(gpu, mem, steps, ["cat", "looked"])
    assert got["cat"][offsets[2] + 2 * 99] == 2049.5


def test_kernels_whose_tiles_share_the_overlay_fused_equal_their_launches(gpu):
    # Static tiles of 28000 and 24000 bytes, past a block's 48 KiB together: one after the
    # other in the super kernel's shared overlay, at the same bytes.
    blocks = 2
    mem = Memory(gpu)
    mem.put("in", ((np.arange(blocks * 7000) % 97) * 0.25 - 7).astype(np.float32))
    mem.put("mid", np.zeros(blocks * 7000, np.float32)), mem.put("out", np.zeros(blocks * 7000, np.float32))
    b = {k: v[0] for k, v in mem.buffers.items()}
    steps = [nvcc_step(gpu, "shared_global.ptx", "sg_reverse", blocks, (128, 1, 1), b["in"], b["mid"]),
             nvcc_step(gpu, "shared_global.ptx", "sg_rotate", blocks, (128, 1, 1), b["mid"], b["out"])]
    fused_equals_alone(gpu, mem, steps, ["mid", "out"])


def test_thread_0_fills_the_next_slot_while_its_block_still_runs_the_current_one(gpu):
    # SiLU and residual steps joined by block-local edges, four programs each on two blocks:
    # thread 0 fills the slot of its block's next instance (the step's next program, or the
    # next step) before the one barrier that ends the current instance, while the block's other
    # threads still run it and read their block index from their own slot. As generated, fused
    # equals alone; with the entry's moves to the other slot edited out (one slot for both
    # instances), some thread reads the next instance's block index or call: the result differs,
    # or the launch fails.
    rng = np.random.default_rng(21)
    mem = Memory(gpu)
    n = 2048
    mem.put("x", rng.standard_normal(n).astype(np.float32))
    for i in range(2):
        mem.put(f"g{i}", rng.standard_normal(n).astype(np.float32)), mem.put(f"t{i}", np.zeros(n, np.float32))
    b = {k: v[0] for k, v in mem.buffers.items()}
    steps = []
    for i in range(2):
        steps.append(triton_step(gpu, "silu_mul", 4, b[f"g{i}"], b["x"], b[f"t{i}"], n, block_local=i > 0))
        steps.append(triton_step(gpu, "residual_add", 4, b[f"t{i}"], b["x"], b["x"], n, block_local=True))
    start = mem.snapshot()
    fused, got = fused_equals_alone(gpu, mem, steps, ["x", "t0", "t1"], scope_options="debug-aiv-num=2")
    assert [s["edge"] for s in fused.explain()["steps"][1:]] == ["block-local"] * 3

    other_slot = re.compile(r"selp\.u32 %sk_u, \d+, 0, %sk_p;")

    def single(text):
        if "sk_superkernel_entry" in text:
            # The others' two moves (at a run's first instance, after a call) and thread 0's
            # three (before a fill, and to and from the current slot after a step's barrier).
            assert len(other_slot.findall(text)) == 5, "the entry's moves to the other slot"
            text = other_slot.sub("mov.u32 %sk_u, 0;", text)
        return text

    gpu.runs.edit = single
    mem.restore(start)
    try:
        fused.launch()
        gpu.synchronize()
    except sk.DeviceError:
        # A thread read the call of an instance its block had not reached, and came to another
        # barrier than its block's other threads.
        assert "barrier 15 reached by" in str(gpu.runs.error), gpu.runs.error
        gpu.runs.error = None
    else:
        assert differs(mem, got, ["x", "t0", "t1"]), "one slot for two instances read the right block indices"
    finally:
        gpu.runs.edit = None


def silu_residual_chain(gpu, mem, count, rng, grid=2, **options):
    """`count` pairs of SiLU-and-multiply and a residual added in place, each pair on rows of
    its own: launched again, each adds to what the last launch left."""
    n = 512 * grid
    mem.put("x", rng.standard_normal(n).astype(np.float32))
    for i in range(count):
        mem.put(f"g{i}", rng.standard_normal(n).astype(np.float32)), mem.put(f"t{i}", np.zeros(n, np.float32))
    b = {k: v[0] for k, v in mem.buffers.items()}
    steps = []
    for i in range(count):
        steps.append(triton_step(gpu, "silu_mul", grid, b[f"g{i}"], b["x"], b[f"t{i}"], n, **options))
        steps.append(triton_step(gpu, "residual_add", grid, b[f"t{i}"], b["x"], b["x"], n, **options))
    return steps


def test_launches_repeated_on_the_device_equal_as_many_launches(gpu):
    mem = Memory(gpu)
    steps = silu_residual_chain(gpu, mem, 2, np.random.default_rng(12))
    fused_equals_alone(gpu, mem, steps, ["x", "t0", "t1"], launches=3, launch=lambda k: k.launch_repeat(3))
    assert [launch[0] for launch in gpu.runs.launches] == ["sk_superkernel_entry"]  # one launch, 3 runs


def test_a_repeat_stops_after_the_run_that_set_its_flag(gpu):
    # The flag is set by the host before the launch: the first run completes and is the last.
    mem = Memory(gpu)
    steps = silu_residual_chain(gpu, mem, 1, np.random.default_rng(13))
    flag = mem.put("flag", np.ones(1, np.uint32))
    fused_equals_alone(gpu, mem, steps, ["x", "t0"], launches=1, launch=lambda k: k.launch_repeat(5, flag))


def test_an_argument_rebound_between_launches_is_what_the_next_launch_reads(gpu):
    mem = Memory(gpu)
    rng = np.random.default_rng(14)
    steps = silu_residual_chain(gpu, mem, 1, rng)
    mem.put("y", rng.standard_normal(1024).astype(np.float32))
    b = {k: v[0] for k, v in mem.buffers.items()}

    def launch(fused):
        fused.launch()
        fused.set_arg(1, 2, b["y"])  # the residual's output: y instead of x
        fused.set_arg(0, 3, 512)     # silu_mul's n: the first program's half alone
        fused.launch()

    def alone():
        run_alone(gpu, steps[0]), run_alone(gpu, steps[1])
        run_alone(gpu, steps[0]._replace(args=steps[0].args[:3] + [512]))
        run_alone(gpu, steps[1]._replace(args=steps[1].args[:2] + [b["y"], 1024]))

    fused_equals_alone(gpu, mem, steps, ["x", "t0", "y"], launch=launch, alone=alone)


def test_arguments_past_the_parameter_space_are_read_from_the_argument_buffer(gpu):
    # A driver before 12.1 takes 4 KiB of kernel parameters: 90 steps of 48 bytes of arguments
    # each are read from a device buffer instead, which the launch's first parameter names.
    with reopened(gpu, driver_version=12000) as old:
        mem = Memory(old)
        steps = silu_residual_chain(old, mem, 45, np.random.default_rng(15), grid=1)
        fused, _ = fused_equals_alone(old, mem, steps, ["x", "t0", "t44"])
        assert fused.explain()["cuda_entry"]["arguments"] == "buffer"


class CudaGraph:
    """An engine's own CUDA stream on the stand-in driver (made in the device's primary
    context) and the graph captured from it, replayed with cuGraphLaunch as an engine replays
    its decode step."""

    CONTEXT = 0x1000  # the stand-in's primary context

    def __init__(self, gpu):
        self.lib, self.graph, self.exec = gpu.runs.lib, ctypes.c_void_p(), ctypes.c_void_p()
        self.cu = ctypes.c_void_p()
        self.call("cuCtxPushCurrent_v2", ctypes.c_void_p(self.CONTEXT))
        self.call("cuStreamCreate", ctypes.byref(self.cu), 0)
        self.call("cuCtxPopCurrent_v2", ctypes.byref(ctypes.c_void_p()))
        self.stream = gpu.stream(cuda_stream=self.cu.value)

    def call(self, name, *args):
        fn = getattr(self.lib, name)
        fn.restype = ctypes.c_int
        assert fn(*args) == 0, name

    def capture(self, work):
        self.call("cuStreamBeginCapture_v2", self.cu, 0)
        work(self.stream)
        self.call("cuStreamEndCapture", self.cu, ctypes.byref(self.graph))
        self.call("cuGraphInstantiateWithFlags", ctypes.byref(self.exec), self.graph, ctypes.c_ulonglong(0))

    def replay(self):
        self.call("cuGraphLaunch", self.exec, self.cu)

    def close(self):
        self.stream.synchronize()
        self.call("cuGraphExecDestroy", self.exec)
        self.call("cuGraphDestroy", self.graph)
        self.stream.close()
        self.call("cuCtxPushCurrent_v2", ctypes.c_void_p(self.CONTEXT))
        self.call("cuStreamDestroy_v2", self.cu)
        self.call("cuCtxPopCurrent_v2", ctypes.byref(ctypes.c_void_p()))


@pytest.mark.parametrize("repeat", [1, 2], ids=["launch", "launch_repeat"])
def test_a_super_kernel_captured_in_a_cuda_graph_replays_as_its_kernels_launched_alone(gpu, repeat):
    # The decode step (its residual added in place) captured once, replayed three times, then
    # launched by libsk: each replay runs the next epochs on the device, from the last one's
    # result, with the parameters captured.
    mem = Memory(gpu)
    steps = decode_step(gpu, mem, np.random.default_rng(21))

    def launch(fused):
        def work(stream):
            if repeat > 1:
                fused.launch_repeat(repeat, None, stream)
            else:
                fused.launch(stream)

        graph = CudaGraph(gpu)
        graph.capture(work)
        for _ in range(3):
            graph.replay()
        fused.launch(graph.stream)
        graph.close()

    fused_equals_alone(gpu, mem, steps, ["h", "qkn", "ro", "att", "proj", "s", "x"], launches=3 * repeat + 1,
                       launch=launch)
    assert len(gpu.runs.launches) == 4  # three replays of one node and libsk's own launch


def test_a_replayed_graph_reads_arguments_rebound_in_the_buffer_between_replays(gpu):
    # Past the parameter space the captured node names the argument buffer: a replay reads
    # what the buffer holds then, so set_arg between replays reaches the next one.
    with reopened(gpu, driver_version=12000) as old:
        mem = Memory(old)
        steps = silu_residual_chain(old, mem, 45, np.random.default_rng(22), grid=1)
        mem.put("y", np.zeros(512, np.float32))
        y = mem.buffers["y"][0]

        def launch(fused):
            graph = CudaGraph(old)
            graph.capture(fused.launch)
            graph.replay()
            graph.stream.synchronize()
            fused.set_arg(1, 2, y)  # the first residual's output: y instead of x
            graph.replay()
            graph.close()

        def alone():
            for step in steps:
                run_alone(old, step)
            run_alone(old, steps[0])
            run_alone(old, steps[1]._replace(args=steps[1].args[:2] + [y] + steps[1].args[3:]))
            for step in steps[2:]:
                run_alone(old, step)

        fused, _ = fused_equals_alone(old, mem, steps, ["x", "y", "t0", "t44"], launch=launch, alone=alone)
        assert fused.explain()["cuda_entry"]["arguments"] == "buffer"


def test_independent_streams_fused_wait_only_for_what_they_depend_on(gpu):
    # Two chains on streams 1 and 2 (a gate and an up projection's epilogues, say), joined on
    # stream 0 after an event of each: each step waits for its stream's previous step and the
    # events before it, through its own completion counter, not a grid barrier.
    rng = np.random.default_rng(16)
    mem = Memory(gpu)
    n = 1024
    for name in ("a", "b", "c", "d"):
        mem.put(name, rng.standard_normal(n).astype(np.float32))
    for name in ("s1", "s2", "r1", "r2", "out"):
        mem.put(name, np.zeros(n, np.float32))
    b = {k: v[0] for k, v in mem.buffers.items()}
    steps = [triton_step(gpu, "silu_mul", 2, b["a"], b["b"], b["s1"], n, stream=1),
             triton_step(gpu, "silu_mul", 2, b["c"], b["d"], b["s2"], n, stream=2),
             triton_step(gpu, "residual_add", 2, b["s1"], b["a"], b["r1"], n, stream=1),
             triton_step(gpu, "residual_add", 2, b["s2"], b["c"], b["r2"], n, stream=2),
             triton_step(gpu, "residual_add", 2, b["r1"], b["r2"], b["out"], n, stream=0)]
    start = mem.snapshot()
    with gpu.scope("streams", "stream-fusion=1") as scope:
        for step in steps[:4]:
            scope.add(step.kernel, step.grid, *step.args, **step.options)
        scope.record_event(1, 0), scope.record_event(2, 1)
        scope.wait_event(0, 0), scope.wait_event(0, 1)
        scope.add(steps[4].kernel, steps[4].grid, *steps[4].args, **steps[4].options)
    for _ in range(2):
        scope.superkernel.launch()
    gpu.synchronize()
    got = {n: mem.get(n) for n in ("r1", "r2", "out")}
    mem.restore(start)
    for _ in range(2):
        for step in steps:
            run_alone(gpu, step)
    for name, value in got.items():
        assert value.tobytes() == mem.get(name).tobytes(), name
    plan = scope.superkernel.explain()
    assert plan["cuda_entry"]["compiled"] == "whole program"
    assert any(s["placement"] == "packed" for s in plan["steps"])


def test_a_kernel_launched_alone_through_libsk_equals_its_launch_by_the_driver(gpu):
    # sk_launch_kernel: the unfused baseline, one kernel through libsk's single-kernel entry.
    rng = np.random.default_rng(17)
    mem = Memory(gpu)
    mem.put("x", rng.standard_normal((2, 256)).astype(np.float32))
    mem.put("w", rng.uniform(0.5, 1.5, 256).astype(np.float32)), mem.put("h", np.zeros((2, 256), np.float32))
    b = {k: v[0] for k, v in mem.buffers.items()}
    step = triton_step(gpu, "rmsnorm", 2, b["x"], b["w"], b["h"], 256, 1e-6)
    step.kernel.launch(2, *step.args)
    gpu.synchronize()
    got = mem.get("h")
    mem.set("h", np.zeros((2, 256), np.float32))
    run_alone(gpu, step)
    assert got.tobytes() == mem.get("h").tobytes() and np.abs(got).max() > 0.1


@pytest.mark.parametrize("container", [
    "decode_global.ptx",           # nvcc -ptx
    "decode_global_ptx.fatbin",    # a fatbinary of PTX alone
    "decode_global_sm80.fatbin",   # of compute_80 PTX, older than the program's
    "decode_global.o",             # nvcc -c: SASS and PTX in the object's fatbinary
    "decode_global_rdc.o",         # nvcc -dc: a relocatable cubin beside the PTX
    "decode_global_rdc.fatbin",    # nvcc -dc -fatbin
    "libdecode_two.so",            # nvcc -shared: each translation unit's PTX in .nv_fatbin
    "decode_global.ltoir",         # nvcc -dc -dlto -ltoir: LTO-IR, which nvJitLink turns into PTX
])
def test_a_decode_step_of_cuda_cpp_kernels_fused_equals_their_launches(gpu, container):
    # decode_global.cu's __global__ kernels as nvcc compiled them, in blocks of 256, 128 and 64
    # threads (a narrower one runs on the first threads of the super kernel's 256), a struct by
    # value (RopeShape), dynamic shared memory (the attention's scores), block-wide sums
    # through static shared arrays; on two blocks, so each runs several of a step's. Taken
    # from each file nvcc writes them in, each compared with nvcc -ptx's PTX launched alone.
    rng = np.random.default_rng(18)
    batch, hidden, heads, head_dim, seq, out_rows = 2, 256, 2, 128, 8, 32
    mem = Memory(gpu)
    mem.put("x", rng.standard_normal((batch, hidden)).astype(np.float32))
    mem.put("w", rng.uniform(0.5, 1.5, hidden).astype(np.float32))
    mem.put("wg", (rng.standard_normal((out_rows, hidden)) / 16).astype(np.float32))
    mem.put("gate", rng.standard_normal((batch, hidden)).astype(np.float32))
    mem.put("q", rng.standard_normal((batch, heads, head_dim)).astype(np.float32))
    mem.put("k", rng.standard_normal((batch, seq, heads, head_dim)).astype(np.float32))
    mem.put("v", rng.standard_normal((batch, seq, heads, head_dim)).astype(np.float32))
    angles = rng.uniform(0, np.pi, (batch, head_dim // 2))
    mem.put("cos", np.cos(angles).astype(np.float32)), mem.put("sin", np.sin(angles).astype(np.float32))
    for name, shape in (("rms", (batch, hidden)), ("gemv", out_rows), ("silu", (batch, hidden)),
                        ("add", (batch, hidden)), ("attn", (batch, heads, head_dim)), ("rope", (batch, heads, head_dim))):
        mem.put(name, np.zeros(shape, np.float32))
    b = {k: v[0] for k, v in mem.buffers.items()}

    def step(name, grid, block, *args, **kw):
        return nvcc_step(gpu, container, name, grid, block, *args, ptx="decode_global.ptx", **kw)

    rope_shape = struct.pack("<3i", heads, head_dim, batch)
    steps = [
        step("rmsnorm_global", batch, (256, 1, 1), b["x"], b["w"], b["rms"], hidden, 1e-6,
             threads=(256, 1, 1)),
        step("gemv_global", 4, (128, 1, 1), b["wg"], b["rms"], b["gemv"], out_rows, hidden),
        step("silu_mul_global", 2, (128, 1, 1), b["gate"], b["rms"], b["silu"], batch * hidden,
             threads=(128, 1, 1)),
        step("residual_add_global", 2, (256, 1, 1), b["silu"], b["x"], b["add"], batch * hidden,
             threads=(256, 1, 1)),
        step("decode_attention_global", batch * heads, (128, 1, 1), b["q"], b["k"], b["v"], b["attn"],
             seq, heads, head_dim, seq, 0.088, shared=seq * 4, options={"dynamic_shared": seq * 4}),
        step("rope_global", batch * heads, (64, 1, 1), b["attn"], b["cos"], b["sin"], b["rope"],
             rope_shape, threads=(64, 1, 1)),
    ]
    fused, got = fused_equals_alone(gpu, mem, steps, ["rms", "gemv", "silu", "add", "attn", "rope"], "debug-aiv-num=2")
    assert fused.explain()["cuda_entry"]["compiled"] == "whole program"
    x = mem.get("x")
    rms = x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + np.float32(1e-6)) * mem.get("w")
    np.testing.assert_allclose(got["rms"], rms, rtol=1e-5, atol=1e-6)
    assert np.abs(got["rope"]).max() > 0.01


# ---- sub-kernels written for libsk, as PTX -------------------------------------------------------
def sk_kernels(gpu, name):
    """The build's `name`_sk.ptx (nvcc -ptx -rdc=true of tests/kernels/cuda/`name`.cu)."""
    cache = gpu.__dict__.setdefault("sk_modules", {})
    if name not in cache:
        cache[name] = gpu.load(cuda_kernel(name + "_sk.ptx"))
    return cache[name]


def chain_expect(init, steps, launches):
    """What `launches` launches of chain_step with step numbers 0 .. steps - 1 leave of `init`."""
    x = init.copy()
    for _ in range(launches):
        for i in range(steps):
            x = x * np.uint32(3) + np.uint32(i)
    return x


def test_a_chain_on_uneven_block_counts_fused_equals_unfused_and_the_cpu(gpu):
    # chain_step on 1 to 9 blocks a step, on a super kernel of 4 (idle and multiplexed
    # blocks), launched twice; sk_launch_kernel of each step, unfused, the same; and the CPU.
    step = sk_kernels(gpu, "chain").kernel("chain_step")
    n, count = 400, 12
    init = np.arange(n, dtype=np.uint32)
    mem = Memory(gpu)
    fused, unfused = mem.put("fused", init), mem.put("unfused", init)
    with gpu.scope("chain", "debug-aiv-num=4") as scope:
        for i in range(count):
            scope.add(step, 1 + (i * 7) % 9, fused, n, i)
    for _ in range(2):
        scope.superkernel.launch()
        for i in range(count):
            step.launch(1 + (i * 7) % 9, unfused, n, i)
    gpu.synchronize()
    for name in ("fused", "unfused"):
        assert mem.get(name).tobytes() == chain_expect(init, count, 2).tobytes(), name


def test_sync_all_on_fewer_blocks_than_the_super_kernel(gpu):
    # sync_sum's 3 blocks meet at sk_sync_all in a super kernel of 6 (the chain step beside it
    # takes 6): each writes its partial sum, block 0 adds them after the barrier.
    mod = sk_kernels(gpu, "sync")
    chain = sk_kernels(gpu, "chain").kernel("chain_step")
    n = 1000
    values = np.arange(n, dtype=np.uint32) * np.uint32(7919) + np.uint32(3)
    mem = Memory(gpu)
    data, other = mem.put("data", values), mem.put("other", np.zeros(n, np.uint32))
    partial = mem.put("partial", np.zeros(4, np.uint32))
    with gpu.scope("sync") as scope:
        scope.add(chain, 6, other, n, 1)
        scope.add(mod.kernel("sync_sum"), 3, data, partial, n)
        scope.add(chain, 6, other, n, 2)
    scope.superkernel.launch()
    gpu.synchronize()
    got = mem.get("partial")
    assert int(got[0]) == int(values.sum(dtype=np.uint64)) & 0xFFFFFFFF
    assert int(got[1:].sum(dtype=np.uint64)) & 0xFFFFFFFF == int(got[0])


def test_task_overlap_keeps_the_data_dependency(gpu):
    # overlap_produce lets the next kernel start after its data (sk_set_next_task_start);
    # overlap_consume runs its head, then waits for it (sk_wait_pre_task_end). Eight blocks of
    # each on a super kernel of two.
    mod = sk_kernels(gpu, "overlap")
    n = 2000
    mem = Memory(gpu)
    data, scratch, out = (mem.put(name, np.zeros(n, np.uint32)) for name in ("data", "scratch", "out"))
    with gpu.scope("overlap", "debug-aiv-num=2") as scope:
        scope.add(mod.kernel("overlap_produce"), 8, data, scratch, n)
        scope.add(mod.kernel("overlap_consume"), 8, data, out, n)
    for _ in range(2):
        scope.superkernel.launch()
    gpu.synchronize()
    i = np.arange(n, dtype=np.uint32)
    assert mem.get("out").tobytes() == ((i + 1) * 2).tobytes()
    assert (mem.get("scratch") == 2).all()


def test_blocks_that_meet_at_a_cross_core_flag_read_each_others_writes(gpu):
    # flag_rotate: each block writes its part, sets and waits for flag 2 across all blocks,
    # then reads the next block's part; three launches of two steps, the flag counting on.
    k = sk_kernels(gpu, "flags").kernel("flag_rotate")
    blocks, n = 3, 3 * 128
    mem = Memory(gpu)
    a, b = mem.put("a", np.zeros(n, np.uint32)), mem.put("b", np.zeros(n, np.uint32))
    with gpu.scope("flags") as scope:
        scope.add(k, blocks, a, b, 1)
        scope.add(k, blocks, b, a, 2)
    for _ in range(3):
        scope.superkernel.launch()
    gpu.synchronize()
    # The second step writes b's words for round 2, then a from b's.
    i = np.arange(n, dtype=np.uint64)
    second = (i * 2654435761 + 2) & 0xFFFFFFFF
    rotated = second[(i + 128) % n] ^ second[(i + 1) % n]
    assert mem.get("a").tobytes() == rotated.astype(np.uint32).tobytes()
    assert mem.get("b").tobytes() == second.astype(np.uint32).tobytes()


def test_a_kernel_stops_a_repeat_in_the_run_it_chooses(gpu):
    mod = sk_kernels(gpu, "repeat")
    mem = Memory(gpu)
    runs, flag = mem.put("runs", np.zeros(1, np.uint32)), mem.put("flag", np.zeros(1, np.uint32))
    with gpu.scope("repeat") as scope:
        scope.add(mod.kernel("count_and_stop"), 2, runs, flag, 4)
    scope.superkernel.launch_repeat(100, flag)
    gpu.synchronize()
    assert mem.get("runs")[0] == 4


def ro_rotate_chain(gpu, steps):
    """ro_rotate steps on 4 blocks a step over 2 (virtual blocks): each step reads, through
    the read-only path, words other blocks wrote in the step before, on lines its block read
    two steps before. Returns the super kernel, the buffers and the CPU's result."""
    k = sk_kernels(gpu, "readonly").kernel("ro_rotate")
    n = 512
    start = (np.arange(n, dtype=np.uint32) * 7 + 1).astype(np.uint32)
    mem = Memory(gpu)
    a, b = mem.put("a", start), mem.put("b", np.zeros(n, np.uint32))
    with gpu.scope("readonly", "debug-aiv-num=2") as scope:
        for s in range(steps):
            scope.add(k, 4, a if s % 2 == 0 else b, b if s % 2 == 0 else a, n, 37 * s + 5)
    x = start.astype(np.uint64)
    i = np.arange(n)
    for s in range(steps):
        shift = 37 * s + 5
        x = (x[(i + shift) % n] * 2654435761 + x[(i + 2 * shift + 1) % n] + shift) & 0xFFFFFFFF
    return scope.superkernel, mem, "a" if steps % 2 == 0 else "b", x.astype(np.uint32)


def test_reads_through_the_read_only_path_see_the_step_befores_writes(gpu):
    fused, mem, out, want = ro_rotate_chain(gpu, 6)
    fused.launch()
    gpu.synchronize()
    assert mem.get(out).tobytes() == want.tobytes()


@pytest.mark.parametrize("weakened, to", [
    ("red.release.gpu.global.add.u64", "red.relaxed.gpu.global.add.u64"),
    ("fence.acquire.gpu;", "// (no acquire)"),
], ids=["arrival-relaxed", "no-acquire"])
def test_the_entrys_release_and_acquire_are_each_needed_on_weakly_ordered_memory(gpu, weakened, to):
    # The same chain as above with the entry's grid barrier weakened in the program the
    # driver runs: its arrival made relaxed (the block's writes no longer published), or its
    # acquire dropped (the block's L1 keeps lines of two steps before). On the simulator's
    # weakly ordered memory some launch reads stale words; with the entry as generated, none.
    def weaken(text):
        if "sk_superkernel_entry" in text:
            assert weakened in text
            text = text.replace(weakened, to)
        return text

    fused, mem, out, want = ro_rotate_chain(gpu, 6)
    start = mem.snapshot()
    results = []
    for edit in (None, weaken):
        gpu.runs.edit = edit
        got = []
        for _ in range(6):
            mem.restore(start)
            fused.launch()
            gpu.synchronize()
            got.append(mem.get(out).tobytes() == want.tobytes())
        results.append(got)
    assert results[0] == [True] * 6
    assert False in results[1], f"every launch with '{to}' read fresh words"


def test_a_hang_aborts_only_its_launch_and_the_next_one_runs(gpu):
    # partial_sync's block 0 waits at sk_sync_all for block 1, which never comes: past the
    # device's deadline (1 ms of simulated time: a nanosecond a statement, plus the sleeps) the
    # wait aborts the launch, whose blocks run to their end; its stream's sync reports the hang
    # once, naming the super kernel; a super kernel on another stream is not aborted; the hung
    # one's next launch, with every block syncing, runs from zeroed counters.
    with reopened(gpu, "cuda:0,timeout_ms=1") as dev:
        k = dev.load(cuda_kernel("hang_sk.ptx")).kernel("partial_sync")
        chain = dev.load(cuda_kernel("chain_sk.ptx")).kernel("chain_step")
        mem = Memory(dev)
        count, data = mem.put("count", np.zeros(1, np.uint32)), mem.put("data", np.ones(256, np.uint32))
        with dev.scope("hung") as scope:
            scope.add(k, 2, count, 1)
        hung = scope.superkernel
        with dev.scope("other") as scope:
            for _ in range(4):
                scope.add(chain, 2, data, 256, 0)
        s1, s2 = dev.stream(), dev.stream()
        hung.launch(s1)
        scope.superkernel.launch(s2)
        s2.synchronize()
        with pytest.raises(sk.Hang, match=r"super kernel 'hung' .*: block 0 of step 0 'partial_sync' waited past "
                                          r"the 1 ms deadline at sk_sync_all \(counter 1 of 2\)"):
            s1.synchronize()
        s1.synchronize()  # reported once
        assert mem.get("count")[0] == 2
        assert (mem.get("data") == 81).all()
        hung.set_arg(0, 1, 2)
        hung.launch(s1)
        s1.synchronize()
        assert mem.get("count")[0] == 4


def test_a_kernel_that_waits_for_its_blocks_by_its_own_means_runs_them_at_once(gpu):
    # own_barrier_rotate: thread 0 of each block counts itself in `arrived` and spins until every
    # block has, then reads the next block's words. Taken cooperative (SK_KERNEL_DESC_COOPERATIVE),
    # each of its blocks gets a block of the super kernel; two rounds, the count going on.
    blocks, n = 3, 3 * 128
    mem = Memory(gpu)
    mem.put("in", (np.arange(n, dtype=np.uint32) * np.uint32(40503)))
    mem.put("mid", np.zeros(n, np.uint32)), mem.put("out1", np.zeros(n, np.uint32))
    mem.put("out2", np.zeros(n, np.uint32)), mem.put("arrived", np.zeros(1, np.uint32))
    b = {k: v[0] for k, v in mem.buffers.items()}
    coop = {"cooperative": True}
    steps = [nvcc_step(gpu, "grid_sync.ptx", "own_barrier_rotate", blocks, (128, 1, 1), b["in"], b["mid"], b["out1"],
                       b["arrived"], 1, threads=(128, 1, 1), options=coop),
             nvcc_step(gpu, "grid_sync.ptx", "own_barrier_rotate", blocks, (128, 1, 1), b["out1"], b["mid"], b["out2"],
                       b["arrived"], 2, threads=(128, 1, 1), options=coop)]
    _, got = fused_equals_alone(gpu, mem, steps, ["out1", "out2", "arrived"])
    assert got["arrived"][0] == 2 * blocks


def test_returning_threads_of_narrower_kernels_beside_a_wider_one(gpu):
    # er_guard and er_rounds at 128 threads beside er_wide at 256: they run on each block's
    # first 128, and their returned threads' wait and two-phase barriers count 128.
    blocks = 4
    mem, b, live = early_return_inputs(gpu, blocks)
    f = "early_return_global.ptx"
    steps = [nvcc_step(gpu, f, "er_guard", blocks, (128, 1, 1), b["in"], b["out"], live),
             nvcc_step(gpu, f, "er_wide", blocks // 2, (256, 1, 1), b["wide"], live),
             nvcc_step(gpu, f, "er_rounds", blocks, (128, 1, 1), b["out"], b["rounds"])]
    fused, _ = fused_equals_alone(gpu, mem, steps, ["out", "wide"])
    assert fused.explain()["cuda_entry"]["threads"] == 256


def test_triton_kernels_of_dependent_launch_and_of_a_two_dimensional_grid(gpu):
    # scale_pdl (launch_pdl: its weights load before gdc_wait, while the step before ends) three
    # times in a chain, each reading what the one before wrote, on a super kernel of two blocks
    # for four programs; grid2d reads program_id(1) on a (2, 3) grid.
    rng = np.random.default_rng(19)
    n = 4 * 512
    mem = Memory(gpu)
    for name in ("w", "x"):
        mem.put(name, rng.standard_normal(n).astype(np.float32))
    mem.put("y", np.zeros(n, np.float32)), mem.put("z", np.zeros(n, np.float32))
    mem.put("g", rng.standard_normal((3, 512)).astype(np.float32)), mem.put("g1", np.zeros((3, 512), np.float32))
    b = {k: v[0] for k, v in mem.buffers.items()}
    steps = [triton_step(gpu, "scale_pdl", 4, b["w"], b["x"], b["y"], n),
             triton_step(gpu, "scale_pdl", 4, b["w"], b["y"], b["z"], n),
             triton_step(gpu, "grid2d", (2, 3, 1), b["g"], b["g1"], 512),
             triton_step(gpu, "scale_pdl", 4, b["w"], b["z"], b["x"], n)]
    _, got = fused_equals_alone(gpu, mem, steps, ["x", "y", "z", "g1"], "debug-aiv-num=2", launches=2)
    assert (got["g1"] == mem.get("g") + np.float32(1)).all()


def test_a_chain_of_more_than_256_steps_reads_every_steps_record(gpu):
    # 260 steps of chain_step, each with its own step number, on one block: the step loop reads
    # each step's record and arguments past the first 256; launched twice.
    step = sk_kernels(gpu, "chain").kernel("chain_step")
    n, count = 128, 260
    init = np.arange(n, dtype=np.uint32)
    mem = Memory(gpu)
    x = mem.put("x", init)
    with gpu.scope("long") as scope:
        for i in range(count):
            scope.add(step, 1, x, n, i)
    for _ in range(2):
        scope.superkernel.launch()
    gpu.synchronize()
    assert mem.get("x").tobytes() == chain_expect(init, count, 2).tobytes()


def test_a_dependent_step_costs_each_thread_two_block_barriers_and_a_block_local_one(gpu):
    # Empty steps (bench_empty_step, as PTX) on one block and on four: the statements each
    # thread of a block runs in the step loop per step, from the difference between 20 and 10
    # steps, against a cooperative kernel of as many cg::this_grid().sync()s. Every thread but
    # thread 0 passes two block barriers a dependent step (the entry's barrier.red 15 before the
    # release, its barrier.sync 15 after the acquire), and its path does not grow with the steps
    # or the blocks. Steps joined by block-local edges pass one: thread 0 neither releases nor
    # polls, and fills the next step's slot before the barrier.
    step = sk_kernels(gpu, "bench_empty").kernel("bench_empty_step")

    def per_step(blocks, block_local=False):
        """Per thread (0, 1): the statements a step and the ops each counts a step; then the
        same of those after the reducing barrier (until the next barrier, or the call)."""
        counted = {}
        for count in (10, 20):
            with gpu.scope(f"empty{count}") as scope:
                for i in range(count):
                    scope.add(step, blocks, block_local=block_local and i > 0)
            # Explain counts the steps that end at one barrier: every one of a block-local
            # chain; of a dependent chain the last alone, which nothing waits for.
            loop = scope.superkernel.explain()["cuda_entry"]["step_loop"]
            assert loop["one_barrier_steps"] == (count if block_local else 1), loop
            assert loop["block_barriers"] == 2, loop
            scope.superkernel.launch()  # the first launch writes the zeros and the step table
            gpu.synchronize()
            gpu.runs.counts = counted[count] = {}
            scope.superkernel.launch()
            gpu.synchronize()
            gpu.runs.counts = None
        out = {}
        for thread in (0, 1):
            ops, between = collections.Counter(), collections.Counter()
            for count, sign in ((20, 1), (10, -1)):
                for (f, t, op, since), v in counted[count].items():
                    if t == thread:
                        ops[op] += sign * v
                        if since == "or":
                            between[op] += sign * v
            ops = {op: v / (blocks * 10) for op, v in ops.items()}  # one division: exact where whole
            between = {op: v / (blocks * 10) for op, v in between.items() if v}
            out[thread] = (sum(ops.values()), ops, sum(between.values()), between)
        return out

    def barriers(ops):
        return sum(v for op, v in ops.items() if op.startswith("barrier."))

    barrier = {blocks: per_step(blocks) for blocks in (1, 4)}
    for blocks, threads in barrier.items():
        assert barriers(threads[1][1]) == 2, f"{blocks} blocks: {threads[1][1]} a step"
        assert barriers(threads[0][1]) == 2, f"{blocks} blocks: {threads[0][1]} a step"
    assert barrier[1][1][0] == barrier[4][1][0], barrier
    local = per_step(1, block_local=True)
    assert barriers(local[1][1]) == 1 and barriers(local[0][1]) == 1, local
    assert local[1][0] < barrier[1][1][0] and local[0][0] < barrier[1][0][0]
    releases = ("red.release.gpu.global.add.u64", "ld.relaxed.gpu.global.u64")
    assert all(barrier[1][0][1][op] >= 1 for op in releases) and not any(local[0][1].get(op) for op in releases)
    floor = {}
    sim = Simulator(open(cuda_kernel("grid_sync.ptx")).read(), "grid_sync", gpu.runs.allocations)
    for count in (10, 20):
        counts = {}
        sim.launch("gs_syncs", (1, 1, 1), (128, 1, 1), 0, [struct.pack("<i", count)], cooperative=True, counts=counts)
        floor[count] = sum(v for (f, t, o, _), v in counts.items() if t == 1)
    print(f"PTX statements a step, thread 1: fused {barrier[1][1][0]:.0f}, block-local {local[1][0]:.0f}, "
          f"grid.sync {(floor[20] - floor[10]) / 10:.0f}; thread 0 on 1 block: {barrier[1][0][0]:.0f}, "
          f"block-local {local[0][0]:.0f}; thread 0 between a dependent step's barriers: {barrier[1][0][2]:.0f}")
    # Between a dependent step's two barriers thread 0 arrives, moves to the next slot and waits
    # for what that step depends on: the slot's record is there already (thread 0 read it from
    # the table before the first barrier, while the block's other threads may still run their
    # call).
    between = barrier[1][0][3]
    assert not any(op.startswith("ld.global") for op in between), between
    assert between["red.release.gpu.global.add.u64"] == 1 and between["fence.acquire.gpu"] == 1, between


@pytest.mark.parametrize("seed", range(4))
def test_random_scopes_of_triton_kernels_fused_equal_their_launches(gpu, seed):
    # Two to seven steps of SiLU, residual add, RMSNorm and GEMV on random buffers, grids of 1 to
    # 4 programs, on 1 to 3 blocks or their own; block-local edges where an element-wise step
    # reads what the one before it wrote on the same grid; or three streams on buffers of their
    # own; early start on or off; launched 1 to 3 times.
    r = random.Random(seed)
    mem = Memory(gpu)
    rng = np.random.default_rng(seed)
    n = 1024
    for q in range(3):
        for i in range(4):
            mem.put(f"v{q}{i}", rng.standard_normal(n).astype(np.float32))
        mem.put(f"p{q}", np.zeros(32, np.float32))
    mem.put("w", rng.uniform(0.5, 1.5, 256).astype(np.float32))
    mem.put("wo", (rng.standard_normal((32, 256)) / 16).astype(np.float32))
    b = {k: v[0] for k, v in mem.buffers.items()}
    streams = r.random() < 0.3
    steps, before = [], None
    for _ in range(r.randint(2, 7)):
        kind = r.choice(["silu_mul", "residual_add", "rmsnorm", "gemv"])
        q = r.randint(0, 2) if streams else 0
        options = {"stream": q} if streams else {}
        src, src2, dst = (b[f"v{q}{i}"] for i in r.sample(range(4), 3))
        grid = {"silu_mul": r.randint(1, 2), "residual_add": r.randint(1, 2), "rmsnorm": r.randint(1, 4), "gemv": 2}[kind]
        args = {"silu_mul": (src, src2, dst, n), "residual_add": (src, src2, dst, n),
                "rmsnorm": (src, b["w"], dst, 256, 1e-6), "gemv": (b["wo"], src, b[f"p{q}"], 32, 256)}[kind]
        if (not streams and before and before[0] in ("silu_mul", "residual_add") and kind in ("silu_mul", "residual_add")
                and before[1] == grid and before[2] in (src, src2) and r.random() < 0.7):
            options["block_local"] = True
        steps.append(triton_step(gpu, kind, grid, *args, **options))
        before = (kind, grid, dst)
    blocks = r.choice([None, 1, 2, 3])
    scope_options = ":".join(o for o in (f"debug-aiv-num={blocks}" if blocks else "",
                                         "stream-fusion=1" if streams else "",
                                         r.choice(["", "early-start=0"])) if o) or None
    fused_equals_alone(gpu, mem, steps, list(mem.buffers), scope_options, launches=r.randint(1, 3))


def test_structs_by_value_and_an_argument_read_by_reference_reach_a_libsk_sub_kernel(gpu):
    # cu_agg takes {f32,f32}, {f64,i32}, {i32[5]}, {i8,f32} by value and an i16, and writes
    # them back member by member at out + 64 * pos; the second step reads pos by reference, so
    # the next launch, after the host changed it, writes another record. many_args: 31 i64s.
    mod = sk_kernels(gpu, "aggregates")
    k = mod.kernel("cu_agg")
    mem = Memory(gpu)
    out, pos = mem.put("out", np.zeros(64 * 4, np.uint8)), mem.put("pos", np.array([1], np.int32))
    first = ((1.5, -2.25), (3.125, -7), ((1, 2, 3, 4, 5),), (-3, 0.5), -12)
    second = ((-0.75, 8.0), (-1e300, 2 ** 31 - 1), ((-1, -2, -3, -4, -5),), (127, -1e-30), 32767)
    with gpu.scope("aggregates") as scope:
        scope.add(k, 1, out, 0, *first)
        scope.add(k, 2, out, sk.Ref(pos), *second)
    scope.superkernel.launch()
    gpu.synchronize()
    mem.set("pos", np.array([3], np.int32))
    scope.superkernel.launch()
    gpu.synchronize()

    def record(p, q, r, s, h):
        return struct.pack("<ffdi5ibfh", *p, *q, *r[0], *s, h)

    got = mem.get("out").tobytes()
    for at, values in ((0, first), (1, second), (3, second)):
        assert got[64 * at:64 * at + 47] == record(*values), at
    assert got[128:128 + 47] == bytes(47)
    args = [(-1) ** i * (i * 1000003 + 7) << (i % 20) for i in range(31)]
    sums = mem.put("sums", np.zeros(3, np.int64))
    with gpu.scope("many") as scope:
        scope.add(sk_kernels(gpu, "params").kernel("many_args"), 3, sums, *args)
    scope.superkernel.launch()
    gpu.synchronize()
    assert list(mem.get("sums")) == [sum(args)] * 3


def test_sync_all_in_a_helper_spans_every_block(gpu):
    # sync_in_helper reaches sk_sync_all through a __noinline__ helper; each of 8 blocks (as
    # many as the stand-in GPU holds at once) publishes v + its index before it, block 0 sums
    # them after it.
    k = sk_kernels(gpu, "callgraph").kernel("sync_in_helper")
    mem = Memory(gpu)
    partial = mem.put("partial", np.zeros(9, np.uint32))
    k.launch(8, partial, 10)
    gpu.synchronize()
    assert mem.get("partial")[0] == sum(10 + b for b in range(8))


def recurse_mix(depth, v):
    """recursive.cu's recurse_mix on the CPU."""
    mask = 0xFFFFFFFF
    if depth == 0:
        return v
    return ((v + (depth & 7)) & mask) ^ recurse_mix(depth - 1, (v * 3 + 1) & mask)


def test_a_recursive_sub_kernel_runs_fused(gpu):
    # recurse_mix calls itself as deep as an argument says, each level with a frame of its own
    # (a stack ptxas cannot bound: the device is opened with stack_bytes), after a chain step,
    # on 4 blocks.
    with reopened(gpu, "cuda:0,stack_bytes=8192") as deep:
        step = sk_kernels(deep, "chain").kernel("chain_step")
        rec = sk_kernels(deep, "recursive").kernel("recurse_sum")
        n, depth = 128 * 3 + 5, 12
        init = (np.arange(n, dtype=np.uint64) * 40503 + 7).astype(np.uint32)
        mem = Memory(deep)
        x = mem.put("x", init)
        with deep.scope("recursion") as scope:
            scope.add(step, 4, x, n, 0)
            scope.add(rec, 4, x, n, depth)
        scope.superkernel.launch()
        deep.synchronize()
        want = np.array([recurse_mix(depth, (int(v) * 3) & 0xFFFFFFFF) for v in init], np.uint32)
        assert mem.get("x").tobytes() == want.tobytes()


def test_static_tiles_dynamic_shared_and_a_48_kib_tile_fuse(gpu):
    # shared.cu's two 24 KiB static tiles, its 64 KiB and 4 KiB extern arrays, one block each;
    # then tile48's 48 KiB tile (the overlay, the block state past it) before dyn_small.
    shared = sk_kernels(gpu, "shared")
    tile48 = sk_kernels(gpu, "tile48").kernel("tile48")
    size, n = 16384, 128
    x = np.arange(size, dtype=np.float32)
    mem = Memory(gpu)
    dx = mem.put("x", x)
    with gpu.scope("shared_memory") as scope:
        for name in ("tile_a", "tile_b", "dyn_big", "dyn_small"):
            k = shared.kernel(name)
            scope.add(k, 1, dx, n) if name.startswith("tile") else scope.add(k, 1, dx)
    scope.superkernel.launch()
    gpu.synchronize()
    t = np.arange(128)
    for f in (lambda old: old[(t * 7) % n], lambda old: 2 * old[(t * 5) % n],
              lambda old: old[size - 1 - t], lambda old: old[127 - t]):
        x[:128] = f(x.copy())
    assert mem.get("x").tobytes() == x.tobytes()

    y = ((np.arange(n) % 29) - 3).astype(np.float32)
    dy = mem.put("y", y)
    with gpu.scope("tile48") as scope:
        scope.add(tile48, 1, dy, n)
        scope.add(shared.kernel("dyn_small"), 1, dy)
    scope.superkernel.launch()
    gpu.synchronize()
    i = np.arange(12288)
    words = y[i % n] + (i // n).astype(np.float32)
    y = words[(t * 97 + 11) % 12288][127 - t]
    assert mem.get("y").tobytes() == y.tobytes()


def test_static_variables_of_two_modules_in_the_shared_overlay_fused_equal_unfused(gpu):
    # shared.cu's tiles and overlay.cu's (a tile, two arrays, a ring), one block each, fused
    # and launched one by one through libsk; then overlay.cu's tile_then_reverse, which calls
    # shared.cu's helper with its own static line, fused after tile_a: the program joins the
    # two modules, and each keeps the functions the other calls.
    shared, overlay = sk_kernels(gpu, "shared"), sk_kernels(gpu, "overlay")
    kernels = [shared.kernel("tile_a"), shared.kernel("tile_b")] + [
        overlay.kernel(name) for name in ("tile_c", "two_arrays", "ring_a", "ring_b")]
    takes_n = 4
    x = (np.arange(256) % 97).astype(np.float32)
    mem = Memory(gpu)
    fused, unfused = mem.put("fused", x), mem.put("unfused", x)
    with gpu.scope("shared_overlay") as scope:
        for i, k in enumerate(kernels):
            scope.add(k, 1, fused, 128) if i < takes_n else scope.add(k, 1, fused)
    scope.superkernel.launch()
    for i, k in enumerate(kernels):
        k.launch(1, unfused, 128) if i < takes_n else k.launch(1, unfused)
    gpu.synchronize()
    assert mem.get("fused").tobytes() == mem.get("unfused").tobytes()
    assert mem.get("fused").tobytes() != x.tobytes()

    y = ((np.arange(128) % 13) - 6).astype(np.float32)
    dy = mem.put("y", y)
    with gpu.scope("helper_overlay") as scope:
        scope.add(shared.kernel("tile_a"), 1, dy, 128)
        scope.add(overlay.kernel("tile_then_reverse"), 1, dy)
    assert scope.superkernel.explain()["cuda_entry"]["compiled"] == "whole program"
    scope.superkernel.launch()
    gpu.synchronize()
    t, k = np.arange(128), np.arange(6144)
    y = y[k % 128][(t * 7) % 6144]  # tile_a
    y = y[127 - t] + (y[k % 128] * (k & 7).astype(np.float32))[6143 - t]  # tile_then_reverse
    assert mem.get("y").tobytes() == y.tobytes()


def test_a_flag_id_out_of_range_fails_the_launch_once(gpu):
    # any_flag(17): the device code records the call and the id and aborts the launch; with a
    # valid id rebound, the next launch runs.
    k = sk_kernels(gpu, "misc").kernel("any_flag")
    with gpu.scope("bad_flag") as scope:
        scope.add(k, 2, 17)
    fused = scope.superkernel
    assert fused.explain()["cuda_entry"]["compiled"] == "whole program"
    fused.launch()
    with pytest.raises(sk.Error, match=r"\(17\): flag ids are 0\.\.15"):
        gpu.synchronize()
    fused.set_arg(0, 0, 3)
    fused.launch()
    gpu.synchronize()
