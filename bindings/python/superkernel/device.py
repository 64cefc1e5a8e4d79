"""Device (sk_device_open): the objects made from it, its synchronisation and memcpy."""
import ctypes

from ._lib import lib
from .args import address_of
from .buffer import Buffer
from .capture import Capture
from .checks import c_string, integer
from .handle import Handle, child_set
from .memory import BufferExport, DLPackImport, ReadOnly
from .module import Module
from .scope import Scope
from .status import check
from .stream import Event, Stream
from .tensor_map import encode
from .triton import load_triton
from .waiting import wait_for_stream


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
            for kinds in (("SuperKernel", "Scope", "Event", "Stream"), ("Module", "Buffer")):
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

    def tensor_map(self, base, data_type, dims, strides, box, swizzle=0, element_strides=None, interleave=0,
                   l2_promotion=0, oob_fill=0):
        """A TMA tensor map (sk_tensor_map_encode): the bytes of the CUtensorMap of the tensor at
        `base` (a Buffer, a DLPack tensor of this GPU or an address), for a parameter that takes
        one by value (`{u64[16]}@64`, `__grid_constant__ const CUtensorMap`). The arguments are
        sk_tensor_map_desc's fields: dims, strides and box innermost first, strides in bytes;
        data_type and the enumerations cuda.h's numbers. The map holds `base`'s address, not
        the object: keep it alive while launches use the map."""
        address, _, _ = address_of(base, "Device.tensor_map base", self)
        return encode(self, address, data_type, dims, strides, box, swizzle, element_strides, interleave,
                      l2_promotion, oob_fill)

    def load(self, source, kind=None):
        """Loads a kernel object: a path (str or os.PathLike) or its bytes; or a list of them,
        objects and `ar` archives linked as one module (sk_module_load_files); or PTX text (on
        a CUDA device): a str that begins, past comments, with `.version` is text, any other
        str a path; kind="ptx" says the str or bytes is PTX text."""
        return Module(self, source, kind)

    def load_triton(self, compiled):
        """A Triton kernel as triton.compile returns it (duck-typed: .asm["ptx"], .metadata):
        a TritonKernel taking the Triton kernel's arguments, its launch facts from the
        metadata; what a super kernel cannot run is refused naming the field (triton.py)."""
        return load_triton(self, compiled)

    def stream(self, cuda_stream=None):
        """A new stream; or, given cuda_stream (a CUstream / cudaStream_t as an int, such as
        torch.cuda.Stream().cuda_stream), a stream over it: libsk's launches queue there and are
        captured with it into a CUDA graph (sk_stream_create_cuda)."""
        return Stream(self, cuda_stream)

    def event(self):
        """A new event, not yet recorded: `event.record(stream)` and `stream.wait_event(event)`
        order streams; in a capture they join streams to it (sk_event_create)."""
        return Event(self)

    def scope(self, name="scope", options=None):
        """A scope to fill with kernels; as a context manager it finalizes on success."""
        return Scope(self, name, options)

    def capture(self, name="capture", options=None, stream=None):
        """Records the launches on `stream` (a new one unless given; `cap.stream`) into one
        super kernel; as a context manager it builds `cap.superkernel` when the block ends and
        builds nothing when it raises (docs/python.md, "Capture")."""
        return Capture(self, name, options, stream)

    def synchronize(self):
        """Waits for this device's default stream; raises the first failure of its launches.
        Other devices are left alone (with a libsk older than sk_device_synchronize, every
        open device's default stream is waited for). Ctrl-C raises KeyboardInterrupt at once,
        with the launches left running (waiting.py)."""
        if lib().has("sk_stream_query"):
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
