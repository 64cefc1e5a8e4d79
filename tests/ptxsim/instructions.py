"""Each PTX instruction compiled into a Python function of (thread, frame) that does what it
does and says what comes next: None (the next statement), a statement index (a branch), or one
of the signals below. The machine (machine.py) supplies memory, barriers and calls."""
import math

from . import memory as M
from .ptx_text import TYPE_BYTES, PtxError
from .values import (MASK, READ, WRITE, f32, ftz32, signed, to_f32)

BLOCK, YIELD, SWITCH, EXIT = -1, -2, -3, -4

SPECIAL = ("%tid", "%ntid", "%ctaid", "%nctaid", "%laneid", "%warpid", "%nwarpid", "%smid",
           "%nsmid", "%clock", "%clock64", "%globaltimer", "%lanemask", "%dynamic_smem_size",
           "%total_smem_size", "%envreg", "%gridid", "%clusterid", "%nclusterid",
           "%cluster_ctaid", "%cluster_nctaid", "%cluster_ctarank", "%cluster_nctarank",
           "%is_explicit_cluster", "%globaltimer_lo", "%globaltimer_hi")
SPACES = ("global", "shared", "local", "param", "const")


def type_of(parts):
    """The instruction's (last) type suffix."""
    for p in reversed(parts):
        if p in TYPE_BYTES:
            return p
    return None


def bits_of(t):
    return 1 if t == "pred" else TYPE_BYTES[t] * 8


class Unsupported(PtxError):
    pass


def _where(ins):
    return f"line {ins.line}: {ins.text}"


def special_register(name):
    """A reader of a special register."""
    base, _, comp = name.partition(".")
    axis = "xyz".find(comp) if comp in ("x", "y", "z") else None
    if base == "%tid":
        return lambda th, fr: th.tid[axis]
    if base == "%ntid":
        return lambda th, fr: th.m.block[axis]
    if base == "%ctaid":
        return lambda th, fr: th.cta.idx[axis]
    if base == "%nctaid":
        return lambda th, fr: th.m.grid[axis]
    if base == "%laneid":
        return lambda th, fr: th.lane
    if base == "%warpid":
        return lambda th, fr: th.flat // 32
    if base == "%nwarpid":
        return lambda th, fr: 64
    if base == "%smid":
        return lambda th, fr: th.cta.flat % th.m.sms
    if base == "%nsmid":
        return lambda th, fr: th.m.sms
    if base in ("%clock", "%clock64"):
        return lambda th, fr: th.m.executed
    if base in ("%globaltimer", "%globaltimer_lo"):  # a nanosecond a statement, plus the sleeps
        return lambda th, fr: th.m.executed + th.m.slept
    if base == "%globaltimer_hi":
        return lambda th, fr: (th.m.executed + th.m.slept) >> 32
    if base == "%lanemask_eq":
        return lambda th, fr: 1 << th.lane
    if base == "%lanemask_lt":
        return lambda th, fr: (1 << th.lane) - 1
    if base == "%lanemask_le":
        return lambda th, fr: (2 << th.lane) - 1
    if base == "%lanemask_gt":
        return lambda th, fr: 0xFFFFFFFF & ~((2 << th.lane) - 1)
    if base == "%lanemask_ge":
        return lambda th, fr: 0xFFFFFFFF & ~((1 << th.lane) - 1)
    if base == "%dynamic_smem_size":
        return lambda th, fr: th.m.dynamic_shared
    if base == "%total_smem_size":
        return lambda th, fr: len(th.cta.shared)
    if base.startswith("%envreg"):  # a cooperative launch's grid workspace in 1 and 2
        number = int(base[len("%envreg"):])
        return lambda th, fr: th.m.envreg.get(number, 0)
    if base == "%gridid":
        return lambda th, fr: 0
    if base in ("%clusterid", "%cluster_ctaid"):
        return lambda th, fr: th.cta.idx[axis] if base == "%cluster_ctaid" else 0
    if base in ("%nclusterid", "%cluster_nctaid"):
        return lambda th, fr: 1 if base == "%cluster_nctaid" else th.m.grid[axis]
    if base == "%cluster_ctarank":
        return lambda th, fr: 0
    if base == "%cluster_nctarank":
        return lambda th, fr: 1
    if base == "%is_explicit_cluster":
        return lambda th, fr: 0
    return None


