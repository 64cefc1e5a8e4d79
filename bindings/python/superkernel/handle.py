"""Base of every wrapped libsk handle: close() once, context manager, close at garbage collection.

Objects made from a device register with it, so Device.close() first closes what is still
open (libsk wants every object of a device gone before sk_device_close).
"""
import weakref

from .errors import StateError


class Handle:
    _closed_message = "is closed"

    def __init__(self, handle, device=None):
        self._handle = handle
        self._device = device
        if device is not None:
            device._children.add(self)

    @property
    def handle(self):
        """The raw C handle (an int); raises if closed."""
        if self._handle is None:
            raise StateError(f"{type(self).__name__} {self._closed_message}")
        return self._handle

    @property
    def closed(self):
        return self._handle is None

    def close(self):
        handle, self._handle = self._handle, None
        if handle is not None:
            self._destroy(handle)
            if self._device is not None:
                self._device._children.discard(self)

    def _destroy(self, handle):
        raise NotImplementedError

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        try:
            self.close()
        except Exception:  # interpreter shutdown: the library may already be gone
            pass


def child_set():
    return weakref.WeakSet()
