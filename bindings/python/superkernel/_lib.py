"""Finding and loading libsk.so.0, and the C prototypes of everything in sk.h.

Lookup order: $SK_LIBRARY (a path), libsk.so.0 next to this package, then the system's library
path (what dlopen("libsk.so.0") finds). The library's run-time version must have the major
version this binding was written for and at least its minor version.
"""
import ctypes
import os

from .errors import LibraryNotFound, VersionMismatch

#: The libsk version this binding was written for (sk.h's SK_VERSION_NUMBER).
BINDING_VERSION = (0, 2, 0)
SONAME = "libsk.so.0"
#: sk.h's SK_TENSOR_MAP_BYTES: the bytes of a TMA tensor map (a CUtensorMap).
TENSOR_MAP_BYTES = 128


class KernelOptions(ctypes.Structure):
    """sk_kernel_options (sk.h); struct_size tells libsk how much of it the caller filled."""

    _fields_ = [
        ("struct_size", ctypes.c_uint32),
        ("name", ctypes.c_char_p),
        ("core_type", ctypes.c_char_p),
        ("flags", ctypes.c_uint32),
        ("stream", ctypes.c_uint32),
        ("first_core", ctypes.c_uint32),
        ("core_count", ctypes.c_uint32),
        ("arg_refs", ctypes.c_uint64),
        ("grid", ctypes.c_uint32 * 3),
    ]


class KernelDesc(ctypes.Structure):
    """sk_kernel_desc (sk.h): what the caller says of a kernel its binary may not say."""

    _fields_ = [
        ("struct_size", ctypes.c_uint32),
        ("signature", ctypes.c_char_p),
        ("threads", ctypes.c_uint32),
        ("dynamic_shared", ctypes.c_uint32),
        ("block", ctypes.c_uint32 * 3),
        ("flags", ctypes.c_uint32),
        ("cluster", ctypes.c_uint32 * 3),
    ]


#: sk_kernel_desc.flags (sk.h): its blocks wait for each other by means of their own.
KERNEL_DESC_COOPERATIVE = 0x1


class TensorMapDesc(ctypes.Structure):
    """sk_tensor_map_desc (sk.h): cuTensorMapEncodeTiled's parameters, innermost first."""

    _fields_ = [
        ("struct_size", ctypes.c_uint32),
        ("data_type", ctypes.c_uint32),
        ("rank", ctypes.c_uint32),
        ("swizzle", ctypes.c_uint32),
        ("address", ctypes.c_void_p),
        ("dims", ctypes.c_uint64 * 5),
        ("strides", ctypes.c_uint64 * 4),
        ("box", ctypes.c_uint32 * 5),
        ("element_strides", ctypes.c_uint32 * 5),
        ("interleave", ctypes.c_uint32),
        ("l2_promotion", ctypes.c_uint32),
        ("oob_fill", ctypes.c_uint32),
    ]


class ProfileRecordC(ctypes.Structure):
    """sk_profile_record (sk.h); struct_size of the first record tells libsk the array's stride."""

    _fields_ = [
        ("struct_size", ctypes.c_uint32),
        ("step", ctypes.c_uint32),
        ("core", ctypes.c_uint32),
        ("core_type", ctypes.c_uint32),
        ("blocks", ctypes.c_uint32),
        ("ready_ns", ctypes.c_uint64),
        ("start_ns", ctypes.c_uint64),
        ("end_ns", ctypes.c_uint64),
        ("sync_wait_ns", ctypes.c_uint64),
    ]


_p = ctypes.c_void_p
_pp = ctypes.POINTER(ctypes.c_void_p)
_s = ctypes.c_char_p
_u32 = ctypes.c_uint32
_size = ctypes.c_size_t
_st = ctypes.c_int  # sk_status

