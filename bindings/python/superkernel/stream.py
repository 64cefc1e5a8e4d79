"""Stream: an in-order queue of launches (sk_stream_create); Event: a point in a stream's
order that other streams wait for (sk_event_create), as a CUDA event.

`event.record(stream)` places it after the launches queued on `stream` so far;
`other.wait_event(event)` makes `other`'s later launches start after them. During a capture an
event recorded on a capturing stream joins the stream that waits on it to that capture
(capture.py), which is how a Python capture records several streams.
"""
import ctypes

from ._lib import lib
from .checks import instance
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

    def wait_event(self, event):
        """Launches queued here after this call start after those queued before `event`'s last
        record; it does not block (sk_stream_wait_event). An event recorded in an open capture
        joins this stream to it: its launches are recorded there until the capture ends."""
        instance(event, Event, "Stream.wait_event event")
        check(lib().sk_stream_wait_event(self.handle, event.handle), "sk_stream_wait_event")
        capture = event._capture
        if capture is not None and capture.capturing and self._capture is None:
            capture._join(self)

    def _destroy(self, handle):
        lib().sk_stream_destroy(handle)  # waits for the stream's work
        self._pending.clear()


class Event(Handle):
    def __init__(self, device):
        out = ctypes.c_void_p()
        check(lib().sk_event_create(device.handle, ctypes.byref(out)), "sk_event_create")
        self._capture = None  # the open Capture its last record was made in (joins a waiter)
        super().__init__(out.value, device)

    def record(self, stream=None):
        """Records the event on `stream` (None: the default stream) after its launches so far;
        on a capturing stream it is recorded in the capture (sk_event_record)."""
        instance(stream, Stream, "Event.record stream", optional=True)
        check(lib().sk_event_record(self.handle, stream.handle if stream is not None else None),
              "sk_event_record")
        self._capture = stream._capture if stream is not None else None

    def _destroy(self, handle):
        lib().sk_event_destroy(handle)
        self._capture = None
