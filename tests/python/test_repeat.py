"""SuperKernel.launch_repeat: n runs in one launch equal n launches; a kernel's stop flag ends
the loop after its run; bad arguments are refused before anything is queued."""
import ctypes

import numpy as np
import pytest

import superkernel as sk

N = 4096


def decode_step(dev, ops, x, y, count, stop, at):
    with dev.scope("step") as scope:
        scope.add(ops.kernel("axpy"), 3, 0.25, x, y, N)
        scope.add(ops.kernel("count_and_stop"), 2, count, stop, at)
        scope.add(ops.kernel("square_plus_one"), 2, y, N)
    return scope.superkernel


def test_repeat_equals_launches(dev, ops):
    rng = np.random.default_rng(3)
    x = rng.uniform(-1, 1, N).astype(np.float32)
    y0 = rng.uniform(-0.5, 0.5, N).astype(np.float32)
    y_host, y_device = y0.copy(), y0.copy()
    c_host, c_device = np.zeros(1, np.uint32), np.zeros(1, np.uint32)
    flags = np.zeros(2, np.uint32)
    with decode_step(dev, ops, x, y_host, c_host, flags[:1], 0) as host_loop, \
            decode_step(dev, ops, x, y_device, c_device, flags[1:], 0) as device_loop:
        for _ in range(6):
            host_loop.launch()
        device_loop.launch_repeat(6)
        dev.synchronize()
        assert c_device[0] == 6 and c_host[0] == 6
        assert np.array_equal(y_host, y_device)  # bit for bit
        assert not np.array_equal(y_device, y0)


def test_stop_flag_ends_the_loop(dev, ops):
    x, y = np.ones(N, np.float32), np.zeros(N, np.float32)
    count, stop = np.zeros(1, np.uint32), np.zeros(1, np.uint32)
    with decode_step(dev, ops, x, y, count, stop, 4) as step:
        step.launch_repeat(100, stop_flag=stop)
        dev.synchronize()
        assert count[0] == 4 and stop[0] == 1
        step.launch_repeat(100, stop)        # already set: one run
        dev.synchronize()
        assert count[0] == 5
        stop[0] = 0
        flag = dev.alloc(4)                  # device memory as the flag, never set
        ctypes.memset(flag.address, 0, 4)
        step.launch_repeat(3, stop_flag=flag)
        dev.synchronize()
        assert count[0] == 8


def test_bad_arguments(dev, ops):
    x, y = np.ones(N, np.float32), np.zeros(N, np.float32)
    count, stop = np.zeros(1, np.uint32), np.zeros(1, np.uint32)
    with decode_step(dev, ops, x, y, count, stop, 0) as step:
        with pytest.raises(sk.InvalidArgument, match="n is 0"):
            step.launch_repeat(0)
        with pytest.raises(sk.InvalidArgument, match=r"must be in \[1, 4194304\]"):
            step.launch_repeat(4194305)
        with pytest.raises(ValueError, match="stop_flag: 2 bytes"):
            step.launch_repeat(2, stop_flag=np.zeros(1, np.uint16))
        with pytest.raises(sk.InvalidArgument, match="not aligned"):
            step.launch_repeat(2, stop_flag=np.zeros(2, np.uint32).view(np.uint8)[1:5])
        with pytest.raises(TypeError):
            step.launch_repeat(2, stop_flag="flag")
        with pytest.raises(TypeError):
            step.launch_repeat(2, stream=3)
        dev.synchronize()
        assert count[0] == 0  # nothing ran
