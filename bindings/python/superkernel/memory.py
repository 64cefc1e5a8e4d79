"""Other libraries' memory as pointer arguments: the Python buffer protocol and DLPack.

A pointer argument is borrowed, never copied: an export of the object (a Py_buffer, or a DLPack
managed tensor whose deleter runs on release) is held for as long as libsk may use the address.
libsk's kernels may write through any pointer, so read-only memory is refused unless the caller
wraps it in readonly(). Memory is checked against the device: the host device takes host memory,
a CUDA device memory of its own GPU (and host memory only where it copies, in Device.memcpy).
"""
import ctypes
import re

from .checks import integer

# DLDeviceType values (dlpack.h) the binding names or accepts.
DL_CPU, DL_CUDA, DL_CUDA_HOST, DL_CUDA_MANAGED = 1, 2, 3, 13
_DL_NAMES = {DL_CPU: "kDLCPU", DL_CUDA: "kDLCUDA", DL_CUDA_HOST: "kDLCUDAHost", 4: "kDLOpenCL",
             7: "kDLVulkan", 8: "kDLMetal", 10: "kDLROCM", 11: "kDLROCMHost",
             DL_CUDA_MANAGED: "kDLCUDAManaged", 14: "kDLOneAPI"}
_HOST_KINDS = (DL_CPU, DL_CUDA_HOST)
_CUDA_KINDS = (DL_CUDA, DL_CUDA_MANAGED)
DLPACK_FLAG_READ_ONLY, DLPACK_FLAG_IS_COPIED = 1 << 0, 1 << 1


class DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", DLDevice), ("ndim", ctypes.c_int32),
                ("dtype", DLDataType), ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64)]


class DLManagedTensor(ctypes.Structure):
    """The unversioned export, capsule name "dltensor"."""
    _fields_ = [("dl_tensor", DLTensor), ("manager_ctx", ctypes.c_void_p),
                ("deleter", ctypes.c_void_p)]


class DLPackVersion(ctypes.Structure):
    _fields_ = [("major", ctypes.c_uint32), ("minor", ctypes.c_uint32)]


class DLManagedTensorVersioned(ctypes.Structure):
    """DLPack 1.x, capsule name "dltensor_versioned"; flags carry READ_ONLY and IS_COPIED."""
    _fields_ = [("version", DLPackVersion), ("manager_ctx", ctypes.c_void_p),
                ("deleter", ctypes.c_void_p), ("flags", ctypes.c_uint64), ("dl_tensor", DLTensor)]


_DELETER = ctypes.CFUNCTYPE(None, ctypes.c_void_p)  # may run without the GIL (the spec's rule)
#: The most dimensions a DLPack tensor is taken with (numpy's limit): its shape array is read
#: before anything else can be checked, so a corrupt ndim must not make it read far.
MAX_DLPACK_NDIM = 64
#: Memory must end at or below this address: user space is the lower half of the address space
#: on the 64-bit machines libsk runs on, and Py_ssize_t (a buffer's size) cannot reach past it.
ADDRESS_END = 1 << (8 * ctypes.sizeof(ctypes.c_void_p) - 1)


def _capi(name, restype, *argtypes):
    # Own prototypes: setting argtypes on ctypes.pythonapi's shared objects could clash with
    # other users of the same functions.
    return ctypes.PYFUNCTYPE(restype, *argtypes)((name, ctypes.pythonapi))


_capsule_is_valid = _capi("PyCapsule_IsValid", ctypes.c_int, ctypes.py_object, ctypes.c_char_p)
_capsule_pointer = _capi("PyCapsule_GetPointer", ctypes.c_void_p, ctypes.py_object,
                         ctypes.c_char_p)
_capsule_set_name = _capi("PyCapsule_SetName", ctypes.c_int, ctypes.py_object, ctypes.c_char_p)


