"""Ctrl-C while Python waits for a kernel that does not return: KeyboardInterrupt comes at once
(the binding polls sk_stream_query instead of blocking in sk_device_synchronize), the launch is
left running, and a later synchronize waits for it. Then a kernel that never returns within the
deadline loses its device: Hang at synchronize, DeviceError for anything after."""
import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

import superkernel as sk
from conftest import ROOT, compile_kernel

CHILD = r"""
import signal
import sys
import numpy as np
import superkernel as sk

# A child of a background job starts with SIGINT ignored, and Python then keeps it ignored.
signal.signal(signal.SIGINT, signal.default_int_handler)

dev = sk.Device("host:cores=2,timeout_ms=600000")
spin = dev.load(sys.argv[1]).kernel("capi_spin")
release, out = np.zeros(1, np.uint32), np.zeros(2, np.uint32)
spin.launch(2, release, out, 1)  # block 1 spins until release[0] is set
try:
    print("waiting", flush=True)
    dev.synchronize()
    print("returned", flush=True)
except KeyboardInterrupt:
    print("interrupted", flush=True)
    release[0] = 1
    dev.synchronize()
    print("finished", out.tolist(), flush=True)
"""


@pytest.fixture(scope="module")
def spin_path(tmp_path_factory):
    return compile_kernel(os.path.join(ROOT, "tests", "kernels", "capi_spin.c"),
                          str(tmp_path_factory.mktemp("spin")))


def test_ctrl_c_does_not_wait_for_the_kernel(spin_path):
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([os.path.dirname(os.path.dirname(sk.__file__)),
                                         env.get("PYTHONPATH", "")])
    child = subprocess.Popen([sys.executable, "-c", CHILD, spin_path], env=env, text=True,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        assert child.stdout.readline() == "waiting\n"
        child.send_signal(signal.SIGINT)
        out, err = child.communicate(timeout=120)  # a generous bound, not a measurement
    finally:
        child.kill()
    assert child.returncode == 0, err
    assert out.splitlines() == ["interrupted", "finished [1, 2]"], err


def test_a_kernel_that_never_returns_loses_the_device(spin_path):
    release, out = np.zeros(1, np.uint32), np.zeros(2, np.uint32)
    dev = sk.Device("host:cores=2,timeout_ms=200")
    spin = dev.load(spin_path).kernel("capi_spin")
    spin.launch(2, release, out, 1)
    with pytest.raises(sk.Hang) as e:
        dev.synchronize()
    assert "capi_spin" in str(e.value) and "core 1 in step" in str(e.value)
    with pytest.raises(sk.DeviceError, match="lost"):
        spin.launch(2, release, out, 1)
    with pytest.raises(sk.DeviceError, match="lost"):
        dev.alloc(64)
    dev.close()  # returns: the stuck thread is left running
    with sk.Device("host:cores=2") as fresh:
        fresh.synchronize()
    release[0] = 1  # let it go: it writes `out`, which must outlive that write
    while out[1] != 2:
        time.sleep(0.001)
