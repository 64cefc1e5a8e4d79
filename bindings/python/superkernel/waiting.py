"""Waiting for a stream without blocking in C, so that Ctrl-C is not held up by the kernels.

A blocking sk_stream_synchronize holds the calling thread inside libsk until the launches end
(ctypes releases the GIL, but Python raises KeyboardInterrupt only once the call returns): a
kernel that never returns would make Ctrl-C wait for ever. So the binding polls
sk_stream_query, which runs no kernel on the calling thread and reports a hang itself, sleeping
between looks, and a signal is handled at the next look.
"""
import ctypes
import time

from ._lib import lib
from .status import check

# The pause between two looks doubles from the first to the last: short launches are seen
# ending within microseconds, and a long wait costs a look per 10 ms.
_FIRST_PAUSE_S = 1e-5
_LAST_PAUSE_S = 1e-2


def wait_for_stream(device_handle, stream_handle, call, pending):
    """Returns once every launch queued on the stream (None: the device's default stream) has
    ended, or raises its first failure (as `call` would); either way `pending` (what those
    launches use) is cleared then. KeyboardInterrupt while they run leaves `pending` alone."""
    done = ctypes.c_int(0)
    pause = 0.0
    while True:
        status = lib().sk_stream_query(device_handle, stream_handle, ctypes.byref(done))
        if status != 0 or done.value:
            try:
                check(status, call)
            finally:
                pending.clear()
            return
        time.sleep(pause)
        pause = min(max(2 * pause, _FIRST_PAUSE_S), _LAST_PAUSE_S)
