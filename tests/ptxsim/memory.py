"""Global memory as threads of different blocks may see it under PTX's weak ordering, so that a
missing fence, release or acquire changes what a kernel computes.

Each block has an L1 of its own: a weak load (`ld.global`, `.nc`, `.ca`, a CTA-scoped one)
reads the 128-byte line its block last fetched, which stays until an acquire of the block
(`fence.acquire/acq_rel/sc` or `membar` at GPU scope, `ld.acquire.gpu`, an acquiring atomic)
drops every line, as `CCTL.IVALL` does. A weak store waits in its thread's store buffer: its
own thread reads it at once; a block barrier, `bar.warp.sync` or a CTA-scoped fence hands the
thread's waiting stores to its block, whose threads then read them; a release at GPU scope
(`fence`, `membar.gl`, `st.release`, a releasing atomic) writes the thread's and its block's
waiting stores to memory first. Waiting stores also reach memory at random moments, not in
their order (a location's stores keep theirs). Strong operations (`volatile`, `relaxed` and
`acquire` at GPU scope, atomics, `.cg`/`.cv` loads) read and write memory itself. At the end of
a launch every store is in memory. Shared memory is not modelled here: it stays sequentially
consistent.
"""
import collections
import ctypes

LINE = 128
SHIFT = 7

# What an access asks of memory, read from its qualifiers once, when it is compiled:
# a load's `cached` (through the block's L1) and `acquire`; a store's `strong` (to memory
# itself) and `release` (None, "cta" or "gpu"); an atomic's acquire and release.
Load = collections.namedtuple("Load", "cached acquire")
Store = collections.namedtuple("Store", "strong release")
Fence = collections.namedtuple("Fence", "acquire release")  # release: None, "cta" or "gpu"

WEAK_LOAD, WEAK_STORE = Load(True, False), Store(False, None)


def _scope(parts, default):
    for p in parts:
        if p in ("cta", "cluster", "gpu", "sys"):
            return "cta" if p == "cta" else "gpu"  # a cluster's blocks do not share an L1
    return default


def load_order(parts):
    if "volatile" in parts or "cv" in parts or "cg" in parts:
        return Load(False, False)
    if "relaxed" in parts or "acquire" in parts:
        if _scope(parts, "gpu") == "cta":
            return WEAK_LOAD
        return Load(False, "acquire" in parts)
    return WEAK_LOAD


def store_order(parts):
    if "volatile" in parts:
        return Store(True, None)
    if "relaxed" in parts or "release" in parts:
        scope = _scope(parts, "gpu")
        release = scope if "release" in parts else None
        return Store(scope == "gpu", release)
    return WEAK_STORE


def atomic_order(parts):
    """An atomic's (acquire, release); relaxed at GPU scope when it names neither."""
    scope = _scope(parts, "gpu")
    acquire = ("acquire" in parts or "acq_rel" in parts) and scope == "gpu"
    release = scope if "release" in parts or "acq_rel" in parts else None
    return acquire, release


def fence_order(parts):
    """`fence.{sc,acq_rel,acquire,release}.scope` and `membar.{cta,gl,sys}`; None for fences
    of other proxies (`fence.proxy.*`), which order nothing modelled here."""
    if parts[0] == "membar":
        return Fence(parts[1] != "cta", "cta" if parts[1] == "cta" else "gpu")
    if any(p.startswith("proxy") or p in ("mbarrier_init", "op_restrict") for p in parts):
        return None
    scope = _scope(parts, "gpu")
    acquire = any(p in ("sc", "acq_rel", "acquire") for p in parts) and scope == "gpu"
    release = scope if any(p in ("sc", "acq_rel", "release") for p in parts) else None
    return Fence(acquire, release)


class Stores:
    """Stores not yet in memory, oldest first, and per byte the newest one's (order, value)."""

    __slots__ = ("entries", "newest")

    def __init__(self):
        self.entries, self.newest = [], {}

    def add(self, seq, a, data):
        self.entries.append((seq, a, data))
        newest = self.newest
        for i, b in enumerate(data):
            newest[a + i] = (seq, b)

    def absorb(self, other):
        """Takes `other`'s stores (a thread's, handed to its block)."""
        if not other.entries:
            return
        self.entries.extend(other.entries)
        self.entries.sort(key=lambda e: e[0])
        newest = self.newest
        for k, v in other.newest.items():
            cur = newest.get(k)
            if cur is None or cur[0] < v[0]:
                newest[k] = v
        other.entries, other.newest = [], {}

    def forget(self, e):
        self.entries.remove(e)
        seq, a, data = e
        newest = self.newest
        for i in range(len(data)):
            if newest.get(a + i, (None,))[0] == seq:
                del newest[a + i]


def _overlaps(e, a, n):
    return e[1] < a + n and a < e[1] + len(e[2])


