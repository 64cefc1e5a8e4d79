"""Triton kernels as triton.compile returns them (Device.load_triton), PTX text given to
Device.load, and the launch facts of Module.kernel (threads, dynamic_shared), on the stand-in
CUDA driver (it links for real and runs no kernel code).

The compiled objects are duck-typed from the checked-in fixtures (tests/kernels/triton/ptx:
each .ptx is Triton's asm["ptx"], each .json its metadata); one test compiles with Triton
itself where it is installed (CI has none).
"""
import collections
import ctypes
import json
import os
import types

import numpy as np
import pytest

import superkernel as sk
from conftest import ROOT
from superkernel.ptx import looks_like_ptx

FIXTURES = os.path.join(ROOT, "tests", "kernels", "triton", "ptx")
NAMES = sorted(f[:-5] for f in os.listdir(FIXTURES) if f.endswith(".json"))


def fixture(name):
    with open(os.path.join(FIXTURES, name + ".json")) as f:
        meta = json.load(f)
    with open(os.path.join(FIXTURES, name + ".ptx")) as f:
        return meta, f.read()


def compiled(fixture_name, src=True, as_tuple=False, **changes):
    """What triton.compile returns for a fixture: asm["ptx"], the metadata (a dict, or a
    namedtuple as Triton makes it) with `changes`, and src.signature, the arguments compiled."""
    meta, ptx = fixture(fixture_name)
    signature = dict(meta["signature"])
    meta.update(changes)
    if as_tuple:
        meta = collections.namedtuple("KernelMetadata", sorted(meta))(**meta)
    return types.SimpleNamespace(asm={"ptx": ptx}, metadata=meta,
                                 src=types.SimpleNamespace(signature=signature) if src else None)


def arguments(kernel, buffer):
    """Arguments for `kernel`: `buffer` for each pointer, 1 for each scalar."""
    return [buffer if t == "ptr" else 1 for t in kernel.signature_tokens]


# ---- Device.load_triton ------------------------------------------------------------------------
@pytest.mark.parametrize("name", NAMES)
def test_every_fixture_loads_with_its_metadata_or_is_refused_by_name(fake_gpu, name):
    meta, ptx = fixture(name)
    if meta["refused"]:
        with pytest.raises(sk.Unsupported) as e:
            fake_gpu.load_triton(compiled(name))
        assert str(e.value).startswith("Device.load_triton") and meta["name"] in str(e.value)
        assert "\n" not in str(e.value)
        return
    if any(t.startswith("tensordesc") for _, t in meta["signature"]):
        return  # test_a_host_tensor_descriptor_is_passed_as_its_tensor_map
    for as_tuple in (False, True):
        k = fake_gpu.load_triton(compiled(name, as_tuple=as_tuple))
        assert isinstance(k, sk.TritonKernel) and k.name == meta["name"]
        # The Triton kernel's own arguments; the PTX's two scratch pointers are the binding's.
        assert k.param_names == [n for n, _ in meta["signature"]]
        assert k.signature_tokens == [
            "ptr" if t.startswith("*") else {"i32": "i32", "fp32": "f32"}[t]
            for _, t in meta["signature"]]
        assert k.ptx_signature == ",".join(
            "ptr" if t.startswith("*") else {"i32": "u32", "fp32": "f32"}[t]
            for _, t in meta["signature"]) + ",ptr,ptr"
        assert (k.threads, k.dynamic_shared, k.null_tail) == (meta["num_warps"] * 32, meta["shared"], 2)
        assert not k.module.closed


def test_the_global_scratch_is_a_buffer_of_each_blocks_part(fake_gpu):
    # tma_copy builds its tensor descriptors in the global scratch: 256 bytes a program.
    k = fake_gpu.load_triton(compiled("tma_copy"))
    assert (k.global_scratch, k.null_tail) == (256, 2)
    x = fake_gpu.alloc(1 << 16)
    packed = k.pack([x, x, 64, 64], blocks=4)
    scratch = packed.keepalive[4]
    assert scratch.nbytes == 4 * 256
    assert ctypes.c_void_p.from_address(packed.array[4]).value == scratch.address
    assert ctypes.c_void_p.from_address(packed.array[5]).value is None  # profile_scratch
    with pytest.raises(TypeError, match=r"its global scratch takes 256 bytes a block: pack\(args, blocks=block_dim\)"):
        k.pack([x, x, 64, 64])
    # It indexes its scratch by program_id over the whole grid (it reads %ctaid.y): a shape.
    with fake_gpu.scope("tma_copy") as scope:
        scope.add(k, (4,), x, x, 64, 64)
        scope.add(k, (8,), x, x, 128, 64)
    kept = scope.superkernel._keepalive
    assert kept[(0, 4)].nbytes == 4 * 256 and kept[(1, 4)].nbytes == 8 * 256  # a buffer per step
    scope.superkernel.launch()
    k.launch((4,), x, x, 64, 64)
    fake_gpu.synchronize()
    with pytest.raises(sk.Unsupported, match=r"^Device.load_triton: Triton kernel 'tma_copy_kernel': "
                                             r"metadata profile_scratch_size: 64 bytes"):
        fake_gpu.load_triton(compiled("tma_copy", profile_scratch_size=64))
    with pytest.raises(sk.Unsupported, match=r"metadata global_scratch_align: 512-byte alignment"):
        fake_gpu.load_triton(compiled("tma_copy", global_scratch_align=512))


