"""TMA tensor maps (sk_tensor_map_encode): Device.tensor_map, and the tensor map of a Triton
TensorDescriptor argument, encoded as Triton's launcher encodes it."""
import ctypes
import re
from collections.abc import Mapping

from ._lib import TENSOR_MAP_BYTES, TensorMapDesc, lib
from .args import address_of
from .checks import integer
from .errors import Unsupported
from .status import check

#: The most dimensions a tensor map has: the length of sk_tensor_map_desc's arrays.
MAX_RANK = TensorMapDesc.dims.size // ctypes.sizeof(ctypes.c_uint64)
#: Triton numbers three element types of its metadata's elem_type otherwise than
#: CUtensorMapDataType does; its launcher maps them so (triton/backends/nvidia/driver.py).
TRITON_ELEM_TYPES = {8: 10, 9: 8, 10: 9}
#: CUtensorMapDataType's tf32, which Triton asks for with round_f32_to_tf32.
TF32 = 11
#: The L2 promotion Triton's launcher asks for (CU_TENSOR_MAP_L2_PROMOTION_L2_128B).
TRITON_L2_PROMOTION = 2


def _sequence(values, kind, what, limit):
    """The integers of a list or tuple of at most `limit` of them, each a C `kind`."""
    if not isinstance(values, (list, tuple)):
        raise TypeError(f"{what}: needs a list or tuple, not {type(values).__name__}")
    if len(values) > limit:
        raise ValueError(f"{what}: {len(values)} values, at most {limit}")
    return [integer(v, kind, f"{what}[{i}]") for i, v in enumerate(values)]


def encode(device, address, data_type, dims, strides, box, swizzle=0, element_strides=None, interleave=0,
           l2_promotion=0, oob_fill=0, what="Device.tensor_map"):
    """The tensor map's bytes: sk_tensor_map_desc's fields, innermost dimension first, strides
    in bytes (dims[i+1]'s), libsk checking each (an error names the field)."""
    d = TensorMapDesc()
    d.struct_size = ctypes.sizeof(d)
    d.data_type = integer(data_type, "u32", f"{what} data_type")
    d.swizzle = integer(swizzle, "u32", f"{what} swizzle")
    d.interleave = integer(interleave, "u32", f"{what} interleave")
    d.l2_promotion = integer(l2_promotion, "u32", f"{what} l2_promotion")
    d.oob_fill = integer(oob_fill, "u32", f"{what} oob_fill")
    d.address = address
    dims = _sequence(dims, "u64", f"{what} dims", MAX_RANK)
    d.rank = len(dims)
    for i, v in enumerate(dims):
        d.dims[i] = v
    for i, v in enumerate(_sequence(strides, "u64", f"{what} strides", MAX_RANK - 1)):
        d.strides[i] = v
    for i, v in enumerate(_sequence(box, "u32", f"{what} box", MAX_RANK)):
        d.box[i] = v
    for i, v in enumerate(_sequence(element_strides or [], "u32", f"{what} element_strides", MAX_RANK)):
        d.element_strides[i] = v
    out = ctypes.create_string_buffer(TENSOR_MAP_BYTES)
    check(lib().sk_tensor_map_encode(device.handle, ctypes.byref(d), out), what)
    return out.raw


def _get(obj, key):
    return obj.get(key) if isinstance(obj, Mapping) else getattr(obj, key, None)


def block_shape(kind):
    """[16, 64] of Triton's type "tensordesc<fp32[16, 64]>", or None for another type."""
    match = re.match(r"tensordesc(?:_im2col)?<[^[>]*\[([0-9, ]*)\]", kind)
    return [int(x) for x in match.group(1).split(",")] if match else None


def descriptor_rank(kind):
    """The tensor's dimensions of a Triton tensor descriptor type: its input_rank where it
    says one (im2col), else its block's."""
    rank = re.search(r",input_rank=(\d+)", kind)
    return int(rank.group(1)) if rank else len(block_shape(kind))


def triton_descriptor(device, descriptor, kind, meta, what):
    """(the PTX arguments of a Triton TensorDescriptor argument of type `kind` and its
    tensordesc_meta entry `meta`: its tensor map, then its shape and strides; the object that
    holds its memory). As Triton's launcher: the shape, strides and base of the descriptor, the
    box, swizzle and element type the kernel was compiled with."""
    if _get(meta, "is_im2col"):
        raise Unsupported(f"{what}: an im2col tensor descriptor: only tiled ones are encoded")
    parts = {}
    for field in ("base", "shape", "strides", "block_shape"):
        parts[field] = getattr(descriptor, field, None)
        if parts[field] is None:
            raise TypeError(f"{what}: needs a TensorDescriptor (base, shape, strides, block_shape), "
                            f"not {type(descriptor).__name__}")
    shape, strides = list(parts["shape"]), list(parts["strides"])
    rank = descriptor_rank(kind)
    if len(shape) != rank or len(strides) != rank:
        raise ValueError(f"{what}: shape {shape} and strides {strides} need {rank} dimensions, as {kind}")
    compiled = block_shape(kind)
    if list(parts["block_shape"]) != compiled:
        raise ValueError(f"{what}: block_shape {list(parts['block_shape'])} is not the {compiled} the kernel "
                         f"was compiled for ({kind})")
    if strides[-1] != 1:
        raise ValueError(f"{what}: strides {strides}: the last dimension must be contiguous (stride 1)")
    elem_size = integer(_get(meta, "elem_size"), "u32", f"{what} tensordesc_meta elem_size")
    itemsize = getattr(getattr(parts["base"], "dtype", None), "itemsize", None)
    if isinstance(itemsize, int) and not _get(meta, "fp4_padded") and itemsize != elem_size:
        raise ValueError(f"{what}: base has {itemsize}-byte elements; the kernel was compiled for "
                         f"{elem_size}-byte ones ({kind})")
    address, keep, _ = address_of(parts["base"], f"{what} base", device)
    elem_type = integer(_get(meta, "elem_type"), "u32", f"{what} tensordesc_meta elem_type")
    data_type = TF32 if getattr(descriptor, "round_f32_to_tf32", False) else TRITON_ELEM_TYPES.get(elem_type, elem_type)
    dims = list(shape)
    if _get(meta, "fp4_padded"):
        dims[-1] *= 2
    block = _get(meta, "block_size")
    nan = getattr(descriptor, "padding", "zero") == "nan"
    tensor_map = encode(device, address, data_type, dims[::-1], [elem_size * s for s in strides[-2::-1]],
                        list(block)[::-1] if isinstance(block, (list, tuple)) else block,
                        swizzle=_get(meta, "swizzle"), l2_promotion=TRITON_L2_PROMOTION, oob_fill=int(nan),
                        what=what)
    return [tensor_map, *shape, *strides], keep
