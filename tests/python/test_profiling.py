"""Profiling, traces and stream-fusion events (sk.h calls that newer libsk versions implement:
skipped, with the reason, while the library lacks them)."""
import json

import numpy as np
import pytest

import superkernel as sk
from superkernel._lib import lib


def needs(*names):
    missing = [n for n in names if not lib().has(n)]
    return pytest.mark.skipif(bool(missing), reason=f"libsk lacks {', '.join(missing)}")


@needs("sk_superkernel_profile", "sk_superkernel_write_trace")
def test_profile_and_trace(dev, ops, tmp_path):
    x, y = np.ones(1000, np.float32), np.zeros(1000, np.float32)
    with dev.scope("prof", "profiling=1") as scope:
        scope.add(ops.kernel("axpy"), 2, 1.0, x, y, 1000, name="a")
        scope.add(ops.kernel("square_plus_one"), 1, y, 1000, name="b")
    fused = scope.superkernel
    fused.launch()
    dev.synchronize()
    records = fused.profile()
    assert {(r.step, r.core) for r in records} >= {(0, 0), (0, 1), (1, 0)}
    assert "struct_size" not in sk.ProfileRecord._fields  # the C ABI's, not a measurement
    for r in records:
        assert r.ready_ns <= r.start_ns <= r.end_ns
    fused.write_trace(tmp_path / "trace.json")
    trace = json.load(open(tmp_path / "trace.json"))
    events = trace["traceEvents"] if isinstance(trace, dict) else trace
    assert any(e.get("name") in ("a", "b") for e in events)


@needs("sk_superkernel_profile")
def test_profile_without_profiling_is_state_error(dev, ops):
    with dev.scope("noprof") as scope:
        scope.add(ops.kernel("nothing"), 1)
    scope.superkernel.launch()
    dev.synchronize()
    with pytest.raises(sk.StateError):
        scope.superkernel.profile()


@needs("sk_scope_record_event", "sk_scope_wait_event")
def test_stream_fusion_events(dev, ops):
    x, a, b = np.ones(100, np.float32), np.zeros(100, np.float32), np.zeros(100, np.float32)
    axpy, sq = ops.kernel("axpy"), ops.kernel("square_plus_one")
    with dev.scope("streams", "stream-fusion=1") as scope:
        scope.add(axpy, 1, 2.0, x, a, 100, stream=0)
        scope.record_event(0, 7)
        scope.wait_event(1, 7)
        scope.add(axpy, 1, 1.0, a, b, 100, stream=1)  # reads a: ordered by event 7
        scope.record_event(1, 8)
        scope.wait_event(0, 8)  # sq rewrites a: only after stream 1 has read it
        scope.add(sq, 1, a, 100, stream=0)
    scope.superkernel.launch()
    dev.synchronize()
    assert np.all(b == 2.0) and np.all(a == 5.0)