class Compiler:
    """Compiles one function's statements for the simulator that loaded its module
    (machine.Simulator), whose memory, barriers and calls they use."""

    def __init__(self, sim, fn):
        self.mod, self.fn = sim, fn

    # ---- operands --------------------------------------------------------------------------
    def read(self, o, t, ins):
        """A reader of operand `o` as type `t` (raw bits, masked to its width)."""
        bits = bits_of(t) if t else 64
        mask = MASK[bits]
        kind = o[0]
        if kind == "reg":
            name = o[1]
            sreg = special_register(name) if name.startswith(SPECIAL) else None
            if sreg is not None:
                return lambda th, fr: sreg(th, fr) & mask
            def reg(th, fr):
                try:
                    return fr.regs[name] & mask
                except KeyError:
                    raise self.unset(name, ins, th) from None
            return reg
        if kind == "not":
            name = o[1]
            def negated(th, fr):
                try:
                    return 1 - (fr.regs[name] & 1)
                except KeyError:
                    raise self.unset(name, ins, th) from None
            return negated
        if kind == "imm":
            v = o[1]
            if o[2] is not None and t in READ and o[2] != t:
                v = WRITE[t](READ[o[2]](v))
            v &= mask
            return lambda th, fr: v
        if kind == "fimm":
            if t not in WRITE:
                raise Unsupported(f"{_where(ins)}: a float literal for .{t}")
            v = WRITE[t](o[1]) & mask
            return lambda th, fr: v
        if kind == "sym":
            addr, off = self.symbol_address(o[1], ins), o[2]
            return lambda th, fr: (addr(th, fr) + off) & mask
        raise Unsupported(f"{_where(ins)}: operand {o}")

    def unset(self, name, ins, th):
        """A register read before any statement of its function's call wrote it: on a GPU, what
        was there before."""
        return PtxError(f"{self.mod.ptx.label}: {_where(ins)}: {self.fn.name} reads {name}, which no statement "
                        f"wrote (block {th.cta.idx}, thread {th.tid})")

    def symbol_address(self, name, ins):
        """The address of a variable (in its space), a kernel parameter (its offset in the
        parameter space) or a .local array (in the thread's local space)."""
        var = self.mod.variables.get(name)
        if var is not None:
            return lambda th, fr: var.address
        if name in self.fn.locals:
            off = self.mod.local_offsets[self.fn.name][name]
            return lambda th, fr: fr.local_base + off
        if self.fn.entry and name in self.mod.kparam_offsets.get(self.fn.name, {}):
            off = self.mod.kparam_offsets[self.fn.name][name]
            return lambda th, fr: off
        if name in self.mod.ptx.functions:
            raise Unsupported(f"{_where(ins)}: the address of function {name} (indirect calls)")
        raise PtxError(f"{_where(ins)}: unknown symbol {name}")

    def write(self, o, t, ins):
        if o[0] == "sink":
            return lambda th, fr, v: None
        if o[0] != "reg":
            raise PtxError(f"{_where(ins)}: destination {o}")
        name = o[1]
        mask = MASK[bits_of(t)] if t else MASK[64]
        def w(th, fr, v):
            fr.regs[name] = v & mask
        return w

    def address(self, o, ins):
        """A reader of an address operand's value, plus the symbol for [name] param forms."""
        if o[0] != "addr":
            raise PtxError(f"{_where(ins)}: not an address: {o}")
        base, off = o[1], o[2]
        if base is None:
            return lambda th, fr: off
        if base.startswith("%"):
            return lambda th, fr: (fr.regs.get(base, 0) + off) & MASK[64]
        a = self.symbol_address(base, ins)
        return lambda th, fr: (a(th, fr) + off) & MASK[64]

    # ---- compile ---------------------------------------------------------------------------
    def compile(self, ins):
        head = ins.parts[0]
        method = getattr(self, "op_" + head.replace("::", "_"), None)
        if method is None:
            raise Unsupported(f"{self.mod.ptx.label}: {_where(ins)}: '{ins.op}' is not simulated")
        return method(ins)

    # data movement ---------------------------------------------------------------------------
    def op_mov(self, ins):
        t = type_of(ins.parts)
        d, a = ins.args
        if d[0] == "vec":  # unpack: mov.b64 {lo, hi}, x
            n = len(d[1])
            part = bits_of(t) // n
            src = self.read(a, t, ins)
            ws = [self.write(x, "b%d" % part if part > 1 else "pred", ins) for x in d[1]]
            def ex(th, fr):
                v = src(th, fr)
                for i, w in enumerate(ws):
                    w(th, fr, v >> (part * i))
            return ex
        if a[0] == "vec":  # pack
            n = len(a[1])
            part = bits_of(t) // n
            srcs = [self.read(x, "b%d" % part, ins) for x in a[1]]
            w = self.write(d, t, ins)
            def ex(th, fr):
                v = 0
                for i, s in enumerate(srcs):
                    v |= s(th, fr) << (part * i)
                w(th, fr, v)
            return ex
        src = self.read(a, t, ins)
        w = self.write(d, t, ins)
        def ex(th, fr):
            w(th, fr, src(th, fr))
        return ex

    def op_cvta(self, ins):
        to = "to" in ins.parts
        space = next(p for p in ins.parts if p in SPACES)
        d, a = ins.args
        t = type_of(ins.parts)
        src = self.read(a, t, ins)
        w = self.write(d, t, ins)
        m = self.mod
        if to:
            def ex(th, fr):
                w(th, fr, m.from_generic(space, src(th, fr)))
        else:
            def ex(th, fr):
                w(th, fr, m.to_generic(space, src(th, fr)))
        return ex

    def op_isspacep(self, ins):
        space = ins.parts[1]
        d, a = ins.args
        src = self.read(a, "u64", ins)
        w = self.write(d, "pred", ins)
        m = self.mod
        def ex(th, fr):
            w(th, fr, 1 if m.space_of(src(th, fr)) == space else 0)
        return ex

    def _space(self, ins):
        for p in ins.parts[1:]:
            q = p.split("::")[0]
            if q in SPACES:
                return q
        return "generic"

    def _memory(self, ins, a):
        """Reading and writing the bytes an ld or st names: a parameter by name ([p], [p+8],
        kernel or call parameter), else the address in the instruction's state space, with the
        ordering its qualifiers ask of global memory."""
        space = self._space(ins)
        m = self.mod
        if space == "param" and a[1] is not None and not a[1].startswith("%"):
            name, off = a[1], a[2]
            return (lambda th, fr, n: m.param_read(th, fr, name, off, n, ins),
                    lambda th, fr, data: m.param_write(th, fr, name, off, data, ins))
        addr = self.address(a, ins)
        lo, so = M.load_order(ins.parts), M.store_order(ins.parts)
        return (lambda th, fr, n: m.read(th, fr, space, addr(th, fr), n, ins, lo),
                lambda th, fr, data: m.write(th, fr, space, addr(th, fr), data, ins, so))

    def op_ld(self, ins):
        t = type_of(ins.parts)
        size = TYPE_BYTES[t]
        d = ins.args[0]
        ws = [self.write(x, t, ins) for x in (d[1] if d[0] == "vec" else [d])]
        load, _ = self._memory(ins, ins.args[1])
        def ex(th, fr):
            raw = load(th, fr, size * len(ws))
            for i, w in enumerate(ws):
                w(th, fr, int.from_bytes(raw[i * size:(i + 1) * size], "little"))
        return ex

    op_ldu = op_ld

    def op_st(self, ins):
        t = type_of(ins.parts)
        size = TYPE_BYTES[t]
        v = ins.args[1]
        srcs = [self.read(x, t, ins) for x in (v[1] if v[0] == "vec" else [v])]
        _, store = self._memory(ins, ins.args[0])
        def ex(th, fr):
            store(th, fr, b"".join(s(th, fr).to_bytes(size, "little") for s in srcs))
        return ex

    def op_atom(self, ins):
        return self._atomic(ins, has_dest=True)

    def op_red(self, ins):
        return self._atomic(ins, has_dest=False)

    def _atomic(self, ins, has_dest):
        t = type_of(ins.parts)
        if t in ("f16x2", "bf16x2", "f16", "bf16"):
            raise Unsupported(f"{_where(ins)}: half-precision atomics are not simulated")
        size = TYPE_BYTES[t]
        bits = size * 8
        space = self._space(ins)
        ops = ("add", "inc", "dec", "min", "max", "and", "or", "xor", "exch", "cas")
        op = next(p for p in ins.parts if p in ops)
        args = ins.args if not has_dest else ins.args[1:]
        w = self.write(ins.args[0], t, ins) if has_dest else None
        addr = self.address(args[0], ins)
        b = self.read(args[1], t, ins)
        c = self.read(args[2], t, ins) if len(args) > 2 else None
        m = self.mod
        mask = MASK[bits]
        acquire, release = M.atomic_order(ins.parts)

        def combine(old, x, y):
            if op == "add":
                if t in READ:
                    return WRITE[t](READ[t](old) + READ[t](x))
                return old + x
            if op == "inc":
                return 0 if old >= x else old + 1
            if op == "dec":
                return x if old == 0 or old > x else old - 1
            if op in ("min", "max"):
                if t in READ:
                    f = min if op == "min" else max
                    return WRITE[t](f(READ[t](old), READ[t](x)))
                if t[0] == "s":
                    so, sx = signed(old, bits), signed(x, bits)
                    return (min if op == "min" else max)(so, sx)
                return (min if op == "min" else max)(old, x)
            if op == "and":
                return old & x
            if op == "or":
                return old | x
            if op == "xor":
                return old ^ x
            if op == "exch":
                return x
            return y if old == x else old  # cas

        def ex(th, fr):
            x, y = b(th, fr), c(th, fr) if c else None
            def change(raw):
                return (combine(int.from_bytes(raw, "little"), x, y) & mask).to_bytes(size, "little")
            old = m.rmw(th, fr, space, addr(th, fr), size, change, ins, acquire, release)
            if w:
                w(th, fr, int.from_bytes(old, "little"))
        return ex

    # integer arithmetic ----------------------------------------------------------------------
    def _binary(self, ins, f, t=None, dest_t=None):
        t = t or type_of(ins.parts)
        d, a, b = ins.args[:3]
        ra, rb = self.read(a, t, ins), self.read(b, t, ins)
        w = self.write(d, dest_t or t, ins)
        def ex(th, fr):
            w(th, fr, f(ra(th, fr), rb(th, fr)))
        return ex

    def _float_binary(self, ins, f):
        t = type_of(ins.parts)
        rd, wr = READ[t], WRITE[t]
        ftz = "ftz" in ins.parts and t == "f32"
        sat = "sat" in ins.parts
        def g(x, y):
            x, y = rd(x), rd(y)
            if ftz:
                x, y = ftz32(x), ftz32(y)
            r = f(x, y)
            if ftz:
                r = ftz32(f32(to_f32(r)))
            if sat:
                r = 0.0 if r != r else min(max(r, 0.0), 1.0)
            return wr(r)
        if t in ("f16x2", "bf16x2"):
            raise Unsupported(f"{_where(ins)}: packed halves are not simulated")
        return self._binary(ins, g)

    def op_add(self, ins):
        t = type_of(ins.parts)
        if t in READ or t in ("f16x2", "bf16x2"):
            return self._float_binary(ins, lambda x, y: x + y)
        if "sat" in ins.parts:
            return self._binary(ins, lambda x, y: max(-2**31, min(2**31 - 1, signed(x, 32) + signed(y, 32))))
        return self._binary(ins, lambda x, y: x + y)

    def op_sub(self, ins):
        t = type_of(ins.parts)
        if t in READ or t in ("f16x2", "bf16x2"):
            return self._float_binary(ins, lambda x, y: x - y)
        return self._binary(ins, lambda x, y: x - y)

    def op_mul(self, ins):
        t = type_of(ins.parts)
        if t in READ or t in ("f16x2", "bf16x2"):
            return self._float_binary(ins, lambda x, y: x * y)
        bits = bits_of(t)
        sgn = t[0] == "s"
        conv = (lambda v: signed(v, bits)) if sgn else (lambda v: v)
        if "wide" in ins.parts:
            return self._binary(ins, lambda x, y: conv(x) * conv(y), dest_t=t[0] + str(2 * bits))
        if "hi" in ins.parts:
            return self._binary(ins, lambda x, y: (conv(x) * conv(y)) >> bits)
        return self._binary(ins, lambda x, y: x * y)

    def op_mul24(self, ins):
        t = type_of(ins.parts)
        sgn = t[0] == "s"
        conv = (lambda v: signed(v & 0xFFFFFF, 24)) if sgn else (lambda v: v & 0xFFFFFF)
        hi = "hi" in ins.parts
        return self._binary(ins, lambda x, y: (conv(x) * conv(y)) >> 16 if hi else conv(x) * conv(y))

    def _ternary(self, ins, f, t=None, dest_t=None, c_t=None):
        t = t or type_of(ins.parts)
        d, a, b, c = ins.args[:4]
        ra, rb, rc = self.read(a, t, ins), self.read(b, t, ins), self.read(c, c_t or dest_t or t, ins)
        w = self.write(d, dest_t or t, ins)
        def ex(th, fr):
            w(th, fr, f(ra(th, fr), rb(th, fr), rc(th, fr)))
        return ex

    def op_mad(self, ins):
        t = type_of(ins.parts)
        if t in READ:
            return self.op_fma(ins)
        bits = bits_of(t)
        sgn = t[0] == "s"
        conv = (lambda v: signed(v, bits)) if sgn else (lambda v: v)
        if "wide" in ins.parts:
            wide = t[0] + str(2 * bits)
            return self._ternary(ins, lambda x, y, z: conv(x) * conv(y) + z, dest_t=wide)
        if "hi" in ins.parts:
            return self._ternary(ins, lambda x, y, z: ((conv(x) * conv(y)) >> bits) + z)
        return self._ternary(ins, lambda x, y, z: x * y + z)

    def op_mad24(self, ins):
        t = type_of(ins.parts)
        conv = (lambda v: signed(v & 0xFFFFFF, 24)) if t[0] == "s" else (lambda v: v & 0xFFFFFF)
        return self._ternary(ins, lambda x, y, z: conv(x) * conv(y) + z)

    def op_fma(self, ins):
        t = type_of(ins.parts)
        if t not in READ:
            raise Unsupported(f"{_where(ins)}: fma.{t} is not simulated")
        rd, wr = READ[t], WRITE[t]
        ftz = "ftz" in ins.parts and t == "f32"
        sat = "sat" in ins.parts
        def g(x, y, z):
            x, y, z = rd(x), rd(y), rd(z)
            if ftz:
                x, y, z = ftz32(x), ftz32(y), ftz32(z)
            r = _fma(x, y, z)
            if ftz:
                r = ftz32(f32(to_f32(r)))
            if sat:
                r = 0.0 if r != r else min(max(r, 0.0), 1.0)
            return wr(r)
        return self._ternary(ins, g)

    def op_div(self, ins):
        t = type_of(ins.parts)
        if t in READ:
            return self._float_binary(ins, _fdiv)
        bits = bits_of(t)
        if t[0] == "s":
            def f(x, y):
                x, y = signed(x, bits), signed(y, bits)
                if y == 0:
                    return -1
                q = abs(x) // abs(y)
                return q if (x < 0) == (y < 0) else -q
            return self._binary(ins, f)
        return self._binary(ins, lambda x, y: MASK[bits] if y == 0 else x // y)

    def op_rem(self, ins):
        t = type_of(ins.parts)
        bits = bits_of(t)
        if t[0] == "s":
            def f(x, y):
                x, y = signed(x, bits), signed(y, bits)
                if y == 0:
                    return x
                r = abs(x) % abs(y)
                return -r if x < 0 else r
            return self._binary(ins, f)
        return self._binary(ins, lambda x, y: x if y == 0 else x % y)

    def _unary(self, ins, f, dest_t=None):
        t = type_of(ins.parts)
        d, a = ins.args[:2]
        ra = self.read(a, t, ins)
        w = self.write(d, dest_t or t, ins)
        def ex(th, fr):
            w(th, fr, f(ra(th, fr)))
        return ex

    def _float_unary(self, ins, f):
        t = type_of(ins.parts)
        if t not in READ:
            raise Unsupported(f"{_where(ins)}: {ins.op} is not simulated")
        rd, wr = READ[t], WRITE[t]
        ftz = "ftz" in ins.parts and t == "f32"
        def g(x):
            x = rd(x)
            if ftz:
                x = ftz32(x)
            r = f(x)
            if ftz:
                r = ftz32(f32(to_f32(r)))
            return wr(r)
        return self._unary(ins, g)

    def op_abs(self, ins):
        t = type_of(ins.parts)
        if t in READ:
            bits = bits_of(t)
            return self._unary(ins, lambda x: x & (MASK[bits] >> 1))
        bits = bits_of(t)
        return self._unary(ins, lambda x: abs(signed(x, bits)))

    def op_neg(self, ins):
        t = type_of(ins.parts)
        if t in READ:
            bits = bits_of(t)
            return self._unary(ins, lambda x: x ^ (1 << (bits - 1)))
        return self._unary(ins, lambda x: -x)

    def op_not(self, ins):
        return self._unary(ins, lambda x: ~x)

    def op_cnot(self, ins):
        return self._unary(ins, lambda x: 1 if x == 0 else 0)

    def op_and(self, ins):
        return self._binary(ins, lambda x, y: x & y)

    def op_or(self, ins):
        return self._binary(ins, lambda x, y: x | y)

    def op_xor(self, ins):
        return self._binary(ins, lambda x, y: x ^ y)

    def op_shl(self, ins):
        t = type_of(ins.parts)
        bits = bits_of(t)
        d, a, b = ins.args
        ra, rb = self.read(a, t, ins), self.read(b, "u32", ins)
        w = self.write(d, t, ins)
        def ex(th, fr):
            s = rb(th, fr)
            w(th, fr, 0 if s >= bits else ra(th, fr) << s)
        return ex

    def op_shr(self, ins):
        t = type_of(ins.parts)
        bits = bits_of(t)
        d, a, b = ins.args
        ra, rb = self.read(a, t, ins), self.read(b, "u32", ins)
        w = self.write(d, t, ins)
        sgn = t[0] == "s"
        def ex(th, fr):
            s = min(rb(th, fr), bits)
            x = ra(th, fr)
            w(th, fr, (signed(x, bits) >> s) if sgn else (x >> s))
        return ex

    def op_shf(self, ins):
        d, a, b, c = ins.args
        ra, rb, rc = self.read(a, "b32", ins), self.read(b, "b32", ins), self.read(c, "u32", ins)
        w = self.write(d, "b32", ins)
        left = "l" in ins.parts
        wrap = "wrap" in ins.parts
        def ex(th, fr):
            n = rc(th, fr)
            n = n & 31 if wrap else min(n, 32)
            v = (rb(th, fr) << 32) | ra(th, fr)
            w(th, fr, (v << n) >> 32 if left else v >> n)
        return ex

    def op_min(self, ins):
        return self._minmax(ins, min)

    def op_max(self, ins):
        return self._minmax(ins, max)

    def _minmax(self, ins, f):
        t = type_of(ins.parts)
        if t in READ:
            nan = "NaN" in ins.parts
            def g(x, y):
                if x != x or y != y:
                    if nan or (x != x and y != y):
                        return float("nan")
                    return y if x != x else x
                if x == 0 and y == 0:  # -0 is less than +0
                    return (x if math.copysign(1, x) < 0 else y) if f is min else (x if math.copysign(1, x) > 0 else y)
                return f(x, y)
            return self._float_binary(ins, g)
        bits = bits_of(t)
        if t[0] == "s":
            return self._binary(ins, lambda x, y: f(signed(x, bits), signed(y, bits)))
        return self._binary(ins, f)

    def op_popc(self, ins):
        return self._unary(ins, lambda x: bin(x).count("1"), dest_t="u32")

    def op_clz(self, ins):
        bits = bits_of(type_of(ins.parts))
        return self._unary(ins, lambda x: bits - x.bit_length(), dest_t="u32")

    def op_brev(self, ins):
        bits = bits_of(type_of(ins.parts))
        return self._unary(ins, lambda x: int(format(x, "0%db" % bits)[::-1], 2))

    def op_bfind(self, ins):
        t = type_of(ins.parts)
        bits = bits_of(t)
        shiftamt = "shiftamt" in ins.parts
        def f(x):
            if t[0] == "s" and signed(x, bits) < 0:
                x = ~x & MASK[bits]
            if x == 0:
                return 0xFFFFFFFF
            p = x.bit_length() - 1
            return bits - 1 - p if shiftamt else p
        return self._unary(ins, f, dest_t="u32")

    def op_bfe(self, ins):
        t = type_of(ins.parts)
        bits = bits_of(t)
        d, a, b, c = ins.args
        ra, rb, rc = self.read(a, t, ins), self.read(b, "u32", ins), self.read(c, "u32", ins)
        w = self.write(d, t, ins)
        def ex(th, fr):
            x, pos, ln = ra(th, fr), rb(th, fr) & 0xFF, rc(th, fr) & 0xFF
            if ln == 0:
                w(th, fr, 0)
                return
            field = (x >> pos) & ((1 << ln) - 1) if pos < bits else 0
            if t[0] == "s":
                sbit = (x >> min(pos + ln - 1, bits - 1)) & 1
                if sbit:
                    field |= MASK[bits] & ~((1 << min(ln, bits)) - 1)
            w(th, fr, field)
        return ex

    def op_bfi(self, ins):
        t = type_of(ins.parts)
        bits = bits_of(t)
        d, f_, b, c, e = ins.args
        rf, rb, rc, re_ = (self.read(f_, t, ins), self.read(b, t, ins), self.read(c, "u32", ins),
                           self.read(e, "u32", ins))
        w = self.write(d, t, ins)
        def ex(th, fr):
            pos, ln = rc(th, fr) & 0xFF, re_(th, fr) & 0xFF
            base = rb(th, fr)
            if ln == 0 or pos >= bits:
                w(th, fr, base)
                return
            m = ((1 << ln) - 1) << pos
            w(th, fr, (base & ~m) | ((rf(th, fr) << pos) & m))
        return ex

    def op_prmt(self, ins):
        d, a, b, c = ins.args
        ra, rb, rc = self.read(a, "b32", ins), self.read(b, "b32", ins), self.read(c, "b32", ins)
        w = self.write(d, "b32", ins)
        mode = next((p for p in ins.parts[2:] if p in ("f4e", "b4e", "rc8", "ecl", "ecr", "rc16")), None)
        def ex(th, fr):
            v = (rb(th, fr) << 32) | ra(th, fr)
            sel = rc(th, fr)
            by = [(v >> (8 * i)) & 0xFF for i in range(8)]
            out = 0
            if mode is None:
                for i in range(4):
                    s = (sel >> (4 * i)) & 0xF
                    x = by[s & 7]
                    if s & 8:
                        x = 0xFF if x & 0x80 else 0
                    out |= x << (8 * i)
            else:
                raise Unsupported(f"{_where(ins)}: prmt.{mode} is not simulated")
            w(th, fr, out)
        return ex

    def op_lop3(self, ins):
        d, a, b, c, lut = ins.args[:5]
        ra, rb, rc = self.read(a, "b32", ins), self.read(b, "b32", ins), self.read(c, "b32", ins)
        lut_v = lut[1]
        w = self.write(d, "b32", ins)
        def ex(th, fr):
            x, y, z = ra(th, fr), rb(th, fr), rc(th, fr)
            r = 0
            for i in range(8):
                if lut_v >> i & 1:
                    tx = x if i & 4 else ~x
                    ty = y if i & 2 else ~y
                    tz = z if i & 1 else ~z
                    r |= tx & ty & tz
            w(th, fr, r)
        return ex

    # comparisons and selection ---------------------------------------------------------------
    def _compare(self, cmp, t):
        if t in READ:
            rd = READ[t]
            ordered = {"eq": lambda x, y: x == y, "ne": lambda x, y: x != y, "lt": lambda x, y: x < y,
                       "le": lambda x, y: x <= y, "gt": lambda x, y: x > y, "ge": lambda x, y: x >= y}
            if cmp in ordered:
                f = ordered[cmp]
                return lambda a, b: (not (math.isnan(rd(a)) or math.isnan(rd(b)))) and f(rd(a), rd(b))
            if cmp.endswith("u") and cmp[:-1] in ordered:
                f = ordered[cmp[:-1]]
                return lambda a, b: math.isnan(rd(a)) or math.isnan(rd(b)) or f(rd(a), rd(b))
            if cmp == "num":
                return lambda a, b: not (math.isnan(rd(a)) or math.isnan(rd(b)))
            if cmp == "nan":
                return lambda a, b: math.isnan(rd(a)) or math.isnan(rd(b))
        bits = bits_of(t)
        conv = (lambda v: signed(v, bits)) if t[0] == "s" else (lambda v: v)
        table = {"eq": lambda x, y: x == y, "ne": lambda x, y: x != y,
                 "lt": lambda x, y: conv(x) < conv(y), "le": lambda x, y: conv(x) <= conv(y),
                 "gt": lambda x, y: conv(x) > conv(y), "ge": lambda x, y: conv(x) >= conv(y),
                 "lo": lambda x, y: x < y, "ls": lambda x, y: x <= y, "hi": lambda x, y: x > y,
                 "hs": lambda x, y: x >= y}
        return table[cmp]

    def op_setp(self, ins):
        cmp, t = ins.parts[1], type_of(ins.parts)
        f = self._compare(cmp, t)
        boolop = next((p for p in ins.parts[2:] if p in ("and", "or", "xor")), None)
        d = ins.args[0]
        ra, rb = self.read(ins.args[1], t, ins), self.read(ins.args[2], t, ins)
        rc = self.read(ins.args[3], "pred", ins) if boolop else None
        wp = self.write(("reg", d[1]) if d[0] == "pair" else d, "pred", ins)
        wq = self.write(("reg", d[2]), "pred", ins) if d[0] == "pair" else None
        def ex(th, fr):
            r = 1 if f(ra(th, fr), rb(th, fr)) else 0
            q = 1 - r
            if boolop:
                c = rc(th, fr)
                r, q = _boolop(boolop, r, c), _boolop(boolop, q, c)
            wp(th, fr, r)
            if wq:
                wq(th, fr, q)
        return ex

    def op_set(self, ins):
        cmp = ins.parts[1]
        types = [p for p in ins.parts if p in TYPE_BYTES]
        dt, st = types[0], types[-1]
        f = self._compare(cmp, st)
        ra, rb = self.read(ins.args[1], st, ins), self.read(ins.args[2], st, ins)
        w = self.write(ins.args[0], dt, ins)
        true = 0x3F800000 if dt == "f32" else MASK[bits_of(dt)]
        def ex(th, fr):
            w(th, fr, true if f(ra(th, fr), rb(th, fr)) else 0)
        return ex

    def op_selp(self, ins):
        t = type_of(ins.parts)
        d, a, b, c = ins.args
        ra, rb, rc = self.read(a, t, ins), self.read(b, t, ins), self.read(c, "pred", ins)
        w = self.write(d, t, ins)
        def ex(th, fr):
            w(th, fr, ra(th, fr) if rc(th, fr) else rb(th, fr))
        return ex

    def op_slct(self, ins):
        types = [p for p in ins.parts if p in TYPE_BYTES]
        t, ct = types[0], types[-1]
        d, a, b, c = ins.args
        ra, rb, rc = self.read(a, t, ins), self.read(b, t, ins), self.read(c, ct, ins)
        w = self.write(d, t, ins)
        if ct == "f32":
            cond = lambda v: f32(v) >= 0
        else:
            cond = lambda v: signed(v, 32) >= 0
        def ex(th, fr):
            w(th, fr, ra(th, fr) if cond(rc(th, fr)) else rb(th, fr))
        return ex

    # floating point --------------------------------------------------------------------------
    def op_sqrt(self, ins):
        return self._float_unary(ins, lambda x: math.sqrt(x) if x >= 0 else (x if x == 0 else float("nan")))

    def op_rsqrt(self, ins):
        def f(x):
            if x == 0:
                return math.copysign(float("inf"), x)
            return 1 / math.sqrt(x) if x > 0 else float("nan")
        return self._float_unary(ins, f)

    def op_rcp(self, ins):
        return self._float_unary(ins, lambda x: _fdiv(1.0, x))

    def op_ex2(self, ins):
        def f(x):
            try:
                return 2.0 ** x
            except OverflowError:
                return float("inf")
        return self._float_unary(ins, f)

    def op_lg2(self, ins):
        def f(x):
            if x == 0:
                return float("-inf")
            return math.log2(x) if x > 0 else float("nan")
        return self._float_unary(ins, f)

    def op_sin(self, ins):
        return self._float_unary(ins, lambda x: math.sin(x) if math.isfinite(x) else float("nan"))

    def op_cos(self, ins):
        return self._float_unary(ins, lambda x: math.cos(x) if math.isfinite(x) else float("nan"))

    def op_tanh(self, ins):
        return self._float_unary(ins, math.tanh)

    def op_copysign(self, ins):
        return self._float_binary(ins, lambda x, y: math.copysign(y, x))

    def op_testp(self, ins):
        kind, t = ins.parts[1], type_of(ins.parts)
        rd = READ[t]
        tests = {"finite": math.isfinite, "infinite": math.isinf, "number": lambda x: not math.isnan(x),
                 "notanumber": math.isnan, "normal": lambda x: math.isfinite(x) and abs(x) >= FLT_NORMAL[t],
                 "subnormal": lambda x: x != 0 and abs(x) < FLT_NORMAL[t]}
        f = tests[kind]
        return self._unary(ins, lambda x: 1 if f(rd(x)) else 0, dest_t="pred")

    def op_cvt(self, ins):
        types = [p for p in ins.parts if p in TYPE_BYTES]
        dt, st = types[0], types[1]
        mods = set(ins.parts[1:])
        d = ins.args[0]
        if dt in ("f16x2", "bf16x2"):  # cvt.rn.f16x2.f32 d, hi, lo
            wr = WRITE[dt[:-2]]
            ra, rb = self.read(ins.args[1], st, ins), self.read(ins.args[2], st, ins)
            w = self.write(d, "b32", ins)
            def ex(th, fr):
                w(th, fr, (wr(f32(ra(th, fr))) << 16) | wr(f32(rb(th, fr))))
            return ex
        src = self.read(ins.args[1], st, ins)
        w = self.write(d, dt, ins)
        f = _converter(dt, st, mods, ins)
        def ex(th, fr):
            w(th, fr, f(src(th, fr)))
        return ex

    # control ---------------------------------------------------------------------------------
    def op_bra(self, ins):
        target = ins.args[0][1]
        if target not in self.fn.labels:
            raise PtxError(f"{_where(ins)}: no label {target}")
        pc = self.fn.labels[target]
        return lambda th, fr: pc

    def op_brx(self, ins):
        idx, table = ins.args[0], ins.args[1][1]
        labels = self.fn.targets.get(table)
        if labels is None:
            raise PtxError(f"{_where(ins)}: no .branchtargets {table}")
        pcs = [self.fn.labels[x] for x in labels]
        r = self.read(idx, "u32", ins)
        def ex(th, fr):
            i = r(th, fr)
            if i >= len(pcs):
                raise PtxError(f"{_where(ins)}: index {i} past {len(pcs)} targets")
            return pcs[i]
        return ex

    def op_call(self, ins):
        args = ins.args
        if args[0][0] == "list":
            rets, callee, params = args[0][1], args[1], args[2][1] if len(args) > 2 else []
        else:
            rets, callee, params = [], args[0], args[1][1] if len(args) > 1 else []
        if callee[0] != "sym":
            raise Unsupported(f"{_where(ins)}: an indirect call")
        m = self.mod
        name = callee[1]
        return lambda th, fr: m.call(th, fr, name, rets, params, ins)

    def op_ret(self, ins):
        m = self.mod
        return lambda th, fr: m.ret(th, fr)

    def op_exit(self, ins):
        m = self.mod
        return lambda th, fr: m.exit(th)

    def op_trap(self, ins):
        def ex(th, fr):
            raise PtxError(f"{self.mod.ptx.label}: {_where(ins)}: trap in block {th.cta.idx} thread {th.tid}")
        return ex

    op_brkpt = op_trap

    # synchronisation -------------------------------------------------------------------------
    def op_bar(self, ins):
        return self._barrier(ins)

    def op_barrier(self, ins):
        return self._barrier(ins)

    def _barrier(self, ins):
        kind = ins.parts[1]
        if kind == "warp":  # bar.warp.sync mask
            m = self.mod
            mask = self.read(ins.args[0], "b32", ins)
            return lambda th, fr: m.warp_sync(th, fr, "sync", mask(th, fr), None, None, ins)
        m = self.mod
        if kind in ("sync", "arrive") or (kind == "cta" and ins.parts[2] in ("sync", "arrive")):
            arrive = "arrive" in ins.parts
            bid = self.read(ins.args[0], "u32", ins)
            cnt = self.read(ins.args[1], "u32", ins) if len(ins.args) > 1 else None
            return lambda th, fr: m.cta_barrier(th, fr, bid(th, fr), cnt(th, fr) if cnt else None,
                                                arrive, None, None, ins)
        if kind == "red":
            op = ins.parts[2]
            d = ins.args[0]
            bid = self.read(ins.args[1], "u32", ins)
            if len(ins.args) == 4:
                cnt, pred = self.read(ins.args[2], "u32", ins), self.read(ins.args[3], "pred", ins)
            else:
                cnt, pred = None, self.read(ins.args[2], "pred", ins)
            w = self.write(d, "u32" if op == "popc" else "pred", ins)
            return lambda th, fr: m.cta_barrier(th, fr, bid(th, fr), cnt(th, fr) if cnt else None,
                                                False, (op, pred(th, fr)), w, ins)
        raise Unsupported(f"{_where(ins)}: '{ins.op}' is not simulated")

    def op_shfl(self, ins):
        mode = ins.parts[2]
        d = ins.args[0]
        ra, rb, rc, rm = (self.read(x, "b32", ins) for x in ins.args[1:5])
        wd = self.write(("reg", d[1]) if d[0] == "pair" else d, "b32", ins)
        wp = self.write(("reg", d[2]), "pred", ins) if d[0] == "pair" else None
        m = self.mod
        def ex(th, fr):
            return m.warp_sync(th, fr, ("shfl", mode), rm(th, fr), (ra(th, fr), rb(th, fr), rc(th, fr)),
                               (wd, wp), ins)
        return ex

    def op_vote(self, ins):
        mode = ins.parts[2]
        d, a, mk = ins.args
        ra, rm = self.read(a, "pred", ins), self.read(mk, "b32", ins)
        w = self.write(d, "b32" if mode == "ballot" else "pred", ins)
        m = self.mod
        return lambda th, fr: m.warp_sync(th, fr, ("vote", mode), rm(th, fr), ra(th, fr), w, ins)

    def op_redux(self, ins):
        op, t = ins.parts[2], type_of(ins.parts)
        d, a, mk = ins.args
        ra, rm = self.read(a, t, ins), self.read(mk, "b32", ins)
        w = self.write(d, t, ins)
        m = self.mod
        return lambda th, fr: m.warp_sync(th, fr, ("redux", op, t), rm(th, fr), ra(th, fr), w, ins)

    def op_ldmatrix(self, ins):
        return self._matrix(ins, load=True)

    def op_stmatrix(self, ins):
        return self._matrix(ins, load=False)

    def _matrix(self, ins, load):
        """ldmatrix/stmatrix .m8n8 .b16: lane t names row t % 8 of matrix t // 8; each lane
        holds, of each matrix, the two halves of row lane / 4 at column 2 * (lane % 4) (of
        column lane / 4 at row 2 * (lane % 4) with .trans)."""
        if "m8n8" not in ins.parts or "b16" not in ins.parts:
            raise Unsupported(f"{_where(ins)}: '{ins.op}' is not simulated")
        count = int(next(p for p in ins.parts if p in ("x1", "x2", "x4"))[1])
        trans = "trans" in ins.parts
        space = self._space(ins)
        regs, addr_op = (ins.args[0], ins.args[1]) if load else (ins.args[1], ins.args[0])
        regs = regs[1] if regs[0] == "vec" else [regs]
        addr = self.address(addr_op, ins)
        m = self.mod
        if load:
            ws = [self.write(r, "b32", ins) for r in regs]
            return lambda th, fr: m.warp_sync(th, fr, ("matrix", True, count, trans, space), 0xFFFFFFFF,
                                              (addr(th, fr), None), ws, ins)
        rs = [self.read(r, "b32", ins) for r in regs]
        return lambda th, fr: m.warp_sync(th, fr, ("matrix", False, count, trans, space), 0xFFFFFFFF,
                                          (addr(th, fr), [r(th, fr) for r in rs]), None, ins)

    def op_match(self, ins):
        raise Unsupported(f"{_where(ins)}: match.sync is not simulated")

    def op_elect(self, ins):
        d, mk = ins.args
        rm = self.read(mk, "b32", ins)
        wd = self.write(("reg", d[1]) if d[0] == "pair" else d, "b32", ins)
        wp = self.write(("reg", d[2]), "pred", ins) if d[0] == "pair" else None
        m = self.mod
        return lambda th, fr: m.warp_sync(th, fr, ("elect",), rm(th, fr), None, (wd, wp), ins)

    def op_activemask(self, ins):
        # Fully diverged threads (the independent scheduling PTX allows): only this lane.
        w = self.write(ins.args[0], "b32", ins)
        def ex(th, fr):
            w(th, fr, 1 << th.lane)
        return ex

    def _nothing(self, ins):
        return lambda th, fr: None

    def op_fence(self, ins):
        order = M.fence_order(ins.parts)
        if order is None:
            return self._nothing(ins)
        m = self.mod
        return lambda th, fr: m.memory.fence(th, order)

    op_membar = op_fence

    # Hints and dependency control: one grid at a time makes them no-ops here.
    op_prefetch = op_prefetchu = op_griddepcontrol = _nothing
    op_discard = op_applypriority = op_setmaxnreg = op_pmevent = _nothing

    def op_nanosleep(self, ins):
        t = self.read(ins.args[0], "u32", ins)
        def ex(th, fr):
            th.m.slept += t(th, fr)
            return YIELD
        return ex

    def op_createpolicy(self, ins):
        w = self.write(ins.args[0], "b64", ins)
        def ex(th, fr):
            w(th, fr, 0)
        return ex


FLT_NORMAL = {"f32": 1.1754943508222875e-38, "f64": 2.2250738585072014e-308}


def _boolop(op, a, b):
    return (a & b) if op == "and" else (a | b) if op == "or" else (a ^ b)


def _fdiv(x, y):
    if y == 0:
        if x == 0 or x != x:
            return float("nan")
        return math.copysign(float("inf"), x) * math.copysign(1, y)
    return x / y


def _fma(x, y, z):
    """x * y + z in doubles (exact products of singles), then rounded to the type by the caller:
    two roundings where the GPU rounds once; fused and alone run the same arithmetic."""
    try:
        return x * y + z
    except OverflowError:
        return float("inf")


def _converter(dt, st, mods, ins):
    rnd = next((m for m in mods if m in ("rn", "rz", "rm", "rp", "rni", "rzi", "rmi", "rpi")), None)
    sat = "sat" in mods
    ftz = "ftz" in mods
    if dt in READ and st in READ:
        rd, wr = READ[st], WRITE[dt]
        def f(v):
            x = rd(v)
            if ftz:
                x = ftz32(x)
            if rnd in ("rni", "rzi", "rmi", "rpi") and math.isfinite(x):
                x = float({"rni": round, "rzi": math.trunc, "rmi": math.floor, "rpi": math.ceil}[rnd](x))
            if sat:
                x = 0.0 if x != x else min(max(x, 0.0), 1.0)
            r = wr(x)
            return r
        return f
    if dt in READ:  # from an integer
        bits = bits_of(st)
        conv = (lambda v: signed(v, bits)) if st[0] == "s" else (lambda v: v)
        wr = WRITE[dt]
        return lambda v: wr(float(conv(v)))
    dbits = bits_of(dt)
    if st in READ:  # to an integer: saturating, NaN to 0
        rd = READ[st]
        lo, hi = (-(1 << (dbits - 1)), (1 << (dbits - 1)) - 1) if dt[0] == "s" else (0, MASK[dbits])
        rf = {"rni": round, "rzi": math.trunc, "rmi": math.floor, "rpi": math.ceil, None: math.trunc}[rnd]
        def f(v):
            x = rd(v)
            if x != x:
                return 0
            if math.isinf(x):
                return hi if x > 0 else lo
            return min(max(rf(x), lo), hi)
        return f
    sbits = bits_of(st)
    conv = (lambda v: signed(v, sbits)) if st[0] == "s" else (lambda v: v)
    if sat:
        lo, hi = (-(1 << (dbits - 1)), (1 << (dbits - 1)) - 1) if dt[0] == "s" else (0, MASK[dbits])
        return lambda v: min(max(conv(v), lo), hi)
    return conv