class _PyBuffer(ctypes.Structure):
    """Py_buffer (Python's stable ABI since 3.11, unchanged since 3.3): the address of a
    read-only buffer, which no other standard API gives."""
    _fields_ = [("buf", ctypes.c_void_p), ("obj", ctypes.c_void_p), ("len", ctypes.c_ssize_t),
                ("itemsize", ctypes.c_ssize_t), ("readonly", ctypes.c_int), ("ndim", ctypes.c_int),
                ("format", ctypes.c_char_p), ("shape", ctypes.c_void_p),
                ("strides", ctypes.c_void_p), ("suboffsets", ctypes.c_void_p),
                ("internal", ctypes.c_void_p)]


_PyBUF_RECORDS_RO = 0x0004 | 0x0008 | 0x0010  # format, ndim, strides; read-only allowed
_get_buffer = _capi("PyObject_GetBuffer", ctypes.c_int, ctypes.py_object,
                    ctypes.POINTER(_PyBuffer), ctypes.c_int)
_release_buffer = _capi("PyBuffer_Release", None, ctypes.POINTER(_PyBuffer))


class ReadOnly:
    """An object whose memory the kernel only reads: see readonly()."""
    __slots__ = ("obj",)

    def __init__(self, obj):
        self.obj = obj

    def __repr__(self):
        return f"readonly({self.obj!r})"


def readonly(obj):
    """Marks obj (a read-only numpy array or memmap, bytes, a read-only memoryview, a DLPack
    tensor flagged read-only) as safe to pass as a pointer: the caller vouches that the kernel
    only reads it. Without it read-only memory is refused, since kernels may write anywhere."""
    return obj if isinstance(obj, ReadOnly) else ReadOnly(obj)


def device_name(kind, ordinal):
    """A DLPack device as messages name it: "kDLCUDA:1"."""
    return f"{_DL_NAMES.get(kind, f'device type {kind}')}:{ordinal}"


def cuda_ordinal(spec):
    """The GPU of a CUDA device spec that libsk accepted: "cuda" is 0, "cuda:N,..." is N, a key
    device=N overrides (sk_device_open's rules)."""
    ordinal = 0
    rest = spec.split(":", 1)[1] if ":" in spec else ""
    for i, item in enumerate(p.strip() for p in rest.split(",") if p.strip()):
        key, sep, value = item.partition("=")
        if i == 0 and not sep and key.isdigit():
            ordinal = int(key)
        elif key.strip() == "device":
            ordinal = int(value)
    return ordinal


def check_device(what, kind, ordinal, device, host_memory):
    """Raises ValueError, naming what and both devices, unless memory of DLPack device
    (kind, ordinal) is usable on `device`. host_memory: host memory is usable there too (a copy
    from or to it) even if the device is a GPU."""
    if device.is_host or host_memory:
        if kind in _HOST_KINDS:
            return
    if not device.is_host:
        gpu = cuda_ordinal(device.spec)
        if kind in _CUDA_KINDS and ordinal == gpu:
            return
        needs = f"memory of GPU {gpu} (kDLCUDA or kDLCUDAManaged, device_id {gpu})"
    else:
        needs = "host memory (kDLCPU or kDLCUDAHost)"
    raise ValueError(f"{what}: the memory is on {device_name(kind, ordinal)}, but device "
                     f"{device.spec!r} takes {needs}" + ("" if not host_memory or device.is_host
                                                         else " or host memory"))


# Buffer formats (the struct module's, PEP 3118's) of plain data: numbers, bytes, pointers,
# structures and arrays of them. Anything else, Python objects ("O") above all, is refused:
# a kernel writing over PyObject* slots corrupts the interpreter.
_FORMAT_FIELD_NAME = re.compile(r":[^:]*:")
_PLAIN_FORMAT_CHARS = frozenset("@=<>!^0123456789(),T{}&xcbB?hHiIlLqQnNefdgspPZwu")


def _plain_format_error(fmt):
    """Why a buffer of format `fmt` is not plain data; None if it is."""
    codes = _FORMAT_FIELD_NAME.sub("", fmt or "B")
    if "O" in codes:
        return f"holds Python objects (buffer format {fmt!r})"
    if not set(codes) <= _PLAIN_FORMAT_CHARS:
        return f"has buffer format {fmt!r}, which is not plain data"
    return None


