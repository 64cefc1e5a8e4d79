"""Structs passed by value (aggregate signatures) and arguments read by reference (sk.Ref)
through the binding: fused launches agree with unfused ones and with the record the test makes
of the values; misuse raises naming the argument, never reaching libsk with a bad value.
Kernels: tests/kernels/args_aggregates.c and args_refs.c, compiled here as a user would, and a
CUDA kernel of the build (tests/kernels/cuda/param_index.cu) on the stand-in driver."""
import ctypes
import os
import struct

import numpy as np
import pytest

import superkernel as sk
from conftest import ROOT, compile_kernel, cuda_kernel

RECORD = 256


@pytest.fixture(scope="module")
def objects(tmp_path_factory):
    out = str(tmp_path_factory.mktemp("args_kernels"))
    return {name: compile_kernel(os.path.join(ROOT, "tests", "kernels", name + ".c"), out)
            for name in ("args_aggregates", "args_refs")}


def record(fmt, *values):
    """What a kernel of args_aggregates.c writes: the members one after another, unpadded."""
    data = struct.pack("<" + fmt, *values)
    return data + bytes(RECORD - len(data))


def test_signatures_with_aggregates_parse_as_libsk_prints_them(dev, objects):
    mod = dev.load(objects["args_aggregates"])
    assert mod.kernel("agg_nest").signature == "ptr,{{f32,f32}[2],i16},f32"
    assert sk.parse_signature(" ptr , { f32 , f32 } , {i32[5]}") == ["ptr", "{f32,f32}", "{i32[5]}"]
    given = mod.kernel("agg_f2", signature="ptr, {f32, f32}")
    assert given.signature_tokens == ["ptr", "{f32,f32}"]
    with pytest.raises(sk.Incompatible, match=r"metadata says \"ptr,\{f32,f32\}\""):
        mod.kernel("agg_f2", signature="ptr,f32,f32")
    for bad, needle in (("{f32", "parameter 0 has a '{' at character 0 that is not closed"),
                        ("ptr,{}", "parameter 1 has an empty aggregate"),
                        ("ptr,{f32,f33}", "parameter 1 has a member 'f33'"),
                        ("i32[4]", "an array parameter is a pointer in C"),
                        ("{i32[0]}", "array length '0'"),
                        ("{u8[40000]}", "array length '40000' that is not a number from 1 to 32768"),
                        ("{f64[3000],f64[3000]}", "has an aggregate of more than 32768 bytes"),
                        ("{" * 9 + "u8" + "}" * 9, "nests aggregates more than 8 deep"),
                        ("f32}", "unexpected '}'"),
                        ("{u8}@3", "alignment at character 4 that is not a power of two"),
                        ("{f64}@4", "aligns the aggregate at character 0 to 4, less than its members' 8")):
        with pytest.raises(ValueError, match=needle.replace("[", r"\[").replace("{", r"\{")):
            sk.parse_signature(bad)


def test_an_aligned_aggregate_is_laid_out_as_alignas_lays_it_out():
    from superkernel.aggregates import ctype_of
    assert sk.parse_signature("{u64[16]} @ 64, {f32}@4, {{u8}@16,u8}") == ["{u64[16]}@64", "{f32}", "{{u8}@16,u8}"]
    assert ctypes.sizeof(ctype_of("{u64[16]}@64")) == 128
    assert ctypes.sizeof(ctype_of("{u8[3]}@64")) == 64  # sizeof is a multiple of alignof
    nested = ctype_of("{u8,{u8}@16,u8}")  # struct { char a; alignas(16) struct {char b;} c; char d; }
    assert ctypes.sizeof(nested) == 48 and nested.m1.offset == 16 and nested.m2.offset == 32
    from superkernel.aggregates import aggregate
    value, _ = aggregate("{u8,{u8}@16,u8}", (1, (2,), 3), "argument 0", None)
    raw = ctypes.string_at(ctypes.addressof(value), 48)
    assert (raw[0], raw[16], raw[32]) == (1, 2, 3)


def test_aggregates_fused_equal_unfused_and_the_values(dev, objects):
    mod = dev.load(objects["args_aggregates"])
    f2, di, i5, cf, nest = (mod.kernel(n) for n in ("agg_f2", "agg_di", "agg_i5", "agg_cf", "agg_nest"))
    fused, unfused = (np.zeros((5, RECORD), np.uint8) for _ in range(2))

    class CF(ctypes.Structure):  # a ctypes struct of the aggregate's layout is taken as its bytes
        _fields_ = [("c", ctypes.c_int8), ("f", ctypes.c_float)]

    values = [(f2, ((1.5, -2.25),)), (di, ((-3e100, -77),)), (i5, (((1, -2, 3, -4, 5),),)),
              (cf, (CF(-9, 0.75),)), (nest, ((((10.0, 20.0), (-30.0, 40.5)), -300), 0.5))]
    with dev.scope("aggregates") as scope:
        for i, (k, args) in enumerate(values):
            scope.add(k, 1, fused[i], *args)
    for i, (k, args) in enumerate(values):
        k.launch(1, unfused[i], *args)
    with scope.superkernel as sk_:
        sk_.launch()
        dev.synchronize()
        want = [record("ff", 1.5, -2.25), record("di", -3e100, -77), record("5i", 1, -2, 3, -4, 5),
                record("bf", -9, 0.75), record("ffffhf", 10.0, 20.0, -30.0, 40.5, -300, 0.5)]
        for i, w in enumerate(want):
            assert bytes(fused[i]) == w, f"fused {values[i][0].name}"
            assert bytes(unfused[i]) == w, f"unfused {values[i][0].name}"
        # Rebinding an aggregate, given as a tuple and as its bytes.
        sk_.set_arg(0, 1, (7.0, 8.0))
        sk_.set_arg(2, 1, struct.pack("<5i", 9, 8, 7, 6, 5))
        fused[:] = 0
        sk_.launch()
        dev.synchronize()
        assert bytes(fused[0]) == record("ff", 7.0, 8.0)
        assert bytes(fused[2]) == record("5i", 9, 8, 7, 6, 5)


