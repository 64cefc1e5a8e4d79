"""What `sk inspect` says of a CUDA module (PTX text, a cubin, LTO-IR, a fatbinary, an nvcc host
object): libsk's own reading for an architecture (sk_module_inspect, no GPU needed), as JSON or
text. Telling such a file from a host object reads only its first bytes and ELF headers (no
pyelftools)."""
import os
import struct

import superkernel as sk

from ..checks import message_text
from ..object_file import AR_MAGIC, ELF_MAGIC, FATBIN_MAGIC, LTOIR_MAGIC
from ..ptx import looks_like_ptx

EM_CUDA = 190
# The sections of nvcc's host objects that hold a fatbinary: `nvcc -dc` (relocatable device
# code) and `nvcc -c` (linked device code).
NVCC_FATBIN_SECTIONS = {b"__nv_relfatbin", b".nv_fatbin"}
# What libsk's `kind` says, as the text shows it.
KIND_NAMES = {"ptx": "PTX", "cubin": "cubin", "lto-ir": "LTO-IR",
              "library": "the PTX or SASS of its translation units",
              "archive": "the device code of its members"}
# An `ar` member's header: its size, in decimal, at bytes 48-58 of 60.
AR_HEADER, AR_SIZE = 60, slice(48, 58)


def cuda_file_kind(image):
    """"PTX text", "cubin", "LTO-IR", "fatbinary", "nvcc host object" or "static library of nvcc
    objects" for the bytes of a CUDA module; None for anything else (a host object, an archive of
    host objects, or bytes the host reading refuses)."""
    if image.startswith(AR_MAGIC):
        return _archive_kind(image)
    if image.startswith(FATBIN_MAGIC):
        return "fatbinary"
    if image.startswith(LTOIR_MAGIC):
        return "LTO-IR"
    if image.startswith(ELF_MAGIC):
        return _elf_kind(image)
    if looks_like_ptx(image.decode("latin-1")):  # any byte decodes: only the start is matched
        return "PTX text"
    return None


def _archive_kind(image):
    """"static library of nvcc objects" for an archive with a member of device code (an nvcc host
    object or a cubin, as nvcc -lib writes them); None otherwise, a malformed archive included."""
    at = len(AR_MAGIC)
    while at + AR_HEADER <= len(image):
        try:
            size = int(image[at:at + AR_HEADER][AR_SIZE].decode("ascii"))
        except ValueError:
            return None
        member = image[at + AR_HEADER:at + AR_HEADER + size]
        if member.startswith(ELF_MAGIC) and _elf_kind(member) in ("cubin", "nvcc host object"):
            return "static library of nvcc objects"
        at += AR_HEADER + size + size % 2
    return None


def _elf_kind(image):
    """"cubin" for ELF machine EM_CUDA; for an ELF holding a fatbinary section, "nvcc host object"
    (a relocatable object), "shared library" or "executable" (nvcc's host link of them); None
    otherwise, a malformed header included (the host reading says what is wrong)."""
    if len(image) < 64 or image[4] not in (1, 2) or image[5] not in (1, 2):
        return None
    is64, endian = image[4] == 2, "<" if image[5] == 1 else ">"
    if struct.unpack_from(endian + "H", image, 18)[0] == EM_CUDA:
        return "cubin"
    if is64:
        shoff, = struct.unpack_from(endian + "Q", image, 0x28)
        shentsize, shnum, shstrndx = struct.unpack_from(endian + "3H", image, 0x3A)
        offset_at, size_fmt = 0x18, "QQ"  # sh_offset, sh_size
    else:
        shoff, = struct.unpack_from(endian + "I", image, 0x20)
        shentsize, shnum, shstrndx = struct.unpack_from(endian + "3H", image, 0x2E)
        offset_at, size_fmt = 0x10, "II"
    need = offset_at + struct.calcsize(endian + size_fmt)
    if shentsize < need or shstrndx >= shnum or shoff + shnum * shentsize > len(image):
        return None

    def section(i):
        at = shoff + i * shentsize
        name, = struct.unpack_from(endian + "I", image, at)  # sh_name
        offset, size = struct.unpack_from(endian + size_fmt, image, at + offset_at)
        return name, offset, size

    _, str_offset, str_size = section(shstrndx)
    if str_offset + str_size > len(image):
        return None
    strtab = image[str_offset:str_offset + str_size]
    for i in range(shnum):
        name = section(i)[0]
        if name < len(strtab) and strtab[name:].split(b"\0", 1)[0] in NVCC_FATBIN_SECTIONS:
            e_type, = struct.unpack_from(endian + "H", image, 16)
            return {2: "executable", 3: "shared library"}.get(e_type, "nvcc host object")
    return None


