"""Capture: ordinary launches on a stream recorded into one super kernel
(sk_stream_begin_capture / sk_stream_end_capture).

    with dev.capture("decode", options="early-start=1") as cap:
        norm.launch(4, x, n, stream=cap.stream)     # recorded, not run
        matvec.launch(8, w, x, y, n, stream=cap.stream)
    cap.superkernel.launch()

The block ends the capture and builds `cap.superkernel`; an exception inside the block ends the
capture without building anything and propagates. It records on `cap.stream` (made for the
capture unless one is given) and, with stream-fusion=1, on each stream joined to it: a stream
that waits on an event recorded on a captured stream (Stream.wait_event) records into the
capture until it ends, as in CUDA.
"""
import ctypes

from ._lib import lib
from .checks import c_string, instance
from .scope import options_text
from .status import check
from .stream import Stream
from .superkernel import SuperKernel


class Capture:
    def __init__(self, device, name="capture", options=None, stream=None):
        instance(stream, Stream, "Device.capture stream", optional=True)
        self.device = device
        self.name = name
        self.stream = stream if stream is not None else device.stream()
        self.steps = []       # (kernel, sub-kernel name, arg_refs) per recorded step
        self._keepalive = {}  # {(step, index): export} behind pointer arguments
        self.superkernel = None
        self.joined = []      # streams joined by Stream.wait_event: scope streams 1, 2, ...
        options = options_text(options)
        check(lib().sk_stream_begin_capture(self.stream.handle, c_string(name, "Device.capture name"),
                                            c_string(options or None, "Device.capture options",
                                                     optional=True)),
              f"sk_stream_begin_capture ({name})")
        self.stream._capture = self

    def _join(self, stream):
        stream._capture = self
        self.joined.append(stream)

    def _leave(self):
        """The capture is ending: its streams run their launches again."""
        self.stream._capture = None
        for stream in self.joined:
            stream._capture = None

    def _record_kernel(self, kernel, packed):
        step = len(self.steps)
        self._keepalive.update(((step, i), keep) for i, keep in packed.keepalive.items())
        self.steps.append((kernel, kernel.name, 0))  # an unfused launch's values are copied

    def _record_superkernel(self, fused):
        base = len(self.steps)
        self._keepalive.update(((base + s, i), keep) for (s, i), keep in fused._keepalive.items())
        self.steps.extend(fused.steps)

    @property
    def capturing(self):
        return self.stream._capture is self

    def end(self):
        """Ends the capture and builds the super kernel (the capture ends either way)."""
        if not self.capturing:
            raise RuntimeError(f"capture {self.name!r} has ended")
        self._leave()
        keepalive, self._keepalive = self._keepalive, {}
        out = ctypes.c_void_p()
        check(lib().sk_stream_end_capture(self.stream.handle, ctypes.byref(out)),
              f"sk_stream_end_capture ({self.name})")
        self.superkernel = SuperKernel(self.device, out.value, self.name, self.steps, keepalive)
        return self.superkernel

    def update(self, fused):
        """Ends the capture and rebinds `fused`'s arguments to the captured values
        (sk_superkernel_update_from_capture): the structure must match, else Incompatible names
        the first difference and `fused` is unchanged."""
        instance(fused, SuperKernel, "Capture.update superkernel")
        if not self.capturing:
            raise RuntimeError(f"capture {self.name!r} has ended")
        self._leave()
        keepalive, self._keepalive = self._keepalive, {}
        check(lib().sk_superkernel_update_from_capture(fused.handle, self.stream.handle),
              f"sk_superkernel_update_from_capture ({self.name})")
        fused._keepalive = keepalive
        self.superkernel = fused
        return fused

    def abort(self):
        """Ends the capture, building nothing."""
        if not self.capturing:
            return
        self._leave()
        self._keepalive = {}
        out = ctypes.c_void_p()
        if lib().sk_stream_end_capture(self.stream.handle, ctypes.byref(out)) == 0 and out.value:
            lib().sk_superkernel_destroy(out.value)

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        if exc_type is not None:
            self.abort()
        elif self.capturing:
            self.end()
        return False
