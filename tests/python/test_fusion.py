"""Fused launches through the binding agree with unfused ones; numpy memory is used in place."""
import ctypes
import multiprocessing

import numpy as np
import pytest

import superkernel as sk

N = 10_000


def chain(scope_or_none, ops, x, y, block_dims=(1, 2, 3, 4)):
    """Adds (or launches unfused) axpy, square_plus_one, axpy... over several block dims."""
    axpy, sq = ops.kernel("axpy"), ops.kernel("square_plus_one")
    for i, b in enumerate(block_dims):
        for k, args in ((axpy, (0.5 + i, x, y, N)), (sq, (y, N))):
            if scope_or_none is None:
                k.launch(b, *args)
            else:
                scope_or_none.add(k, b, *args)


def test_fused_equals_unfused_on_numpy_arrays(dev, ops):
    rng = np.random.default_rng(1)
    x = rng.uniform(-1, 1, N).astype(np.float32)
    y0 = rng.uniform(-1, 1, N).astype(np.float32)
    y_unfused, y_fused = y0.copy(), y0.copy()

    chain(None, ops, x, y_unfused)
    dev.synchronize()

    with dev.scope("chain") as scope:
        chain(scope, ops, x, y_fused)
    with scope.superkernel as fused:
        assert len(fused) == 8
        fused.launch()
        dev.synchronize()

    assert not np.array_equal(y_fused, y0)           # the kernels wrote into the array itself
    assert np.array_equal(y_fused, y_unfused)        # bit for bit
    # and the result is the one numpy computes in the same float32 order
    expect = y0.copy()
    for i in range(4):
        expect = np.float32(0.5 + i) * x + expect
        expect = expect * expect + np.float32(1)
    np.testing.assert_allclose(y_fused, expect, rtol=1e-5)


def test_launch_many_times_and_rebind_argument(dev, ops):
    x, y = np.ones(N, np.float32), np.zeros(N, np.float32)
    with dev.scope("axpy") as scope:
        scope.add(ops.kernel("axpy"), 2, 2.0, x, y, N)
    fused = scope.superkernel
    for _ in range(3):
        fused.launch()
    dev.synchronize()
    assert np.all(y == 6.0)
    fused.set_arg(0, 0, 10.0)              # a = 10 from now on
    other = np.zeros(N, np.float32)
    fused.set_arg(0, 2, other)             # y -> another array, no rebuild
    fused.launch()
    dev.synchronize()
    assert np.all(other == 10.0) and np.all(y == 6.0)
    with pytest.raises(IndexError):
        fused.set_arg(0, 9, 1)


def test_device_buffers_are_zero_copy(dev, ops):
    x, y = dev.alloc(N * 4), dev.alloc(N * 4)
    xs, ys = x.numpy(), y.numpy()
    assert xs.ctypes.data == x.address     # the numpy view is the device memory itself
    xs[:] = 3.0
    ys[:] = 1.0
    ops.kernel("axpy").launch(4, 2.0, x, y, N)
    dev.synchronize()
    assert np.all(ys == 7.0)
    arr = np.zeros(16, np.float32)
    wrapped = dev.buffer(arr)
    assert wrapped.address == arr.ctypes.data and wrapped.nbytes == arr.nbytes
    dev.memcpy(wrapped, ys[:16])
    assert np.all(arr == 7.0)


def test_sync_all_reduction_fused(dev, ops):
    x = (np.arange(N) % 7).astype(np.float32)  # small integers: every partial sum is exact
    partials, out_u, out_f = (np.zeros(2, np.float32), np.zeros(1, np.float32),
                              np.zeros(1, np.float32))
    k = ops.kernel("block_sum")
    k.launch(2, x, partials, out_u, N)
    dev.synchronize()
    with dev.scope("sum") as scope:
        scope.add(k, 2, x, partials, out_f, N, name="reduce")
    scope.superkernel.launch()
    dev.synchronize()
    assert out_f[0] == out_u[0]                          # fused and unfused: same bits
    assert out_f[0] == x.sum(dtype=np.float64)
    plan = scope.superkernel.explain()
    assert plan["steps"][0]["name"] == "reduce"
    assert "sk_sync_all" in plan["steps"][0]["device_api"]


def test_every_scalar_type_round_trips(dev, ops):
    out = np.zeros(10, np.float64)
    values = (-5, 250, -30000, 65000, -2_000_000_000, 4_000_000_000, -(1 << 40), 1 << 50,
              1.5, 2.25)
    ops.kernel("all_types").launch(1, *values, out)
    dev.synchronize()
    assert list(out) == [float(v) for v in values]


