"""Kernel arguments: Python values to the C values a signature asks for.

libsk wants, as cuLaunchKernel does, an array of pointers to each argument's value. Pointer
arguments accept a Buffer, anything with the (C-contiguous) buffer protocol such as a numpy array
(its memory is passed as is, no copy: the host device runs kernels on host memory), an int
address, None (NULL) or a ctypes object. The Python objects behind pointers are returned as
`keepalive`: their owner (a super kernel, a stream) holds them while the kernels may use them.
"""
import ctypes

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
    tokens = [t.strip() for t in signature.split(",")] if signature.strip() else []
    for t in tokens:
        if t not in SIGNATURE_TOKENS:
            raise ValueError(f"signature {signature!r}: unknown type {t!r} "
                             f"(expected one of {', '.join(SIGNATURE_TOKENS)})")
    return tokens


def address_of(value, what, host):
    """(address, object to keep alive) for a pointer argument."""
    from .device import Buffer  # late: device.py imports this module

    if value is None:
        return 0, None
    if isinstance(value, Buffer):
        return value.address, value
    if isinstance(value, bool):
        raise TypeError(f"{what}: a bool is not a pointer")
    if isinstance(value, int):
        return value, None
    if isinstance(value, ctypes._Pointer) or isinstance(value, ctypes.c_void_p):
        return ctypes.cast(value, ctypes.c_void_p).value or 0, value
    if isinstance(value, (ctypes.Array, ctypes.Structure, ctypes.Union, ctypes._SimpleCData)):
        return ctypes.addressof(value), value
    try:
        view = memoryview(value)
    except TypeError:
        raise TypeError(f"{what}: {type(value).__name__} is not a pointer, Buffer or buffer "
                        "(numpy array, bytearray...)") from None
    if not host:
        raise TypeError(f"{what}: a Python buffer is host memory; this device needs device "
                        "memory (Device.alloc)")
    if not view.c_contiguous:
        raise ValueError(f"{what}: the buffer is not C-contiguous (kernels see flat memory)")
    return buffer_address(value, view, what), value


def buffer_address(obj, view, what):
    """Address of the first byte of a buffer-protocol object, without copying it."""
    if view.nbytes == 0:
        return 0
    if not view.readonly:
        return ctypes.addressof((ctypes.c_char * view.nbytes).from_buffer(obj))
    interface = getattr(obj, "__array_interface__", None)
    if interface is not None:  # read-only numpy arrays
        return interface["data"][0]
    if isinstance(obj, bytes):
        return ctypes.cast(ctypes.c_char_p(obj), ctypes.c_void_p).value
    raise TypeError(f"{what}: read-only {type(obj).__name__} buffer; pass a writable one "
                    "(bytearray, numpy array)")


def scalar(token, value, what):
    """The ctypes value of a scalar argument, range-checked (ctypes would wrap silently)."""
    ctype = SIGNATURE_TOKENS[token]
    if token in ("f32", "f64"):
        if not isinstance(value, (int, float)) or isinstance(value, bool):
            raise TypeError(f"{what}: {token} needs a number, not {type(value).__name__}")
        return ctype(float(value))
    if isinstance(value, bool) or not hasattr(value, "__index__"):
        raise TypeError(f"{what}: {token} needs an int, not {type(value).__name__}")
    value = value.__index__()
    bits, signed = 8 * ctypes.sizeof(ctype), token[0] == "i"
    lo, hi = (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if signed else (0, (1 << bits) - 1)
    if not lo <= value <= hi:
        raise OverflowError(f"{what}: {value} does not fit {token} ({lo}..{hi})")
    return ctype(value)


class PackedArgs:
    """One kernel call's arguments: `array` is the void*[] libsk reads (NULL if no arguments)."""

    def __init__(self, kernel, values, host):
        tokens = kernel.signature_tokens
        if len(values) != len(tokens):
            raise TypeError(f"kernel {kernel.name!r} ({kernel.signature or 'no parameters'}) "
                            f"takes {len(tokens)} arguments, {len(values)} given")
        self.values, self.keepalive = [], []
        for i, (token, value) in enumerate(zip(tokens, values)):
            what = f"kernel {kernel.name!r} argument {i} ({token})"
            self.values.append(self.one(token, value, what, host))
        self.array = (ctypes.c_void_p * max(1, len(self.values)))(
            *[ctypes.addressof(v) for v in self.values])
        self.pointer = ctypes.cast(self.array, ctypes.POINTER(ctypes.c_void_p)) \
            if self.values else None

    def one(self, token, value, what, host):
        if token == "ptr":
            address, keep = address_of(value, what, host)
            if keep is not None:
                self.keepalive.append(keep)
            return ctypes.c_void_p(address)
        return scalar(token, value, what)
