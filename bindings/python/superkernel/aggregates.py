"""Aggregates in signatures: a C struct passed by value is its members in braces, "{f32,f32}"
for `struct {float x, y;}`, nested ("{{f32,f32},i32}"), a member array as "i32[5]", aligned
beyond its members by a suffix "@N" (C's alignas(N): "{u64[16]}@64", a CUtensorMap). libsk
passes it as the platform's C ABI passes that struct (sk.h, sk_module_get_kernel_with_signature);
here each one becomes the ctypes.Structure C would lay out, and a Python value becomes its bytes.

A value for an aggregate is a tuple or list of its members' values (a nested aggregate or an
array member as a tuple or list of its own), a ctypes object of the struct's size, or bytes of
that size.
"""
import collections
import ctypes
import functools

from .checks import integer, real

#: The scalar tokens and their ctypes types (an aggregate's members are these or aggregates).
SCALAR_TYPES = {
    "ptr": ctypes.c_void_p,
    "i8": ctypes.c_int8, "u8": ctypes.c_uint8,
    "i16": ctypes.c_int16, "u16": ctypes.c_uint16,
    "i32": ctypes.c_int32, "u32": ctypes.c_uint32,
    "i64": ctypes.c_int64, "u64": ctypes.c_uint64,
    "f32": ctypes.c_float, "f64": ctypes.c_double,
}
MAX_BYTES = 32768  # libsk's bounds (src/common/signature.hpp): larger ones fail there too
MAX_DEPTH = 8
MAX_ALIGN = 256

#: A parsed aggregate: its (type, count) members and the alignment "@N" gives it (None: its
#: members').
Aggregate = collections.namedtuple("Aggregate", "members align")
_EXPECTED = ("expected one of " + ",".join(SCALAR_TYPES) +
             " or an aggregate {T,T...} (members may be arrays T[N])")


class _Parser:
    """One signature's recursive descent, as libsk's: every error names the parameter."""

    def __init__(self, text):
        self.text, self.pos, self.param = text, 0, 0

    def error(self, detail):
        shown = self.text if len(self.text) <= 64 else self.text[:64] + "..."
        return ValueError(f"signature {shown!r}: parameter {self.param} {detail}")

    def skip(self):
        while self.pos < len(self.text) and self.text[self.pos] in " \t":
            self.pos += 1

    def peek(self):
        return self.text[self.pos] if self.pos < len(self.text) else ""

    def parse(self):
        if not self.text.strip():
            return []
        tokens = []
        while True:
            tree = self.type(0)
            self.skip()
            if self.peek() == "[":
                raise self.error(f"is an array '{canonical(tree)}[...]': an array parameter is a "
                                 "pointer in C (pass 'ptr'), or wrap it in an aggregate {T[N]}")
            tokens.append(canonical(tree))
            if self.pos == len(self.text):
                return tokens
            if self.text[self.pos] != ",":
                raise self.error(f"has an unexpected {self.text[self.pos]!r} at character {self.pos}")
            self.pos += 1
            self.param += 1

    def type(self, depth):
        self.skip()
        if self.peek() == "{":
            return self.aggregate(depth)
        begin = self.pos
        while self.pos < len(self.text) and self.text[self.pos] not in ",{}[]":
            self.pos += 1
        token = self.text[begin:self.pos].strip()
        if token not in SCALAR_TYPES:
            where = "is" if depth == 0 else "has a member"
            raise self.error(f"{where} {token!r}, {_EXPECTED}")
        return token

    def aggregate(self, depth):
        opened = self.pos
        self.pos += 1
        if depth >= MAX_DEPTH:
            raise self.error(f"nests aggregates more than {MAX_DEPTH} deep")
        self.skip()
        if self.peek() == "}":
            raise self.error(f"has an empty aggregate '{{}}' at character {opened}: C has no empty structs")
        members = []
        while True:
            tree = self.type(depth + 1)
            self.skip()
            count = 1
            if self.peek() == "[":
                close = self.text.find("]", self.pos)
                if close < 0:
                    raise self.error(f"has a '[' at character {self.pos} that is not closed")
                n = self.text[self.pos + 1:close].strip()
                if not (n.isdigit() and len(n) <= 5 and 1 <= int(n) <= MAX_BYTES):
                    raise self.error(f"has an array length {n!r} that is not a number from 1 to {MAX_BYTES}")
                count, self.pos = int(n), close + 1
                self.skip()
            members.append((tree, count))
            if self.pos >= len(self.text):
                raise self.error(f"has a '{{' at character {opened} that is not closed")
            if self.text[self.pos] == "}":
                self.pos += 1
                break
            if self.text[self.pos] != ",":
                raise self.error(f"has an unexpected {self.text[self.pos]!r} at character {self.pos}")
            self.pos += 1
        tree = Aggregate(tuple(members), None)
        self.skip()
        if self.peek() == "@":
            at = self.pos
            self.pos += 1
            self.skip()
            begin = self.pos
            while self.pos < len(self.text) and self.text[self.pos].isdigit() and self.pos - begin < 5:
                self.pos += 1
            n = int(self.text[begin:self.pos] or "0")
            if not n or n > MAX_ALIGN or n & (n - 1):
                raise self.error(f"has an alignment at character {at} that is not a power of two "
                                 f"from 1 to {MAX_ALIGN}")
            if n < _alignment(tree):
                raise self.error(f"aligns the aggregate at character {opened} to {n}, less than its "
                                 f"members' {_alignment(tree)}")
            tree = Aggregate(tree.members, n if n > _alignment(tree) else None)
        if ctypes.sizeof(_ctype(tree)) > MAX_BYTES:
            raise self.error(f"has an aggregate of more than {MAX_BYTES} bytes")
        return tree