def descriptor(base, **changes):
    """A TensorDescriptor as Triton's (triton.tools.tensor_descriptor), duck-typed: a
    [64, 64] row-major float tensor in 16 x 64 blocks, as tma_scale was compiled for."""
    fields = dict(base=base, shape=[64, 64], strides=[64, 1], block_shape=[16, 64], padding="zero",
                  round_f32_to_tf32=False)
    fields.update(changes)
    return types.SimpleNamespace(**fields)


def map_text(packed, index):
    """The stand-in driver's tensor map at argument `index`: its parameters as text."""
    return ctypes.string_at(packed.array[index], 128).rstrip(b"\0").decode()


def test_a_host_tensor_descriptor_is_encoded_as_triton_encodes_it(fake_gpu):
    # With src, a TensorDescriptor argument is one argument: libsk encodes its tensor map (the
    # box, swizzle and element type of the kernel's tensordesc_meta, innermost first, strides
    # in bytes, L2 promotion 128 B as Triton's launcher asks), then passes the shape and strides.
    k = fake_gpu.load_triton(compiled("tma_scale"))
    assert k.param_names == ["in_desc", "out_desc", "scale"]
    descriptor_params = "{u64[16]}@64,u32,u32,u64,u64"
    assert k.signature == f"{descriptor_params},{descriptor_params},f32"
    meta, _ = fixture("tma_scale")
    assert k.ptx_param_names == meta["params"][:-2]
    x, y = fake_gpu.alloc(1 << 14), fake_gpu.alloc(1 << 14)
    packed = k.pack([descriptor(x), descriptor(y), 2.0])
    assert map_text(packed, 0) == f"t7 r2 a{x.address:#x} d64,64 s256 b32,16 e1,1 i0 w3 l2 f0"
    assert map_text(packed, 5) == f"t7 r2 a{y.address:#x} d64,64 s256 b32,16 e1,1 i0 w3 l2 f0"
    shape = [ctypes.cast(packed.array[i], ctypes.POINTER(ctypes.c_uint32))[0] for i in (1, 2)]
    strides = [ctypes.cast(packed.array[i], ctypes.POINTER(ctypes.c_uint64))[0] for i in (3, 4)]
    assert (shape, strides) == ([64, 64], [64, 1])
    assert packed.keepalive[0] is x and packed.keepalive[5] is y  # the maps hold the tensors
    # The same bytes as Device.tensor_map of that description.
    assert ctypes.string_at(packed.array[0], 128) == \
        fake_gpu.tensor_map(x, 7, [64, 64], [256], [32, 16], swizzle=3, l2_promotion=2)
    # NaN padding and tf32 rounding, as the descriptor asks.
    packed = k.pack([descriptor(x, padding="nan", round_f32_to_tf32=True), descriptor(y), 2.0])
    assert map_text(packed, 0).startswith("t11 ") and map_text(packed, 0).endswith(" f1")
    with fake_gpu.scope("tma") as scope:
        scope.add(k, 4, descriptor(x), descriptor(y), 2.0)
    scope.superkernel.launch()
    k.launch(4, descriptor(x), descriptor(y), 2.0)
    fake_gpu.synchronize()


def test_a_tensor_descriptor_the_kernel_cannot_take_is_named(fake_gpu):
    k = fake_gpu.load_triton(compiled("tma_scale"))
    x = fake_gpu.alloc(1 << 14)
    what = r"kernel 'tma_scale_kernel' argument 0 'in_desc' \(tensordesc<fp32\[16, 64\]>\)"
    with pytest.raises(ValueError, match=what + r": block_shape \[32, 64\] is not the \[16, 64\]"):
        k.pack([descriptor(x, block_shape=[32, 64]), descriptor(x), 1.0])
    with pytest.raises(ValueError, match=what + r": strides \[1, 64\]: the last dimension must be contiguous"):
        k.pack([descriptor(x, strides=[1, 64]), descriptor(x), 1.0])
    with pytest.raises(ValueError, match=what + r": shape \[64\] and strides \[1\] need 2 dimensions"):
        k.pack([descriptor(x, shape=[64], strides=[1]), descriptor(x), 1.0])
    with pytest.raises(ValueError, match=what + r": base has 2-byte elements; the kernel was compiled for 4-byte"):
        k.pack([descriptor(np.zeros(8, np.float16)), descriptor(x), 1.0])
    with pytest.raises(TypeError, match=what + r": needs a TensorDescriptor \(base, shape, strides, block_shape\)"):
        k.pack([x, descriptor(x), 1.0])
    with pytest.raises(TypeError, match=what + r": a tensor descriptor is encoded at the call"):
        k.pack([sk.Ref(x), descriptor(x), 1.0])
    with pytest.raises(TypeError, match=r"^kernel 'tma_scale_kernel' \(in_desc, out_desc, scale\) takes 3 arguments, 2"):
        k.pack([descriptor(x), descriptor(x)])
    # libsk's checks name the field of the map (here a stride that is not a multiple of 16 bytes).
    with pytest.raises(sk.InvalidArgument, match=r"desc->strides\[0\] is 252"):
        k.pack([descriptor(x, strides=[63, 1]), descriptor(x), 1.0])
    # A scalar argument after the descriptors is numbered as the PTX has it.
    with pytest.raises(TypeError, match=r"argument 10 'scale' \(f32\)"):
        k.pack([descriptor(x), descriptor(x), "2"])
    im2col = dict(fixture("tma_scale")[0]["tensordesc_meta"][0], is_im2col=True)
    k2 = fake_gpu.load_triton(compiled("tma_scale", tensordesc_meta=[im2col, im2col]))
    with pytest.raises(sk.Unsupported, match="an im2col tensor descriptor"):
        k2.pack([descriptor(x), descriptor(x), 1.0])