def test_argument_errors_name_the_argument(ops):
    k = ops.kernel("all_types")
    with pytest.raises(OverflowError, match="argument 1 .u8."):
        k.launch(1, 0, 256, 0, 0, 0, 0, 0, 0, 0.0, 0.0, None)
    with pytest.raises(TypeError, match="takes 11 arguments, 2 given"):
        k.launch(1, 0, 1)
    axpy = ops.kernel("axpy")
    with pytest.raises(TypeError, match="argument 1 .ptr."):
        axpy.launch(1, 1.0, "not a buffer", None, 0)
    strided = np.zeros(20, np.float32)[::2]
    with pytest.raises(ValueError, match="C-contiguous"):
        axpy.launch(1, 1.0, strided, strided, 10)


def test_block_dim_zero_is_invalid(dev, ops):
    with pytest.raises(sk.InvalidArgument):
        with dev.scope("bad") as scope:
            scope.add(ops.kernel("nothing"), 0)


def test_scope_aborts_on_exception(dev, ops):
    with pytest.raises(RuntimeError):
        with dev.scope("aborted") as scope:
            scope.add(ops.kernel("nothing"), 1)
            raise RuntimeError("user error inside the scope")
    assert scope.closed and scope.superkernel is None


def test_kernel_without_metadata_needs_a_signature(dev, ops):
    with pytest.raises(sk.NotFound):
        ops.kernel("no_metadata_fill")
    # An aggregate aligned beyond what libffi lays out (alignas(16) of 8-aligned members) is
    # refused by name rather than passed at the wrong offsets.
    with pytest.raises(sk.Unsupported, match=r"parameter 1 \{u64\[2\]\}@16: libffi lays it out in 16 bytes "
                                             r"aligned to 8, the signature in 16 aligned to 16"):
        ops.kernel("no_metadata_fill", signature="ptr,{u64[2]}@16")
    fill = ops.kernel("no_metadata_fill", signature="ptr,f32,u32")
    y = np.zeros(100, np.float32)
    with dev.scope("fill") as scope:
        scope.add(fill, 3, y, 4.5, 100)
    scope.superkernel.launch()
    dev.synchronize()
    assert np.all(y == 4.5)


def test_streams(dev, ops):
    x, y = np.ones(N, np.float32), np.zeros(N, np.float32)
    axpy = ops.kernel("axpy")
    with dev.stream() as s:
        with dev.scope("s") as scope:
            scope.add(axpy, 2, 1.0, x, y, N)
        scope.superkernel.launch(stream=s)
        axpy.launch(2, 1.0, x, y, N, stream=s)
        s.synchronize()
    assert s.closed and np.all(y == 2.0)


def test_kernel_options_and_explain_names(dev, ops):
    with dev.scope("opts", {"early-start": 0}) as scope:
        scope.add(ops.kernel("nothing"), 1, name="first")
        scope.add(ops.kernel("nothing"), 1, name="second", core_type="vector", flags=0)
    plan = scope.superkernel.explain()
    assert [s["name"] for s in plan["steps"]] == ["first", "second"]
    assert [s["core_type"] for s in plan["steps"]] == ["vector", "vector"]
    assert plan["options"].get("early-start") in (0, "0", False)
    # the C struct on LP64: u32 struct_size, 2 pointers, u32 flags, stream, first_core, core_count,
    # u64 arg_refs, u32 grid[3] (with padding)
    assert sk.KernelOptions.grid.offset == sk.KernelOptions.arg_refs.offset + 8
    if ctypes.sizeof(ctypes.c_void_p) == 8:
        assert ctypes.sizeof(sk.KernelOptions) == 64


def test_device_close_closes_what_is_left(ops_path):
    dev = sk.Device("host:cores=2")
    mod = dev.load(ops_path)
    with dev.scope("left") as scope:
        scope.add(mod.kernel("nothing"), 1)
    buf = dev.alloc(64)
    dev.close()
    assert scope.superkernel.closed and mod.closed and buf.closed and dev.closed


def test_hang_is_reported_at_synchronize(ops_path):
    # Asynchronous failures surface at the next synchronize, as the Hang exception, with
    # libsk's report naming the sub-kernel.
    with sk.Device("host:cores=2,timeout_ms=300") as dev:
        half = dev.load(ops_path).kernel("half_sync")
        with dev.scope("hangs") as scope:
            scope.add(half, 2, name="stuck_here")
        scope.superkernel.launch()
        with pytest.raises(sk.Hang) as e:
            dev.synchronize()
        assert "stuck_here" in str(e.value) and e.value.status_name == "SK_ERR_HANG"
        dev.synchronize()  # reported once


