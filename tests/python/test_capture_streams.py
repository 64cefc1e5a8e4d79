"""Events and multi-stream capture through the binding: a stream that waits on an event of a
capturing stream joins the capture, and the super kernel is the stream-fusion scope with the
same events, bit for bit; a capture left unjoined, or joined without stream fusion, raises."""
import json

import numpy as np
import pytest

import superkernel as sk

N = 4096
FUSION = {"stream-fusion": 1}


def two_streams(ops, target, x, y, z, w, s0=None, s1=None, events=None):
    """Stream 0: y += 0.5 x, then w = w^2 + 1, then (after stream 1) w += 2 z; stream 1 (after
    the first kernel): z += y. Launched on s0 / s1 ordered by `events`, or added to scope
    `target` with scope events 0 and 1."""
    axpy, sq = ops.kernel("axpy"), ops.kernel("square_plus_one")
    if target is None:
        e0, e1 = events
        axpy.launch(2, 0.5, x, y, N, stream=s0)
        e0.record(s0)
        s1.wait_event(e0)
        axpy.launch(1, 1.0, y, z, N, stream=s1)
        sq.launch(3, w, N, stream=s0)
        e1.record(s1)
        s0.wait_event(e1)
        axpy.launch(2, 2.0, z, w, N, stream=s0)
    else:
        target.add(axpy, 2, 0.5, x, y, N)
        target.record_event(0, 0)
        target.wait_event(1, 0)
        target.add(axpy, 1, 1.0, y, z, N, stream=1)
        target.add(sq, 3, w, N)
        target.record_event(1, 1)
        target.wait_event(0, 1)
        target.add(axpy, 2, 2.0, z, w, N)


def buffers(seed):
    rng = np.random.default_rng(seed)
    return [rng.uniform(-1, 1, N).astype(np.float32) for _ in range(4)]


def explain_without_name(fused):
    plan = fused.explain()
    plan.pop("name")
    return json.dumps(plan, sort_keys=True)


def test_two_stream_capture_equals_stream_fusion_scope(dev, ops):
    initial = buffers(7)
    captured_bufs, scope_bufs, unfused_bufs = ([b.copy() for b in initial] for _ in range(3))
    s1 = dev.stream()
    with dev.event() as e0, dev.event() as e1:
        with dev.capture("streams", options=FUSION) as cap:
            two_streams(ops, None, *captured_bufs, s0=cap.stream, s1=s1, events=(e0, e1))
        assert cap.joined == [s1]
        assert s1._capture is None  # s1 left the capture with it: it runs launches again
        s1.synchronize()
        for now, before in zip(captured_bufs, initial):
            assert np.array_equal(now, before)  # recorded, not run
        with dev.scope("streams-scope", options=FUSION) as scope:
            two_streams(ops, scope, *scope_bufs)
        captured, built = cap.superkernel, scope.superkernel
        assert len(captured) == 4
        assert explain_without_name(captured) == explain_without_name(built)
        assert any(step.get("waits_for_steps") == [0] for step in captured.explain()["steps"])

        captured.launch()
        built.launch()
        dev.synchronize()
        # The same launches outside a capture, ordered by the same events.
        s0 = dev.stream()
        two_streams(ops, None, *unfused_bufs, s0=s0, s1=s1, events=(e0, e1))
        s0.synchronize()
        s1.synchronize()
    for c, s, u, before in zip(captured_bufs, scope_bufs, unfused_bufs, initial):
        assert np.array_equal(c, s)
        assert np.array_equal(c, u)
    assert not np.array_equal(captured_bufs[3], initial[3])


def test_a_stream_not_joined_back_fails_the_capture(dev, ops):
    y = np.zeros(N, np.float32)
    sq = ops.kernel("square_plus_one")
    s1 = dev.stream()
    e = dev.event()
    with pytest.raises(sk.StateError, match="capture stream 1.*was not joined back|"
                                            "was not joined back.*capture stream 1"):
        with dev.capture("fork", options=FUSION) as cap:
            sq.launch(1, y, N, stream=cap.stream)
            e.record(cap.stream)
            s1.wait_event(e)
            sq.launch(1, y, N, stream=s1)
    assert cap.superkernel is None and not cap.capturing
    assert s1._capture is None and cap.stream._capture is None
    sq.launch(1, y, N, stream=s1)  # both streams run launches again
    sq.launch(1, y, N, stream=cap.stream)
    s1.synchronize()
    cap.stream.synchronize()
    assert np.array_equal(y, np.full(N, 2, np.float32))  # (0^2 + 1)^2 + 1


def test_joining_without_stream_fusion_invalidates(dev, ops):
    y = np.zeros(N, np.float32)
    sq = ops.kernel("square_plus_one")
    s1 = dev.stream()
    e = dev.event()
    cap = dev.capture("no-fusion")
    sq.launch(1, y, N, stream=cap.stream)
    e.record(cap.stream)
    with pytest.raises(sk.StateError, match="stream-fusion=1"):
        s1.wait_event(e)
    assert s1._capture is None and cap.joined == []
    sq.launch(1, y, N, stream=s1)  # s1 did not join: it runs
    s1.synchronize()
    assert np.array_equal(y, np.ones(N, np.float32))
    with pytest.raises(sk.StateError, match="invalidated by sk_stream_wait_event"):
        cap.end()
    assert cap.superkernel is None
    with pytest.raises(sk.StateError, match="capture that has ended"):
        s1.wait_event(e)  # its record was in that capture
    assert s1._capture is None
    e.record(s1)  # recorded again outside a capture: an ordinary wait
    dev.stream().wait_event(e)


def test_event_calls_check_their_arguments(dev, ops):
    e = dev.event()
    with pytest.raises(TypeError, match="Event.record stream"):
        e.record("stream 0")
    with pytest.raises(TypeError, match="Stream.wait_event event"):
        dev.stream().wait_event(None)
    with sk.Device("host:cores=1") as other:
        with pytest.raises(sk.Incompatible, match="different devices"):
            e.record(other.stream())
        with pytest.raises(sk.Incompatible, match="different devices"):
            other.stream().wait_event(e)
    e.record()  # the default stream
    dev.stream().wait_event(e)
    e.close()
    e.close()  # once
    with pytest.raises(sk.StateError, match="Event is closed"):
        e.record()


def test_update_from_a_two_stream_capture(dev, ops):
    initial = buffers(11)
    first, second, unfused = ([b.copy() for b in initial] for _ in range(3))
    s1 = dev.stream()
    e0, e1 = dev.event(), dev.event()
    with dev.capture("streams", options=FUSION) as cap:
        two_streams(ops, None, *first, s0=cap.stream, s1=s1, events=(e0, e1))
    fused = cap.superkernel
    with dev.capture("streams", options=FUSION) as again:
        two_streams(ops, None, *second, s0=again.stream, s1=s1, events=(e0, e1))
        again.update(fused)
    assert again.joined == [s1] and s1._capture is None
    fused.launch()
    dev.synchronize()
    s0 = dev.stream()
    two_streams(ops, None, *unfused, s0=s0, s1=s1, events=(e0, e1))
    s0.synchronize()
    s1.synchronize()
    for f, u in zip(second, unfused):
        assert np.array_equal(f, u)
    for f, before in zip(first, initial):
        assert np.array_equal(f, before)  # the first capture's buffers are no longer written