def describe(path, image, file_kind, arch):
    """libsk's reading of the module for `arch`, with the file's path first."""
    # libsk names bytes it was given "<memory image of N bytes>": here they are the file.
    label = f"<memory image of {len(image)} bytes>"
    try:
        d = sk.inspect_module(image, f"cuda:arch={arch}")
    except sk.Error as e:  # the bytes were read here: the message names the file
        e.call = f"{e.call} ({message_text(os.fsencode(path))})"
        e.message = _named(e.message, label, os.fsdecode(path))
        raise
    return {"file": path, "file_kind": file_kind, "bytes": len(image),
            **_named(d, label, os.fsdecode(path))}


def _named(value, label, path):
    """`value` (parsed JSON) with `label` in its strings read as `path`."""
    if isinstance(value, str):
        return value.replace(label, path)
    if isinstance(value, list):
        return [_named(v, label, path) for v in value]
    if isinstance(value, dict):
        return {k: _named(v, label, path) for k, v in value.items()}
    return value


def print_text(d, out):
    w = out.write
    kind = KIND_NAMES.get(d["kind"], d["kind"])
    w(f"{d['file']}: {d['file_kind']}, {d['bytes']} bytes; for {d['arch']} libsk reads {kind} "
      f"({d['module']})\n")
    for o in d.get("objects", []):
        w(f"  object: {o}\n")
    ptx = d.get("ptx")
    if ptx:
        if d["kind"] == "lto-ir":
            w("its __global__ kernels are read from the PTX its IR links to alone:\n")
        w(f"PTX {ptx['version']}, .target {ptx['target']}, linked for {ptx['link_arch']}\n")
        w("module rewrites:" + ("" if ptx["rewrites"] else " none") + "\n")
        for r in ptx["rewrites"]:
            w(f"  {_one_line(r)}\n")
    w(f"\nkernels ({len(d['kernels'])}):\n")
    for k in d["kernels"]:
        if "error" in k:
            w(f"  {k['name']}: cannot be taken: {_one_line(k['error'])}\n")
            if "needs" not in k:
                continue
            given = ", ".join(f"sk_kernel_desc.{field}" for field in k["needs"])
            w(f"    taken once given {given}; with stand-ins for them:\n")
            w(f"    signature: {k['signature']}\n")
        else:
            w(f"  {k['name']}({k['signature']})\n")
        if "objects" in d:
            w(f"    object: {k['module']}\n")
            w(f"    linked with: {', '.join(k.get('linked_with', [])) or 'nothing else'}\n")
        if k.get("plain_launch"):
            w("    launched as compiled (linked SASS: a dispatch of its own, not fused)\n")
        w(f"    threads: {k['threads']} (from {k['threads_from']})\n")
        shared = f"{k['dynamic_shared_bytes']} bytes"
        if k.get("dynamic_shared_from"):
            shared += f" (from {k['dynamic_shared_from']})"
        w(f"    static shared: {k['static_shared_bytes']} bytes\n")
        w(f"    dynamic shared: {shared}\n")
        if "cluster" in k:
            w(f"    cluster: {' x '.join(map(str, k['cluster']))} blocks (from {k['cluster_from']})\n")
        w(f"    device API: {', '.join(k['device_api']) or 'none'}\n")
        p = k.get("ptx")
        if p is None:
            continue
        directives = [f"{key} {','.join(map(str, p[key]))}" for key in ("reqntid", "maxntid")
                      if key in p]
        directives += [f"{key} {p[key]}" for key in ("min_blocks_per_sm", "max_registers")
                       if key in p]
        w(f"    PTX {'.entry' if p['entry'] else '.func'}: "
          f"{'; '.join(directives) or 'no launch directives'}\n")
        w("    rewrites:" + ("" if p["rewrites"] else " none") + "\n")
        for r in p["rewrites"]:
            w(f"      {_one_line(r)}\n")


def _one_line(text):
    """A rewrite or error on its line (a directive libsk quotes may span lines)."""
    return " ".join(text.split("\n"))
