"""Python values checked before they reach ctypes, which would wrap integers, turn too-large
floats into inf and cut strings at a NUL without a word. Every error names the parameter."""
import numbers
import os
import struct

#: (lowest, highest) of each C integer type a parameter or signature token can have.
INTEGER_RANGES = {
    "i8": (-(1 << 7), (1 << 7) - 1), "u8": (0, (1 << 8) - 1),
    "i16": (-(1 << 15), (1 << 15) - 1), "u16": (0, (1 << 16) - 1),
    "i32": (-(1 << 31), (1 << 31) - 1), "u32": (0, (1 << 32) - 1),
    "i64": (-(1 << 63), (1 << 63) - 1), "u64": (0, (1 << 64) - 1),
    "size_t": (0, (1 << (8 * struct.calcsize("N"))) - 1),
}


class OutOfRange(OverflowError, ValueError):
    """A number that its C type cannot hold (an OverflowError, and a ValueError)."""


def _is_bool(value):
    # numpy's bool_ is no int subclass but has __index__ in older numpy releases.
    return isinstance(value, bool) or type(value).__name__ == "bool_"


def integer(value, ctype, what):
    """value as a Python int that fits C type `ctype` (a key of INTEGER_RANGES); ints and
    anything with __index__ (numpy integers), not bools or floats."""
    if _is_bool(value) or not hasattr(type(value), "__index__"):
        raise TypeError(f"{what}: {ctype} needs an int, not {type(value).__name__}")
    value = value.__index__()
    lo, hi = INTEGER_RANGES[ctype]
    if not lo <= value <= hi:
        raise OutOfRange(f"{what}: {value} does not fit {ctype} ({lo}..{hi})")
    return value


def real(value, ctype, what):
    """value as a Python float that C type `ctype` ("f32" or "f64") holds: finite values beyond
    its range are refused (inf and nan pass as they are). Any real number: int, float, numpy
    floating and integer scalars."""
    if _is_bool(value) or not isinstance(value, numbers.Real):
        raise TypeError(f"{what}: {ctype} needs a number, not {type(value).__name__}")
    try:
        number = float(value)
        if ctype == "f32":
            struct.pack("<f", number)  # standard size: raises for finite values beyond FLT_MAX
    except OverflowError:
        raise OutOfRange(f"{what}: {value!r} does not fit {ctype}") from None
    return number


def c_string(value, what, optional=False):
    """value (a str) as the bytes of a C string; None passes when optional. A NUL inside would
    cut the string short in C, so it is refused."""
    if value is None and optional:
        return None
    if not isinstance(value, str):
        raise TypeError(f"{what}: needs a str{' or None' if optional else ''}, "
                        f"not {type(value).__name__}")
    if "\0" in value:
        raise ValueError(f"{what}: {value!r} contains a NUL character")
    return value.encode()


def c_text(raw):
    """Bytes from C (names libsk or an object gives) as a str, with libsk's rule for text
    (sk_last_error, explain JSON): a byte that is not UTF-8 becomes the text \\xNN."""
    return raw.decode("utf-8", errors="backslashreplace")


# What libsk's messages escape to stay one line (one_line, src/common/text_escape.hpp).
_ONE_LINE = {0x0A: "\\n", 0x0D: "\\r", 0x09: "\\t",
             **{c: f"\\x{c:02x}" for c in (*range(0x20), 0x7F) if c not in (0x09, 0x0A, 0x0D)},
             **{c: f"\\u{c:04x}" for c in (*range(0x80, 0xA0), 0x2028, 0x2029)}}


def message_text(raw):
    """Bytes (a path, a name) as libsk's messages show them: c_text, kept on one line (newline,
    carriage return and tab as \\n, \\r, \\t; other control characters escaped)."""
    return c_text(raw).translate(_ONE_LINE)


def c_path(value, what):
    """A path (str, bytes or os.PathLike) as the bytes of a C string, refused with a NUL."""
    try:
        raw = os.fsencode(value)
    except TypeError:
        raise TypeError(f"{what}: needs a path (str, bytes or os.PathLike), not "
                        f"{type(value).__name__}") from None
    if b"\0" in raw:
        raise ValueError(f"{what}: {os.fsdecode(raw)!r} contains a NUL character")
    return raw


def instance(value, cls, what, optional=False):
    """value unless it is not a `cls` (None passes when optional): TypeError naming what."""
    if (value is None and optional) or isinstance(value, cls):
        return value
    raise TypeError(f"{what}: needs a {cls.__name__}{' or None' if optional else ''}, not "
                    f"{type(value).__name__}")


def blocks_and_grid(blocks, what, shape="grid"):
    """(block_dim, grid) of `blocks`: a block count (one dimension: grid (0, 0, 0)), or the
    grid's shape as Triton's launch grid is written, (x,), (x, y) or (x, y, z): block_dim their
    product (sk_kernel_options.grid). `shape` names it in messages (a block's threads too)."""
    if not isinstance(blocks, (tuple, list)):
        return integer(blocks, "u32", what), (0, 0, 0)
    if not 1 <= len(blocks) <= 3:
        raise TypeError(f"{what}: a {shape} has 1 to 3 extents, not {len(blocks)}: {blocks!r}")
    grid = [integer(b, "u32", f"{what}[{i}]") for i, b in enumerate(blocks)] + [1] * (3 - len(blocks))
    if 0 in grid:
        raise ValueError(f"{what}: {shape} {tuple(blocks)!r} has an extent of 0 (each is at least 1)")
    block_dim = grid[0] * grid[1] * grid[2]
    return integer(block_dim, "u32", f"{what}: the product of {shape} {tuple(blocks)!r}"), tuple(grid)
