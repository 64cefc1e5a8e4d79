"""Device.load with a list: several objects and `ar` archives linked as one module
(sk_module_load_files, sk_module_load_images)."""
import ctypes
import os

from ._lib import lib
from .checks import c_path
from .errors import BadBinary
from .status import check


def load_set(device, sources, out, read_for_load, is_regular):
    """Loads `sources` (paths and bytes-like objects) into the module handle `out`; paths that
    are not regular files (is_regular) are read with read_for_load (a pipe can be read once)."""
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
        # libsk reads the files and its messages name them.
        paths = (ctypes.c_char_p * len(items))(*(value for _, value in items))
        check(lib().sk_module_load_files(device.handle, paths, len(items), ctypes.byref(out)),
              "sk_module_load_files")
        return
    images = [read_for_load(value) if kind == "path" else value for kind, value in items]
    buffers = [ctypes.create_string_buffer(image, len(image)) for image in images]
    pointers = (ctypes.c_void_p * len(images))(*(ctypes.addressof(b) for b in buffers))
    sizes = (ctypes.c_size_t * len(images))(*(len(image) for image in images))
    check(lib().sk_module_load_images(device.handle, pointers, sizes, len(images),
                                      ctypes.byref(out)), "sk_module_load_images")