# name: (restype, argtypes) — every function of sk.h.
PROTOTYPES = {
    "sk_last_error": (_s, []),
    "sk_status_name": (_s, [_st]),
    "sk_version": (_u32, []),
    "sk_version_string": (_s, []),
    "sk_device_open": (_st, [_s, _pp]),
    "sk_device_close": (None, [_p]),
    "sk_device_cores": (_st, [_p, ctypes.POINTER(_u32)]),
    "sk_device_synchronize": (_st, [_p]),
    "sk_mem_alloc": (_st, [_p, _size, _pp]),
    "sk_mem_free": (None, [_p, _p]),
    "sk_memcpy": (_st, [_p, _p, _p, _size]),
    "sk_tensor_map_encode": (_st, [_p, ctypes.POINTER(TensorMapDesc), _p]),
    "sk_module_load": (_st, [_p, _p, _size, _pp]),
    "sk_module_load_file": (_st, [_p, _s, _pp]),
    "sk_module_load_files": (_st, [_p, ctypes.POINTER(_s), _size, _pp]),
    "sk_module_load_images": (_st, [_p, ctypes.POINTER(_p), ctypes.POINTER(_size), _size, _pp]),
    "sk_module_unload": (None, [_p]),
    "sk_module_get_kernel": (_st, [_p, _s, _pp]),
    "sk_module_get_kernel_with_signature": (_st, [_p, _s, _s, _pp]),
    "sk_module_get_kernel_desc": (_st, [_p, _s, ctypes.POINTER(KernelDesc), _pp]),
    "sk_module_inspect": (_st, [_s, _p, _size, ctypes.c_char_p, _size, ctypes.POINTER(_size)]),
    "sk_module_kernel_count": (_st, [_p, ctypes.POINTER(_size)]),
    "sk_module_kernel_name": (_st, [_p, _size, ctypes.c_char_p, _size, ctypes.POINTER(_size)]),
    "sk_kernel_signature": (_st, [_p, ctypes.c_char_p, _size, ctypes.POINTER(_size)]),
    "sk_kernel_core_type": (_st, [_p, ctypes.c_char_p, _size, ctypes.POINTER(_size)]),
    "sk_stream_create": (_st, [_p, _pp]),
    "sk_stream_create_cuda": (_st, [_p, _p, _pp]),
    "sk_stream_synchronize": (_st, [_p]),
    "sk_stream_query": (_st, [_p, _p, ctypes.POINTER(ctypes.c_int)]),
    "sk_stream_destroy": (None, [_p]),
    "sk_event_create": (_st, [_p, _pp]),
    "sk_event_destroy": (None, [_p]),
    "sk_event_record": (_st, [_p, _p]),
    "sk_stream_wait_event": (_st, [_p, _p]),
    "sk_stream_begin_capture": (_st, [_p, _s, _s]),
    "sk_stream_end_capture": (_st, [_p, _pp]),
    "sk_superkernel_update_from_capture": (_st, [_p, _p]),
    "sk_scope_begin": (_st, [_p, _s, _s, _pp]),
    "sk_add_kernel": (_st, [_p, _p, _u32, _pp, ctypes.POINTER(KernelOptions)]),
    "sk_scope_record_event": (_st, [_p, _u32, _u32]),
    "sk_scope_wait_event": (_st, [_p, _u32, _u32]),
    "sk_finalize": (_st, [_p, _pp]),
    "sk_scope_abort": (None, [_p]),
    "sk_launch": (_st, [_p, _p]),
    "sk_launch_repeat": (_st, [_p, _u32, ctypes.POINTER(_u32), _p]),
    "sk_launch_kernel": (_st, [_p, _u32, _pp, _p]),
    "sk_launch_kernel_grid": (_st, [_p, ctypes.POINTER(ctypes.c_uint32), _pp, _p]),
    "sk_superkernel_set_arg": (_st, [_p, _u32, _u32, _p]),
    "sk_superkernel_explain": (_st, [_p, ctypes.c_char_p, _size, ctypes.POINTER(_size)]),
    "sk_superkernel_profile": (_st, [_p, ctypes.POINTER(ProfileRecordC), _size,
                                     ctypes.POINTER(_size)]),
    "sk_superkernel_write_trace": (_st, [_p, _s]),
    "sk_superkernel_destroy": (None, [_p]),
}


def _candidates():
    env = os.environ.get("SK_LIBRARY")
    if env:
        # An explicit choice is final: falling back would hide a typo behind another library.
        return [("$SK_LIBRARY", env)]
    here = os.path.join(os.path.dirname(os.path.abspath(__file__)), SONAME)
    found = [("next to the package", here)] if os.path.exists(here) else []
    return found + [("the system library path", SONAME)]


class Library:
    """The loaded libsk with typed functions. Functions the library lacks (an older libsk)
    fail when called, naming the function, instead of failing the import."""

    def __init__(self):
        errors = []
        for where, path in _candidates():
            try:
                self.cdll = ctypes.CDLL(path)
                self.path = path
                break
            except OSError as e:
                errors.append(f"{where} ({path}): {e}")
        else:
            raise LibraryNotFound("cannot load libsk: " + "; ".join(errors))
        self.missing = []
        for name, (restype, argtypes) in PROTOTYPES.items():
            fn = getattr(self.cdll, name, None)
            if fn is None:
                self.missing.append(name)
                continue
            fn.restype, fn.argtypes = restype, argtypes
            setattr(self, name, fn)
        self.version = self.sk_version()
        major, minor = self.version // 10000, self.version // 100 % 100
        if major != BINDING_VERSION[0] or minor < BINDING_VERSION[1]:
            raise VersionMismatch(
                f"libsk at {self.path} is version {major}.{minor}.{self.version % 100}; this "
                f"binding needs {BINDING_VERSION[0]}.{BINDING_VERSION[1]}.x or a later minor")

    def __getattr__(self, name):
        # Only reached for names not set in __init__: sk.h functions this library lacks.
        if name in PROTOTYPES:
            raise NotImplementedError(f"{name} is not in libsk at {self.path} (older library?)")
        raise AttributeError(name)

    def has(self, name):
        return name not in self.missing


_library = None


def lib():
    """The process-wide Library, loaded on first use."""
    global _library
    if _library is None:
        _library = Library()
    return _library