def test_tritons_element_types_are_mapped_to_the_drivers(fake_gpu):
    # Triton's metadata numbers f32.ftz, f64 and bf16 as PTX's tensormap.replace does (8, 9,
    # 10); the driver's CUtensorMapDataType has them at 10, 8 and 9.
    meta = fixture("tma_scale")[0]["tensordesc_meta"][0]
    x = fake_gpu.alloc(1 << 14)
    for triton_type, elem_size, driver_type in ((10, 2, 9), (9, 8, 8), (8, 4, 10), (6, 2, 6)):
        changed = dict(meta, elem_type=triton_type, elem_size=elem_size, swizzle=0)
        k = fake_gpu.load_triton(compiled("tma_scale", tensordesc_meta=[changed, changed]))
        text = map_text(k.pack([descriptor(x), descriptor(x), 1.0]), 0)
        assert text.startswith(f"t{driver_type} r2 ") and f" s{64 * elem_size} " in text, text
    try:
        from triton.backends.nvidia.driver import TMA_DTYPE_DEVICE_TO_HOST
    except ImportError:
        return
    from superkernel.tensor_map import TRITON_ELEM_TYPES
    assert TMA_DTYPE_DEVICE_TO_HOST == {i: TRITON_ELEM_TYPES.get(i, i) for i in TMA_DTYPE_DEVICE_TO_HOST}


def test_without_src_a_tensor_descriptor_is_its_ptx_parameters(fake_gpu):
    # Without src: the tensor map's bytes (128, aligned 64, whose address the kernel takes),
    # then the tensor's shape and strides, as the PTX's parameters, unnamed.
    k = fake_gpu.load_triton(compiled("tma_scale", src=False))
    assert k.param_names is None and not k.descriptors
    descriptor_params = "{u64[16]}@64,u32,u32,u64,u64"
    assert k.signature == f"{descriptor_params},{descriptor_params},f32"
    x = fake_gpu.alloc(1 << 16)
    tensor_map = bytes(range(128))
    args = [tensor_map, 16, 64, 64, 1] * 2 + [2.0]
    packed = k.pack(args)
    assert ctypes.string_at(packed.array[0], 128) == tensor_map
    with pytest.raises(ValueError, match=r"takes 128 bytes, bytes holds 64"):
        k.pack([tensor_map[:64]] + args[1:])
    with fake_gpu.scope("tma") as scope:
        scope.add(k, 4, *args)
    scope.superkernel.launch()
    fake_gpu.synchronize()
    del x


def test_device_tensor_map_names_the_field_libsk_refuses(fake_gpu, dev):
    x = fake_gpu.alloc(1 << 14)
    assert fake_gpu.tensor_map(x, 7, [64, 16], [256], [32, 16]).rstrip(b"\0").decode() == \
        f"t7 r2 a{x.address:#x} d64,16 s256 b32,16 e1,1 i0 w0 l0 f0"
    assert fake_gpu.tensor_map(x.address, 6, [64], [], [64], element_strides=[2])[:24].startswith(b"t6 r1 a")
    with pytest.raises(sk.InvalidArgument, match=r"^Device.tensor_map: SK_ERR_INVALID_ARGUMENT: sk_tensor_map_encode: desc->box\[1\] is 257"):
        fake_gpu.tensor_map(x, 7, [64, 16], [256], [32, 257])
    with pytest.raises(sk.InvalidArgument, match=r"desc->rank is 0"):
        fake_gpu.tensor_map(x, 7, [], [], [])
    with pytest.raises(ValueError, match=r"Device.tensor_map dims: 6 values, at most 5"):
        fake_gpu.tensor_map(x, 7, [1] * 6, [16] * 5, [1] * 6)
    with pytest.raises(OverflowError, match=r"Device.tensor_map box\[0\]"):
        fake_gpu.tensor_map(x, 7, [64], [], [-1])
    with pytest.raises(TypeError, match=r"Device.tensor_map strides: needs a list or tuple, not int"):
        fake_gpu.tensor_map(x, 7, [64, 16], 256, [32, 16])
    host = dev.alloc(1024)
    with pytest.raises(sk.Unsupported, match=r"not a CUDA device"):
        dev.tensor_map(host, 7, [64], [], [32])


def test_without_src_the_ptx_types_the_arguments_and_messages_number_them(fake_gpu):
    k = fake_gpu.load_triton(compiled("rmsnorm", src=False))
    assert k.param_names is None
    assert k.signature == "ptr,ptr,ptr,u32,f32"
    assert repr(k) == "<TritonKernel rmsnorm_kernel(ptr,ptr,ptr,u32,f32) 128 threads>"
    with pytest.raises(TypeError, match=r"^kernel 'rmsnorm_kernel' \(ptr,ptr,ptr,u32,f32\) takes 5 "):
        k.pack([0])
    x = fake_gpu.alloc(64)
    with pytest.raises(OverflowError, match=r"^kernel 'rmsnorm_kernel' argument 3 \(u32\)"):
        k.pack([x, x, x, -1, 1.0])
    # A src whose runtime arguments are not the PTX's (another specialisation) is not trusted.
    other = compiled("rmsnorm")
    other.src.signature["extra"] = "i32"
    assert fake_gpu.load_triton(other).param_names is None
    # Constexprs are compiled in: not arguments.
    with_constexpr = compiled("rmsnorm")
    with_constexpr.src.signature["BLOCK"] = "constexpr"
    assert fake_gpu.load_triton(with_constexpr).param_names[-1] == "eps"