def test_a_devices_synchronize_reports_its_own_launches_only(ops_path):
    # Device.synchronize is sk_device_synchronize: another device's hang stays with it.
    with sk.Device("host:cores=2,timeout_ms=300") as stuck, sk.Device("host:cores=1") as fine:
        with stuck.scope("hangs") as scope:
            scope.add(stuck.load(ops_path).kernel("half_sync"), 2, name="stuck_here")
        scope.superkernel.launch()
        x, y = np.ones(N, np.float32), np.zeros(N, np.float32)
        fine.load(ops_path).kernel("axpy").launch(1, 3.0, x, y, N)
        fine.synchronize()  # does not raise the other device's hang
        assert np.all(y == 3.0)
        with pytest.raises(sk.Hang):
            stuck.synchronize()


def _launch_in_forked_child(dev, axpy, ops_path, results):
    """Runs in a fork()ed child: the parent's device refuses, a device of its own computes."""
    try:
        x, y = np.ones(N, np.float32), np.zeros(N, np.float32)
        try:
            axpy.launch(2, 2.0, x, y, N)
            dev.synchronize()
            results.put(("the parent's device launched in the child", None))
            return
        except sk.StateError as e:
            refused = str(e)
        # A device of its own, the parent's still open: synchronize waits for the child's.
        with sk.Device("host:cores=2") as own:
            own.load(ops_path).kernel("axpy").launch(2, 2.0, x, y, N)
            own.synchronize()
        dev.close()  # returns: nothing to wait for here
        results.put((refused, float(y.sum())))
    except BaseException as e:  # noqa: B902 - reported to the parent, which fails the test
        results.put((f"child raised {e!r}", None))


def test_a_forked_child_opens_its_own_device(dev, ops, ops_path):
    """multiprocessing's default on Linux: fork. The parent's device has no cores in the child."""
    axpy = ops.kernel("axpy")
    x, y = np.ones(N, np.float32), np.zeros(N, np.float32)
    axpy.launch(2, 1.0, x, y, N)
    dev.synchronize()
    ctx = multiprocessing.get_context("fork")
    results = ctx.Queue()
    child = ctx.Process(target=_launch_in_forked_child, args=(dev, axpy, ops_path, results))
    child.start()
    refused, total = results.get(timeout=120)
    child.join(120)
    assert "forked" in refused and "Open a new device" in refused, refused
    assert total == 2.0 * N
    assert child.exitcode == 0
    axpy.launch(2, 1.0, x, y, N)  # the parent's device works on
    dev.synchronize()
    assert np.all(y == 2.0)


def block_local_chain(scope_or_none, ops, x, y, blocks, block_local=True):
    """axpy, then square_plus_one and axpy alternating, block-local to the kernel before each."""
    axpy, sq = ops.kernel("axpy"), ops.kernel("square_plus_one")
    for i in range(8):
        k, args = (sq, (y, N)) if i % 2 else (axpy, (0.25 + i, x, y, N))
        if scope_or_none is None:
            k.launch(blocks, *args)
        else:
            scope_or_none.add(k, blocks, *args, block_local=block_local and i > 0)


@pytest.mark.parametrize("blocks", [2, 5])  # 5: multiplexed on the fixture's 2 cores
def test_block_local_chain_equals_unfused(dev, ops, blocks):
    rng = np.random.default_rng(2)
    x = rng.uniform(-1, 1, N).astype(np.float32)
    y0 = rng.uniform(-1, 1, N).astype(np.float32)
    y_unfused, y_fused = y0.copy(), y0.copy()
    block_local_chain(None, ops, x, y_unfused, blocks)
    dev.synchronize()
    with dev.scope("block_local") as scope:
        block_local_chain(scope, ops, x, y_fused, blocks)
    with scope.superkernel as fused:
        steps = fused.explain()["steps"]
        assert [s.get("edge") for s in steps] == [None] + ["block-local"] * 7
        assert [s["release_next"] for s in steps] == ["none"] * 7 + ["kernel end"]
        fused.launch()
        dev.synchronize()
    assert np.array_equal(y_fused, y_unfused)  # bit for bit


def test_block_local_refusals_name_the_kernels(dev, ops):
    x, y = np.ones(N, np.float32), np.zeros(N, np.float32)
    with dev.scope("bad") as scope:
        with pytest.raises(TypeError, match=r"Scope.add \(square_plus_one\) block_local: expected True or False"):
            scope.add(ops.kernel("square_plus_one"), 2, y, N, block_local=1)
        scope.abort()
    scope = dev.scope("counts")
    scope.add(ops.kernel("axpy"), 4, 1.0, x, y, N, name="a")
    scope.add(ops.kernel("square_plus_one"), 2, y, N, name="b", flags=sk.KERNEL_FLAG_BLOCK_LOCAL)
    with pytest.raises(sk.Incompatible, match=r"kernel 1 'b' is block-local to kernel 0 'a' "
                                              r"\(SK_KERNEL_FLAG_BLOCK_LOCAL\), but their block counts "
                                              r"differ \(2 vs 4\)"):
        scope.finalize()
