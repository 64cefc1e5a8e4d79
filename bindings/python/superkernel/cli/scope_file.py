"""Scopes described in JSON, for `sk explain`, `sk run` and `sk trace`.

    {
      "device": "host:cores=2",                 (optional; --device overrides it)
      "name": "chain",                          (optional)
      "options": "early-start=1" | {"early-start": 1},
      "objects": {"ops": "ops.o"},              (paths relative to the JSON file, or to
                                                 --objects-dir DIR)
      "buffers": {                              (allocated once per run: fused and unfused each
        "x": {"type": "f32", "count": 1024,      get their own copy, filled the same way)
              "fill": "random", "range": [-1, 1], "seed": 1},
        "y": {"type": "f32", "count": 1024, "fill": 0}
      },
      "kernels": [
        {"object": "ops", "kernel": "axpy", "block_dim": 4, "args": [2.0, "@x", "@y", 1024],
         "name": "axpy.0", "signature": "f32,ptr,ptr,u32", "core_type": "vector",
         "flags": 0, "stream": 0}
      ],
      "repeat": 20,                             (runs timed; --repeat overrides it)
      "compare": ["y"]                          (buffers compared; default: all)
    }

fill: a number, a list of numbers, "iota" (0, 1, 2, ...), "random" (uniform over "range",
default [-1, 1], from "seed", default 0: the same values every run). Arguments "@name" are
buffers; numbers are scalars converted by the kernel's signature. Every error names the field.
"""
import ctypes
import json
import os
import random

from ..args import SIGNATURE_TOKENS
from ..scope import options_text

BUFFER_TYPES = {t: c for t, c in SIGNATURE_TOKENS.items() if t != "ptr"}


class SpecError(ValueError):
    pass


def _need(cond, where, message):
    if not cond:
        raise SpecError(f"{where}: {message}")


class ScopeSpec:
    def __init__(self, path, objects_dir=None):
        self.path = path
        try:
            with open(path) as f:
                doc = json.load(f)
        except OSError as e:
            raise SpecError(f"{path}: {e.strerror}") from None
        except json.JSONDecodeError as e:
            raise SpecError(f"{path}: not valid JSON: {e}") from None
        base = objects_dir or os.path.dirname(os.path.abspath(path))
        where = path
        _need(isinstance(doc, dict), where, "the top level must be an object")
        known = {"device", "name", "options", "objects", "buffers", "kernels", "repeat",
                 "compare", "comment"}
        unknown = sorted(set(doc) - known)
        _need(not unknown, where, f"unknown key(s) {', '.join(map(repr, unknown))} "
                                  f"(known: {', '.join(sorted(known))})")
        self.device = doc.get("device", "host")
        self.name = doc.get("name", os.path.splitext(os.path.basename(path))[0])
        options = options_text(doc.get("options"))
        _need(options is None or isinstance(options, str), f"{where}: options",
              "must be a string (key=value:key=value) or an object")
        self.options = options or ""
        objects = doc.get("objects", {})
        _need(isinstance(objects, dict) and objects, f"{where}: objects",
              "must be a non-empty object {alias: path}")
        self.objects = {alias: os.path.join(base, p) for alias, p in objects.items()}
        self.buffers = {}
        for name, b in doc.get("buffers", {}).items():
            self.buffers[name] = self._buffer(f"{where}: buffers.{name}", b)
        kernels = doc.get("kernels")
        _need(isinstance(kernels, list) and kernels, f"{where}: kernels",
              "must be a non-empty list")
        self.kernels = [self._kernel(f"{where}: kernels[{i}]", k) for i, k in enumerate(kernels)]
        self.repeat = doc.get("repeat", 10)
        _need(isinstance(self.repeat, int) and self.repeat >= 1, f"{where}: repeat",
              "must be an integer >= 1")
        self.compare = doc.get("compare", list(self.buffers))
        for c in self.compare:
            _need(c in self.buffers, f"{where}: compare", f"unknown buffer {c!r}")

    def _buffer(self, where, b):
        _need(isinstance(b, dict), where, "must be an object {type, count, fill}")
        typ = b.get("type", "f32")
        _need(typ in BUFFER_TYPES, where, f"type {typ!r} is not one of "
                                          f"{', '.join(BUFFER_TYPES)}")
        count = b.get("count")
        fill = b.get("fill", 0)
        if count is None and isinstance(fill, list):
            count = len(fill)
        _need(isinstance(count, int) and count >= 1, where, "count must be an integer >= 1")
        if isinstance(fill, list):
            _need(len(fill) == count, where, f"fill has {len(fill)} values, count is {count}")
        else:
            _need(isinstance(fill, (int, float)) or fill in ("iota", "random"), where,
                  f"fill {fill!r} is not a number, a list, \"iota\" or \"random\"")
        lo, hi = b.get("range", [-1, 1])
        return {"type": typ, "count": count, "fill": fill, "range": (lo, hi),
                "seed": b.get("seed", 0)}

    def _kernel(self, where, k):
        _need(isinstance(k, dict), where, "must be an object")
        for key in ("object", "kernel"):
            _need(isinstance(k.get(key), str), where, f"needs \"{key}\" (a string)")
        _need(k["object"] in self.objects, where, f"object {k['object']!r} is not in "
                                                  f"\"objects\" ({', '.join(self.objects)})")
        block_dim = k.get("block_dim", 1)
        _need(isinstance(block_dim, int), where, "block_dim must be an integer")
        args = k.get("args", [])
        _need(isinstance(args, list), where, "args must be a list")
        for i, a in enumerate(args):
            if isinstance(a, str):
                _need(a.startswith("@") and a[1:] in self.buffers, f"{where}.args[{i}]",
                      f"{a!r} is not \"@buffer\" of a buffer in \"buffers\"")
            else:
                _need(isinstance(a, (int, float)) and not isinstance(a, bool) or a is None,
                      f"{where}.args[{i}]", f"{a!r} is not a number, null or \"@buffer\"")
        return {"object": k["object"], "kernel": k["kernel"], "block_dim": block_dim,
                "args": args, "name": k.get("name"), "signature": k.get("signature"),
                "core_type": k.get("core_type"), "flags": k.get("flags", 0),
                "stream": k.get("stream", 0), "where": where}