def test_the_scratch_pointers_are_passed_as_null(fake_gpu):
    k = fake_gpu.load_triton(compiled("silu_mul"))
    x = fake_gpu.alloc(1024)
    packed = k.pack([x, x, x, 256])
    entries = list(packed.array)
    assert len(entries) == 6
    assert [ctypes.c_void_p.from_address(e).value for e in entries[:3]] == [x.address] * 3
    assert ctypes.c_uint32.from_address(entries[3]).value == 256
    assert [ctypes.c_void_p.from_address(e).value for e in entries[4:]] == [None, None]


def test_a_decode_step_of_triton_kernels_fuses_and_launches(fake_gpu):
    # The decode step's kernels, in its order: four warps each but rope's one, which runs on the
    # block's first warp.
    wide = ["rmsnorm", "decode_attention", "silu_mul", "residual_add", "gemv"]
    assert all(fixture(n)[0]["num_warps"] == 4 for n in wide) and fixture("rope")[0]["num_warps"] == 1
    kernels = [fake_gpu.load_triton(compiled(n)) for n in wide + ["rope"]]
    x = fake_gpu.alloc(1 << 16)
    with fake_gpu.scope("decode_step") as scope:
        for k in kernels:
            scope.add(k, 4, *arguments(k, x))
    fused = scope.superkernel
    plan = fused.explain()
    assert [s["name"] for s in plan["steps"]] == [k.name for k in kernels]
    assert [s["signature"] for s in plan["steps"]] == [k.ptx_signature for k in kernels]
    # The largest dynamic shared memory of its sub-kernels (decode attention's) is launched.
    assert plan["cuda_entry"]["dynamic_shared_bytes"] >= max(k.dynamic_shared for k in kernels)
    assert plan["cuda_entry"]["threads"] == 128
    assert [k["threads"] for k in plan["cuda_entry"]["sub_kernels"]] == [128] * 5 + [32]
    fused.launch()
    fused.set_arg(0, 3, 7)  # n_cols, an i32
    with pytest.raises(IndexError, match="has 5 arguments, no 5"):
        fused.set_arg(0, 5, None)  # a scratch pointer is not the caller's
    fake_gpu.synchronize()
    kernels[0].launch(4, *arguments(kernels[0], x))  # unfused
    fake_gpu.synchronize()


def test_a_kernel_compiled_for_programmatic_dependent_launch_waits_at_its_gdc_wait(fake_gpu):
    # scale_pdl was compiled with launch_pdl: it loads, its gdc_wait calls libsk's wait, and a
    # step of it after a kernel that launches its dependents early (itself) starts early; after
    # residual_add, which does not, it waits at its start; with early-start=0, always.
    meta, _ = fixture("scale_pdl")
    assert meta["launch_pdl"]
    pdl = fake_gpu.load_triton(compiled("scale_pdl"))
    add = fake_gpu.load_triton(compiled("residual_add"))
    x = fake_gpu.alloc(1 << 16)
    for options, early in ((None, "griddepcontrol.wait"), ({"early-start": 0}, "kernel start")):
        with fake_gpu.scope("pdl", options) as scope:
            for k in (pdl, pdl, add, pdl):
                scope.add(k, 8, *arguments(k, x))
        fused = scope.superkernel
        plan = fused.explain()
        assert [s["wait_previous"] for s in plan["steps"]] == ["launch", early, "kernel start", "kernel start"]
        assert plan["steps"][0]["constructs"] == ["griddepcontrol.wait", "griddepcontrol.launch_dependents"]
        assert "constructs" not in plan["steps"][2]  # residual_add
        rewrites = plan["cuda_entry"]["sub_kernels"][0]["ptx"]["rewrites"]
        assert any(r.startswith("griddepcontrol.wait (programmatic dependent launch) calls __sk_dependent_wait")
                   for r in rewrites), rewrites
        assert any(r.startswith("griddepcontrol.launch_dependents taken out") for r in rewrites), rewrites
        fused.launch()
        fake_gpu.synchronize()
        fused.close()
    pdl.launch(8, *arguments(pdl, x))  # unfused: the wait returns at once
    fake_gpu.synchronize()


