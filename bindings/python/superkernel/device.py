"""Device (sk_device_open) and Buffer (device memory, or a host object lent without a copy)."""
import ctypes

from ._lib import lib
from .args import buffer_address
from .errors import check
from .handle import Handle, child_set


class Device(Handle):
    """An open device, e.g. Device("host"), Device("host:cores=4,timeout_ms=2000")."""

    def __init__(self, spec="host"):
        out = ctypes.c_void_p()
        check(lib().sk_device_open(spec.encode(), ctypes.byref(out)), "sk_device_open")
        self.spec = spec
        self.is_host = spec.split(":", 1)[0] == "host"
        self._children = child_set()
        self._pending = []  # objects unfused launches on the default stream still use
        super().__init__(out.value)

    def close(self):
        # Children first: libsk wants every object made from the device gone before closing it.
        # Super kernels and streams before modules and buffers (they use them).
        if not self.closed:
            for kinds in (("SuperKernel", "Scope", "Stream"), ("Module", "Buffer")):
                for child in [c for c in list(self._children) if type(c).__name__ in kinds]:
                    child.close()
        super().close()

    def _destroy(self, handle):
        lib().sk_device_close(handle)
        self._pending.clear()

    @property
    def cores(self):
        """The device's cores: cores=N of the spec, or by default the CPUs this process can
        use (its affinity mask, bounded by its cgroup's CPU quota); a CUDA GPU's
        multiprocessors. A block_dim of this many gives every core one block."""
        out = ctypes.c_uint32()
        check(lib().sk_device_cores(self.handle, ctypes.byref(out)), "sk_device_cores")
        return out.value

    # ---- objects made from the device --------------------------------------------------------
    def alloc(self, nbytes):
        """Device memory of nbytes (on the host device: 64-byte aligned host memory)."""
        return Buffer._alloc(self, nbytes)

    def buffer(self, obj):
        """A Buffer over the memory of a host object with the buffer protocol (numpy array,
        bytearray...), without copying it; host device only. The Buffer keeps obj alive."""
        return Buffer._wrap(self, obj)

    def load(self, source):
        """Loads a kernel object: a path (str or os.PathLike) or its bytes."""
        from .module import Module
        return Module(self, source)

    def stream(self):
        from .stream import Stream
        return Stream(self)

    def scope(self, name="scope", options=None):
        """A scope to fill with kernels; as a context manager it finalizes on success."""
        from .scope import Scope
        return Scope(self, name, options)

    def synchronize(self):
        """Waits for this device's default stream; raises the first failure of its launches.
        Other devices are left alone (with a libsk older than sk_device_synchronize, every
        open device's default stream is waited for)."""
        try:
            if lib().has("sk_device_synchronize"):
                check(lib().sk_device_synchronize(self.handle), "sk_device_synchronize")
            else:
                check(lib().sk_stream_synchronize(None), "sk_stream_synchronize")
        finally:
            self._pending.clear()

    def memcpy(self, dst, src, nbytes=None):
        """Synchronous copy between Buffers, host buffers or addresses (waits for queued work)."""
        from .args import address_of
        d, _ = address_of(dst, "memcpy destination", True)
        s, _ = address_of(src, "memcpy source", True)
        if nbytes is None:
            nbytes = min(_size_of(dst), _size_of(src))
        check(lib().sk_memcpy(self.handle, d, s, nbytes), "sk_memcpy")


def _size_of(obj):
    if isinstance(obj, Buffer):
        return obj.nbytes
    try:
        return memoryview(obj).nbytes
    except TypeError:
        raise TypeError("memcpy: give nbytes when copying from or to a raw address") from None


class Buffer(Handle):
    """Memory a kernel can use: from Device.alloc (owned, freed by close()) or Device.buffer
    (a host object's memory, lent). Buffers of the host device are readable from Python through
    view() / numpy(), without copies."""

    def __init__(self, device, address, nbytes, owner):
        self.device = device
        self.address = address
        self.nbytes = nbytes
        self._owner = owner  # None: sk_mem_alloc'ed memory; else the lent host object
        super().__init__(address if address else 1, device)

    @classmethod
    def _alloc(cls, device, nbytes):
        out = ctypes.c_void_p()
        check(lib().sk_mem_alloc(device.handle, nbytes, ctypes.byref(out)), "sk_mem_alloc")
        return cls(device, out.value or 0, nbytes, None)

    @classmethod
    def _wrap(cls, device, obj):
        if not device.is_host:
            raise TypeError(f"Device.buffer: device {device.spec!r} is not the host device; "
                            "use Device.alloc and Device.memcpy")
        view = memoryview(obj)
        if not view.c_contiguous:
            raise ValueError("Device.buffer: the object is not C-contiguous")
        return cls(device, buffer_address(obj, view, "Device.buffer"), view.nbytes, obj)

    def _destroy(self, handle):
        if self._owner is None and self.address:
            lib().sk_mem_free(self.device.handle, self.address)
        self._owner = None

    def view(self):
        """A writable memoryview of the bytes (host device only; no copy)."""
        if not self.device.is_host:
            raise TypeError("Buffer.view: not host memory; copy it out with Device.memcpy")
        self.handle  # raises if closed
        return memoryview((ctypes.c_char * self.nbytes).from_address(self.address)).cast("B")

    def numpy(self, dtype="float32"):
        """The buffer as a 1-D numpy array of dtype (host device only; no copy)."""
        import numpy as np
        return np.frombuffer(self.view(), dtype=dtype)

    def __len__(self):
        return self.nbytes
