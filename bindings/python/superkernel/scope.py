"""Scope: kernels added in order become one super kernel at finalize().

As a context manager it finalizes when the block ends normally (the result is
`scope.superkernel`) and aborts when the block raises.
"""
import ctypes

from ._lib import KernelOptions, lib
from .checks import blocks_and_grid, c_string, instance, integer
from .handle import Handle
from .module import Kernel
from .status import check
from .superkernel import SuperKernel

#: sk_kernel_options.flags bit: the kernel's edge to the one before it is block-local
#: (SK_KERNEL_FLAG_BLOCK_LOCAL); Scope.add(block_local=True) sets it.
KERNEL_FLAG_BLOCK_LOCAL = 0x2


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
        check(lib().sk_scope_begin(device.handle, c_string(name, "Device.scope name"),
                                   c_string(options or None, "Device.scope options",
                                            optional=True), ctypes.byref(out)),
              f"sk_scope_begin ({name})")
        self.device = device
        self.name = name
        self.steps = []  # (kernel, name, arg_refs) per sub-kernel, in sk_add_kernel order
        self._keepalive = {}  # {(step, index): export} behind pointer arguments
        self.superkernel = None
        super().__init__(out.value, device)

    def add(self, kernel, block_dim, *args, name=None, core_type=None, flags=0, stream=0, cores=None,
            block_local=False):
        """Adds kernel on block_dim blocks with args (values converted by its signature; arrays
        and Buffers by address, no copy; an aggregate as a tuple of its members; Ref(memory):
        read from that memory at every launch, sk_kernel_options.arg_refs). block_dim is a block
        count, or a grid's shape as Triton's launch grid: (x,), (x, y) or (x, y, z), x fastest
        (sk_kernel_options.grid; a kernel that reads program_id(1) or (2) needs one). cores=(first, count)
        pins its blocks to cores first .. first + count - 1 of its type
        (sk_kernel_options.first_core / core_count); None: the planner places them.
        block_local=True: its block i reads and writes only what block i of the kernel before
        it wrote, so it waits for no other block (KERNEL_FLAG_BLOCK_LOCAL). Returns the
        sub-kernel's step index."""
        instance(kernel, Kernel, "Scope.add kernel")
        what = f"Scope.add ({name or kernel.name})"
        block_dim, grid = blocks_and_grid(block_dim, f"{what} block_dim")
        if not isinstance(block_local, bool):
            raise TypeError(f"{what} block_local: expected True or False, got {block_local!r}")
        flags = integer(flags, "u32", f"{what} flags") | (KERNEL_FLAG_BLOCK_LOCAL if block_local else 0)
        first_core = core_count = 0
        if cores is not None:
            if not isinstance(cores, (tuple, list)) or len(cores) != 2:
                raise TypeError(f"{what} cores: expected (first, count), got {cores!r}")
            first_core = integer(cores[0], "u32", f"{what} cores[0] (first)")
            core_count = integer(cores[1], "u32", f"{what} cores[1] (count)")
            if core_count < 1:
                raise ValueError(f"{what} cores: count is {core_count}; pin at least 1 core, or pass None")
        packed = kernel.pack(args, blocks=block_dim)
        opts = KernelOptions(ctypes.sizeof(KernelOptions),
                             c_string(name or None, f"{what} name", optional=True),
                             c_string(core_type or None, f"{what} core_type", optional=True),
                             flags,
                             integer(stream, "u32", f"{what} stream"), first_core, core_count,
                             packed.refs, grid)
        check(lib().sk_add_kernel(self.handle, kernel.handle, block_dim, packed.pointer,
                                  ctypes.byref(opts)),
              f"sk_add_kernel ({name or kernel.name})")
        step = len(self.steps)
        self._keepalive.update(((step, i), keep) for i, keep in packed.keepalive.items())
        self.steps.append((kernel, name or kernel.name, packed.refs))
        return len(self.steps) - 1

    def record_event(self, stream, event):
        """Stream fusion: records `event` on scope stream `stream` after its kernels so far."""
        stream = integer(stream, "u32", "record_event stream")
        event = integer(event, "u32", "record_event event")
        check(lib().sk_scope_record_event(self.handle, stream, event), "sk_scope_record_event")

    def wait_event(self, stream, event):
        """Stream fusion: later kernels of `stream` wait for what preceded `event`."""
        stream = integer(stream, "u32", "wait_event stream")
        event = integer(event, "u32", "wait_event event")
        check(lib().sk_scope_wait_event(self.handle, stream, event), "sk_scope_wait_event")

    def finalize(self):
        """Builds the super kernel. The scope is consumed either way."""
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