def test_bad_aggregate_values_name_the_member(dev, objects):
    mod = dev.load(objects["args_aggregates"])
    out = np.zeros(RECORD, np.uint8)
    with pytest.raises(ValueError, match=r"argument 1 \(\{f32,f32\}\): \{f32,f32\} has 2 members, 3 given"):
        mod.kernel("agg_f2").launch(1, out, (1.0, 2.0, 3.0))
    with pytest.raises(OverflowError, match=r"argument 1 \(\{f64,i32\}\) member 1: 4294967296 does not fit i32"):
        mod.kernel("agg_di").launch(1, out, (1.0, 1 << 32))
    with pytest.raises(TypeError, match=r"member 0: an array of 5 needs a tuple or list of 5 values"):
        mod.kernel("agg_i5").launch(1, out, ((1, 2, 3),))
    with pytest.raises(ValueError, match=r"\{i8,f32\} takes 8 bytes, bytes holds 5"):
        mod.kernel("agg_cf").launch(1, out, b"12345")
    with pytest.raises(TypeError, match=r"needs a tuple or list of its 2 members"):
        mod.kernel("agg_f2").launch(1, out, 1.0)


BIG_ARGS = """
struct big { unsigned char b[32768]; };
void big_args(unsigned char *out, struct big x, struct big y) { out[0] = x.b[7]; out[1] = y.b[32000]; }
"""


def test_structs_past_a_core_stack_are_refused_naming_stack_kb(tmp_path):
    source = tmp_path / "big_args.c"
    source.write_text(BIG_ARGS)
    obj = compile_kernel(str(source), str(tmp_path))
    signature = "ptr,{u8[32768]},{u8[32768]}"
    with sk.Device("host:cores=2,stack_kb=128") as small:
        with pytest.raises(sk.Incompatible, match=r"kernel 'big_args' of .*device's 128 KiB per core "
                                                  r"\(device key stack_kb\): open the device with stack_kb=\d+"):
            small.load(obj).kernel("big_args", signature=signature)
    with sk.Device("host:cores=2,stack_kb=512") as dev:
        k = dev.load(obj).kernel("big_args", signature=signature)
        x, y = bytes(range(256)) * 128, bytes(255 - i % 256 for i in range(32768))
        out = np.zeros(2, np.uint8)
        with dev.scope("big") as scope:
            scope.add(k, 2, out, x, y)
            fused = scope.finalize()
        fused.launch()
        dev.synchronize()
        assert list(out) == [x[7], y[32000]]


def test_positions_read_by_reference_in_a_decode_loop(dev, objects):
    mod = dev.load(objects["args_refs"])
    add, scale = mod.kernel("ref_add_at"), mod.kernel("ref_scale_at")
    point, narrow = mod.kernel("ref_point_at"), mod.kernel("ref_narrow")
    steps, blocks = 6, 4
    inp = np.array([1.0, -2.0, 0.25, 1e6], np.float32)
    pos, upos, by = ctypes.c_int32(0), np.zeros(1, np.uint32), ctypes.c_float(0.0)
    xy = np.zeros(2, np.float32)
    small = (ctypes.c_int8(0), ctypes.c_int16(0), ctypes.c_uint8(0), ctypes.c_uint16(0))
    outs = [np.zeros(steps, np.uint32), np.zeros(steps * blocks, np.float32),
            np.zeros(2 * steps, np.float32), np.zeros(4, np.int64)]
    wants = [o.copy() for o in outs]
    with dev.scope("decode") as scope:
        scope.add(add, 1, outs[0], sk.Ref(upos), 3)
        scope.add(scale, blocks, outs[1], inp, sk.Ref(pos), sk.Ref(by))
        scope.add(point, 1, outs[2], sk.Ref(pos), sk.Ref(xy))
        scope.add(narrow, 1, outs[3], *(sk.Ref(v) for v in small))
    with scope.superkernel as decode:
        assert decode.explain()["steps"][1]["arguments_by_reference"] == [2, 3]
        for t in range(steps):
            pos.value, upos[0], by.value = t, t, 0.5 + t  # the engine's memory: no set_arg
            xy[:] = (-1.25 * t, 3.0 + t)
            for v, x in zip(small, (-100 - t, -30000 + t, 250 - t, 65000 + t)):
                v.value = x
            decode.launch()
            dev.synchronize()
            add.launch(1, wants[0], t, 3)
            scale.launch(blocks, wants[1], inp, t, 0.5 + t)
            point.launch(1, wants[2], t, (-1.25 * t, 3.0 + t))
            narrow.launch(1, wants[3], -100 - t, -30000 + t, 250 - t, 65000 + t)
            dev.synchronize()
            for got, want in zip(outs, wants):
                np.testing.assert_array_equal(got, want)
        # set_arg of a reference moves it; a value for it, or a Ref for a value, is refused.
        other = ctypes.c_int32(1)
        decode.set_arg(1, 2, sk.Ref(other))
        with pytest.raises(TypeError, match=r"sub-kernel 1 \(ref_scale_at\) argument 2 is read by reference"):
            decode.set_arg(1, 2, 5)
        with pytest.raises(TypeError, match=r"argument 1 was added as a value: it takes a value, not a Ref"):
            decode.set_arg(1, 1, sk.Ref(other))
        outs[1][:] = 0
        decode.launch()
        dev.synchronize()
        expect = np.zeros_like(outs[1])
        expect[blocks:2 * blocks] = inp * np.float32(by.value) + np.float32(1)
        np.testing.assert_array_equal(outs[1], expect)