def test_max_registers_caps_the_link_of_a_triton_kernel(fake_gpu):
    # A Triton kernel is compiled in the link, where its registers are first known: libsk caps
    # its own code at what the kernel needs (at least 32); max-registers caps the whole link,
    # 0 not at all. Explain says which cap applied, and the entry stays under it. (Linked:
    # whole-program=0; compiled as one program, the kernel alone is the test below.)
    k = fake_gpu.load_triton(compiled("residual_add"))
    x = fake_gpu.alloc(1 << 16)

    def entry(options):
        with fake_gpu.scope("capped", dict(options or {}, **{"whole-program": 0})) as scope:
            scope.add(k, 4, *arguments(k, x))
        e = scope.superkernel.explain()["cuda_entry"]
        scope.superkernel.close()
        assert e["compiled"] == "linked" and e["why_linked"] == "the scope option whole-program=0"
        return e

    default, forty, none = (entry(o) for o in (None, {"max-registers": 40}, {"max-registers": 0}))
    assert 32 <= default["register_cap"] and default["registers"] <= default["register_cap"]
    assert forty["register_cap"] == 40 and forty["registers"] <= 40
    assert "register_cap" not in none and none["registers"] > default["registers"]
    with pytest.raises(sk.InvalidArgument) as e:
        fake_gpu.scope("capped", {"max-registers": 300})
    assert "max-registers" in str(e.value) and "\n" not in str(e.value)
    with pytest.raises(sk.InvalidArgument) as e:
        fake_gpu.scope("whole", {"whole-program": "yes"})
    assert "'whole-program'" in str(e.value) and "\n" not in str(e.value)


def test_triton_kernels_run_as_one_program_the_driver_compiled(fake_gpu):
    # Triton kernels alone in a super kernel: their PTX and the entry joined into one program,
    # which the driver's JIT compiles whole (the stand-in: ptxas), the calls inlined, so the
    # entry takes the registers the kernels take alone, not the link's; max-registers caps it.
    ks = [fake_gpu.load_triton(compiled(name)) for name in ("rmsnorm", "gemv", "decode_attention")]
    x = fake_gpu.alloc(1 << 20)

    def entry(options=None):
        with fake_gpu.scope("decode", options) as scope:
            for k in ks:
                scope.add(k, 4, *arguments(k, x))
        scope.superkernel.launch()
        fake_gpu.synchronize()
        e = scope.superkernel.explain()["cuda_entry"]
        scope.superkernel.close()
        return e

    whole, capped = entry(), entry({"max-registers": 64})
    assert whole["compiled"] == "whole program" and "why_linked" not in whole
    assert whole["registers"] < whole["linked_registers"] and "register_cap" not in whole
    assert capped["compiled"] == "whole program" and capped["register_cap"] == 64 and capped["registers"] <= 64


def test_a_kernel_compiled_for_a_cooperative_grid_runs_its_blocks_at_once(fake_gpu):
    # launch_cooperative_grid: its blocks wait for each other by means of their own (a grid
    # barrier of atomics, as Inductor's cooperative reductions have): every block gets a block
    # of the super kernel, all at once; more than the device holds is refused, naming why.
    k = fake_gpu.load_triton(compiled("rmsnorm", launch_cooperative_grid=True))
    assert k.cooperative and not fake_gpu.load_triton(compiled("rmsnorm")).cooperative
    x = fake_gpu.alloc(1 << 16)
    with fake_gpu.scope("cooperative") as scope:
        scope.add(k, 4, *arguments(k, x))
    assert scope.superkernel.explain()["steps"][0]["sync_all_scope"] == "own cores"
    scope.superkernel.launch()
    fake_gpu.synchronize()
    wide = fake_gpu.scope("too_wide")
    wide.add(k, 100000, *arguments(k, x))
    with pytest.raises(sk.Incompatible, match=r"'rmsnorm_kernel' synchronises its cores \(a grid barrier of its "
                                              r"own, SK_KERNEL_DESC_COOPERATIVE\) on block_dim 100000"):
        wide.finalize()
    with pytest.raises(TypeError, match=r"^Module.kernel \(rmsnorm_kernel\) cooperative: needs a bool, not str"):
        k.module.kernel("rmsnorm_kernel", threads=128, cooperative="yes")


def test_a_two_dimensional_grid_is_given_as_tritons_launch_grid(fake_gpu):
    # grid2d reads program_id(1): its blocks are added and launched with the grid's shape.
    k = fake_gpu.load_triton(compiled("grid2d"))
    x = fake_gpu.alloc(1 << 16)
    args = arguments(k, x)
    scope = fake_gpu.scope("planes")
    with pytest.raises(sk.InvalidArgument, match=r"'grid2d_kernel' numbers its blocks in more than one "
                                                 r"dimension .* give its grid's shape"):
        scope.add(k, 16, *args)
    scope.add(k, (4, 4), *args)
    scope.add(k, [2, 3, 2], *args)
    with scope.finalize() as fused:
        steps = fused.explain()["steps"]
        assert [(s["block_dim"], s["grid"]) for s in steps] == [(16, [4, 4, 1]), (12, [2, 3, 2])]
        fused.launch()
    with pytest.raises(sk.InvalidArgument, match=r"sk_launch_kernel: kernel 'grid2d_kernel' .* "
                                                 r"sk_launch_kernel_grid"):
        k.launch(16, *args)
    k.launch((4, 4), *args)
    fake_gpu.synchronize()


@pytest.mark.parametrize("grid, error, message", [
    ((4, 4, 1, 1), TypeError, r"block_dim: a grid has 1 to 3 extents, not 4"),
    ((), TypeError, r"block_dim: a grid has 1 to 3 extents, not 0"),
    ((4, 0), ValueError, r"block_dim: grid \(4, 0\) has an extent of 0"),
    ((65536, 65536), ValueError, r"block_dim: the product of grid \(65536, 65536\): 4294967296 does not fit u32"),
    ((4, -1), ValueError, r"block_dim\[1\]: -1 does not fit u32"),
    ((4, 2.0), TypeError, r"block_dim\[1\]: u32 needs an int"),
])
def test_a_malformed_grid_is_refused_naming_it(dev, ops, grid, error, message):
    axpy = ops.kernel("axpy")
    x, y = np.ones(4, np.float32), np.zeros(4, np.float32)
    scope = dev.scope("bad")
    with pytest.raises(error, match=message):
        scope.add(axpy, grid, 1.0, x, y, 4)
    with pytest.raises(error, match=message):
        axpy.launch(grid, 1.0, x, y, 4)
    scope.abort()


