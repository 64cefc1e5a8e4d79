"""What `sk inspect` says of one object: its kernels and the device API each one's code reaches as
libsk reads them (sk_module_inspect), and, read with pyelftools (superkernel/elf_file.py), its
sections, relocations, undefined symbols and content hash; as a dict (--json) or as text."""
import ctypes
import hashlib

import superkernel as sk

from ..elf_file import SHF_ALLOC, SHF_EXECINSTR, SHF_WRITE, ElfObject
from .inspect_dwarf import implied_signature, mismatches, parameters

DEVICE_API_PREFIX = "sk_"


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
    # Its own tables first: an object malformed there is bad input (exit 3) naming the table.
    functions = {s.name: s for s in elf.symbols if s.type == "FUNC" and s.shndx != "SHN_UNDEF"}
    relocations = elf.relocation_summary()
    # The kernels as libsk reads the object (sk_module_inspect): a record it refuses raises.
    declared = sk.inspect_module(image, "host", path)["kernels"]
    records = {k["name"] for k in declared}
    kernels = []
    # In code order (compilers write the metadata records in no particular order).
    for k in sorted(declared, key=lambda k: (k["name"] not in functions,
                                             getattr(functions.get(k["name"]), "shndx", 0),
                                             getattr(functions.get(k["name"]), "value", 0))):
        fn = functions.get(k["name"])
        kernels.append({"name": k["name"], "signature": k["signature"], "core_type": k["core_type"],
                        "defined": k["defined"], "size": fn.size if fn else 0,
                        "device_api": sorted(k["device_api"])})
    # Built with -g: what the debug information says each function's parameters are.
    dwarf = parameters(image)
    for k in kernels:
        if k["name"] in dwarf:
            k["debug_info"] = {"signature": implied_signature(dwarf[k["name"]]),
                               "mismatches": mismatches(k["signature"], dwarf[k["name"]])}
    undefined = elf.undefined_symbols()
    algo, digest = content_hash(image)
    return {
        "file": path, "bytes": len(image), "hash": {"algorithm": algo, "value": digest},
        "machine": elf.machine_name,
        "elf_type": elf.elf_type_name,
        "class": "ELF64" if elf.is64 else "ELF32",
        "kernels": kernels,
        "functions_without_metadata": sorted(n for n, s in functions.items()
                                             if n not in records and s.bind != "LOCAL"),
        # The signature their debug information implies: what to give libsk for them.
        "debug_info_signatures": {n: implied_signature(dwarf[n]) for n, s in sorted(functions.items())
                                  if n not in records and s.bind != "LOCAL" and n in dwarf},
        "sections": [{"name": s.name, "type": elf.section_type_name(s),
                      "size": s.size, "flags": _flags(s.flags)}
                     for s in elf.sections if s.index != 0],
        "relocations": {target: dict(sorted(c.items())) for target, c in relocations.items()},
        "undefined": {"device_api": [u for u in undefined if u.startswith(DEVICE_API_PREFIX)],
                      "process": [u for u in undefined if not u.startswith(DEVICE_API_PREFIX)]},
        "tls": any(s.type == "TLS" for s in elf.symbols),
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
        debug = k.get("debug_info")
        if debug and debug["mismatches"]:
            for m in debug["mismatches"]:
                w(f"    WARNING: signature \"{k['signature']}\" disagrees with the debug "
                  f"information: {m}\n")
        elif debug:
            w("    debug information: the same parameter types\n")
    if d["functions_without_metadata"]:
        implied = d.get("debug_info_signatures", {})
        w("global functions without metadata: " + ", ".join(
            f + (f" (debug information: \"{implied[f]}\")" if implied.get(f) is not None else "")
            for f in d["functions_without_metadata"]) + "\n")
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
        w("  thread-local storage: present (one copy per thread; local- and initial-exec code needs "
          "glibc's static TLS space)\n")
    if "load" in d:
        w(f"\nlibsk ({d['load']['spec']}): {d['load']['result']}\n")