def test_refs_misuse_names_the_argument(dev, objects):
    mod = dev.load(objects["args_refs"])
    add = mod.kernel("ref_add_at")
    out = np.zeros(8, np.uint32)
    with pytest.raises(TypeError, match=r"argument 1 \(u32\): a Ref is read by a super kernel's sub-kernel"):
        add.launch(1, out, sk.Ref(ctypes.c_uint32(1)), 3)
    with dev.scope("misuse") as scope:
        with pytest.raises(ValueError, match=r"argument 1 \(u32\): Ref to 2 bytes, but a u32 takes 4"):
            scope.add(add, 1, out, sk.Ref(ctypes.c_uint16(1)), 3)
        with pytest.raises(ValueError, match=r"Ref\(None\) names no memory"):
            scope.add(add, 1, out, sk.Ref(None), 3)
        scope.abort()


def test_a_cuda_struct_indexed_at_run_time_is_passed_as_its_bytes(fake_gpu):
    # multi_tensor_scale reads its 160-byte TensorListMetadata at offsets it computes: libsk
    # passes the struct as the address of its bytes; the binding gives those bytes, from a
    # ctypes object, bytes, or a list of the members.
    mod = fake_gpu.load(cuda_kernel("param_index.ptx"))
    k = mod.kernel("multi_tensor_scale")
    assert k.signature == "u32,{u64[20]},f32,f32"

    class Metadata(ctypes.Structure):
        _fields_ = [("addresses", ctypes.c_uint64 * 8), ("numel", ctypes.c_int32 * 4),
                    ("block_to_tensor", ctypes.c_uint8 * 16), ("block_to_chunk", ctypes.c_int32 * 16)]

    assert ctypes.sizeof(Metadata) == 160
    meta = Metadata()
    meta.numel[0] = 1000
    with fake_gpu.scope("param_index") as scope:
        scope.add(k, 8, 128, meta, 2.0, 1.0)
        scope.add(k, 8, 128, bytes(meta), 0.5, -1.0)
        scope.add(k, 8, 128, [list(range(20))], 1.0, 0.0)
    fused = scope.superkernel
    rewrites = fused.explain()["cuda_entry"]["sub_kernels"][0]["ptx"]["rewrites"]
    assert any("the kernel computes addresses in it at run time" in r for r in rewrites), rewrites
    fused.launch()
    fake_gpu.synchronize()
    with pytest.raises(ValueError, match=r"argument 1 \(\{u64\[20\]\}\): .* takes 160 bytes, bytes holds 100"):
        with fake_gpu.scope("short") as scope:
            scope.add(k, 8, 128, bytes(100), 2.0, 1.0)


def test_cuda_structs_as_large_as_cuda_12_1_passes_fuse(fake_gpu):
    # 4096, 5000 and 27648 bytes by value (PyTorch's multi-tensor kernels take 23-27 KB): each
    # a sub-kernel's aggregate, linked and launched; two of 27 KB pass in an argument buffer.
    mod = fake_gpu.load(cuda_kernel("large_params.ptx"))
    out = fake_gpu.alloc(4096)
    for name, words, arguments in (("table_4k", 1024, "parameters"), ("table_5k", 1250, "parameters"),
                                   ("table_27k", 6912, "buffer")):
        k = mod.kernel(name)
        assert k.signature == f"ptr,{{u32[{words}]}}"
        with fake_gpu.scope(name) as scope:
            scope.add(k, 2, out, [list(range(words))])
            scope.add(k, 2, out, [list(range(words, 0, -1))])
        assert scope.superkernel.explain()["cuda_entry"]["arguments"] == arguments
        scope.superkernel.launch()
        k.launch(2, out, [list(range(words))])
        fake_gpu.synchronize()
