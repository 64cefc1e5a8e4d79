"""Kernel arguments: Python values to the C values a signature asks for.

libsk wants, as cuLaunchKernel does, an array of pointers to each argument's value. Pointer
arguments accept a Buffer, anything with the (C-contiguous) buffer protocol such as a numpy array
or a DLPack tensor (its memory is passed as is, no copy: see memory.py), an int address, None
(NULL) or a ctypes object. The exports behind pointers are returned as `keepalive`, by argument
index: their owner (a super kernel, a stream) holds them while the kernels may use them.
"""
import ctypes

from .buffer import Buffer
from .checks import integer, real
from .memory import DL_CPU, ReadOnly, borrow, check_device

SIGNATURE_TOKENS = {
    "ptr": ctypes.c_void_p,
    "i8": ctypes.c_int8, "u8": ctypes.c_uint8,
    "i16": ctypes.c_int16, "u16": ctypes.c_uint16,
    "i32": ctypes.c_int32, "u32": ctypes.c_uint32,
    "i64": ctypes.c_int64, "u64": ctypes.c_uint64,
    "f32": ctypes.c_float, "f64": ctypes.c_double,
}


def parse_signature(signature):
    """"f32,ptr,u32" -> ["f32", "ptr", "u32"]; "" -> []. Unknown tokens raise ValueError."""
    if not isinstance(signature, str):
        raise TypeError(f"signature: needs a str, not {type(signature).__name__}")
    tokens = [t.strip() for t in signature.split(",")] if signature.strip() else []
    for t in tokens:
        if t not in SIGNATURE_TOKENS:
            raise ValueError(f"signature {signature!r}: unknown type {t!r} "
                             f"(expected one of {', '.join(SIGNATURE_TOKENS)})")
    return tokens


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


def scalar(token, value, what):
    """The ctypes value of a scalar argument, range-checked (ctypes would wrap silently)."""
    ctype = SIGNATURE_TOKENS[token]
    if token in ("f32", "f64"):
        return ctype(real(value, token, what))
    return ctype(integer(value, token, what))


class PackedArgs:
    """One kernel call's arguments: `array` is the void*[] libsk reads (NULL if no arguments)."""

    def __init__(self, kernel, values, device):
        tokens = kernel.signature_tokens
        if len(values) != len(tokens):
            raise TypeError(f"kernel {kernel.name!r} ({kernel.signature or 'no parameters'}) "
                            f"takes {len(tokens)} arguments, {len(values)} given")
        self.values, self.keepalive = [], {}
        for i, (token, value) in enumerate(zip(tokens, values)):
            what = f"kernel {kernel.name!r} argument {i} ({token})"
            value_c, keep = one(token, value, what, device)
            self.values.append(value_c)
            if keep is not None:
                self.keepalive[i] = keep
        self.array = (ctypes.c_void_p * max(1, len(self.values)))(
            *[ctypes.addressof(v) for v in self.values])
        self.pointer = ctypes.cast(self.array, ctypes.POINTER(ctypes.c_void_p)) \
            if self.values else None


def one(token, value, what, device):
    """(the ctypes value of one argument, the object its pointer needs kept alive or None)."""
    if token == "ptr":
        address, keep, _ = address_of(value, what, device)
        return ctypes.c_void_p(address), keep
    return scalar(token, value, what), None
