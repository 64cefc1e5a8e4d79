"""Runs a PTX kernel's grid on the host, thread by thread: the state spaces (global memory is
the process's own, as the stand-in driver's device memory is host memory), calls with the PTX
parameter ABI, CTA barriers, warp-synchronous instructions, and a scheduler that interleaves
every thread of every block a few statements at a time, so that blocks waiting for each other
(a grid barrier, a flag) make progress. Global memory is weakly ordered by default
(memory.py: each block's own L1, each thread's stores waiting until a barrier, fence or release
lets them out), so that a missing fence changes results as it can on a GPU; `memory=
"sequential"` runs a launch without that. What wrong addresses, counts, offsets or a protocol
that cannot complete would break shows either way.
"""
import bisect
import collections
import ctypes
import random

from . import instructions as I
from . import memory as M
from .ptx_text import PtxError, parse

# Generic addresses of the per-block and per-thread spaces: above every user-space address.
GENERIC = {"shared": 0xFE00000000000000, "local": 0xFD00000000000000, "param": 0xFC00000000000000}
WINDOW = 1 << 48


class Hang(PtxError):
    """The grid did not finish within the statement budget, or every thread waits."""


# A module variable where the simulator put it: its space, size, and address in that space
# (a host address for .global and .const, an offset in each block's shared memory for .shared).
Placed = collections.namedtuple("Placed", "space size address")


class Frame:
    __slots__ = ("fn", "code", "regs", "params", "local_base", "pc", "rets")

    def __init__(self, fn, local_base):
        self.fn, self.code, self.regs, self.params = fn, fn.code, {}, {}
        self.local_base, self.pc, self.rets = local_base, 0, None


