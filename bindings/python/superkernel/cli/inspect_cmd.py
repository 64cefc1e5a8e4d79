"""`sk inspect FILE [FILE...]`: what a kernel object holds, as libsk will see it.

Kernels (from the SK_KERNEL records of .sk.kernels) with their signatures, core types and the
device-API calls each makes; sections; relocations per section and type; undefined symbols
(device API vs process symbols); the XXH3-128 content hash libsk uses for binary reuse. With
--load, the object is also loaded by libsk (what sk_module_load says about it).

Several files, or an `ar` archive, are linked by libsk as one module (sk_module_load_files, on
the --load device, default host): each object is shown as above, each archive as its members
and the kernels they record, then which kernels the linked module has.
"""
import json

import superkernel as sk

from ..object_file import AR_MAGIC, is_regular, read_object
from .errors import InputError


def add_parser(sub):
    p = sub.add_parser("inspect", help="show the kernels, sections and relocations of an object",
                       description=__doc__)
    p.add_argument("files", nargs="+", metavar="FILE",
                   help="kernel object (ELF relocatable, as cc -c writes it) or ar archive; "
                        "several are linked as one module")
    p.add_argument("--json", action="store_true", help="print one JSON object instead of text")
    p.add_argument("--load", metavar="SPEC", nargs="?", const="host",
                   help="also load it with libsk on device SPEC (default host) and report")
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
    try:  # here, not at the top: the other commands run without pyelftools
        from .inspect_object import describe, print_text
        from .inspect_set import run_set
    except ModuleNotFoundError as e:
        if (e.name or "").partition(".")[0] != "elftools":
            raise
        raise InputError("reading objects needs pyelftools, which this python lacks (Debian: "
                         "python3-pyelftools; PyPI: pyelftools)") from None
    if len(args.files) > 1 or _is_archive(args.files[0]):
        return run_set(args, out)
    args.file = args.files[0]
    try:
        regular = is_regular(args.file)
        image = read_object(args.file)  # bounded: a pipe or /dev/zero is not read to the end
        d = describe(args.file, image)
    except OSError as e:
        raise InputError(f"{args.file}: {e.strerror}") from None
    except ValueError as e:
        raise InputError(str(e)) from None
    d["device_api_source"] = "relocations read by sk inspect"
    if args.load:  # a pipe can be read only once: libsk gets the bytes read here
        load_with_libsk(d, args.file if regular else image, args.load)
    if args.json:
        json.dump(d, out, indent=2)
        out.write("\n")
    else:
        print_text(d, out)
    return 0


def _is_archive(path):
    """A regular file that starts as an archive (a pipe is not opened here: it reads once)."""
    try:
        if not is_regular(path):
            return False
        with open(path, "rb") as f:
            return f.read(len(AR_MAGIC)) == AR_MAGIC
    except OSError:
        return False  # the one-file path reports it
