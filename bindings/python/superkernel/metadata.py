"""Reads the `.sk.kernels` records of a kernel object (what sk_kernel.h's SK_KERNEL writes), so
the binding knows each kernel's signature and can convert Python arguments.

A record is a NUL-terminated string "sk1;kernel=NAME;sig=SIGNATURE;type=CORE_TYPE". Only the
section table of the ELF file is read (ELF64 and ELF32, either byte order); anything malformed
yields no records and libsk's own loader reports the problem.
"""
import struct


def kernel_records(image):
    """{kernel name: {"sig": ..., "type": ...}} from the object's .sk.kernels section."""
    section = _section(bytes(image), b".sk.kernels")
    records = {}
    for raw in (section or b"").split(b"\0"):
        fields = raw.decode(errors="replace").split(";")
        if not fields or fields[0] != "sk1":
            continue
        kv = dict(f.split("=", 1) for f in fields[1:] if "=" in f)
        if "kernel" in kv:
            records[kv["kernel"]] = {"sig": kv.get("sig", ""), "type": kv.get("type", "vector")}
    return records


def _section(image, wanted):
    if len(image) < 52 or image[:4] != b"\x7fELF":
        return None
    is64, order = image[4] == 2, "<" if image[5] == 1 else ">"
    try:
        if is64:
            shoff, = struct.unpack_from(order + "Q", image, 0x28)
            shentsize, shnum, shstrndx = struct.unpack_from(order + "HHH", image, 0x3A)
            fmt, name_at, off_at = order + "IIQQQQ", 0, (4, 5)
        else:
            shoff, = struct.unpack_from(order + "I", image, 0x20)
            shentsize, shnum, shstrndx = struct.unpack_from(order + "HHH", image, 0x2E)
            fmt, name_at, off_at = order + "IIIIII", 0, (4, 5)
        headers = [struct.unpack_from(fmt, image, shoff + i * shentsize) for i in range(shnum)]
        strtab = headers[shstrndx]
        names = image[strtab[off_at[0]]:strtab[off_at[0]] + strtab[off_at[1]]]
        for h in headers:
            start = h[name_at]
            name = names[start:names.index(b"\0", start)] if start < len(names) else b""
            if name == wanted:
                return image[h[off_at[0]]:h[off_at[0]] + h[off_at[1]]]
    except (struct.error, IndexError, ValueError):
        return None
    return None
