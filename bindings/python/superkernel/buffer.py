"""Buffer: device memory (sk_mem_alloc), or a host object's memory lent without a copy."""
import ctypes

from ._lib import lib
from .checks import integer
from .handle import Handle
from .memory import ReadOnly, borrow
from .status import check


class Buffer(Handle):
    """Memory a kernel can use: from Device.alloc (owned, freed by close()) or Device.buffer
    (a host object's memory, lent). Buffers of the host device are readable from Python through
    view() / numpy(), without copies."""

    def __init__(self, device, address, nbytes, owner, readonly=False):
        self.device = device
        self.address = address
        self.nbytes = nbytes
        self.readonly = readonly  # lent with superkernel.readonly(): kernels only read it
        self._owner = owner  # None: sk_mem_alloc'ed memory; else the export of the lent object
        super().__init__(address if address else 1, device)

    @classmethod
    def _alloc(cls, device, nbytes):
        out = ctypes.c_void_p()
        nbytes = integer(nbytes, "size_t", "Device.alloc nbytes")
        check(lib().sk_mem_alloc(device.handle, nbytes, ctypes.byref(out)), "sk_mem_alloc")
        return cls(device, out.value or 0, nbytes, None)

    @classmethod
    def _wrap(cls, device, obj):
        export = borrow(obj, "Device.buffer", device)
        if export is None:
            raise TypeError(f"Device.buffer: {type(obj).__name__} has neither the buffer "
                            "protocol nor DLPack")
        return cls(device, export.address, export.nbytes, export,
                   isinstance(obj, ReadOnly) and (export.readonly or export.copied))

    def _destroy(self, handle):
        if self._owner is None and self.address:
            lib().sk_mem_free(self.device.handle, self.address)
        elif self._owner is not None:
            self._owner.release()
        self._owner = None

    def view(self):
        """A memoryview of the bytes (host device only; no copy), writable unless the Buffer
        lends read-only memory."""
        if not self.device.is_host:
            raise TypeError("Buffer.view: not host memory; copy it out with Device.memcpy")
        self.handle  # raises if closed
        view = memoryview((ctypes.c_char * self.nbytes).from_address(self.address)).cast("B")
        return view.toreadonly() if self.readonly else view

    def numpy(self, dtype="float32"):
        """The buffer as a 1-D numpy array of dtype (host device only; no copy)."""
        import numpy as np
        return np.frombuffer(self.view(), dtype=dtype)

    def __len__(self):
        return self.nbytes