class BufferExport:
    """A held buffer-protocol export (a memoryview): the object cannot be resized or freed under
    the address until release()."""
    copied = False
    kind, ordinal = DL_CPU, 0

    @classmethod
    def of(cls, obj, what):
        """The export of obj; None if obj has no buffer protocol."""
        try:
            view = memoryview(obj)
        except TypeError:
            return None
        except (ValueError, BufferError) as e:  # a buffer it cannot give (numpy's datetime64)
            raise ValueError(f"{what}: the {type(obj).__name__} cannot lend its memory ({e})") \
                from None
        export = cls()
        export._view = view
        not_plain = _plain_format_error(view.format)
        if not_plain:
            export.release()
            raise ValueError(f"{what}: the {type(obj).__name__} {not_plain}; kernels take "
                             "plain data only (numbers, bytes)")
        if not view.c_contiguous:
            export.release()
            raise ValueError(f"{what}: the {type(obj).__name__} is not C-contiguous (kernels "
                             "see flat memory)")
        export.nbytes, export.readonly = view.nbytes, view.readonly
        if view.readonly or not view.nbytes:  # ctypes' from_buffer wants writable bytes
            raw = _PyBuffer()
            _get_buffer(view, ctypes.byref(raw), _PyBUF_RECORDS_RO)
            export.address = raw.buf or 0
            _release_buffer(ctypes.byref(raw))  # the memoryview still holds the memory
        else:
            export.address = ctypes.addressof((ctypes.c_char * view.nbytes).from_buffer(view))
        return export

    def release(self):
        view, self._view = getattr(self, "_view", None), None
        if view is not None:
            view.release()

    __del__ = release


class DLPackImport:
    """A consumed DLPack export: the capsule renamed "used_..." as the protocol asks, and the
    managed tensor's deleter called once, at release()."""

    def __init__(self, producer, what):
        capsule = _export(producer, what)
        if _capsule_is_valid(capsule, b"dltensor_versioned"):
            managed_type, used = DLManagedTensorVersioned, b"used_dltensor_versioned"
            pointer = _capsule_pointer(capsule, b"dltensor_versioned")
        elif _capsule_is_valid(capsule, b"dltensor"):
            managed_type, used = DLManagedTensor, b"used_dltensor"
            pointer = _capsule_pointer(capsule, b"dltensor")
        else:
            raise TypeError(f"{what}: {type(producer).__name__}.__dlpack__() returned "
                            f"{type(capsule).__name__}, not an unused DLPack capsule")
        # From here the tensor is ours: renamed, its producer's capsule destructor leaves it.
        _capsule_set_name(capsule, used)
        del capsule
        self._managed = managed_type.from_address(pointer)
        self._pointer = pointer
        self.producer = producer  # also kept, in case its export relies on it
        try:
            self._read(what)
        except BaseException:
            self.release()
            raise

    def _read(self, what):
        managed = self._managed
        flags = getattr(managed, "flags", 0)
        if isinstance(managed, DLManagedTensorVersioned) and managed.version.major != 1:
            raise ValueError(f"{what}: DLPack version {managed.version.major}."
                             f"{managed.version.minor} (this binding reads 1.x)")
        t = managed.dl_tensor

        def malformed(field, why):
            return ValueError(f"{what}: malformed DLPack tensor: {field} {why}")
        if not 0 <= t.ndim <= MAX_DLPACK_NDIM:
            raise malformed("ndim", f"is {t.ndim} (0..{MAX_DLPACK_NDIM} taken)")
        if t.ndim and not t.shape:
            raise malformed("shape", f"is NULL with ndim {t.ndim}")
        shape = [t.shape[i] for i in range(t.ndim)]
        count = 1
        for i, n in enumerate(shape):
            if n < 0:
                raise malformed(f"shape[{i}]", f"is negative ({n})")
            count *= n
        bits, lanes = t.dtype.bits, t.dtype.lanes
        if not bits or not lanes:
            raise malformed("dtype", f"has {bits} bits and {lanes} lanes (both must be >= 1)")
        # Python integers do not overflow: every sum below is exact, then checked against what
        # a C address can hold (ctypes would wrap it without a word).
        nbytes = (count * bits * lanes + 7) // 8
        data = t.data or 0
        if count and not data:
            raise malformed("data", f"is NULL with {count} elements")
        address = data + t.byte_offset if count else data
        if address + nbytes > ADDRESS_END:
            raise malformed("shape" if nbytes > ADDRESS_END else "byte_offset",
                            f"puts the memory past the address space: data {data:#x} + "
                            f"byte_offset {t.byte_offset:#x} + {nbytes} bytes > {ADDRESS_END:#x}")
        if t.strides and count > 1:
            expect = 1
            for n, stride in reversed(list(zip(shape, (t.strides[i] for i in range(t.ndim))))):
                if n != 1 and stride != expect:
                    raise ValueError(f"{what}: the DLPack tensor (shape {tuple(shape)}) is not "
                                     "C-contiguous (kernels see flat memory)")
                expect *= n
        self.address, self.nbytes = address, nbytes
        self.kind, self.ordinal = t.device.device_type, t.device.device_id
        self.readonly = bool(flags & DLPACK_FLAG_READ_ONLY)
        self.copied = bool(flags & DLPACK_FLAG_IS_COPIED)

    def release(self):
        pointer, self._pointer = getattr(self, "_pointer", None), None
        if pointer is not None:
            deleter = self._managed.deleter
            self._managed = self.producer = None
            if deleter:
                _DELETER(deleter)(pointer)

    __del__ = release


