"""Module (a loaded kernel object) and Kernel (one kernel of it)."""
import ctypes
import os

from ._lib import lib
from .args import PackedArgs, parse_signature
from .errors import check
from .handle import Handle
from .metadata import kernel_records


class Module(Handle):
    """A kernel object loaded on a device (sk_module_load). `kernels` maps each kernel recorded
    with SK_KERNEL to {"sig", "type"}."""

    def __init__(self, device, source):
        if isinstance(source, (str, os.PathLike)):
            self.path = os.fspath(source)
            with open(self.path, "rb") as f:
                image = f.read()
        else:
            self.path, image = None, bytes(source)
        out = ctypes.c_void_p()
        if self.path is not None:  # by path: libsk's plan and messages then name the file
            check(lib().sk_module_load_file(device.handle, os.fsencode(self.path),
                                            ctypes.byref(out)), f"sk_module_load_file ({self.path})")
        else:
            check(lib().sk_module_load(device.handle, image, len(image), ctypes.byref(out)),
                  "sk_module_load")
        self.device = device
        self.kernels = kernel_records(image)
        super().__init__(out.value, device)

    def _destroy(self, handle):
        lib().sk_module_unload(handle)

    def kernel(self, name, signature=None):
        """Kernel `name`; its signature from the object's metadata, or the one given (needed
        for objects built without SK_KERNEL; it must agree with the metadata if both exist)."""
        out = ctypes.c_void_p()
        if signature is None:
            check(lib().sk_module_get_kernel(self.handle, name.encode(), ctypes.byref(out)),
                  "sk_module_get_kernel")
            record = self.kernels.get(name)
            if record is None:  # libsk found metadata this reader did not: do not guess
                raise LookupError(f"kernel {name!r}: libsk has its metadata but the binding "
                                  "cannot read it; pass signature=")
            signature, core_type = record["sig"], record["type"]
        else:
            check(lib().sk_module_get_kernel_with_signature(
                self.handle, name.encode(), signature.encode(), ctypes.byref(out)),
                "sk_module_get_kernel_with_signature")
            core_type = self.kernels.get(name, {}).get("type", "vector")
        return Kernel(self, out.value, name, signature, core_type)


class Kernel:
    """One kernel of a module (owned by it: no close)."""

    def __init__(self, module, handle, name, signature, core_type):
        self.module = module
        self.handle = handle
        self.name = name
        self.signature = signature
        self.signature_tokens = parse_signature(signature)
        self.core_type = core_type

    def __repr__(self):
        return f"<Kernel {self.name}({self.signature}) {self.core_type}>"

    def pack(self, args):
        return PackedArgs(self, list(args), self.module.device)

    def launch(self, block_dim, *args, stream=None):
        """Queues this kernel alone, unfused (sk_launch_kernel), on `stream` (None: the default
        stream). Objects behind pointer arguments are kept until the stream is synchronized."""
        packed = self.pack(args)
        check(lib().sk_launch_kernel(self.handle, block_dim, packed.pointer,
                                     stream.handle if stream is not None else None),
              f"sk_launch_kernel ({self.name})")
        (stream._pending if stream is not None else self.module.device._pending).append(packed)
