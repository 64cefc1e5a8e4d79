"""superkernel — Python binding (ctypes) for libsk, the SuperKernel runtime.

    import superkernel as sk
    with sk.Device("host") as dev:
        mod = dev.load("kernels.o")
        k = mod.kernel("saxpy")
        with dev.scope("step") as scope:
            scope.add(k, 4, 2.0, x, y, n)      # numpy arrays are passed by address, no copy
        scope.superkernel.launch(); dev.synchronize()

Every failing libsk call raises a subclass of superkernel.Error carrying sk_last_error().
A missing or mismatched libsk raises LibraryNotFound / VersionMismatch at its first use.
"""
from ._lib import BINDING_VERSION, KernelOptions, lib
from .args import SIGNATURE_TOKENS, parse_signature
from .buffer import Buffer
from .capture import Capture
from .device import Device
from .errors import (BadBinary, DeviceError, Error, FileNotReadable, Hang, Incompatible,
                     InvalidArgument, KernelError, LibraryNotFound, NotFound, OutOfMemory,
                     StateError, Unsupported, VersionMismatch)
from .memory import ReadOnly, readonly
from .module import Kernel, Module
from .module_inspect import inspect_module, kernel_records
from .refs import Ref
from .scope import KERNEL_FLAG_BLOCK_LOCAL, Scope
from .stream import Event, Stream
from .superkernel import ProfileRecord, SuperKernel
from .triton import TritonKernel

__version__ = ".".join(map(str, BINDING_VERSION))

#: sk_kernel_options.flags bit: the kernel's tiling data is produced on the device.
KERNEL_FLAG_TILING_SINK = 0x1


def version():
    """The loaded library's version as (major, minor, patch)."""
    v = lib().version
    return v // 10000, v // 100 % 100, v % 100


def version_string():
    """The loaded library's version as sk_version_string() spells it ("MAJOR.MINOR.PATCH")."""
    return lib().sk_version_string().decode()


def library_path():
    """Where the loaded libsk came from (a path, or the soname the system resolved)."""
    return lib().path


def status_name(status):
    return lib().sk_status_name(status).decode()


__all__ = ["BINDING_VERSION", "BadBinary", "Buffer", "Capture", "Device", "DeviceError", "Error",
           "Event", "FileNotReadable", "Hang", "Incompatible", "InvalidArgument", "Kernel",
           "KernelError", "KernelOptions", "KERNEL_FLAG_BLOCK_LOCAL", "KERNEL_FLAG_TILING_SINK", "LibraryNotFound", "Module",
           "NotFound", "OutOfMemory", "ProfileRecord", "ReadOnly", "Ref", "Scope", "SIGNATURE_TOKENS",
           "StateError", "Stream", "SuperKernel", "TritonKernel", "Unsupported", "VersionMismatch",
           "inspect_module", "kernel_records", "library_path", "parse_signature", "readonly",
           "status_name", "version", "version_string"]

# The library is loaded on first use (a Device, version()...), not at import, so that `sk` can
# report a missing or mismatched libsk on one line and run what needs none (`sk inspect`).