def canonical(tree):
    """A parsed type as libsk prints it: "{f32,f32}", "{i32[5]}", "{u64[16]}@64", "u32"."""
    if isinstance(tree, str):
        return tree
    text = "{" + ",".join(canonical(t) + (f"[{n}]" if n != 1 else "") for t, n in tree.members) + "}"
    return text + (f"@{tree.align}" if tree.align else "")


def parse_types(signature):
    """"ptr, {f32,f32}" -> ["ptr", "{f32,f32}"]: each parameter's type as libsk prints it."""
    return _Parser(signature).parse()


@functools.lru_cache(maxsize=None)
def _alignment(tree):
    if isinstance(tree, str):
        return ctypes.alignment(SCALAR_TYPES[tree])
    return tree.align or max(_alignment(t) for t, _ in tree.members)


@functools.lru_cache(maxsize=None)
def _ctype(tree):
    """The Structure C lays out: members m0, m1... at their alignment, the size a multiple of
    the aggregate's; the padding is spelled out (ctypes knows no alignas)."""
    if isinstance(tree, str):
        return SCALAR_TYPES[tree]
    fields, offset = [], 0
    for i, (t, n) in enumerate(tree.members):
        member = _ctype(t) * n if n != 1 else _ctype(t)
        gap = -offset % _alignment(t)
        if gap:
            fields.append((f"_pad{i}", ctypes.c_uint8 * gap))
        fields.append((f"m{i}", member))
        offset += gap + ctypes.sizeof(member)
    if -offset % _alignment(tree):
        fields.append(("_tail", ctypes.c_uint8 * (-offset % _alignment(tree))))
    return type("Aggregate", (ctypes.Structure,), {"_pack_": 1, "_fields_": fields})


@functools.lru_cache(maxsize=None)
def _tree(token):
    return _Parser(token).type(0)


def is_aggregate(token):
    return token.startswith("{")


def ctype_of(token):
    """The ctypes type of a parameter's type token: a scalar's, or the Structure of an
    aggregate, laid out as C lays out the struct."""
    return _ctype(_tree(token))


def aggregate(token, value, what, pointer):
    """(the ctypes Structure of aggregate `token` holding `value`, objects to keep alive);
    `pointer(value, what)` converts a ptr member as a pointer argument is converted."""
    ctype = ctype_of(token)
    if isinstance(value, (ctypes.Structure, ctypes.Union, ctypes.Array)):
        value = ctypes.string_at(ctypes.addressof(value), ctypes.sizeof(value))
    if isinstance(value, (bytes, bytearray, memoryview)):
        data = bytes(value)
        if len(data) != ctypes.sizeof(ctype):
            raise ValueError(f"{what}: {token} takes {ctypes.sizeof(ctype)} bytes, "
                             f"{type(value).__name__} holds {len(data)}")
        return ctype.from_buffer_copy(data), []
    keep = []
    return ctype(**_members(_tree(token), value, what, pointer, keep)), keep


def _members(tree, value, what, pointer, keep):
    if not isinstance(value, (tuple, list)):
        raise TypeError(f"{what}: an aggregate {canonical(tree)} needs a tuple or list of its "
                        f"{_members_text(tree)} (or its bytes), not {type(value).__name__}")
    if len(value) != len(tree.members):
        raise ValueError(f"{what}: {canonical(tree)} has {_members_text(tree)}, {len(value)} given")
    out = {}
    for i, ((t, n), v) in enumerate(zip(tree.members, value)):
        member = f"{what} member {i}"
        if n == 1:
            out[f"m{i}"] = _member(t, v, member, pointer, keep)
            continue
        if not isinstance(v, (tuple, list)) or len(v) != n:
            raise TypeError(f"{member}: an array of {n} needs a tuple or list of {n} values")
        array = _ctype(t) * n
        out[f"m{i}"] = array(*[_member(t, e, f"{member}[{j}]", pointer, keep) for j, e in enumerate(v)])
    return out


def _members_text(tree):
    return f"{len(tree.members)} member" + ("s" if len(tree.members) != 1 else "")


def _member(tree, value, what, pointer, keep):
    if not isinstance(tree, str):
        return _ctype(tree)(**_members(tree, value, what, pointer, keep))
    if tree == "ptr":
        address, kept = pointer(value, what)
        if kept is not None:
            keep.append(kept)
        return address
    if tree in ("f32", "f64"):
        return real(value, tree, what)
    return integer(value, tree, what)
