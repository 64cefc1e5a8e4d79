"""Kernel arguments: Python values to the C values a signature asks for.

libsk wants, as cuLaunchKernel does, an array of pointers to each argument's value. Pointer
arguments accept a Buffer, anything with the (C-contiguous) buffer protocol such as a numpy array
or a DLPack tensor (its memory is passed as is, no copy: see memory.py), an int address, None
(NULL) or a ctypes object. The exports behind pointers are returned as `keepalive`, by argument
index: their owner (a super kernel, a stream) holds them while the kernels may use them.
"""
import ctypes

from .aggregates import SCALAR_TYPES, aggregate, ctype_of, is_aggregate, parse_types
from .buffer import Buffer
from .checks import integer, real
from .memory import DL_CPU, ReadOnly, borrow, check_device
from .refs import Ref

SIGNATURE_TOKENS = SCALAR_TYPES  # the scalar types; aggregates are written {T,T...}


def parse_signature(signature):
    """"f32,ptr,{f32,f32}" -> ["f32", "ptr", "{f32,f32}"]; "" -> []. A type that does not
    parse raises ValueError naming the parameter."""
    if not isinstance(signature, str):
        raise TypeError(f"signature: needs a str, not {type(signature).__name__}")
    return parse_types(signature)


def address_of(value, what, device, writes=True, host_memory=False):
    """(address, object to keep alive, size in bytes or None) for a pointer argument used on
    `device`; writes and host_memory as memory.borrow takes them."""
    inner = value.obj if isinstance(value, ReadOnly) else value
    if inner is None:
        return 0, None, None
    if isinstance(inner, Buffer):  # one lent with readonly() was vouched for then
        inner.handle  # raises StateError if closed: its memory is gone
        return inner.address, inner, inner.nbytes
    if isinstance(inner, bool):
        raise TypeError(f"{what}: a bool is not a pointer")
    if isinstance(inner, int):
        return integer(inner, "u64", f"{what}: address"), None, None
    if isinstance(inner, ctypes._Pointer) or isinstance(inner, ctypes.c_void_p):
        return ctypes.cast(inner, ctypes.c_void_p).value or 0, inner, None
    if isinstance(inner, (ctypes.Array, ctypes.Structure, ctypes.Union, ctypes._SimpleCData)):
        if not (device.is_host or host_memory):
            check_device(what, DL_CPU, 0, device, host_memory)
        return ctypes.addressof(inner), inner, ctypes.sizeof(inner)
    export = borrow(value, what, device, writes, host_memory)
    if export is None:
        raise TypeError(f"{what}: {type(inner).__name__} is not a pointer, Buffer, buffer "
                        "(numpy array, bytearray...) or DLPack tensor")
    return export.address, export, export.nbytes


def ref_address(ref, token, what, device):
    """(address, object to keep alive) of the memory a Ref names, which must hold a `token`."""
    address, keep, size = address_of(ref.target, f"{what} (Ref)", device, writes=False)
    if address == 0:
        raise ValueError(f"{what}: Ref(None) names no memory to read the argument from")
    need = ctypes.sizeof(ctype_of(token))
    if size is not None and size < need:
        raise ValueError(f"{what}: Ref to {size} bytes, but a {token} takes {need}")
    return address, keep


def scalar(token, value, what):
    """The ctypes value of a scalar argument, range-checked (ctypes would wrap silently)."""
    ctype = SIGNATURE_TOKENS[token]
    if token in ("f32", "f64"):
        return ctype(real(value, token, what))
    return ctype(integer(value, token, what))


class PackedArgs:
    """One kernel call's arguments: `array` is the void*[] libsk reads (NULL if no arguments);
    `refs` has bit i set where argument i is a Ref (its entry is then the address itself).
    `names` names the values in messages (default: the kernel's param_names)."""

    def __init__(self, kernel, values, device, refs_allowed=True, blocks=None, names=None):
        tokens, names = kernel.signature_tokens, names or kernel.param_names
        if len(values) != len(tokens):
            takes = ", ".join(names) if names else kernel.signature or "no parameters"
            raise TypeError(f"kernel {kernel.name!r} ({takes}) takes {len(tokens)} arguments, "
                            f"{len(values)} given")
        self.values, self.keepalive, self.refs, entries = [], {}, 0, []
        for i, (token, value) in enumerate(zip(tokens, values)):
            what = f"kernel {kernel.name!r} argument {i}{f' {names[i]!r}' if names else ''} ({token})"
            if isinstance(value, Ref):
                if not refs_allowed:
                    raise TypeError(f"{what}: a Ref is read by a super kernel's sub-kernel "
                                    "(Scope.add); an unfused launch takes the value")
                if i >= 64:
                    raise ValueError(f"{what}: only arguments 0 to 63 may be read by reference")
                address, keep = ref_address(value, token, what, device)
                self.refs |= 1 << i
                entries.append(address)
            else:
                value_c, keep = one(token, value, what, device)
                self.values.append(value_c)
                entries.append(ctypes.addressof(value_c))
            if keep is not None:
                self.keepalive[i] = keep
        for t in range(kernel.null_tail):
            address = 0
            if t == 0 and kernel.global_scratch:  # Triton's global scratch: each block's part
                if blocks is None:
                    raise TypeError(f"kernel {kernel.name!r}: its global scratch takes {kernel.global_scratch} "
                                    "bytes a block: pack(args, blocks=block_dim)")
                scratch = device.alloc(blocks * kernel.global_scratch)
                self.keepalive[len(tokens)] = scratch
                address = scratch.address
            self.values.append(ctypes.c_void_p(address))
            entries.append(ctypes.addressof(self.values[-1]))
        self.array = (ctypes.c_void_p * max(1, len(entries)))(*entries)
        self.pointer = ctypes.cast(self.array, ctypes.POINTER(ctypes.c_void_p)) \
            if entries else None


def one(token, value, what, device):
    """(the ctypes value of one argument, the object its pointer needs kept alive or None)."""
    if token == "ptr":
        address, keep, _ = address_of(value, what, device)
        return ctypes.c_void_p(address), keep
    if is_aggregate(token):
        value_c, keep = aggregate(token, value, what,
                                  lambda v, w: address_of(v, w, device)[:2])
        return value_c, keep or None
    return scalar(token, value, what), None
