"""`sk inspect FILE [FILE...]`: what a kernel object holds, as libsk will see it.

Kernels (from the SK_KERNEL records of .sk.kernels) with their signatures, core types and the
device-API calls each makes; sections; relocations per section and type; undefined symbols
(device API vs process symbols); the XXH3-128 content hash libsk uses for binary reuse. With
--load, the object is also loaded by libsk (what sk_module_load says about it).

Several files, or an `ar` archive, are linked by libsk as one module (sk_module_load_files, on
the --load device, default host): each object is shown as above, each archive as its members
and the kernels they record, then which kernels the linked module has.

A CUDA module (PTX text, a cubin, LTO-IR, a fatbinary, a host object of nvcc holding one, or a
static library of them, nvcc -lib, with each kernel's member and the members it links) is read
by libsk as a CUDA device of --arch would read it, no GPU needed (sk_module_inspect): what
it holds for that architecture, a PTX module's version, target and rewrites (LTO-IR's: of the
PTX its IR links to, whose __global__ kernels libsk fuses), and each kernel's launch facts
(threads, dynamic shared memory, and where each came from), device API, PTX directives and
rewrites, or why libsk cannot take it. Several CUDA modules are inspected each on its own;
CUDA modules and host objects are not mixed in one command.
"""
import json
import re

import superkernel as sk

from ..object_file import AR_MAGIC, is_regular, read_object
from .errors import InputError, UsageError
from . import inspect_cuda

DEFAULT_ARCH = "sm_90"


def add_parser(sub):
    p = sub.add_parser("inspect", help="show the kernels, sections and relocations of an object",
                       description=__doc__)
    p.add_argument("files", nargs="+", metavar="FILE",
                   help="kernel object (ELF relocatable, as cc -c writes it) or ar archive; "
                        "several are linked as one module; or a CUDA module (PTX, cubin, "
                        "fatbinary, nvcc object), each read on its own")
    p.add_argument("--json", action="store_true", help="print one JSON object instead of text")
    p.add_argument("--load", metavar="SPEC", nargs="?", const="host",
                   help="also load it with libsk on device SPEC (default host) and report")
    p.add_argument("--arch", metavar="sm_XY",
                   help=f"the GPU architecture libsk reads a CUDA module for (default "
                        f"{DEFAULT_ARCH}); no GPU needed")
    p.set_defaults(run=run)


def zero_args(signature):
    return [None if t == "ptr" else 0 for t in signature.split(",") if t]


def load_with_libsk(d, source, spec):
    """Loads the object (a path, or the bytes of a pipe already read) with libsk and takes each
    kernel's device-API use from libsk's own plan (a one-kernel scope, finalized, never
    launched): what the planner will act on."""
    with sk.Device(spec) as dev:
        with dev.load(source) as mod:
            for k in d["kernels"]:
                kernel = mod.kernel(k["name"])  # libsk agrees with the metadata (raises if not)
                with dev.scope("inspect") as scope:
                    scope.add(kernel, 1, *zero_args(kernel.signature))
                with scope.superkernel as fused:
                    step = fused.explain()["steps"][0]
                k["device_api"] = sorted(step.get("device_api", []))
    d["device_api_source"] = "libsk's plan"
    d["load"] = {"spec": spec, "result": f"loads and links; {len(d['kernels'])} kernel(s) found "
                                         "by libsk"}


def run(args, out, err):
    inputs = [(path, *_read(path)) for path in args.files]  # a pipe can be read only once
    kinds = [inspect_cuda.cuda_file_kind(image) for _, _, image in inputs]
    cuda = [(path, kind) for (path, _, _), kind in zip(inputs, kinds) if kind]
    if cuda:
        host = [path for (path, _, _), kind in zip(inputs, kinds) if not kind]
        if host:
            raise UsageError(f"{cuda[0][0]} is a CUDA module ({cuda[0][1]}) and {host[0]} is not: "
                             "host objects are linked as one module, CUDA modules read each on "
                             "its own; inspect them in separate commands")
        if args.load:
            raise UsageError(f"--load is for host objects; {cuda[0][0]} is a CUDA module "
                             f"({cuda[0][1]}), which libsk reads for --arch without a device")
        return _run_cuda(args, inputs, kinds, out)
    if args.arch:
        raise UsageError(f"--arch is for CUDA modules (PTX, cubin, fatbinary, nvcc object); "
                         f"{args.files[0]} is not one")
    try:  # here, not at the top: the other commands, and CUDA modules, need no pyelftools
        from .inspect_object import describe, print_text
        from .inspect_set import run_set
    except ModuleNotFoundError as e:
        if (e.name or "").partition(".")[0] != "elftools":
            raise
        raise InputError("reading objects needs pyelftools, which this python lacks (Debian: "
                         "python3-pyelftools; PyPI: pyelftools)") from None
    if len(inputs) > 1 or inputs[0][2].startswith(AR_MAGIC):
        return run_set(args, inputs, out)
    path, regular, image = inputs[0]
    try:
        d = describe(path, image)
    except ValueError as e:
        raise InputError(str(e)) from None
    d["device_api_source"] = "libsk's reading of the code"
    if args.load:  # a pipe can be read only once: libsk gets the bytes read here
        load_with_libsk(d, path if regular else image, args.load)
    if args.json:
        json.dump(d, out, indent=2)
        out.write("\n")
    else:
        print_text(d, out)
    return 0


def _run_cuda(args, inputs, kinds, out):
    arch = _arch(args.arch or DEFAULT_ARCH)
    files = [inspect_cuda.describe(path, image, kind, arch)
             for (path, _, image), kind in zip(inputs, kinds)]
    if args.json:
        json.dump(files[0] if len(files) == 1 else {"files": files}, out, indent=2)
        out.write("\n")
        return 0
    for i, d in enumerate(files):
        if i:
            out.write("\n")
        inspect_cuda.print_text(d, out)
    return 0


def _read(path):
    """(regular, bytes) of the file at path; bounded: a pipe or /dev/zero is not read to the end."""
    try:
        return is_regular(path), read_object(path)
    except OSError as e:
        raise InputError(f"{path}: {e.strerror}") from None
    except ValueError as e:
        raise InputError(str(e)) from None


def _arch(value):
    """--arch: a GPU architecture as CUDA device specs name one (sm_90, sm_90a, sm_100...)."""
    if not re.fullmatch(r"sm_[0-9]+[a-z]?", value):
        raise UsageError(f"--arch '{value}' is not a GPU architecture of the form sm_XY (sm_80, "
                         "sm_90, sm_90a...)")
    return value