def host_values(b):
    """The buffer's initial contents as a ctypes array."""
    ctype, n, fill = BUFFER_TYPES[b["type"]], b["count"], b["fill"]
    integer = b["type"][0] in "iu"
    if isinstance(fill, list):
        values = fill
    elif fill == "iota":
        values = range(n)
    elif fill == "random":
        rng, (lo, hi) = random.Random(b["seed"]), b["range"]
        values = [rng.randint(int(lo), int(hi)) if integer else rng.uniform(lo, hi)
                  for _ in range(n)]
    else:
        values = [fill] * n
    return (ctype * n)(*values)


class Instance:
    """The spec made real on a device: modules, kernels and one set of buffers per copy."""

    def __init__(self, spec, dev, copies):
        self.spec, self.dev = spec, dev
        self.modules = {alias: dev.load(path) for alias, path in spec.objects.items()}
        self.kernels = []
        for k in spec.kernels:
            mod = self.modules[k["object"]]
            try:
                self.kernels.append(mod.kernel(k["kernel"], k["signature"]))
            except LookupError as e:
                from ..errors import Error
                if isinstance(e, Error):  # libsk's own verdict: reported as a libsk error
                    raise
                raise SpecError(f"{k['where']}: {e}") from None
        self.sets = []
        for _ in range(copies):
            buffers = {}
            for name, b in spec.buffers.items():
                host = host_values(b)
                buf = dev.alloc(ctypes.sizeof(host))
                dev.memcpy(buf, host, ctypes.sizeof(host))
                buffers[name] = buf
            self.sets.append(buffers)

    def args(self, i, copy):
        buffers = self.sets[copy]
        return [buffers[a[1:]] if isinstance(a, str) else a for a in self.spec.kernels[i]["args"]]

    def unfused_launcher(self, copy):
        """A function that queues every kernel once, unfused, on the default stream. Arguments
        are converted once here, so the timed loop pays one ctypes call per kernel and no
        Python-side argument work (a C caller would pay even less)."""
        from .._lib import lib
        from ..errors import check
        packed = [(k, self.spec.kernels[i]["block_dim"], k.pack(self.args(i, copy)))
                  for i, k in enumerate(self.kernels)]
        launch = lib().sk_launch_kernel
        calls = [(k.handle, b, p.pointer) for k, b, p in packed]

        def run():
            for handle, block_dim, args in calls:
                status = launch(handle, block_dim, args, None)
                if status:
                    check(status, "sk_launch_kernel")
        run.keepalive = packed  # the converted arguments and the buffers behind them
        return run

    def fuse(self, copy, extra_options=""):
        options = ":".join(o for o in (self.spec.options, extra_options) if o)
        with self.dev.scope(self.spec.name, options or None) as scope:
            for i, k in enumerate(self.kernels):
                d = self.spec.kernels[i]
                scope.add(k, d["block_dim"], *self.args(i, copy), name=d["name"],
                          core_type=d["core_type"], flags=d["flags"], stream=d["stream"])
        return scope.superkernel

    def contents(self, copy, name):
        b = self.spec.buffers[name]
        host = (BUFFER_TYPES[b["type"]] * b["count"])()
        self.dev.memcpy(host, self.sets[copy][name], ctypes.sizeof(host))
        return host
