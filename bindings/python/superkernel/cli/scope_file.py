"""Scopes described in JSON, for `sk explain`, `sk run` and `sk trace`.

    {
      "device": "host:cores=2",                 (optional; --device overrides it)
      "name": "chain",                          (optional)
      "options": "early-start=1" | {"early-start": 1},
      "objects": {"ops": "ops.o",               (paths relative to the JSON file, or to
                  "blas": ["chain.o", "libblas.a"]}  --objects-dir DIR; a list is linked as
                                                 one module, sk_module_load_files)
      "buffers": {                              (allocated once per run: fused and unfused each
        "x": {"type": "f32", "count": 1024,      get their own copy, filled the same way)
              "fill": "random", "range": [-1, 1], "seed": 1},
        "y": {"type": "f32", "count": 1024, "fill": 0}
      },
      "kernels": [
        {"object": "ops", "kernel": "axpy", "block_dim": 4, "args": [2.0, "@x", "@y", 1024],
         "name": "axpy.0", "signature": "f32,ptr,ptr,u32", "core_type": "vector",
         "flags": 0, "stream": 0, "block_local": false,
         "threads": 128, "dynamic_shared": 2048,  (a CUDA kernel's launch facts its binary may
         "cooperative": false, "cluster": [2, 1]}  not say: sk_kernel_desc; "threads" may be a
      ],                                          block's shape, [32, 4])
      "repeat": 20,                             (runs timed; --repeat overrides it)
      "compare": ["y"]                          (buffers compared; default: all)
    }

fill: a number, a list of numbers, "iota" (0, 1, 2, ...), "random" (uniform over "range",
default [-1, 1], from "seed", default 0: the same values every run). Arguments "@name" are
buffers; numbers are scalars converted by the kernel's signature; a list is an aggregate's
members ("{f32,f32}": [1.5, 2.0], nested lists for nested aggregates and array members);
{"ref": "@name"} is read by reference from the buffer's first bytes at every launch
(sk_kernel_options.arg_refs; unfused launches are given the value it holds when they are
prepared). An object may be PTX text (a .ptx file: nvcc -ptx, Triton's asm["ptx"]) on a CUDA
device; a Triton kernel's args end with its two scratch pointers, given as null. "block_dim" may
be a grid's shape, [x], [x, y] or [x, y, z] (sk_kernel_options.grid): a kernel that reads
program_id(1) or blockIdx.y needs one. "block_local":
true adds the kernel with SK_KERNEL_FLAG_BLOCK_LOCAL: its block i reads and writes only what
block i of the kernel before it wrote, so it waits for no other block. "cooperative": true takes
it with SK_KERNEL_DESC_COOPERATIVE: its blocks wait for each other by means of their own, so
all run at once. "cluster" (a number or [x], [x, y], [x, y, z]) is the thread block cluster a
kernel of linked SASS is launched in (sk_kernel_desc.cluster). Every error names the field.
"""
import ctypes
import json
import math
import os
import random
import stat

from ..args import SIGNATURE_TOKENS, parse_signature
from ..checks import INTEGER_RANGES, blocks_and_grid, integer, real
from ..scope import options_text

BUFFER_TYPES = {t: c for t, c in SIGNATURE_TOKENS.items() if t != "ptr"}
#: The largest scope file read (a pipe is read up to it), and the largest buffer one describes.
MAX_SCOPE_FILE_BYTES = 64 << 20
MAX_BUFFER_BYTES = 4 << 30
U32_MAX = INTEGER_RANGES["u32"][1]
#: The --capture option of the commands that build a scope file's super kernel (Instance.build).
CAPTURE_HELP = ("build the super kernel by capturing the kernels launched unfused "
                "(Device.capture; each \"stream\" a stream joined to the capture), not by "
                "sk_add_kernel; \"name\", \"core_type\", \"flags\" and \"block_local\" cannot be "
                "captured")