class WeakMemory:
    """The global memory of one launch (see the module's text). `rng` draws when waiting stores
    reach memory; `ctas` are the launch's blocks, each with its threads."""

    def __init__(self, rng, ctas):
        self.rng, self.seq = rng, 0
        self.ctas = ctas
        self.eager = rng.choice((0.01, 0.05, 0.25))  # how often a quantum lets stores out
        for cta in ctas:
            cta.lines, cta.observed = {}, Stores()
            for th in cta.threads:
                th.pending = Stores()

    # ---- reads -----------------------------------------------------------------------------
    def _line(self, cta, line):
        buf = cta.lines.get(line)
        if buf is None:
            buf = cta.lines[line] = bytearray(ctypes.string_at(line << SHIFT, LINE))
        return buf

    def _cached(self, cta, a, n):
        first, last = a >> SHIFT, (a + n - 1) >> SHIFT
        off = a & (LINE - 1)
        if first == last:
            return bytes(self._line(cta, first)[off:off + n])
        joined = b"".join(bytes(self._line(cta, i)) for i in range(first, last + 1))
        return joined[off:off + n]

    def load(self, th, a, n, order):
        cta = th.cta
        data = self._cached(cta, a, n) if order.cached else ctypes.string_at(a, n)
        mine, block = th.pending.newest, cta.observed.newest
        if mine or block:
            out = bytearray(data)
            for i in range(n):
                x, y = mine.get(a + i), block.get(a + i)
                if x is not None or y is not None:
                    out[i] = (x if y is None or (x is not None and x[0] > y[0]) else y)[1]
            data = bytes(out)
        if order.acquire:
            cta.lines = {}
        return data

    # ---- writes ----------------------------------------------------------------------------
    def _write(self, cta, a, data):
        """Bytes reaching memory, and the writing block's L1 lines of them (its L1 is written
        through)."""
        ctypes.memmove(a, data, len(data))
        for line in range(a >> SHIFT, ((a + len(data) - 1) >> SHIFT) + 1):
            buf = cta.lines.get(line)
            if buf is not None:
                lo = max(a, line << SHIFT)
                hi = min(a + len(data), (line + 1) << SHIFT)
                buf[lo - (line << SHIFT):hi - (line << SHIFT)] = data[lo - a:hi - a]

    def _drain(self, cta, stores, e):
        """Stores `e` to memory after the older stores to its bytes: the thread's own and
        those its block holds."""
        for older in [o for o in cta.observed.entries if o[0] < e[0] and _overlaps(o, e[1], len(e[2]))]:
            self._drain(cta, cta.observed, older)
        if stores is not cta.observed:
            for older in [o for o in stores.entries if o[0] < e[0] and _overlaps(o, e[1], len(e[2]))]:
                self._drain(cta, stores, older)
        if e in stores.entries:
            stores.forget(e)
            self._write(cta, e[1], e[2])

    def _drain_bytes(self, th, a, n):
        """Every waiting store of the thread and its block to these bytes (coherence: a
        location's stores reach memory in order)."""
        cta = th.cta
        for stores in (th.pending, cta.observed):
            for e in [e for e in stores.entries if _overlaps(e, a, n)]:
                self._drain(cta, stores, e)

    def _release(self, th, scope):
        """The thread's waiting stores handed to its block; at GPU scope, then every store the
        block holds written to memory in the block's order, oldest first (so a location's
        stores land in theirs)."""
        if scope is None:
            return
        cta = th.cta
        cta.observed.absorb(th.pending)
        if scope == "gpu":
            for _, a, data in cta.observed.entries:
                self._write(cta, a, data)
            cta.observed.entries, cta.observed.newest = [], {}

    def store(self, th, a, data, order):
        self._release(th, order.release)
        if not order.strong:
            self.seq += 1
            th.pending.add(self.seq, a, data)
            return
        self._drain_bytes(th, a, len(data))
        self._write(th.cta, a, data)

    def rmw(self, th, a, n, combine, acquire, release):
        """An atomic: done at memory, after the thread's and block's waiting stores to it."""
        self._release(th, release)
        self._drain_bytes(th, a, n)
        old = ctypes.string_at(a, n)
        new = combine(old)
        if new is not None:
            self._write(th.cta, a, new)
        if acquire:
            th.cta.lines = {}
        return old

    # ---- ordering --------------------------------------------------------------------------
    def fence(self, th, order):
        self._release(th, order.release)
        if order.acquire:
            th.cta.lines = {}

    def barrier(self, th):
        """A thread arrives at a block or warp barrier: its block's threads read its stores
        after it."""
        th.cta.observed.absorb(th.pending)

    def settle(self, th):
        """After a thread's quantum: some of its and its block's waiting stores reach memory."""
        rng = self.rng
        if rng.random() >= self.eager:
            return
        cta = th.cta
        for stores in (th.pending, cta.observed):
            kept = set()
            for e in list(stores.entries):
                span = range(e[1], e[1] + len(e[2]))
                if rng.random() < 0.75 or any(b in kept for b in span):
                    kept.update(span)
                elif e in stores.entries:
                    self._drain(cta, stores, e)

    def exited(self, th):
        # The thread's stores join its block's; once the block is gone, they are on their way
        # to memory.
        self._release(th, "gpu" if th.cta.live == 0 else "cta")

    def finish(self):
        """The launch has ended: every store is in memory, oldest first."""
        waiting = []
        for cta in self.ctas:
            for stores in [cta.observed] + [th.pending for th in cta.threads]:
                waiting.extend((e, cta) for e in stores.entries)
                stores.entries, stores.newest = [], {}
        for e, cta in sorted(waiting, key=lambda x: x[0][0]):
            self._write(cta, e[1], e[2])


class SequentialMemory:
    """Global memory every thread sees at once, in one order: what a kernel computes when no
    ordering is missing."""

    def __init__(self, rng, ctas):
        pass

    def load(self, th, a, n, order):
        return ctypes.string_at(a, n)

    def store(self, th, a, data, order):
        ctypes.memmove(a, data, len(data))

    def rmw(self, th, a, n, combine, acquire, release):
        old = ctypes.string_at(a, n)
        new = combine(old)
        if new is not None:
            ctypes.memmove(a, new, n)
        return old

    def fence(self, th, order):
        pass

    def barrier(self, th):
        pass

    settle = exited = barrier

    def finish(self):
        pass


MODELS = {"weak": WeakMemory, "sequential": SequentialMemory}
