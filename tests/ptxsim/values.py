"""Bit patterns and the numbers they stand for: integers of each width, IEEE halves, bfloat16,
singles and doubles. Registers hold raw bits (Python ints); an instruction reads them as its
type says and writes its result back as bits."""
import math
import struct

_F32 = struct.Struct("<f")
_F64 = struct.Struct("<d")
_F16 = struct.Struct("<e")
_U16 = struct.Struct("<H")
_U32 = struct.Struct("<I")
_U64 = struct.Struct("<Q")

MASK = {1: 1, 8: 0xFF, 16: 0xFFFF, 32: 0xFFFFFFFF, 64: 0xFFFFFFFFFFFFFFFF, 128: (1 << 128) - 1}
CANONICAL_NAN32 = 0x7FFFFFFF
FLT_MIN_NORMAL = 1.1754943508222875e-38


def signed(v, bits):
    v &= MASK[bits]
    return v - (1 << bits) if v >> (bits - 1) else v


def f32(bits):
    return _F32.unpack(_U32.pack(bits & 0xFFFFFFFF))[0]


def to_f32(x):
    """The single nearest `x` (round to nearest even), as bits; infinities past the range."""
    try:
        return _U32.unpack(_F32.pack(x))[0]
    except OverflowError:
        return 0x7F800000 if x > 0 else 0xFF800000


def f64(bits):
    return _F64.unpack(_U64.pack(bits & MASK[64]))[0]


def to_f64(x):
    return _U64.unpack(_F64.pack(x))[0]


def f16(bits):
    return _F16.unpack(_U16.pack(bits & 0xFFFF))[0]


def to_f16(x):
    try:
        return _U16.unpack(_F16.pack(x))[0]
    except OverflowError:
        return 0x7C00 if x > 0 else 0xFC00


def bf16(bits):
    return f32((bits & 0xFFFF) << 16)


def to_bf16(x):
    b = to_f32(x)
    if (b & 0x7F800000) == 0x7F800000 and b & 0x7FFFFF:
        return 0x7FC0
    return ((b + 0x7FFF + ((b >> 16) & 1)) >> 16) & 0xFFFF


def ftz32(x):
    """A subnormal single flushed to a zero of its sign (.ftz)."""
    return math.copysign(0.0, x) if x != 0 and abs(x) < FLT_MIN_NORMAL else x


READ = {"f32": f32, "f64": f64, "f16": f16, "bf16": bf16}
WRITE = {"f32": to_f32, "f64": to_f64, "f16": to_f16, "bf16": to_bf16}
