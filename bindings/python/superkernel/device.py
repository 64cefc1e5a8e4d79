"""Device (sk_device_open) and Buffer (device memory, or a host object lent without a copy)."""
import ctypes

from ._lib import lib
from .checks import c_string, integer
from .errors import check
from .handle import Handle, child_set


class Device(Handle):
    """An open device, e.g. Device("host"), Device("host:cores=4,timeout_ms=2000")."""

    def __init__(self, spec="host"):
        out = ctypes.c_void_p()
        check(lib().sk_device_open(c_string(spec, "Device spec"), ctypes.byref(out)),
              "sk_device_open")
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
        """A Buffer over the memory of an object with the buffer protocol (numpy array,
        bytearray...) or DLPack, without copying it: host memory on the host device, memory of
        the GPU on a CUDA device. The Buffer holds the export until it is closed."""
        return Buffer._wrap(self, obj)

    def load(self, source):
        """Loads a kernel object: a path (str or os.PathLike) or its bytes; or a list of them,
        objects and `ar` archives linked as one module (sk_module_load_files)."""
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
        open device's default stream is waited for). Ctrl-C raises KeyboardInterrupt at once,
        with the launches left running (waiting.py)."""
        if lib().has("sk_stream_query"):
            from .waiting import wait_for_stream
            return wait_for_stream(self.handle, None, "sk_device_synchronize", self._pending)
        try:
            if lib().has("sk_device_synchronize"):
                check(lib().sk_device_synchronize(self.handle), "sk_device_synchronize")
            else:
                check(lib().sk_stream_synchronize(None), "sk_stream_synchronize")
        finally:
            self._pending.clear()

    def memcpy(self, dst, src, nbytes=None):
        """Synchronous copy between Buffers, host buffers, DLPack tensors or addresses (waits
        for queued work). nbytes None: the smaller of the two sizes."""
        from .args import address_of
        from .memory import BufferExport, DLPackImport, ReadOnly
        d, d_keep, d_size = address_of(dst, "memcpy destination", self, writes=False,
                                       host_memory=True)
        lent = isinstance(d_keep, (Buffer, BufferExport, DLPackImport))
        if isinstance(dst, ReadOnly) or (lent and d_keep.readonly) or \
                (isinstance(d_keep, DLPackImport) and d_keep.copied):
            raise ValueError("memcpy destination: the memory is read-only (or a copy its DLPack "
                             "producer made)")
        s, s_keep, s_size = address_of(src, "memcpy source", self, writes=False,
                                       host_memory=True)
        if nbytes is None:
            if d_size is None or s_size is None:
                raise TypeError("memcpy: give nbytes when copying from or to a raw address")
            nbytes = min(d_size, s_size)
        nbytes = integer(nbytes, "size_t", "memcpy nbytes")
        for size, what in ((d_size, "destination"), (s_size, "source")):
            if size is not None and nbytes > size:
                raise ValueError(f"memcpy: {nbytes} bytes do not fit the {what}'s {size}")
        check(lib().sk_memcpy(self.handle, d, s, nbytes), "sk_memcpy")
        del d_keep, s_keep  # the exports are released only after the copy


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
        from .memory import ReadOnly, borrow
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
