"""Scope: kernels added in order become one super kernel at finalize().

As a context manager it finalizes when the block ends normally (the result is
`scope.superkernel`) and aborts when the block raises.
"""
import ctypes

from ._lib import KernelOptions, lib
from .errors import check
from .handle import Handle


def options_text(options):
    """Scope options as libsk reads them: a dict {"early-start": 0} becomes "early-start=0";
    a string (or None) is kept."""
    if isinstance(options, dict):
        return ":".join(f"{k}={v}" for k, v in options.items())
    return options


class Scope(Handle):
    _closed_message = "was finalized or aborted"

    def __init__(self, device, name="scope", options=None):
        out = ctypes.c_void_p()
        options = options_text(options)  # {"early-start": 0, "profiling": 1} -> vendor syntax
        check(lib().sk_scope_begin(device.handle, name.encode(),
                                   options.encode() if options else None, ctypes.byref(out)),
              f"sk_scope_begin ({name})")
        self.device = device
        self.name = name
        self.steps = []  # (kernel, name) per sub-kernel, in sk_add_kernel order
        self._keepalive = {}  # {(step, index): export} behind pointer arguments
        self.superkernel = None
        super().__init__(out.value, device)

    def add(self, kernel, block_dim, *args, name=None, core_type=None, flags=0, stream=0):
        """Adds kernel on block_dim blocks with args (values converted by its signature; arrays
        and Buffers by address, no copy). Returns the sub-kernel's step index."""
        packed = kernel.pack(args)
        opts = KernelOptions(ctypes.sizeof(KernelOptions), name.encode() if name else None,
                             core_type.encode() if core_type else None, flags, stream)
        check(lib().sk_add_kernel(self.handle, kernel.handle, block_dim, packed.pointer,
                                  ctypes.byref(opts)),
              f"sk_add_kernel ({name or kernel.name})")
        step = len(self.steps)
        self._keepalive.update(((step, i), keep) for i, keep in packed.keepalive.items())
        self.steps.append((kernel, name or kernel.name))
        return len(self.steps) - 1

    def record_event(self, stream, event):
        """Stream fusion: records `event` on scope stream `stream` after its kernels so far."""
        check(lib().sk_scope_record_event(self.handle, stream, event), "sk_scope_record_event")

    def wait_event(self, stream, event):
        """Stream fusion: later kernels of `stream` wait for what preceded `event`."""
        check(lib().sk_scope_wait_event(self.handle, stream, event), "sk_scope_wait_event")

    def finalize(self):
        """Builds the super kernel. The scope is consumed either way."""
        from .superkernel import SuperKernel
        handle, self._handle = self.handle, None
        self._device._children.discard(self)
        out = ctypes.c_void_p()
        keepalive, self._keepalive = self._keepalive, {}  # the super kernel's alone from here
        check(lib().sk_finalize(handle, ctypes.byref(out)), f"sk_finalize ({self.name})")
        self.superkernel = SuperKernel(self.device, out.value, self.name, self.steps, keepalive)
        return self.superkernel

    def abort(self):
        self.close()

    def _destroy(self, handle):
        lib().sk_scope_abort(handle)
        self._keepalive.clear()

    def __exit__(self, exc_type, exc, tb):
        if exc_type is not None or self.closed:
            self.close()
        else:
            self.finalize()