class Thread:
    __slots__ = ("m", "cta", "tid", "flat", "lane", "warp", "frames", "waiting", "done", "local", "pending",
                 "since")

    def __init__(self, m, cta, tid, flat):
        self.m, self.cta, self.tid, self.flat = m, cta, tid, flat
        self.lane, self.warp = flat % 32, cta.warps[flat // 32]
        self.frames, self.waiting, self.done, self.local = [], None, False, bytearray()
        self.since = None  # the kind of the last block barrier the thread reached (cta_barrier's)


class Cta:
    def __init__(self, idx, flat, shared_bytes, nthreads):
        self.idx, self.flat = idx, flat
        self.shared = bytearray(shared_bytes)
        self.written = bytearray(shared_bytes)  # 1 where a thread of the block wrote the byte
        self.warps = [{} for _ in range((nthreads + 31) // 32)]  # lane -> pending warp op
        self.threads = []
        self.barriers = {}  # id -> [arrived threads, count, reduction]
        self.live = nthreads


class Simulator:
    """A PTX module loaded for simulation. `ranges()` gives the (address, size) pairs of
    device memory a kernel may read and write (the stand-in driver's allocations)."""

    def __init__(self, text, label="ptx", ranges=lambda: [], sms=132):
        self.ptx = parse(text, label)
        self.label, self.ranges_of, self.sms = label, ranges, sms
        self._buffers = []
        self.variables = {}
        self._layout_variables()
        self.local_offsets, self.local_size = {}, {}
        self.kparam_offsets = {}
        for fn in self.ptx.functions.values():
            off = 0
            offs = {}
            for name, v in fn.locals.items():
                off = (off + v.align - 1) // v.align * v.align
                offs[name] = off
                off += v.size
            self.local_offsets[fn.name] = offs
            self.local_size[fn.name] = (off + 15) // 16 * 16
            if fn.entry:
                koff, kp = 0, {}
                for p in fn.params:
                    koff = (koff + p.align - 1) // p.align * p.align
                    kp[p.name] = koff
                    koff += p.size
                self.kparam_offsets[fn.name] = kp
            sizes = {p.name: p.size for p in fn.params + fn.rets + fn.call_params}
            fn.param_sizes = sizes
        for fn in self.ptx.functions.values():
            if fn.defined:
                comp = I.Compiler(self, fn)
                for ins in fn.code:
                    ins.ex = comp.compile(ins)

    def _layout_variables(self):
        shared_off = 0
        dynamic = []
        for v in self.ptx.variables.values():
            if v.space in ("global", "const"):
                buf = ctypes.create_string_buffer(v.init or b"", max(v.size or 0, 1))
                self._buffers.append(buf)
                self.variables[v.name] = Placed(v.space, max(v.size or 0, 1), ctypes.addressof(buf))
            elif v.space == "shared":
                if v.size is None:
                    dynamic.append(v)
                    continue
                shared_off = (shared_off + v.align - 1) // v.align * v.align
                self.variables[v.name] = Placed(v.space, v.size, shared_off)
                shared_off += v.size
        base = (shared_off + 127) // 128 * 128
        for v in dynamic:  # every extern array starts at the dynamic base
            self.variables[v.name] = Placed(v.space, None, base)
        self.dynamic_base = base

    # ---- memory ------------------------------------------------------------------------------
    def _check_global(self, a, n, ins, th):
        i = bisect.bisect_right(self._starts, a) - 1
        if i >= 0 and a + n <= self._ends[i]:
            return
        raise PtxError(f"{self.label}: line {ins.line}: {ins.text}: {n} bytes at {a:#x} are outside "
                       f"device memory (block {th.cta.idx}, thread {th.tid})")

    def space_of(self, a):
        for space, base in GENERIC.items():
            if base <= a < base + WINDOW:
                return space
        return "global"

    def to_generic(self, space, a):
        return GENERIC[space] + a if space in GENERIC else a

    def from_generic(self, space, a):
        if space in GENERIC:
            return a - GENERIC[space] if GENERIC[space] <= a < GENERIC[space] + WINDOW else a
        return a

    def _resolve(self, space, a):
        if space == "generic":
            space = self.space_of(a)
            if space in GENERIC:
                a -= GENERIC[space]
        return space, a

    def _window(self, th, space, a, n, ins):
        """The bytes behind `n` bytes at `a` of a space the simulator holds (shared, local,
        the kernel's parameters), checked to lie inside them."""
        buf, what = {"shared": (th.cta.shared, "the block's"), "local": (th.local, "the frames'"),
                     "param": (self.kparams, "the kernel's parameter")}.get(space, (None, None))
        if buf is None:
            raise PtxError(f"{self.label}: line {ins.line}: {ins.text}: the {space} space")
        if a + n > len(buf):
            raise PtxError(f"{self.label}: line {ins.line}: {ins.text}: {space} bytes {a}..{a + n} past "
                           f"{what} {len(buf)}")
        return buf

    def read(self, th, fr, space, a, n, ins, order=M.WEAK_LOAD):
        space, a = self._resolve(space, a)
        if space == "global":
            self._check_global(a, n, ins, th)
            return self.memory.load(th, a, n, order)
        if space == "const":
            self._check_global(a, n, ins, th)
            return ctypes.string_at(a, n)
        buf = self._window(th, space, a, n, ins)
        if space == "shared" and th.cta.written.find(0, a, a + n) != -1:  # as compute-sanitizer's initcheck
            raise PtxError(f"{self.label}: line {ins.line}: {ins.text}: block {th.cta.idx} thread {th.tid} "
                           f"reads shared bytes {a}..{a + n} that no thread of its block wrote")
        return bytes(buf[a:a + n])

    def write(self, th, fr, space, a, data, ins, order=M.WEAK_STORE):
        space, a = self._resolve(space, a)
        n = len(data)
        if space == "global":
            self._check_global(a, n, ins, th)
            self.memory.store(th, a, data, order)
            return
        if space not in ("shared", "local"):
            raise PtxError(f"{self.label}: line {ins.line}: {ins.text}: a store to the {space} space")
        self._window(th, space, a, n, ins)[a:a + n] = data
        if space == "shared":
            th.cta.written[a:a + n] = b"\1" * n

    def rmw(self, th, fr, space, a, n, combine, ins, acquire, release):
        """An atomic read-modify-write: `combine(old bytes)` gives the new ones (None: none
        written); returns the old."""
        space, a = self._resolve(space, a)
        if space == "global":
            self._check_global(a, n, ins, th)
            return self.memory.rmw(th, a, n, combine, acquire, release)
        old = self.read(th, fr, space, a, n, ins)
        new = combine(old)
        if new is not None:
            self.write(th, fr, space, a, new, ins)
        return old

    def _param_buffer(self, fr, name, ins):
        buf = fr.params.get(name)
        if buf is None:
            size = fr.fn.param_sizes.get(name)
            if size is None:
                raise PtxError(f"{self.label}: line {ins.line}: {ins.text}: no parameter {name}")
            buf = fr.params[name] = bytearray(size)
        return buf

    def _param_slice(self, fr, name, off, n, ins):
        buf = self._param_buffer(fr, name, ins)
        if off + n > len(buf):
            raise PtxError(f"{self.label}: line {ins.line}: {ins.text}: past parameter {name}'s {len(buf)} bytes")
        return buf

    def param_read(self, th, fr, name, off, n, ins):
        if fr.fn.entry and name in self.kparam_offsets[fr.fn.name]:
            base = self.kparam_offsets[fr.fn.name][name] + off
            return bytes(self.kparams[base:base + n])
        return bytes(self._param_slice(fr, name, off, n, ins)[off:off + n])

    def param_write(self, th, fr, name, off, data, ins):
        self._param_slice(fr, name, off, len(data), ins)[off:off + len(data)] = data

    # ---- calls -------------------------------------------------------------------------------
    def _push(self, th, fn):
        base = len(th.local)
        th.local.extend(bytes(self.local_size[fn.name]))
        fr = Frame(fn, base)
        th.frames.append(fr)
        return fr

    def call(self, th, fr, name, rets, params, ins):
        fn = self.ptx.functions.get(name)
        if fn is None or not fn.defined:
            raise PtxError(f"{self.label}: line {ins.line}: {ins.text}: function {name} is not defined")
        if len(params) != len(fn.params) or len(rets) != len(fn.rets):
            raise PtxError(f"{self.label}: line {ins.line}: {ins.text}: {name} takes "
                           f"{len(fn.params)} parameters and {len(fn.rets)} results")
        fr.pc += 1
        callee = self._push(th, fn)
        for formal, actual in zip(fn.params, params):
            if actual.startswith("%"):  # a register passed as it is
                src = (fr.regs.get(actual, 0) & ((1 << (8 * formal.size)) - 1)).to_bytes(formal.size, "little")
            elif actual[0].isdigit() or actual[0] == "-":
                src = (int(actual, 0) & ((1 << (8 * formal.size)) - 1)).to_bytes(formal.size, "little")
            else:
                src = self._param_buffer(fr, actual, ins)
            callee.params[formal.name] = bytearray(src[:formal.size].ljust(formal.size, b"\0"))
        callee.rets = rets
        return I.SWITCH

    def ret(self, th, fr):
        th.frames.pop()
        del th.local[fr.local_base:]
        if not th.frames:
            return self.exit(th)
        caller = th.frames[-1]
        for formal, actual in zip(fr.fn.rets, fr.rets):
            buf = fr.params.get(formal.name, bytearray(formal.size))
            if actual.startswith("%"):
                caller.regs[actual] = int.from_bytes(buf, "little")
                continue
            dst = self._param_buffer(caller, actual, None)
            dst[:len(buf)] = buf[:len(dst)]
        return I.SWITCH

    def exit(self, th):
        th.done = True
        th.frames = []
        cta = th.cta
        cta.live -= 1
        self.live -= 1
        self.memory.exited(th)
        for bid in list(cta.barriers):  # a barrier for every thread counts those still there
            self._try_release(cta, bid)
        return I.EXIT

    # ---- barriers ----------------------------------------------------------------------------
    def cta_barrier(self, th, fr, bid, count, arrive_only, red, w, ins):
        cta = th.cta
        kind = red[0] if red else "sync"
        b = cta.barriers.setdefault(bid, [[], None, [], kind])
        th.since = kind
        self.memory.barrier(th)
        # PTX leaves a phase of one barrier undefined where its threads arrive by different
        # operations (barrier.sync with barrier.red, or two reductions).
        if b[3] != kind:
            raise PtxError(f"{self.label}: line {ins.line}: {ins.text}: barrier {bid} reached by "
                           f"{kind} while its phase is {b[3]}'s")
        if count is not None:
            if b[1] is not None and b[1] != count:
                raise PtxError(f"{self.label}: line {ins.line}: {ins.text}: barrier {bid} for {count} threads "
                               f"while {len(b[0])} wait for {b[1]}")
            b[1] = count
        if not arrive_only:
            b[0].append((th, w))
            th.waiting = ("barrier", bid, ins)
        else:
            b[0].append((None, None))
        if red is not None:
            b[2].append(red)
        self._try_release(cta, bid)
        return I.BLOCK if th.waiting else None

    def _try_release(self, cta, bid):
        b = cta.barriers.get(bid)
        if b is None:
            return
        arrived, count, reds, _ = b
        need = count if count is not None else cta.live
        if len(arrived) < need or not arrived:
            return
        result = None
        if reds:
            op = reds[0][0]
            preds = [p for _, p in reds]
            result = {"popc": sum(preds), "and": int(all(preds)), "or": int(any(preds))}[op]
        del cta.barriers[bid]
        for th, w in arrived:
            if th is None:
                continue
            th.waiting = None
            if w is not None:
                fr = th.frames[-1]
                w(th, fr, result)

    def warp_sync(self, th, fr, op, mask, value, w, ins):
        warp = th.warp
        warp[th.lane] = (op, mask, value, w, th, ins)
        th.waiting = ("warp", op, ins)
        lanes = [i for i in range(32) if mask >> i & 1]
        if th.lane not in lanes:
            raise PtxError(f"{self.label}: line {ins.line}: {ins.text}: lane {th.lane} is not in its mask {mask:#x}")
        if not all(i in warp for i in lanes):
            return I.BLOCK
        group = {i: warp.pop(i) for i in lanes}
        for i, g in group.items():
            if g[1] != mask or g[0][0] != op[0]:
                raise PtxError(f"{self.label}: line {ins.line}: {ins.text}: lanes of one warp meet at different "
                               f"warp-synchronous instructions (line {g[5].line})")
        kind = op[0]
        if kind == "sync":  # bar.warp.sync orders the lanes' memory accesses
            for g in group.values():
                self.memory.barrier(g[4])
        elif kind == "shfl":
            for lane, g in group.items():
                a, b, c = g[2]
                mode = g[0][1]
                bval, cval, segmask = b & 31, c & 31, (c >> 8) & 31
                max_lane = (lane & segmask) | (cval & ~segmask)
                min_lane = lane & segmask
                if mode == "up":
                    j = lane - bval
                    ok = j >= max_lane
                elif mode == "down":
                    j = lane + bval
                    ok = j <= max_lane
                elif mode == "bfly":
                    j = lane ^ bval
                    ok = j <= max_lane
                else:
                    j = min_lane | (bval & ~segmask)
                    ok = j <= max_lane
                if not ok:
                    j = lane
                src = group.get(j)
                val = src[2][0] if src is not None else 0
                wd, wp = g[3]
                t = g[4]
                wd(t, t.frames[-1], val)
                if wp:
                    wp(t, t.frames[-1], 1 if ok else 0)
        elif kind == "vote":
            preds = {i: g[2] for i, g in group.items()}
            mode = op[1]
            ballot = sum(1 << i for i, p in preds.items() if p)
            for i, g in group.items():
                t = g[4]
                r = {"all": int(all(preds.values())), "any": int(any(preds.values())),
                     "uni": int(len(set(preds.values())) == 1), "ballot": ballot}[mode]
                g[3](t, t.frames[-1], r)
        elif kind == "redux":
            _, rop, t_ = op
            vals = [g[2] for g in group.values()]
            if t_ == "s32":
                vals = [I.signed(v, 32) for v in vals]
            r = {"add": sum, "min": min, "max": max}.get(rop)
            if r:
                res = r(vals)
            else:
                res = 0 if rop in ("or", "xor") else 0xFFFFFFFF
                for v in vals:
                    res = res | v if rop == "or" else res ^ v if rop == "xor" else res & v
            for g in group.values():
                t = g[4]
                g[3](t, t.frames[-1], res)
        elif kind == "matrix":
            _, load, count, trans, space = op
            any_th = group[0][4]
            for mat in range(count):
                rows = [group[mat * 8 + r][2][0] for r in range(8)]
                for lane, g in group.items():
                    t = g[4]
                    if trans:
                        cells = [(2 * (lane % 4), lane // 4), (2 * (lane % 4) + 1, lane // 4)]
                    else:
                        cells = [(lane // 4, 2 * (lane % 4)), (lane // 4, 2 * (lane % 4) + 1)]
                    if load:
                        v = 0
                        for h, (r, c) in enumerate(cells):
                            half = self.read(any_th, None, space, rows[r] + 2 * c, 2, g[5])
                            v |= int.from_bytes(half, "little") << (16 * h)
                        g[3][mat](t, t.frames[-1], v)
                    else:
                        v = g[2][1][mat]
                        for h, (r, c) in enumerate(cells):
                            self.write(any_th, None, space, rows[r] + 2 * c,
                                       ((v >> (16 * h)) & 0xFFFF).to_bytes(2, "little"), g[5])
        elif kind == "elect":
            leader = min(group)
            for i, g in group.items():
                t = g[4]
                wd, wp = g[3]
                wd(t, t.frames[-1], leader)
                if wp:
                    wp(t, t.frames[-1], 1 if i == leader else 0)
        for g in group.values():
            g[4].waiting = None
        return I.BLOCK if th.waiting else None

    # ---- launch ------------------------------------------------------------------------------
    def launch(self, name, grid, block, dynamic_shared, params, budget=50_000_000, quantum=48, seed=None,
               cooperative=False, counts=None, memory="weak"):
        """Runs `name` on `grid` blocks of `block` threads. `params`: each parameter's bytes,
        in order. With a `seed`, each block runs at a speed of its own (as blocks on SMs that
        started apart would), each round visits the threads in a shuffled order and gives each
        1 to 2 x `quantum` statements times its block's speed, so blocks run ahead of and behind
        each other. `cooperative`: as cuLaunchCooperativeKernel, a zeroed grid workspace whose
        address %envreg1 (high half) and %envreg2 (low half) hold, where cg::this_grid().sync()
        counts. `counts`: a dict that receives, per (function, thread's flat index in its
        block, instruction, the kind of the last block barrier the thread reached: None,
        "sync" or a reduction's operation), the statements executed. `memory`: "weak"
        (memory.py's model, its store timings drawn from `seed`) or "sequential". Raises
        PtxError (naming the statement) or Hang."""
        fn = self.ptx.functions.get(name)
        if fn is None or not fn.entry or not fn.defined:
            raise PtxError(f"{self.label}: no kernel {name}")
        if len(params) != len(fn.params):
            raise PtxError(f"{self.label}: {name} takes {len(fn.params)} parameters, given {len(params)}")
        kp = bytearray()
        for p, value in zip(fn.params, params):
            off = self.kparam_offsets[name][p.name]
            kp.extend(bytes(off - len(kp)))
            if len(value) != p.size:
                raise PtxError(f"{self.label}: parameter {p.name} is {p.size} bytes, given {len(value)}")
            kp.extend(value)
        self.kparams = bytes(kp)
        self.envreg = {}
        own = [(v.address, v.size) for v in self.variables.values() if v.space in ("global", "const")]
        if cooperative:
            self._workspace = ctypes.create_string_buffer(64)
            address = ctypes.addressof(self._workspace)
            self.envreg = {1: address >> 32, 2: address & 0xFFFFFFFF}
            own.append((address, 64))
        ranges = sorted(list(self.ranges_of()) + own)
        self._starts = [a for a, _ in ranges]
        self._ends = [a + n for a, n in ranges]
        self.grid = tuple(grid) + (1,) * (3 - len(grid))
        self.block = tuple(block) + (1,) * (3 - len(block))
        self.dynamic_shared = dynamic_shared
        nthreads = self.block[0] * self.block[1] * self.block[2]
        shared_bytes = self.dynamic_base + dynamic_shared
        threads = []
        ctas = []
        flat_cta = 0
        for z in range(self.grid[2]):
            for y in range(self.grid[1]):
                for x in range(self.grid[0]):
                    cta = Cta((x, y, z), flat_cta, shared_bytes, nthreads)
                    flat_cta += 1
                    ctas.append(cta)
                    for t in range(nthreads):
                        tid = (t % self.block[0], t // self.block[0] % self.block[1],
                               t // (self.block[0] * self.block[1]))
                        th = Thread(self, cta, tid, t)
                        self._push(th, fn)
                        cta.threads.append(th)
                        threads.append(th)
        self.live = len(threads)
        self.executed = self.slept = 0
        self.counts = counts
        rng = random.Random(seed) if seed is not None else None
        order = list(threads)
        speed = {cta.flat: rng.uniform(0.05, 1.0) if rng else 1.0 for cta in ctas}
        self.memory = M.MODELS[memory](random.Random(f"memory {seed}"), ctas)
        try:
            self._schedule(name, threads, order, rng, quantum, speed, budget)
        finally:
            self.memory.finish()

    def _schedule(self, name, threads, order, rng, quantum, speed, budget):
        memory = self.memory
        while self.live:
            progressed = False
            if rng:
                rng.shuffle(order)
            for th in order:
                if th.done or th.waiting:
                    continue
                progressed = True
                q = 1 + int(rng.random() * 2 * quantum * speed[th.cta.flat]) if rng else quantum
                self.executed += self._run(th, q)
                memory.settle(th)
            if self.executed > budget:
                raise Hang(f"{self.label}: {name} ran past {budget} statements: " + self._states(threads))
            if not progressed and self.live:
                raise Hang(f"{self.label}: {name}: every thread waits: " + self._states(threads))

    def _states(self, threads):
        seen = {}
        for th in threads:
            if th.done:
                continue
            fr = th.frames[-1]
            if th.waiting:
                where = f"waits at line {th.waiting[2].line} ({th.waiting[2].text})"
            else:
                ins = fr.code[fr.pc] if fr.pc < len(fr.code) else None
                where = f"runs {fr.fn.name} line {ins.line if ins else '?'} ({ins.text if ins else ''})"
            seen.setdefault(where, []).append(f"{th.cta.idx[0]}.{th.flat}")
        return "; ".join(f"{len(v)} threads ({', '.join(v[:4])}{'...' if len(v) > 4 else ''}) {k}"
                         for k, v in seen.items())

    def _run(self, th, quantum):
        fr = th.frames[-1]
        code = fr.code
        n = 0
        while n < quantum:
            if fr.pc >= len(code):
                r = self.ret(th, fr)
            else:
                ins = code[fr.pc]
                n += 1
                if self.counts is not None:
                    key = (fr.fn.name, th.flat, ins.op, th.since)
                    self.counts[key] = self.counts.get(key, 0) + 1
                if ins.guard is not None:
                    guard = fr.regs.get(ins.guard)
                    if guard is None:
                        raise PtxError(f"{self.label}: line {ins.line}: {ins.text}: {fr.fn.name} reads {ins.guard}, "
                                       f"which no statement wrote (block {th.cta.idx}, thread {th.tid})")
                    if (guard & 1) == ins.guard_neg:
                        fr.pc += 1
                        continue
                r = ins.ex(th, fr)
            if r is None:
                fr.pc += 1
            elif r >= 0:
                fr.pc = r
            elif r == I.SWITCH:
                if not th.frames:
                    return n
                fr = th.frames[-1]
                code = fr.code
            elif r == I.BLOCK:
                fr.pc += 1
                return n
            elif r == I.YIELD:
                fr.pc += 1
                return n
            else:  # EXIT
                return n
        return n