def test_a_host_kernel_takes_a_grid_and_numbers_its_blocks_alike(dev, ops):
    # The host's kernels read sk_block_idx() alone: (2, 2) runs as 4 blocks, checked and shown.
    axpy = ops.kernel("axpy")
    rng = np.random.default_rng(3)
    x = rng.uniform(-1, 1, 1000).astype(np.float32)
    y0 = rng.uniform(-1, 1, 1000).astype(np.float32)
    flat, shaped, fused = y0.copy(), y0.copy(), y0.copy()
    axpy.launch(4, 2.0, x, flat, 1000)
    axpy.launch((2, 2), 2.0, x, shaped, 1000)
    with dev.scope("shaped") as scope:
        scope.add(axpy, (2, 1, 2), 2.0, x, fused, 1000)
    with scope.superkernel as sk_:
        assert sk_.explain()["steps"][0]["grid"] == [2, 1, 2]
        sk_.launch()
    dev.synchronize()
    assert np.array_equal(shaped, flat) and np.array_equal(fused, flat) and not np.array_equal(flat, y0)


def test_kernels_of_other_widths_fuse_and_part_of_a_warp_is_refused_by_name(fake_gpu):
    rope, silu = fake_gpu.load_triton(compiled("rope")), fake_gpu.load_triton(compiled("silu_mul"))
    assert (rope.threads, silu.threads) == (32, 128)
    x = fake_gpu.alloc(4096)
    with fake_gpu.scope("mixed") as scope:
        scope.add(rope, 2, *arguments(rope, x))
        scope.add(silu, 2, *arguments(silu, x))
    assert scope.superkernel.explain()["cuda_entry"]["threads"] == 128
    # A kernel of 48 threads beside 128 would leave out part of a warp.
    mod = fake_gpu.load(BLOCK2D_PTX)
    narrow = mod.kernel("rows", threads=(16, 3))
    scope = fake_gpu.scope("odd")
    scope.add(narrow, 2, x)
    scope.add(silu, 2, *arguments(silu, x))
    with pytest.raises(sk.Incompatible, match=r"'rows' \(step 0\) runs 48 threads per block, fewer than the 128 of "
                                              r"'silu_mul_kernel' \(step 1\).*: a part of a warp cannot be left out"):
        scope.finalize()


@pytest.mark.parametrize("change, message", [
    ({"profile_scratch_size": 8}, "metadata profile_scratch_size: 8 bytes of per-program profiling scratch"),
    ({"num_ctas": 2}, "metadata num_ctas: 2 CTAs per program is a thread block cluster"),
    ({"target": {"backend": "hip", "arch": "gfx942", "warp_size": 64}},
     "metadata target: backend 'hip' is not 'cuda'"),
])
def test_what_a_sub_kernel_cannot_be_is_refused_naming_the_field(fake_gpu, change, message):
    with pytest.raises(sk.Unsupported) as e:
        fake_gpu.load_triton(compiled("rmsnorm", **change))
    assert str(e.value).startswith("Device.load_triton: Triton kernel 'rmsnorm_kernel': " + message)
    assert "\n" not in str(e.value)


def test_what_libsk_refuses_names_the_triton_kernel(fake_gpu):
    # num_warps that the PTX's .reqntid contradicts.
    with pytest.raises(sk.Incompatible, match=r"^Device.load_triton \(rmsnorm_kernel\): .*"
                                              r"requires 128 threads per block \(.reqntid"):
        fake_gpu.load_triton(compiled("rmsnorm", num_warps=8))
    # PTX for a GPU the device (sm_90) is not.
    newer = compiled("rmsnorm")
    newer.asm["ptx"] = newer.asm["ptx"].replace(".target sm_90a", ".target sm_100a")
    with pytest.raises(sk.Incompatible, match=r"^Device.load_triton \(rmsnorm_kernel\): .*sm_100a"):
        fake_gpu.load_triton(newer)
    # A name the PTX does not define.
    with pytest.raises(sk.NotFound, match=r"^Device.load_triton \(other_kernel\): .*rmsnorm_kernel"):
        fake_gpu.load_triton(compiled("rmsnorm", name="other_kernel"))
    # Shared memory beyond what a block may have.
    with pytest.raises(sk.InvalidArgument, match=r"rmsnorm_kernel.*dynamic_shared 300000"):
        fake_gpu.load_triton(compiled("rmsnorm", shared=300000))


def test_wrong_arguments_are_named_by_the_triton_kernels_parameters(fake_gpu):
    k = fake_gpu.load_triton(compiled("rmsnorm"))
    x = fake_gpu.alloc(1024)
    with pytest.raises(TypeError, match=r"^kernel 'rmsnorm_kernel' \(x_ptr, w_ptr, out_ptr, n_cols, "
                                        r"eps\) takes 5 arguments, 7 given$"):
        k.launch(1, x, x, x, 4, 1e-6, None, None)
    with pytest.raises(TypeError, match=r"takes 5 arguments, 3 given"):
        fake_gpu.scope("s").add(k, 1, x, x, x)
    with pytest.raises(ValueError, match=r"argument 3 'n_cols' \(i32\): -2147483649 does not fit i32"):
        k.launch(1, x, x, x, -(1 << 31) - 1, 1e-6)
    k.launch(1, x, x, x, -1, 1e-6)  # i32 as Triton declares it, though the PTX says .u32
    fake_gpu.synchronize()


