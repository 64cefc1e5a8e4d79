"""SuperKernel: a finalized scope, launched as one task as often as wanted."""
import ctypes
import json
from collections import namedtuple

from ._lib import ProfileRecordC, lib
from .args import address_of, one, ref_address
from .refs import Ref
from .checks import c_path, c_text, instance, integer
from .handle import Handle
from .status import check
from .stream import Stream

#: One core's run of one sub-kernel in a profiled launch (sk_profile_record, less its
#: struct_size, which only the C ABI needs; ns, CLOCK_MONOTONIC).
ProfileRecord = namedtuple("ProfileRecord",
                           [f for f, _ in ProfileRecordC._fields_ if f != "struct_size"])


class SuperKernel(Handle):
    def __init__(self, device, handle, name, steps, keepalive):
        self.device = device
        self.name = name
        self.steps = list(steps)           # (kernel, sub-kernel name, arg_refs)
        # {(step, index): export} of the memory each pointer argument's current binding uses
        self._keepalive = keepalive
        # {address: export} of the stop flags launch_repeat was given, kept until destroy: a
        # launch may read its flag long after the call returned.
        self._stop_flags = {}
        super().__init__(handle, device)

    def __len__(self):
        return len(self.steps)

    def launch(self, stream=None):
        """Queues one run (asynchronous); `stream` None is the default stream."""
        instance(stream, Stream, f"SuperKernel.launch ({self.name}) stream", optional=True)
        check(lib().sk_launch(self.handle, stream.handle if stream is not None else None),
              f"sk_launch ({self.name})")
        if stream is not None and stream._capture is not None:
            stream._capture._record_superkernel(self)  # its steps, recorded inline

    def launch_repeat(self, n, stop_flag=None, stream=None):
        """Queues up to `n` runs back to back (sk_launch_repeat, asynchronous), stopping after
        the run in which a kernel left the uint32 at `stop_flag` nonzero (None: all n runs).
        stop_flag is what a ptr argument takes (a Buffer, a numpy array, a ctypes object, an
        address); it is kept alive until the super kernel is destroyed."""
        n = integer(n, "u32", f"SuperKernel.launch_repeat ({self.name}) n")
        instance(stream, Stream, f"SuperKernel.launch_repeat ({self.name}) stream", optional=True)
        what = f"SuperKernel.launch_repeat ({self.name}) stop_flag"
        address, keep, size = address_of(stop_flag, what, self.device, writes=False)
        if size is not None and size < 4:
            raise ValueError(f"{what}: {size} bytes; the flag is a uint32 (4 bytes)")
        flag = ctypes.cast(address, ctypes.POINTER(ctypes.c_uint32)) if address else None
        check(lib().sk_launch_repeat(self.handle, n, flag,
                                     stream.handle if stream is not None else None),
              f"sk_launch_repeat ({self.name})")
        if keep is not None:
            self._stop_flags[address] = keep

    def set_arg(self, step, index, value):
        """Rebinds argument `index` of sub-kernel `step` for later launches (no rebuild). An
        argument added as a Ref takes a Ref: the memory it is read from from then on."""
        step = integer(step, "u32", f"set_arg ({self.name}) step")
        index = integer(index, "u32", f"set_arg ({self.name}) index")
        if step >= len(self.steps):
            raise IndexError(f"set_arg: super kernel {self.name!r} has {len(self.steps)} "
                             f"sub-kernels, no step {step}")
        kernel, sub, refs = self.steps[step]
        tokens = kernel.signature_tokens
        if not 0 <= index < len(tokens):
            raise IndexError(f"sub-kernel {step} ({sub}) has {len(tokens)} arguments, no {index}")
        what = f"sub-kernel {step} ({sub}) argument {index}"
        if refs >> index & 1:
            if not isinstance(value, Ref):
                raise TypeError(f"{what} is read by reference: write the value into the memory "
                                "it is read from, or pass Ref(memory) to read it elsewhere")
            address, keep = ref_address(value, tokens[index], what, self.device)
        else:
            if isinstance(value, Ref):
                raise TypeError(f"{what} was added as a value: it takes a value, not a Ref")
            value_c, keep = one(tokens[index], value, what, self.device)
            address = ctypes.addressof(value_c)
        check(lib().sk_superkernel_set_arg(self.handle, step, index, address),
              f"sk_superkernel_set_arg ({self.name})")
        # The call waited for launches using the old binding: only the new one is kept.
        self._keepalive.pop((step, index), None)
        if keep is not None:
            self._keepalive[(step, index)] = keep

    def explain_json(self):
        """The plan as the JSON text of sk_superkernel_explain."""
        needed = ctypes.c_size_t()
        check(lib().sk_superkernel_explain(self.handle, None, 0, ctypes.byref(needed)),
              "sk_superkernel_explain")
        buf = ctypes.create_string_buffer(needed.value)
        check(lib().sk_superkernel_explain(self.handle, buf, needed.value, ctypes.byref(needed)),
              "sk_superkernel_explain")
        return c_text(buf.value)

    def explain(self):
        """The plan as a dict (steps, kernel names, block dims, cores, syncs, options)."""
        return json.loads(self.explain_json())

    def profile(self):
        """Records of the last completed launch (scope option profiling=1): a list of
        ProfileRecord, ordered by step then core."""
        count = ctypes.c_size_t()
        check(lib().sk_superkernel_profile(self.handle, None, 0, ctypes.byref(count)),
              "sk_superkernel_profile")
        records = (ProfileRecordC * max(1, count.value))()
        records[0].struct_size = ctypes.sizeof(ProfileRecordC)
        check(lib().sk_superkernel_profile(self.handle, records, count.value,
                                           ctypes.byref(count)), "sk_superkernel_profile")
        return [ProfileRecord(*(getattr(r, f) for f in ProfileRecord._fields))
                for r in records[:count.value]]

    def write_trace(self, path):
        """Writes the last profiled launch as Chrome trace-event JSON to path."""
        check(lib().sk_superkernel_write_trace(self.handle, c_path(path, "write_trace path")),
              f"sk_superkernel_write_trace ({path})")

    def _destroy(self, handle):
        lib().sk_superkernel_destroy(handle)  # waits for its queued launches
        self._keepalive.clear()
        self._stop_flags.clear()
