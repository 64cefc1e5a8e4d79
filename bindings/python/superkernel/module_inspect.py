"""inspect_module (sk_module_inspect): what a device would read from a module image, without
opening a device."""
import ctypes
import json
import os

from ._lib import lib
from .checks import c_path, c_string, c_text, message_text
from .errors import InvalidArgument
from .module import read_for_load
from .ptx import looks_like_ptx
from .status import check

CALL = "sk_module_inspect"
FIRST_GUESS = 1 << 23  # bytes of JSON: a library of ten thousand kernels


def inspect_module(source, spec="cuda:arch=sm_90", name=None):
    """What a device of `spec` would read from a module, as a dict (sk_module_inspect's JSON),
    without opening one. `source` is as Device.load takes one module: a path, the bytes of an
    object, archive, PTX file, cubin, LTO-IR, fatbinary or nvcc object, or PTX text (a str
    beginning with `.version`); `name` names bytes in error messages (a path names itself).

    "cuda:arch=sm_XY" (no GPU needed): the module's kind, a PTX module's version, target and
    rewrites, and each kernel's launch facts, PTX directives and rewrites, or the error taking
    it would raise. "host": the kernels an object declares (an archive's, per member), each
    with its signature, core type, whether the object defines it and the device API it
    reaches, read without linking; a malformed object or record raises BadBinary."""
    spec_c = c_string(spec, "inspect_module spec")
    call = CALL if name is None else f"{CALL} ({message_text(os.fsencode(name))})"
    if isinstance(source, str) and looks_like_ptx(source):
        image = source.encode()
    elif isinstance(source, (str, os.PathLike)):
        raw_path = c_path(source, "inspect_module path")
        call = f"{CALL} ({message_text(raw_path)})"
        image = read_for_load(raw_path, call)
    else:
        try:
            image = bytes(memoryview(source))
        except TypeError:
            raise TypeError(f"inspect_module: needs a path (str or os.PathLike), PTX text or the "
                            f"bytes of a module, not {type(source).__name__}") from None
    # One reading where the JSON fits a first guess: each call reads the whole module again (a
    # library's every unit).
    needed = ctypes.c_size_t()
    buf = ctypes.create_string_buffer(FIRST_GUESS)
    status = lib().sk_module_inspect(spec_c, image, len(image), buf, FIRST_GUESS,
                                     ctypes.byref(needed))
    if status == InvalidArgument.status and needed.value > FIRST_GUESS:
        buf = ctypes.create_string_buffer(needed.value)
        status = lib().sk_module_inspect(spec_c, image, len(image), buf, needed.value,
                                         ctypes.byref(needed))
    check(status, call)
    return json.loads(c_text(buf.value))


def kernel_records(image, name=None):
    """{kernel name: {"sig": ..., "type": ...}} of the SK_KERNEL records of a host object's bytes
    (an archive's: every member's), as libsk reads them (inspect_module on "host"), without
    loading it; a malformed object or record raises BadBinary naming it (and `name`, when
    given). A loaded Module's kernels are Module.kernels."""
    d = inspect_module(image, "host", name)
    return {k["name"]: {"sig": k["signature"], "type": k["core_type"]}
            for part in d.get("members", [d]) for k in part["kernels"]}
