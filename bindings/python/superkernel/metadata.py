"""What libsk reads from a loaded module's metadata (SK_KERNEL on the host, SK_KERNEL_CUDA on a
CUDA device): the kernels it declares, and each kernel's signature and core type."""
import ctypes

from ._lib import lib
from .checks import c_text
from .status import check


def _bytes(call, fn, *head):
    """A string of libsk's buffer protocol, as bytes: a size query, then the bytes."""
    needed = ctypes.c_size_t()
    check(fn(*head, None, 0, ctypes.byref(needed)), call)
    buf = ctypes.create_string_buffer(needed.value)
    check(fn(*head, buf, needed.value, ctypes.byref(needed)), call)
    return buf.value


def _string(call, fn, *head):
    return c_text(_bytes(call, fn, *head))


def declared_kernels(module_handle):
    """The names of the kernels the module declares, as bytes (an object's names need not be
    UTF-8), in the order of its metadata (none from a libsk older than sk_module_kernel_count:
    a kernel's signature must then be given)."""
    if not lib().has("sk_module_kernel_count"):
        return []
    count = ctypes.c_size_t()
    check(lib().sk_module_kernel_count(module_handle, ctypes.byref(count)), "sk_module_kernel_count")
    return [_bytes("sk_module_kernel_name", lib().sk_module_kernel_name, module_handle, i)
            for i in range(count.value)]


def kernel_signature(kernel_handle):
    """The signature libsk reads the kernel's arguments by ("f32,ptr,u32"; "" for none)."""
    return _string("sk_kernel_signature", lib().sk_kernel_signature, kernel_handle)


def kernel_core_type(kernel_handle):
    """"vector", "cube", "mix_1_1" or "mix_1_2" ("vector" without metadata)."""
    return _string("sk_kernel_core_type", lib().sk_kernel_core_type, kernel_handle)