def test_malformed_compiled_objects_are_refused_naming_the_field(fake_gpu, dev):
    with pytest.raises(TypeError, match=r"^Device.load_triton: needs what triton.compile returns"):
        fake_gpu.load_triton("rmsnorm.ptx")
    with pytest.raises(TypeError, match=r"metadata name: needs the kernel's name"):
        fake_gpu.load_triton(compiled("rmsnorm", name=None))
    meta = fixture("rmsnorm")[0]
    del meta["num_warps"]
    no_warps = types.SimpleNamespace(asm={"ptx": fixture("rmsnorm")[1]}, metadata=meta)
    with pytest.raises(TypeError, match=r"\(rmsnorm_kernel\) metadata num_warps: u32 needs an int"):
        fake_gpu.load_triton(no_warps)
    with pytest.raises(ValueError, match=r"metadata num_warps 0 x warp_size 32 is no thread"):
        fake_gpu.load_triton(compiled("rmsnorm", num_warps=0))
    no_ptx = compiled("rmsnorm")
    no_ptx.asm = {"cubin": b""}
    with pytest.raises(TypeError, match=r"compiled.asm has no 'ptx'"):
        fake_gpu.load_triton(no_ptx)
    with pytest.raises(sk.Unsupported, match=r"device 'host:cores=2,timeout_ms=5000' is not a CUDA "
                                             r"device"):
        dev.load_triton(compiled("rmsnorm"))


def test_triton_compiles_a_kernel_that_loads_and_fuses(fake_gpu, tmp_path, monkeypatch):
    triton = pytest.importorskip("triton")
    import triton.language as tl
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path / "triton"))
    monkeypatch.setenv("TRITON_DEFAULT_FP_FUSION", "1")

    @triton.jit
    def scaled_add(x_ptr, y_ptr, out_ptr, n, alpha, BLOCK: tl.constexpr):
        i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        mask = i < n
        tl.store(out_ptr + i, tl.load(x_ptr + i, mask=mask) * alpha + tl.load(y_ptr + i, mask=mask),
                 mask=mask)

    source = ASTSource(scaled_add, {"x_ptr": "*fp32", "y_ptr": "*fp32", "out_ptr": "*fp32",
                                    "n": "i32", "alpha": "fp32", "BLOCK": "constexpr"},
                       {"BLOCK": 256})
    c = triton.compile(source, target=GPUTarget("cuda", 90, 32), options={"num_warps": 2})
    k = fake_gpu.load_triton(c)
    assert k.param_names == ["x_ptr", "y_ptr", "out_ptr", "n", "alpha"]
    assert (k.signature, k.threads) == ("ptr,ptr,ptr,i32,f32", 64)
    x = fake_gpu.alloc(4096)
    with fake_gpu.scope("triton") as scope:
        scope.add(k, 4, x, x, x, 1024, 2.0)
        scope.add(k, 4, x, x, x, 1024, 0.5)
    assert [s["name"] for s in scope.superkernel.explain()["steps"]] == ["scaled_add"] * 2
    scope.superkernel.launch()
    fake_gpu.synchronize()


# ---- PTX text in Device.load; Module.kernel's launch facts --------------------------------------
def test_a_str_is_ptx_text_when_it_begins_with_a_version_directive():
    assert looks_like_ptx(".version 9.4\n.target sm_90a\n")
    assert looks_like_ptx("//\n// Generated by LLVM NVPTX Back-End\n//\n\n.version 8.0\n")
    assert looks_like_ptx("/* a\n comment */ .version 8.0")
    for path in ("rmsnorm.ptx", "/tmp/x.ptx", "//tmp/x.ptx", ".versions/x.ptx", ".version", " .version.ptx",
                 "/* x */", ""):
        assert looks_like_ptx(path) == (path == ".version"), path


def test_device_load_takes_ptx_text_a_ptx_file_and_ptx_bytes(fake_gpu, tmp_path):
    meta, text = fixture("rope")
    path = os.path.join(FIXTURES, "rope.ptx")
    for source, kind in ((text, None), (text, "ptx"), (text.encode(), None), (text.encode(), "ptx"),
                         (bytearray(text.encode()), "ptx"), (path, None)):
        mod = fake_gpu.load(source, kind=kind)
        assert mod.kernels == {"rope_kernel": {"sig": "ptr,ptr,ptr,ptr,u32,u32,ptr,ptr", "type": "vector"}}
        assert mod.path == (path if source is path else None)
        mod.close()
    with pytest.raises(sk.BadBinary, match=r"^Device.load: kind='ptx' but the text does not begin "
                                           r"with a .version directive"):
        fake_gpu.load(path, kind="ptx")
    with pytest.raises(sk.BadBinary, match=r"kind='ptx' but byte 0 is not UTF-8"):
        fake_gpu.load(b"\xff.version", kind="ptx")
    with pytest.raises(TypeError, match=r"kind='ptx' takes PTX text \(str or bytes\), not int"):
        fake_gpu.load(3, kind="ptx")
    with pytest.raises(ValueError, match=r"^Device.load kind: 'cubin' is not one of None, 'ptx'"):
        fake_gpu.load(text, kind="cubin")
    # Text libsk cannot read is refused by libsk, naming where.
    with pytest.raises(sk.BadBinary, match=r"no .target"):
        fake_gpu.load(".version 9.0\n.address_size 64\n")


