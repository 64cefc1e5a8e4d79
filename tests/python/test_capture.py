"""Capture through the binding: `with dev.capture(...)` around ordinary launches builds the
super kernel the same scope builds, bit for bit; a failed capture raises and builds nothing."""
import json

import numpy as np
import pytest

import superkernel as sk

N = 4096


def chain(ops, target, x, y, stream=None):
    """axpy, square_plus_one, axpy: launched on `stream` (target None) or added to a scope."""
    axpy, sq = ops.kernel("axpy"), ops.kernel("square_plus_one")
    for k, b, args in ((axpy, 2, (0.5, x, y, N)), (sq, 3, (y, N)), (axpy, 1, (2.0, x, y, N))):
        if target is None:
            k.launch(b, *args, stream=stream)
        else:
            target.add(k, b, *args)


def explain_without_name(fused):
    plan = fused.explain()
    plan.pop("name")
    return json.dumps(plan, sort_keys=True)


def test_capture_equals_scope(dev, ops):
    rng = np.random.default_rng(3)
    x = rng.uniform(-1, 1, N).astype(np.float32)
    y0 = rng.uniform(-1, 1, N).astype(np.float32)
    y_cap, y_scope, y_unfused = y0.copy(), y0.copy(), y0.copy()

    with dev.capture("decode", options={"early-start": 1}) as cap:
        chain(ops, None, x, y_cap, stream=cap.stream)
    cap.stream.synchronize()
    assert np.array_equal(y_cap, y0)  # recorded, not run
    with dev.scope("decode-scope", options={"early-start": 1}) as scope:
        chain(ops, scope, x, y_scope)
    captured, built = cap.superkernel, scope.superkernel
    assert len(captured) == 3
    assert explain_without_name(captured) == explain_without_name(built)

    captured.launch()
    built.launch()
    chain(ops, None, x, y_unfused)
    dev.synchronize()
    assert np.array_equal(y_cap, y_scope)
    assert np.array_equal(y_cap, y_unfused)
    assert not np.array_equal(y_cap, y0)


def test_captured_superkernel_launch_is_inlined(dev, ops):
    x = np.arange(N, dtype=np.float32) / N
    y_cap, y_unfused = np.ones(N, np.float32), np.ones(N, np.float32)
    sq = ops.kernel("square_plus_one")
    with dev.scope("inner") as scope:
        scope.add(sq, 2, y_cap, N)
    with dev.capture("outer") as cap:
        chain(ops, None, x, y_cap, stream=cap.stream)
        scope.superkernel.launch(cap.stream)
    assert len(cap.superkernel) == 4
    cap.superkernel.launch()
    dev.synchronize()
    chain(ops, None, x, y_unfused)
    sq.launch(2, y_unfused, N)
    dev.synchronize()
    assert np.array_equal(y_cap, y_unfused)


def test_an_exception_in_the_block_aborts_the_capture(dev, ops):
    x = np.zeros(N, np.float32)
    y = np.zeros(N, np.float32)
    with pytest.raises(ZeroDivisionError):
        with dev.capture("broken") as cap:
            chain(ops, None, x, y, stream=cap.stream)
            1 / 0
    assert cap.superkernel is None
    assert not cap.capturing
    chain(ops, None, x, y, stream=cap.stream)  # the stream runs launches again
    cap.stream.synchronize()


def test_an_uncapturable_call_raises_and_invalidates(dev, ops):
    x = np.zeros(N, np.float32)
    y = np.zeros(N, np.float32)
    with pytest.raises(sk.StateError) as err:
        with dev.capture("bad") as cap:
            chain(ops, None, x, y, stream=cap.stream)
            cap.stream.synchronize()
    assert "sk_stream_synchronize" in str(err.value) and "'bad'" in str(err.value)
    assert cap.superkernel is None
    cap.stream.synchronize()

    cap = dev.capture("invalidated")
    chain(ops, None, x, y, stream=cap.stream)
    with pytest.raises(sk.StateError, match="sk_memcpy"):
        dev.memcpy(y, x, 4)
    with pytest.raises(sk.StateError, match="invalidated by sk_memcpy"):
        cap.end()
    with pytest.raises(sk.InvalidArgument, match="no-such-key"):
        dev.capture("x", options="no-such-key=1")


def test_update_from_a_matching_capture(dev, ops):
    x = np.arange(N, dtype=np.float32) / N
    y1, y2, y_unfused = np.zeros(N, np.float32), np.zeros(N, np.float32), np.zeros(N, np.float32)
    with dev.capture("decode") as cap:
        chain(ops, None, x, y1, stream=cap.stream)
    fused = cap.superkernel
    with dev.capture("decode") as again:
        chain(ops, None, x, y2, stream=again.stream)
        again.update(fused)
    assert again.superkernel is fused
    fused.launch()
    dev.synchronize()
    chain(ops, None, x, y_unfused)
    dev.synchronize()
    assert np.array_equal(y2, y_unfused)
    assert not y1.any()  # the first capture's buffer is no longer written

    with pytest.raises(sk.Incompatible, match="2 steps captured, 3 in 'decode'"):
        with dev.capture("short") as short:
            ops.kernel("square_plus_one").launch(1, y2, N, stream=short.stream)
            ops.kernel("square_plus_one").launch(1, y2, N, stream=short.stream)
            short.update(fused)
