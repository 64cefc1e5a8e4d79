"""Device.load with a list: several objects and `ar` archives linked as one module
(sk_module_load_files, sk_module_load_images), and the kernel records of such a set."""
import ctypes
import os

from ._lib import lib
from .checks import c_path
from .errors import BadBinary, check
from .metadata import kernel_records
from .object_file import AR_MAGIC, is_regular


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


def set_records(images):
    """The kernel records of every object, and of every archive member (those an object of the
    set does not need are not linked: sk_module_get_kernel says so)."""
    records = {}
    for image in images:
        if image.startswith(AR_MAGIC):
            for _, member in archive_members(image):
                records.update(kernel_records(member))
        else:
            records.update(kernel_records(image))
    return records


def load_set(device, sources, out, read_for_load):
    """Loads `sources` (paths and bytes-like objects) into the module handle `out`; returns the
    images read, for their kernel records."""
    if not sources:
        raise ValueError("Device.load: the list of objects is empty")
    items = []
    for i, source in enumerate(sources):
        what = f"Device.load sources[{i}]"
        if isinstance(source, (str, os.PathLike)):
            items.append(("path", c_path(source, what)))
            continue
        try:
            image = bytes(memoryview(source))
        except TypeError:
            raise TypeError(f"{what}: needs a path (str or os.PathLike) or the bytes of an object "
                            f"or archive, not {type(source).__name__}") from None
        if not image:
            raise BadBinary(f"{what}: the image is empty (0 bytes)", call="Device.load")
        items.append(("bytes", image))
    if all(kind == "path" and is_regular(value) for kind, value in items):
        # libsk reads the files and its messages name them; the records are read afterwards.
        paths = (ctypes.c_char_p * len(items))(*(value for _, value in items))
        check(lib().sk_module_load_files(device.handle, paths, len(items), ctypes.byref(out)),
              "sk_module_load_files")
        try:
            return [read_for_load(value) for _, value in items]
        except BaseException:
            lib().sk_module_unload(out.value)
            raise
    images = [read_for_load(value) if kind == "path" else value for kind, value in items]
    buffers = [ctypes.create_string_buffer(image, len(image)) for image in images]
    pointers = (ctypes.c_void_p * len(images))(*(ctypes.addressof(b) for b in buffers))
    sizes = (ctypes.c_size_t * len(images))(*(len(image) for image in images))
    check(lib().sk_module_load_images(device.handle, pointers, sizes, len(images),
                                      ctypes.byref(out)), "sk_module_load_images")
    return images