def test_ptx_text_on_the_host_device_is_refused(dev):
    with pytest.raises(sk.BadBinary, match=r"^Device.load: PTX text loads on a CUDA device \(cuda:N\), "
                                           r"not 'host:cores=2,timeout_ms=5000'$"):
        dev.load(fixture("rope")[1])


# A __global__ kernel launched with a 2-D block and no __launch_bounds__, as nvcc -ptx writes
# one: it reads %tid.y and %ntid.x, and its PTX does not give the block's shape.
BLOCK2D_PTX = """.version 8.0
.target sm_90
.address_size 64
.visible .entry rows(.param .u64 out)
{
.reg .b32 %r<4>;
.reg .b64 %rd<3>;
mov.u32 %r1, %tid.y;
mov.u32 %r2, %ntid.x;
mov.u32 %r3, %tid.x;
mad.lo.s32 %r1, %r1, %r2, %r3;
ld.param.u64 %rd1, [out];
mul.wide.u32 %rd2, %r1, 4;
add.s64 %rd1, %rd1, %rd2;
st.global.u32 [%rd1], %r1;
ret;
}
"""


def test_module_kernel_takes_a_block_shape(fake_gpu, ops):
    mod = fake_gpu.load(BLOCK2D_PTX)
    with pytest.raises(sk.Incompatible, match=r"kernel 'rows' of .* reads threadIdx.y/z or blockDim.y/z .* "
                                              r"\(sk_kernel_desc.block\)"):
        mod.kernel("rows", threads=128)
    k = mod.kernel("rows", threads=(32, 4))
    assert k.threads == (32, 4)
    out = fake_gpu.alloc(4 * 256)
    with fake_gpu.scope("rows") as s:
        s.add(k, 2, out)
    s.superkernel.launch()
    fake_gpu.synchronize()
    sub = s.superkernel.explain()["cuda_entry"]["sub_kernels"][0]
    assert "%tid.y read from the block's shape its caller gives (__sk_thread)" in sub["ptx"]["rewrites"], sub
    with pytest.raises(ValueError, match=r"^Module.kernel \(rows\) threads: block \(32, 0\) has an extent of 0"):
        mod.kernel("rows", threads=(32, 0))
    with pytest.raises(TypeError, match=r"^Module.kernel \(rows\) threads: a block has 1 to 3 extents, not 4"):
        mod.kernel("rows", threads=(1, 2, 3, 4))
    with pytest.raises(sk.InvalidArgument, match=r"threads 2048 is above 1024"):
        mod.kernel("rows", threads=(64, 32))
    with pytest.raises(sk.InvalidArgument, match=r"threads, dynamic_shared, block and cluster are launch facts of GPU"):
        ops.kernel("fill_index", threads=(32, 4))


def test_module_kernel_takes_threads_and_dynamic_shared(fake_gpu, dev, ops):
    mod = fake_gpu.load(fixture("rmsnorm")[1])
    assert "rmsnorm_kernel" not in mod.kernels  # it needs its dynamic shared memory said
    with pytest.raises(sk.Incompatible, match=r"sk_kernel_desc.dynamic_shared"):
        mod.kernel("rmsnorm_kernel")
    k = mod.kernel("rmsnorm_kernel", dynamic_shared=16)
    assert (k.signature, k.threads, k.dynamic_shared) == ("ptr,ptr,ptr,u32,f32,ptr,ptr", None, 16)
    assert mod.kernel("rmsnorm_kernel", threads=128, dynamic_shared=16).threads == 128
    with pytest.raises(sk.Incompatible, match=r"requires 128 threads per block \(.reqntid 128, 1, 1\), "
                                              r"not 64"):
        mod.kernel("rmsnorm_kernel", threads=64, dynamic_shared=16)
    with pytest.raises(sk.InvalidArgument, match=r"threads 2048 is above 1024"):
        mod.kernel("rmsnorm_kernel", threads=2048, dynamic_shared=16)
    with pytest.raises(OverflowError,
                       match=r"Module.kernel \(rmsnorm_kernel\) threads: 4294967296 does not fit u32"):
        mod.kernel("rmsnorm_kernel", threads=1 << 32)
    with pytest.raises(TypeError, match=r"Module.kernel \(rmsnorm_kernel\) dynamic_shared: u32 needs an int"):
        mod.kernel("rmsnorm_kernel", dynamic_shared=1.5)
    # A signature with them: it must pass the PTX's parameters alike.
    given = mod.kernel("rmsnorm_kernel", "ptr,ptr,ptr,i32,f32,ptr,ptr", dynamic_shared=16)
    assert given.signature == "ptr,ptr,ptr,i32,f32,ptr,ptr"
    with pytest.raises(sk.Incompatible, match=r"7 parameters in its PTX"):
        mod.kernel("rmsnorm_kernel", "ptr,ptr", dynamic_shared=16)
    # Host kernels take neither.
    with pytest.raises(sk.InvalidArgument):
        ops.kernel("fill_index", threads=32)