class SpecError(ValueError):
    pass


def _need(cond, where, message):
    if not cond:
        raise SpecError(f"{where}: {message}")


def _is_int(v):
    return isinstance(v, int) and not isinstance(v, bool)


def _is_number(v):
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _text(v, where, what, optional=True):
    """A string field: a str without NUL (None when optional)."""
    if v is None and optional:
        return None
    _need(isinstance(v, str), where, f"{what} must be a string")
    _need("\0" not in v, where, f"{what} contains a NUL character")
    return v


def _bool(v, where, what):
    _need(isinstance(v, bool), where, f"{what} must be true or false, not {json.dumps(v)}")
    return v


def _u32(v, where, what, lo=0):
    _need(_is_int(v) and lo <= v <= U32_MAX, where, f"{what} must be an integer {lo}..{U32_MAX}")
    return v


def read_text(path):
    """The file's text: bounded (a pipe or /dev/zero is not read past MAX_SCOPE_FILE_BYTES),
    UTF-8; SpecError naming the file otherwise."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except OSError as e:
        raise SpecError(f"{path}: {e.strerror}") from None
    try:
        if stat.S_ISDIR(os.fstat(fd).st_mode):
            raise SpecError(f"{path}: is a directory, not a scope description")
        chunks, size = [], 0
        while True:
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                break
            size += len(chunk)
            _need(size <= MAX_SCOPE_FILE_BYTES, path,
                  f"larger than {MAX_SCOPE_FILE_BYTES} bytes: not a scope description")
            chunks.append(chunk)
    except OSError as e:
        raise SpecError(f"{path}: {e.strerror}") from None
    finally:
        os.close(fd)
    raw = b"".join(chunks)
    _need(raw.strip(), path, "file is empty")
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise SpecError(f"{path}: not UTF-8 text (byte {e.start}: {raw[e.start]:#04x})") from None


class _NotFinite:
    """A JSON number beyond a double (1e400) or a NaN / Infinity literal: Python's json would
    make it inf or nan without a word; _refuse_loose_json refuses it, naming its field."""

    def __init__(self, text):
        self.text = text


class _JsonObject(dict):
    """A JSON object that remembers the keys it was given more than once (json keeps the last)."""
    repeated = ()


def _json_object(pairs):
    obj = _JsonObject(pairs)
    if len(obj) != len(pairs):
        seen = set()
        obj.repeated = [k for k, _ in pairs if k in seen or seen.add(k)]
    return obj


def _json_float(text):
    value = float(text)
    return value if math.isfinite(value) else _NotFinite(text)


def _refuse_loose_json(path, doc):
    """Raises SpecError naming the field of the first repeated key or non-finite number."""
    todo = [("", doc)]  # a loop, not recursion: the document may nest as deep as json allows
    while todo:
        field, value = todo.pop()
        where = f"{path}: {field}" if field else path
        if isinstance(value, _NotFinite):
            raise SpecError(f"{where}: {value.text} is not a finite number (JSON has no "
                            "infinity or NaN, and a scope file takes none)")
        if isinstance(value, _JsonObject):
            if value.repeated:
                raise SpecError(f"{where}: key {value.repeated[0]!r} is given more than once")
            todo.extend((f"{field}.{k}" if field else k, v) for k, v in reversed(value.items()))
        elif isinstance(value, list):
            todo.extend((f"{field}[{i}]", v) for i, v in reversed(list(enumerate(value))))


def parse_json(path):
    text = read_text(path)
    try:
        doc = json.loads(text, object_pairs_hook=_json_object, parse_float=_json_float,
                         parse_constant=_NotFinite)
    except json.JSONDecodeError as e:
        raise SpecError(f"{path}: not valid JSON: {e}") from None
    except RecursionError:
        raise SpecError(f"{path}: not valid JSON: nested too deeply") from None
    except ValueError as e:  # an integer of more digits than Python converts
        raise SpecError(f"{path}: not valid JSON: {e}") from None
    _refuse_loose_json(path, doc)
    return doc


class ScopeSpec:
    def __init__(self, path, objects_dir=None):
        self.path = path
        doc = parse_json(path)
        base = objects_dir or os.path.dirname(os.path.abspath(path))
        where = path
        _need(isinstance(doc, dict), where, "the top level must be an object")
        known = {"device", "name", "options", "objects", "buffers", "kernels", "repeat",
                 "compare", "comment"}
        unknown = sorted(set(doc) - known)
        _need(not unknown, where, f"unknown key(s) {', '.join(map(repr, unknown))} "
                                  f"(known: {', '.join(sorted(known))})")
        self.device = _text(doc.get("device", "host"), f"{where}: device", "the device spec",
                            optional=False)
        self.name = _text(doc.get("name", os.path.splitext(os.path.basename(path))[0]),
                          f"{where}: name", "the name", optional=False)
        options = doc.get("options")
        if isinstance(options, dict):
            for k, v in options.items():
                _need(_is_number(v) or isinstance(v, str), f"{where}: options.{k}",
                      "must be a number or a string")
            options = options_text(options)
        self.options = _text(options, f"{where}: options",
                             "options (key=value:key=value, or an object)") or ""
        objects = doc.get("objects", {})
        _need(isinstance(objects, dict) and objects, f"{where}: objects",
              "must be a non-empty object {alias: path}")
        self.objects = {}
        for alias, p in objects.items():
            if isinstance(p, list):
                _need(p, f"{where}: objects.{alias}", "a list of paths must not be empty")
                for i, one in enumerate(p):
                    _text(one, f"{where}: objects.{alias}[{i}]", "the path", optional=False)
                self.objects[alias] = [os.path.join(base, one) for one in p]
            else:
                _text(p, f"{where}: objects.{alias}", "the path (or a list of paths)", optional=False)
                self.objects[alias] = os.path.join(base, p)
        buffers = doc.get("buffers", {})
        _need(isinstance(buffers, dict), f"{where}: buffers",
              "must be an object {name: {type, count, fill}}")
        self.buffers = {name: self._buffer(f"{where}: buffers.{name}", b)
                        for name, b in buffers.items()}
        kernels = doc.get("kernels")
        _need(isinstance(kernels, list) and kernels, f"{where}: kernels",
              "must be a non-empty list")
        self.kernels = [self._kernel(f"{where}: kernels[{i}]", k) for i, k in enumerate(kernels)]
        self.repeat = doc.get("repeat", 10)
        _need(_is_int(self.repeat) and 1 <= self.repeat <= U32_MAX, f"{where}: repeat",
              f"must be an integer 1..{U32_MAX}")
        self.compare = doc.get("compare", list(self.buffers))
        _need(isinstance(self.compare, list), f"{where}: compare", "must be a list of buffer names")
        for c in self.compare:
            _need(isinstance(c, str) and c in self.buffers, f"{where}: compare",
                  f"unknown buffer {c!r}")

    def _buffer(self, where, b):
        _need(isinstance(b, dict), where, "must be an object {type, count, fill}")
        typ = b.get("type", "f32")
        _need(isinstance(typ, str) and typ in BUFFER_TYPES, where,
              f"type {typ!r} is not one of {', '.join(BUFFER_TYPES)}")
        count = b.get("count")
        fill = b.get("fill", 0)
        if count is None and isinstance(fill, list):
            count = len(fill)
        size = ctypes.sizeof(BUFFER_TYPES[typ])
        _need(_is_int(count) and 1 <= count <= MAX_BUFFER_BYTES // size, where,
              f"count must be an integer 1..{MAX_BUFFER_BYTES // size} (at most "
              f"{MAX_BUFFER_BYTES} bytes of {typ})")
        if isinstance(fill, list):
            _need(len(fill) == count, where, f"fill has {len(fill)} values, count is {count}")
            for i, v in enumerate(fill):
                _value(typ, v, f"{where}.fill[{i}]")
        elif fill == "iota":
            _value(typ, count - 1, f"{where}.fill", "iota up to count-1: ")
        elif fill != "random":
            _need(_is_number(fill), where,
                  f"fill {fill!r} is not a number, a list, \"iota\" or \"random\"")
            _value(typ, fill, f"{where}.fill")
        value_range = b.get("range", [-1, 1])
        _need(isinstance(value_range, list) and len(value_range) == 2
              and all(_is_number(v) for v in value_range) and value_range[0] <= value_range[1],
              f"{where}.range", "must be [low, high], two numbers with low <= high")
        lo, hi = value_range
        if fill == "random":
            for v in (lo, hi):
                _value(typ, int(v) if typ[0] in "iu" else v, f"{where}.range")
        seed = b.get("seed", 0)
        _need(_is_int(seed) or isinstance(seed, str), f"{where}.seed",
              "must be an integer or a string")
        return {"type": typ, "count": count, "fill": fill, "range": (lo, hi), "seed": seed}

    def _kernel(self, where, k):
        _need(isinstance(k, dict), where, "must be an object")
        for key in ("object", "kernel"):
            _need(isinstance(k.get(key), str), where, f"needs \"{key}\" (a string)")
            _text(k[key], where, key, optional=False)
        _need(k["object"] in self.objects, where, f"object {k['object']!r} is not in "
                                                  f"\"objects\" ({', '.join(self.objects)})")
        signature = _text(k.get("signature"), where, "signature")
        if signature is not None:
            try:
                parse_signature(signature)
            except ValueError as e:
                raise SpecError(f"{where}: {e}") from None
        block_dim = k.get("block_dim", 1)
        if isinstance(block_dim, list):  # a grid's shape, x fastest (sk_kernel_options.grid)
            _need(1 <= len(block_dim) <= 3, where, f"block_dim as a grid has 1 to 3 extents, not {len(block_dim)}")
            block_dim = tuple(_u32(b, where, f"block_dim[{i}]", lo=1) for i, b in enumerate(block_dim))
            _need(math.prod(block_dim) <= U32_MAX, where,
                  f"block_dim {list(block_dim)} makes {math.prod(block_dim)} blocks, more than {U32_MAX}")
        else:
            block_dim = _u32(block_dim, where, "block_dim", lo=1)
        threads = k.get("threads")
        if isinstance(threads, list):  # the block's shape, x fastest (sk_kernel_desc.block)
            _need(1 <= len(threads) <= 3, where, f"threads as a block has 1 to 3 extents, not {len(threads)}")
            threads = tuple(_u32(t, where, f"threads[{i}]", lo=1) for i, t in enumerate(threads))
        elif threads is not None:
            threads = _u32(threads, where, "threads", lo=1)
        cluster = k.get("cluster")
        if isinstance(cluster, list):
            _need(1 <= len(cluster) <= 3, where, f"cluster has 1 to 3 extents, not {len(cluster)}")
            cluster = tuple(_u32(c, where, f"cluster[{i}]", lo=1) for i, c in enumerate(cluster))
        elif cluster is not None:
            cluster = _u32(cluster, where, "cluster", lo=1)
        args = k.get("args", [])
        _need(isinstance(args, list), where, "args must be a list")
        for i, a in enumerate(args):
            self._arg(f"{where}.args[{i}]", a)
        return {"object": k["object"], "kernel": k["kernel"], "block_dim": block_dim,
                "args": args, "name": _text(k.get("name"), where, "name"),
                "signature": signature,
                "core_type": _text(k.get("core_type"), where, "core_type"),
                "flags": _u32(k.get("flags", 0), where, "flags"),
                "stream": _u32(k.get("stream", 0), where, "stream"),
                "block_local": _bool(k.get("block_local", False), where, "block_local"),
                # None: the kernel's own (libsk checks the range and what the kernel says).
                "threads": threads,
                "dynamic_shared": None if k.get("dynamic_shared") is None else
                _u32(k["dynamic_shared"], where, "dynamic_shared", lo=0),
                "cooperative": _bool(k.get("cooperative", False), where, "cooperative"),
                "cluster": cluster,
                "where": where}


    def _arg(self, where, a, depth=0):
        """An argument: a number, null, "@buffer", a list (an aggregate's members) or
        {"ref": "@buffer"}."""
        if isinstance(a, str):
            _need(a.startswith("@") and a[1:] in self.buffers, where,
                  f"{a!r} is not \"@buffer\" of a buffer in \"buffers\"")
        elif isinstance(a, list):
            _need(depth < 8, where, "aggregates nest at most 8 deep")
            for j, m in enumerate(a):
                self._arg(f"{where}[{j}]", m, depth + 1)
        elif isinstance(a, dict) and depth == 0:
            _need(set(a) == {"ref"} and isinstance(a["ref"], str) and a["ref"].startswith("@")
                  and a["ref"][1:] in self.buffers, where,
                  f"{a!r} is not {{\"ref\": \"@buffer\"}} of a buffer in \"buffers\"")
        else:
            _need(_is_number(a) or a is None, where,
                  f"{a!r} is not a number, null, \"@buffer\", a list (an aggregate) or "
                  f"{{\"ref\": \"@buffer\"}}")


def _is_ref(a):
    return isinstance(a, dict)


def _value(typ, v, where, prefix=""):
    """Raises SpecError unless number v fits buffer type typ."""
    _need(_is_number(v), where, f"{v!r} is not a number")
    try:
        if typ[0] in "iu":
            _need(_is_int(v), where, f"{v!r} is not an integer ({typ})")
            integer(v, typ, "value")
        else:
            real(v, typ, "value")
    except (TypeError, ValueError):
        raise SpecError(f"{where}: {prefix}{v!r} does not fit {typ}") from None


def host_values(b):
    """The buffer's initial contents as a ctypes array."""
    ctype, n, fill = BUFFER_TYPES[b["type"]], b["count"], b["fill"]
    integer_type = b["type"][0] in "iu"
    array = (ctype * n)()  # zeroed
    if isinstance(fill, list):
        array[:] = fill
    elif fill == "iota":
        array[:] = range(n)
    elif fill == "random":
        rng, (lo, hi) = random.Random(b["seed"]), b["range"]
        array[:] = [rng.randint(int(lo), int(hi)) if integer_type else rng.uniform(lo, hi)
                    for _ in range(n)]
    else:
        one = bytes(ctype(fill))
        if one.strip(b"\0"):  # not all-zero bytes (-0.0 is not)
            ctypes.memmove(array, one * n, len(one) * n)
    return array


class Instance:
    """The spec made real on a device: modules, kernels and one set of buffers per copy."""

    def __init__(self, spec, dev, copies):
        from ..errors import Error
        self.spec, self.dev = spec, dev
        self.modules = {}
        for alias, path in spec.objects.items():
            try:
                self.modules[alias] = dev.load(path)
            except OSError as e:
                raise SpecError(f"{spec.path}: objects.{alias}: {path}: {e.strerror}") from None
        self.kernels = []
        for k in spec.kernels:
            mod = self.modules[k["object"]]
            try:
                self.kernels.append(mod.kernel(k["kernel"], k["signature"], k["threads"],
                                               k["dynamic_shared"], k["cooperative"], k["cluster"]))
            except Error as e:  # libsk's own verdict: reported as a libsk error, where it arose
                raise type(e)(f"{k['where']}: {e.message}", e.status, e.status_name,
                              call=e.call) from None
            except (LookupError, TypeError, ValueError) as e:
                raise SpecError(f"{k['where']}: {e}") from None
        for i, k in enumerate(self.kernels):
            where = spec.kernels[i]["where"]
            for j, (token, a) in enumerate(zip(k.signature_tokens, spec.kernels[i]["args"])):
                # A number would be taken as an address, and a kernel writing there crashes the
                # process: a scope file gives pointers only as its own buffers (or NULL).
                _need(token != "ptr" or a is None or isinstance(a, str), f"{where}.args[{j}]",
                      f"kernel {k.name!r} argument {j} is a pointer (ptr): {a!r} is no buffer; "
                      "give \"@buffer\" or null (scope files pass no raw addresses)")
        self.sets = []
        for _ in range(copies):
            buffers = {}
            for name, b in spec.buffers.items():
                host = host_values(b)
                buf = dev.alloc(ctypes.sizeof(host))
                dev.memcpy(buf, host, ctypes.sizeof(host))
                buffers[name] = buf
            self.sets.append(buffers)
        for i, k in enumerate(self.kernels):  # arguments that do not fit: named with the field
            try:
                k.pack(self.args(i, 0))
            except (TypeError, ValueError) as e:
                if isinstance(e, Error):
                    raise
                raise SpecError(f"{spec.kernels[i]['where']}.args: {e}") from None

    def args(self, i, copy, refs=True):
        """Kernel i's arguments on buffer set `copy`; a {"ref": "@b"} argument as a Ref to b, or
        with refs=False as the value b holds now (unfused launches copy their values)."""
        from ..refs import Ref
        buffers = self.sets[copy]

        def value(j, a):
            if isinstance(a, str):
                return buffers[a[1:]]
            if isinstance(a, list):
                return tuple(value(j, m) for m in a)
            if _is_ref(a):
                return Ref(buffers[a["ref"][1:]]) if refs else self._held(i, j, buffers[a["ref"][1:]])
            return a
        return [value(j, a) for j, a in enumerate(self.spec.kernels[i]["args"])]

    def _held(self, i, j, buf):
        """The value of kernel i's parameter j that buffer `buf` holds in its first bytes."""
        from ..aggregates import ctype_of, is_aggregate
        tokens = self.kernels[i].signature_tokens
        if j >= len(tokens):
            return None  # too many arguments: pack() says so
        ctype = ctype_of(tokens[j])
        host = ctype()
        _need(buf.nbytes >= ctypes.sizeof(host), f"{self.spec.kernels[i]['where']}.args[{j}]",
              f"the buffer read by reference holds {buf.nbytes} bytes, a {tokens[j]} takes "
              f"{ctypes.sizeof(host)}")
        self.dev.memcpy(host, buf, ctypes.sizeof(host))
        return bytes(host) if is_aggregate(tokens[j]) else host.value

    def unfused_launcher(self, copy):
        """A function that queues every kernel once, unfused, on the default stream. Arguments
        are converted once here, so the timed loop pays one ctypes call per kernel and no
        Python-side argument work (a C caller would pay even less)."""
        from .._lib import lib
        from ..status import check
        packed = [(k, self.spec.kernels[i]["block_dim"], k.pack(self.args(i, copy, refs=False)))
                  for i, k in enumerate(self.kernels)]
        # A grid's shape goes to sk_launch_kernel_grid, as its three extents.
        calls = [(lib().sk_launch_kernel_grid, "sk_launch_kernel_grid", k.handle,
                  (ctypes.c_uint32 * 3)(*blocks_and_grid(b, "block_dim")[1]), p.pointer) if isinstance(b, tuple) else
                 (lib().sk_launch_kernel, "sk_launch_kernel", k.handle, b, p.pointer) for k, b, p in packed]
        wheres = [d["where"] for d in self.spec.kernels]

        def run():
            for (launch, name, handle, blocks, args), where in zip(calls, wheres):
                status = launch(handle, blocks, args, None)
                if status:
                    check(status, f"{where}: {name}")
        run.keepalive = packed  # the converted arguments and the buffers behind them
        return run

    def fuse(self, copy, extra_options=""):
        from ..errors import Error
        options = ":".join(o for o in (self.spec.options, extra_options) if o)
        with self.dev.scope(self.spec.name, options or None) as scope:
            for i, k in enumerate(self.kernels):
                d = self.spec.kernels[i]
                try:
                    scope.add(k, d["block_dim"], *self.args(i, copy), name=d["name"],
                              core_type=d["core_type"], flags=d["flags"], stream=d["stream"],
                              block_local=d["block_local"])
                except Error as e:  # libsk's verdict on this kernel, named where it was given
                    raise type(e)(f"{d['where']}: {e.message}", e.status, e.status_name, call=e.call) from None
        return scope.superkernel

    def build(self, copy, capture=False, extra_options=""):
        """The super kernel: the scope's (sk_add_kernel), or with `capture` the captured one."""
        return (self.capture if capture else self.fuse)(copy, extra_options)

    def capture(self, copy, extra_options=""):
        """The super kernel captured from the kernels launched unfused, in file order, inside
        Device.capture: scope-file stream s (s > 0) is a stream joined to the capture as scope
        stream s at its start and joined back at its end, so the plan is fuse()'s. A captured
        launch has no sk_kernel_options, so "name", "core_type", "flags" and "block_local" are
        refused."""
        for d in self.spec.kernels:
            for j, a in enumerate(d["args"]):
                _need(not _is_ref(a), f"{d['where']}.args[{j}]",
                      "{\"ref\": ...} cannot be captured (a captured launch copies its values): "
                      "build without --capture")
            for field, unset in (("name", None), ("core_type", None), ("flags", 0)):
                _need(d[field] == unset, d["where"],
                      f"\"{field}\" cannot be captured (a captured launch is named by its "
                      f"symbol, with the kernel's core type and no flags): drop it, or build "
                      f"without --capture")
            _need(not d["block_local"], d["where"],
                  "\"block_local\" cannot be captured (a captured launch has no flags): name its "
                  "kernels in the scope option block-local=LIST instead, or build without --capture")
        options = ":".join(o for o in (self.spec.options, extra_options) if o)
        top = max(d["stream"] for d in self.spec.kernels)
        streams, events = [], []
        try:
            with self.dev.capture(self.spec.name, options or None) as cap:
                if top:
                    events.append(self.dev.event())
                    events[0].record(cap.stream)
                while len(streams) < top:  # joined in order: scope stream 1, 2, ...
                    streams.append(self.dev.stream())
                    self._join(streams[-1], events[0], len(streams))
                on = [cap.stream, *streams]
                for i, k in enumerate(self.kernels):
                    d = self.spec.kernels[i]
                    k.launch(d["block_dim"], *self.args(i, copy), stream=on[d["stream"]])
                for s in streams:
                    events.append(self.dev.event())
                    events[-1].record(s)
                    cap.stream.wait_event(events[-1])
        finally:
            for handle in (*events, *streams):
                handle.close()
        return cap.superkernel

    def _join(self, stream, event, number):
        """Joins `stream` to the capture as scope stream `number`; libsk's refusal (no
        stream-fusion=1, no scope stream left) names the first kernel that needs it."""
        from ..errors import Error
        try:
            stream.wait_event(event)
        except Error as e:
            d = next(d for d in self.spec.kernels if d["stream"] >= number)
            raise type(e)(f"{d['where']}: stream {d['stream']} needs stream {number} joined to "
                          f"the capture: {e.message}", e.status, e.status_name) from None

    def contents(self, copy, name):
        b = self.spec.buffers[name]
        host = (BUFFER_TYPES[b["type"]] * b["count"])()
        self.dev.memcpy(host, self.sets[copy][name], ctypes.sizeof(host))
        return host