def _export(producer, what):
    """producer.__dlpack__(): DLPack 1.x when the producer knows max_version, else 0.x."""
    try:
        return producer.__dlpack__(stream=None, max_version=(1, 0))
    except TypeError:  # a producer older than max_version (array API 2023.12)
        pass
    except BufferError as e:
        raise ValueError(f"{what}: {type(producer).__name__} cannot be exported ({e})") from None
    try:
        return producer.__dlpack__(stream=None)
    except BufferError as e:
        raise ValueError(f"{what}: {type(producer).__name__} cannot be exported ({e})") from None


def _dlpack_device(obj, what):
    """(device type, device id) of obj.__dlpack_device__(), checked: a producer's failure or
    an answer that is not two integers is an error naming what."""
    name = f"{type(obj).__name__}.__dlpack_device__()"
    try:
        answer = obj.__dlpack_device__()
    except Exception as e:  # the producer's own failure: say which argument it was
        raise ValueError(f"{what}: {name} failed: {type(e).__name__}: {e}") from None
    try:
        kind, ordinal = answer
        return integer(kind, "i32", name), integer(ordinal, "i32", name)
    except (TypeError, ValueError):
        raise TypeError(f"{what}: {name} returned {answer!r}, not (device_type, device_id), two "
                        "integers") from None


def borrow(value, what, device, writes=True, host_memory=False):
    """An export (BufferExport or DLPackImport) of an object with the buffer protocol (tried
    first: it is host memory, and cheaper) or DLPack, checked: C-contiguous, on a device that
    `device` can use (host memory too if host_memory), writable unless `writes` is False or the
    object is wrapped in readonly(). None if value has neither protocol."""
    vouched = isinstance(value, ReadOnly)
    obj = value.obj if vouched else value
    export = BufferExport.of(obj, what)
    if export is None:
        if not hasattr(obj, "__dlpack__"):
            return None
        if getattr(obj, "__dlpack_device__", None) is not None:  # refused before an export
            check_device(what, *_dlpack_device(obj, what), device, host_memory)
        export = DLPackImport(obj, what)
    try:
        check_device(what, export.kind, export.ordinal, device, host_memory)
        if writes and not vouched and (export.readonly or export.copied):
            raise ValueError(
                f"{what}: the {type(obj).__name__} is "
                + ("read-only" if export.readonly else "a copy the producer made")
                + " and kernels may write through any pointer; pass superkernel.readonly(obj) "
                "if the kernel only reads it")
    except BaseException:
        export.release()
        raise
    return export
