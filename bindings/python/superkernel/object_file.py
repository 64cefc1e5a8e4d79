"""Reading a kernel object file without trusting it, as libsk's sk_module_load_file does: the
size of a regular file is checked before a byte is read; anything else (a pipe, a character
device, a /proc file that claims 0 bytes) is read in chunks, never past the limit, and reading
stops at the first bytes that cannot begin a kernel object (so /dev/zero costs one chunk)."""
import os
import stat

#: libsk's limit: objects must be smaller than this (kMaxObjectSize, src/common/backend.hpp).
MAX_OBJECT_SIZE = 1 << 30
ELF_MAGIC = b"\x7fELF"
AR_MAGIC = b"!<arch>\n"  # an archive, for a list given to Device.load
FATBIN_MAGIC = (0xba55ed50).to_bytes(4, "little")  # nvcc's fatbinary (a CUDA device loads it)
LTOIR_MAGIC = (0x7f4e43ed).to_bytes(4, "little")  # NVVM's LTO-IR (nvcc -dc -dlto -ltoir)
_SCRIPT_START = b"EXTERN"  # a linker script of EXTERN commands, for a list given to Device.load
_CHUNK = 1 << 16


class ObjectFileError(ValueError):
    """The file cannot be a kernel object: `kind` is "empty", "not-elf", "too-large" or
    "not-a-file" (a directory); the message names the file."""

    def __init__(self, message, kind):
        super().__init__(message)
        self.kind = kind


def is_regular(path):
    """True for a regular file whose size tells what it holds (a /proc file says 0 bytes)."""
    st = os.stat(path)
    return stat.S_ISREG(st.st_mode) and st.st_size > 0


def read_object(path):
    """The bytes of the object at path; OSError if it cannot be opened or read,
    ObjectFileError if it cannot be an object libsk would load."""
    name = os.fsdecode(path)
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        st = os.fstat(fd)
        if stat.S_ISDIR(st.st_mode):
            raise ObjectFileError(f"{name}: is a directory", "not-a-file")
        if stat.S_ISREG(st.st_mode) and st.st_size >= MAX_OBJECT_SIZE:
            raise _too_large(name, st.st_size)
        chunks, size, head = [], 0, b""
        while True:
            chunk = os.read(fd, _CHUNK)
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
            if size >= MAX_OBJECT_SIZE:
                raise _too_large(name, size)
            if len(head) < len(ELF_MAGIC):
                head = (head + chunk)[:len(ELF_MAGIC)]
                if not any(m.startswith(head)
                           for m in (ELF_MAGIC, AR_MAGIC, FATBIN_MAGIC, LTOIR_MAGIC)) and \
                        not _text(head):
                    raise ObjectFileError(f"{name}: not an ELF object (no \\x7fELF magic)",
                                          "not-elf")
    finally:
        os.close(fd)
    if not size:
        raise ObjectFileError(f"{name}: file is empty", "empty")
    return b"".join(chunks)


def _text(head):
    """Bytes a linker script may begin with (libsk reads it: EXTERN commands and comments)."""
    return all(32 <= b < 127 or b in b"\t\n\r" for b in head)


def extern_names(image):
    """The symbols a linker script of EXTERN commands names, or None when `image` is not one
    (libsk's reading, elf/combine.cpp, is the one that counts; this is for describing it)."""
    try:
        text = image.decode("ascii")
    except UnicodeDecodeError:
        return None
    names, rest = [], text
    while True:
        rest = rest.lstrip()
        if rest.startswith("/*"):
            end = rest.find("*/", 2)
            if end < 0:
                return None
            rest = rest[end + 2:]
            continue
        if not rest:
            return names
        if not rest.startswith(_SCRIPT_START.decode()):
            return None
        rest = rest[len(_SCRIPT_START):].lstrip()
        close = rest.find(")")
        if not rest.startswith("(") or close < 0:
            return None
        names += rest[1:close].replace(",", " ").split()
        rest = rest[close + 1:]


def _too_large(name, size):
    return ObjectFileError(f"{name}: {size} bytes or more: kernel objects must be smaller than "
                           f"{MAX_OBJECT_SIZE} bytes", "too-large")
