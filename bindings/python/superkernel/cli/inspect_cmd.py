"""`sk inspect FILE [FILE...]`: what a kernel object holds, as libsk will see it.

Kernels (from the SK_KERNEL records of .sk.kernels) with their signatures, core types and the
device-API calls each makes; sections; relocations per section and type; undefined symbols
(device API vs process symbols); the XXH3-128 content hash libsk uses for binary reuse. With
--load, the object is also loaded by libsk (what sk_module_load says about it).

Several files, or an `ar` archive, are linked by libsk as one module (sk_module_load_files, on
the --load device, default host): each object is shown as above, each archive as its members
and the kernels they record, then which kernels the linked module has.
"""
import ctypes
import hashlib
import json

from ..metadata import kernel_records
from ..object_file import AR_MAGIC, is_regular, read_object
from .elf import ELF_TYPES, MACHINES, SECTION_TYPES, SHF_ALLOC, SHF_EXECINSTR, SHF_WRITE, \
    ElfObject

DEVICE_API_PREFIX = "sk_"


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


def content_hash(image):
    """XXH3-128 of the bytes (libsk's content hash), through libxxhash; SHA-256 without it."""
    try:
        xxh = ctypes.CDLL("libxxhash.so.0")

        class XXH128(ctypes.Structure):
            _fields_ = [("low64", ctypes.c_uint64), ("high64", ctypes.c_uint64)]

        xxh.XXH3_128bits.restype = XXH128
        xxh.XXH3_128bits.argtypes = [ctypes.c_char_p, ctypes.c_size_t]  # bytes: no copy
        h = xxh.XXH3_128bits(image, len(image))
        return "xxh3-128", f"{h.high64:016x}{h.low64:016x}"
    except (OSError, AttributeError):
        return "sha256", hashlib.sha256(image).hexdigest()


def describe(path, image):
    elf = ElfObject(image, path)
    records = kernel_records(image)
    functions = {s.name: s for s in elf.symbols if s.type == 2 and s.shndx != 0}
    kernels = []
    # In code order (compilers write the metadata records in no particular order).
    for name, rec in sorted(records.items(),
                            key=lambda kv: (kv[0] not in functions,
                                            getattr(functions.get(kv[0]), "shndx", 0),
                                            getattr(functions.get(kv[0]), "value", 0))):
        fn = functions.get(name)
        api = sorted(r for r in elf.function_references(fn) if r.startswith(DEVICE_API_PREFIX)) \
            if fn else []
        kernels.append({"name": name, "signature": rec["sig"], "core_type": rec["type"],
                        "defined": fn is not None, "size": fn.size if fn else 0,
                        "device_api": api})
    undefined = elf.undefined_symbols()
    algo, digest = content_hash(image)
    return {
        "file": path, "bytes": len(image), "hash": {"algorithm": algo, "value": digest},
        "machine": MACHINES.get(elf.machine, f"machine {elf.machine}"),
        "elf_type": ELF_TYPES.get(elf.elf_type, str(elf.elf_type)),
        "class": "ELF64" if elf.is64 else "ELF32",
        "kernels": kernels,
        "functions_without_metadata": sorted(n for n, s in functions.items()
                                             if n not in records and s.bind != 0),
        "sections": [{"name": s.name, "type": SECTION_TYPES.get(s.type, hex(s.type)),
                      "size": s.size, "flags": _flags(s.flags)}
                     for s in elf.sections if s.index != 0],
        "relocations": {target: dict(sorted(c.items()))
                        for target, c in elf.relocation_summary().items()},
        "undefined": {"device_api": [u for u in undefined if u.startswith(DEVICE_API_PREFIX)],
                      "process": [u for u in undefined if not u.startswith(DEVICE_API_PREFIX)]},
        "tls": any(s.type == 6 for s in elf.symbols),
    }


def _flags(flags):
    return "".join(c for bit, c in ((SHF_ALLOC, "A"), (SHF_WRITE, "W"), (SHF_EXECINSTR, "X"))
                   if flags & bit)


def print_text(d, out):
    w = out.write
    w(f"{d['file']}: {d['class']} {d['elf_type']}, {d['machine']}, {d['bytes']} bytes\n")
    w(f"content hash ({d['hash']['algorithm']}): {d['hash']['value']}\n")
    w(f"\nkernels ({len(d['kernels'])}; device API from {d['device_api_source']}):\n")
    if not d["kernels"]:
        w("  none recorded (no SK_KERNEL metadata: give signatures with "
          "sk_module_get_kernel_with_signature)\n")
    for k in d["kernels"]:
        state = f"{k['size']} bytes of code" if k["defined"] else "NOT DEFINED in this object"
        w(f"  {k['name']}({k['signature']})  core type {k['core_type']}, {state}\n")
        w(f"    device API: {', '.join(k['device_api']) or 'none'}\n")
    if d["functions_without_metadata"]:
        w(f"global functions without metadata: {', '.join(d['functions_without_metadata'])}\n")
    w(f"\nsections ({len(d['sections'])}):\n")
    for s in d["sections"]:
        w(f"  {s['name']:<28} {s['type']:<14} {s['size']:>8}  {s['flags']}\n")
    w("\nrelocations:\n")
    if not d["relocations"]:
        w("  none\n")
    for target, counts in d["relocations"].items():
        total = sum(counts.values())
        kinds = ", ".join(f"{n} x{c}" for n, c in counts.items())
        w(f"  {target:<28} {total:>5}  {kinds}\n")
    w("\nundefined symbols:\n")
    w(f"  device API (bound by libsk): {', '.join(d['undefined']['device_api']) or 'none'}\n")
    w(f"  process (bound to the process's symbols): "
      f"{', '.join(d['undefined']['process']) or 'none'}\n")
    if d["tls"]:
        w("  thread-local storage: present (libsk refuses TLS)\n")
    if "load" in d:
        w(f"\nlibsk ({d['load']['spec']}): {d['load']['result']}\n")


def zero_args(signature):
    return [None if t == "ptr" else 0 for t in signature.split(",") if t]


def load_with_libsk(d, source, spec):
    """Loads the object (a path, or the bytes of a pipe already read) with libsk and takes each
    kernel's device-API use from libsk's own plan (a one-kernel scope, finalized, never
    launched): what the planner will act on."""
    import superkernel as sk
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
    from . import InputError
    if len(args.files) > 1 or _is_archive(args.files[0]):
        from .inspect_set import run_set
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
