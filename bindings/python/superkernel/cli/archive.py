"""The members of an `ar` archive, for `sk inspect` (libsk reads archives itself when it links)."""
from ..object_file import AR_MAGIC


def archive_members(image):
    """The (name, bytes) of each member of a GNU/SysV archive, index and name tables left out.
    A malformed archive yields what precedes the damage: libsk, which links it, says what."""
    members, at, long_names = [], len(AR_MAGIC), b""
    while at + 60 <= len(image):
        header = image[at:at + 60]
        try:
            size = int(header[48:58].decode().strip())
        except ValueError:
            break
        name, data = header[:16].decode(errors="replace").rstrip(), image[at + 60:at + 60 + size]
        at += 60 + size + (size & 1)
        if name == "//":
            long_names = data
        elif name not in ("/", "/SYM64/"):
            if name.startswith("/") and name[1:].isdigit():
                end = long_names.find(b"\n", int(name[1:]))
                name = long_names[int(name[1:]):end if end >= 0 else None].decode(errors="replace")
            members.append((name.rstrip("/"), data))
    return members

