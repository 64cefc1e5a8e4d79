"""Stream: an in-order queue of launches (sk_stream_create)."""
import ctypes

from ._lib import lib
from .handle import Handle
from .status import check
from .waiting import wait_for_stream


class Stream(Handle):
    def __init__(self, device, cuda_stream=None):
        out = ctypes.c_void_p()
        if cuda_stream is None:
            check(lib().sk_stream_create(device.handle, ctypes.byref(out)), "sk_stream_create")
        else:  # the application's CUstream (an int handle), which stays the application's
            check(lib().sk_stream_create_cuda(device.handle, ctypes.c_void_p(cuda_stream), ctypes.byref(out)),
                  "sk_stream_create_cuda")
        self._pending = []  # arguments of unfused launches queued here (kept until synchronize)
        self._capture = None  # the Capture recording this stream's launches (capture.py)
        super().__init__(out.value, device)

    def synchronize(self):
        """Waits for the stream's launches; raises the first failure among them (once).
        Ctrl-C raises KeyboardInterrupt at once, with the launches left running (waiting.py)."""
        if not lib().has("sk_stream_query"):
            try:
                check(lib().sk_stream_synchronize(self.handle), "sk_stream_synchronize")
            finally:
                self._pending.clear()
            return
        wait_for_stream(self._device.handle, self.handle, "sk_stream_synchronize", self._pending)

    def _destroy(self, handle):
        lib().sk_stream_destroy(handle)  # waits for the stream's work
        self._pending.clear()
