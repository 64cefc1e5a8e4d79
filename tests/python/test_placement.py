"""Placement of steps on cores through the binding: packed streams, Scope.add(cores=...) pins,
and pins refused with their messages. Results equal unfused launches bit for bit."""
import ctypes

import numpy as np
import pytest

import superkernel as sk

N = 4096


def inputs(k):
    rng = np.random.default_rng(k)
    return rng.uniform(-1, 1, N).astype(np.float32), rng.uniform(-1, 1, N).astype(np.float32)


def test_streams_are_packed_and_pins_honoured(dev, ops):
    axpy = ops.kernel("axpy")
    data = [inputs(k) for k in range(3)]
    unfused = [y.copy() for _, y in data]
    for k, (x, _) in enumerate(data):
        axpy.launch(1, 1.5 + k, x, unfused[k], N)
    dev.synchronize()

    fused = [y.copy() for _, y in data]
    with dev.scope("packed", {"stream-fusion": 1}) as scope:
        for k, (x, _) in enumerate(data):
            scope.add(axpy, 1, 1.5 + k, x, fused[k], N, stream=k)
    plan = scope.superkernel.explain()
    # two cores: the first two streams side by side, the third beside the fewest
    assert [s["first_unit"] for s in plan["steps"]] == [0, 1, 0]
    assert [s["placement"] for s in plan["steps"]] == ["default", "packed", "packed"]
    scope.superkernel.launch()
    dev.synchronize()
    for k in range(3):
        assert np.array_equal(fused[k], unfused[k])

    pinned = [y.copy() for _, y in data]
    with dev.scope("pinned") as scope:
        for k, (x, _) in enumerate(data):
            scope.add(axpy, 1, 1.5 + k, x, pinned[k], N, cores=(1, 1) if k == 1 else None)
    plan = scope.superkernel.explain()
    assert [(s["first_unit"], s["placement"]) for s in plan["steps"]] == [
        (0, "default"), (1, "pinned"), (0, "default")]
    assert plan["cores"] == 2
    scope.superkernel.launch()
    dev.synchronize()
    for k in range(3):
        assert np.array_equal(pinned[k], unfused[k])


def test_bad_pins_are_refused(dev, ops):
    axpy = ops.kernel("axpy")
    x, y = inputs(0)
    with dev.scope("bad") as scope:
        with pytest.raises(TypeError, match=r"Scope.add \(axpy\) cores: expected \(first, count\)"):
            scope.add(axpy, 1, 1.0, x, y, N, cores=(1,))
        with pytest.raises(ValueError, match="count is 0"):
            scope.add(axpy, 1, 1.0, x, y, N, cores=(1, 0))
        with pytest.raises(OverflowError, match=r"cores\[0\] \(first\)"):
            scope.add(axpy, 1, 1.0, x, y, N, cores=(-1, 1))
        scope.add(axpy, 1, 1.0, x, y, N, name="far", cores=(2, 1))
        with pytest.raises(sk.Incompatible,
                           match="kernel 0 'far' is pinned to first_core 2, core_count 1, beyond the 2 vector cores"):
            scope.finalize()


def test_kernel_options_struct_has_the_pin_fields():
    names = [f[0] for f in sk.KernelOptions._fields_]
    assert names[-4:-1] == ["first_core", "core_count", "arg_refs"]
    assert sk.KernelOptions.core_count.offset + 4 <= ctypes.sizeof(sk.KernelOptions)
