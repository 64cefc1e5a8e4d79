"""The binding's public entry points fed None, wrong types, out-of-range numbers, strings with
NUL, closed objects and hostile files: each raises TypeError / ValueError (or StateError, or
libsk's verdict) naming the parameter, before ctypes can wrap, truncate or crash."""
import os
import threading

import numpy as np
import pytest

import superkernel as sk

U32_WRAPS = [2 ** 32, 2 ** 32 + 2, -1]


def names(excinfo, *words):
    for w in words:
        assert w in str(excinfo.value), (w, str(excinfo.value))


def test_device_spec(dev):
    for bad in (None, 5, b"host"):
        with pytest.raises(TypeError) as e:
            sk.Device(bad)
        names(e, "Device spec", type(bad).__name__)
    with pytest.raises(ValueError) as e:
        sk.Device("host\0:cores=1")
    names(e, "Device spec", "NUL")


def test_device_alloc_and_memcpy(dev):
    for bad, error in ((None, TypeError), (1.5, TypeError), (True, TypeError), (-1, ValueError),
                       (2 ** 64, ValueError)):
        with pytest.raises(error) as e:
            dev.alloc(bad)
        names(e, "Device.alloc nbytes")
    a, b = bytearray(16), bytearray(16)
    for bad, error in (("8", TypeError), (-1, ValueError), (2 ** 64, ValueError)):
        with pytest.raises(error) as e:
            dev.memcpy(a, b, bad)
        names(e, "memcpy nbytes")
    with pytest.raises(ValueError) as e:
        dev.memcpy(a, b, 17)
    names(e, "17 bytes")


def test_load(dev, tmp_path):
    for bad in (None, 5, 1.5):
        with pytest.raises(TypeError) as e:
            dev.load(bad)
        names(e, "Device.load", type(bad).__name__)
    with pytest.raises(ValueError) as e:
        dev.load(str(tmp_path / "a\0b.o"))
    names(e, "Device.load path", "NUL")
    with pytest.raises(sk.BadBinary) as e:
        dev.load(b"")
    with pytest.raises(sk.BadBinary) as e:
        dev.load("/dev/zero")  # a bounded read: not drained to the end
    names(e, "/dev/zero", "not an ELF")
    with pytest.raises(sk.BadBinary) as e:
        dev.load("/proc/self/status")
    names(e, "/proc/self/status")
    with pytest.raises(sk.NotFound) as e:
        dev.load(str(tmp_path))
    names(e, str(tmp_path), "directory")
    huge = tmp_path / "huge.o"
    with open(huge, "wb") as f:  # sparse: 1 GiB that takes no disk, refused before a read
        f.write(b"\x7fELF")
        f.truncate(1 << 30)
    with pytest.raises(sk.Unsupported) as e:
        dev.load(str(huge))
    names(e, "huge.o", "smaller than")


def write_fifo(path, data):
    os.mkfifo(path)

    def write():
        try:
            with open(path, "wb") as f:
                f.write(data)
        except BrokenPipeError:
            pass
    thread = threading.Thread(target=write, daemon=True)
    thread.start()
    return thread


def test_load_from_a_pipe(dev, ops_path, tmp_path):
    # The pipe is read once, by the binding, and libsk gets those bytes: not "file is empty".
    write_fifo(tmp_path / "object", open(ops_path, "rb").read())
    mod = dev.load(str(tmp_path / "object"))
    assert mod.kernels["axpy"]["sig"] == "f32,ptr,ptr,u32"
    x = np.ones(4, np.float32)
    y = np.zeros(4, np.float32)
    mod.kernel("axpy").launch(1, 2.0, x, y, 4)
    dev.synchronize()
    assert list(y) == [2.0] * 4
    write_fifo(tmp_path / "empty", b"")
    with pytest.raises(sk.BadBinary) as e:
        dev.load(str(tmp_path / "empty"))
    names(e, "empty", "file is empty")


def test_kernel_lookup(ops):
    for bad in (None, 5):
        with pytest.raises(TypeError) as e:
            ops.kernel(bad)
        names(e, "Module.kernel name")
    with pytest.raises(ValueError) as e:
        ops.kernel("axpy\0evil")
    names(e, "Module.kernel name", "NUL")
    with pytest.raises(ValueError) as e:
        ops.kernel("axpy", "f32,ptr\0,ptr,u32")
    names(e, "Module.kernel signature", "NUL")
    with pytest.raises(TypeError) as e:
        ops.kernel("axpy", 5)
    names(e, "Module.kernel signature")


def test_launch_block_dim_and_stream(dev, ops):
    axpy = ops.kernel("axpy")
    x, y = np.ones(4, np.float32), np.zeros(4, np.float32)
    for bad in U32_WRAPS:
        with pytest.raises(ValueError) as e:
            axpy.launch(bad, 1.0, x, y, 4)
        names(e, "block_dim", str(bad))
    for bad in (None, 2.0, "2", True):
        with pytest.raises(TypeError) as e:
            axpy.launch(bad, 1.0, x, y, 4)
        names(e, "block_dim")
    for bad in (2 ** 32, 0, "stream"):
        with pytest.raises(TypeError) as e:
            axpy.launch(1, 1.0, x, y, 4, stream=bad)
        names(e, "stream")
    axpy.launch(np.uint32(2), 1.0, x, y, 4)  # numpy integers are integers
    dev.synchronize()


@pytest.mark.parametrize("token,bad", [("i8", 128), ("u8", -1), ("i16", 2 ** 15), ("u16", 2 ** 16),
                                       ("i32", 2 ** 31), ("u32", 2 ** 32), ("i64", 2 ** 63),
                                       ("u64", 2 ** 64), ("u64", -1), ("f32", 1e300),
                                       ("f32", -3.5e38), ("f32", 2 ** 200), ("f64", 10 ** 400)])
def test_scalar_ranges(ops, token, bad):
    values = {"i8": 0, "u8": 0, "i16": 0, "u16": 0, "i32": 0, "u32": 0, "i64": 0, "u64": 0,
              "f32": 0.0, "f64": 0.0}
    values[token] = bad
    k = ops.kernel("all_types")
    with pytest.raises(ValueError) as e:  # OutOfRange: also an OverflowError
        k.pack([*values.values(), None])
    assert isinstance(e.value, OverflowError)
    names(e, "all_types", f"({token})", "does not fit")


def test_scalar_types(ops):
    k = ops.kernel("all_types")
    good = [np.int8(-1), np.uint8(255), np.int16(-3), np.uint16(3), np.int32(-5), np.uint32(5),
            np.int64(-7), np.uint64(7), np.float32(1.5), np.float64(2.5), None]
    k.pack(good)  # numpy scalars of every type are taken where they fit
    k.pack([0, 0, 0, 0, 0, 0, 0, 0, float("inf"), float("nan"), None])  # inf and nan are floats
    for i, bad in ((0, 1.0), (0, True), (0, "1"), (0, None), (8, "1.0"), (8, True), (8, None),
                   (0, np.float32(1)), (9, np.bool_(True))):
        args = list(good)
        args[i] = bad
        with pytest.raises(TypeError) as e:
            k.pack(args)
        names(e, f"argument {i}")


def test_scope_add(dev, ops):
    axpy = ops.kernel("axpy")
    x, y = np.ones(4, np.float32), np.zeros(4, np.float32)
    with dev.scope("misuse") as scope:
        for kwargs, error, words in (
                ({"block_dim": 2 ** 32 + 2}, ValueError, ["block_dim"]),
                ({"block_dim": None}, TypeError, ["block_dim"]),
                ({"stream": 2 ** 32}, ValueError, ["stream"]),
                ({"stream": -1}, ValueError, ["stream"]),
                ({"flags": 2 ** 32}, ValueError, ["flags"]),
                ({"flags": 1.0}, TypeError, ["flags"]),
                ({"name": "a\0b"}, ValueError, ["name", "NUL"]),
                ({"name": 5}, TypeError, ["name"]),
                ({"core_type": "vec\0tor"}, ValueError, ["core_type", "NUL"])):
            call = {"block_dim": 1, **kwargs}
            with pytest.raises(error) as e:
                scope.add(axpy, call.pop("block_dim"), 1.0, x, y, 4, **call)
            names(e, *words)
        with pytest.raises(TypeError) as e:
            scope.add(None, 1)
        names(e, "Scope.add kernel")
        for method in (scope.record_event, scope.wait_event):
            with pytest.raises(ValueError) as e:
                method(2 ** 32, 0)
            names(e, "stream")
            with pytest.raises(ValueError) as e:
                method(0, -1)
            names(e, "event")
        scope.add(axpy, 1, 1.0, x, y, 4)
    fused = scope.superkernel
    for bad, error in ((2 ** 32, ValueError), (-1, ValueError), (None, TypeError)):
        with pytest.raises(error) as e:
            fused.set_arg(bad, 0, 1.0)
        names(e, "step")
        with pytest.raises(error) as e:
            fused.set_arg(0, bad, 1.0)
        names(e, "index")
    with pytest.raises(IndexError):
        fused.set_arg(1, 0, 1.0)
    with pytest.raises(ValueError) as e:
        fused.set_arg(0, 0, 1e300)
    names(e, "argument 0", "f32")
    with pytest.raises(TypeError) as e:
        fused.launch(stream=5)
    names(e, "stream")
    with pytest.raises(ValueError) as e:
        fused.write_trace("trace\0.json")
    names(e, "write_trace path", "NUL")
    fused.close()


def test_scope_names(dev):
    for bad, error in ((None, TypeError), ("a\0b", ValueError)):
        with pytest.raises(error) as e:
            dev.scope(bad)
        names(e, "Device.scope name")
    with pytest.raises(ValueError) as e:
        dev.scope("s", "profiling=1\0:early-start=0")
    names(e, "Device.scope options", "NUL")
    with pytest.raises(TypeError) as e:
        dev.scope("s", 5)
    names(e, "Device.scope options")


def test_closed_objects(ops_path):
    dev = sk.Device("host:cores=2")
    mod = dev.load(ops_path)
    axpy = mod.kernel("axpy")
    buf = dev.alloc(16)
    stream = dev.stream()
    with dev.scope("s") as scope:
        scope.add(axpy, 1, 1.0, buf, buf, 4)
    fused = scope.superkernel
    y = np.zeros(4, np.float32)
    buf.close()
    with pytest.raises(sk.StateError):
        axpy.launch(1, 1.0, buf, y, 4)  # a freed Buffer is not passed on as an address
    mod.close()
    with pytest.raises(sk.StateError) as e:
        axpy.launch(1, 1.0, y, y, 4)
    names(e, "axpy", "Module is closed")
    dev.close()
    for call in (lambda: dev.alloc(8), lambda: dev.load(ops_path), dev.stream, dev.scope,
                 dev.synchronize, lambda: dev.cores, fused.launch, fused.explain,
                 stream.synchronize, lambda: scope.add(axpy, 1, 1.0, y, y, 4),
                 lambda: fused.set_arg(0, 0, 1.0)):
        with pytest.raises(sk.StateError):
            call()


def test_a_cuda_stream_needs_a_cuda_device(dev):
    with pytest.raises(sk.Unsupported) as e:
        dev.stream(cuda_stream=0x1234)
    assert "not a CUDA device" in str(e.value)


def test_load_a_missing_file(dev, ops_path, tmp_path):
    # libsk's own verdict on a file it cannot open (sk_module_load_file): NotFound, also an
    # OSError that carries the errno and the path.
    missing = tmp_path / "missing.o"
    for source in (str(missing), missing, [ops_path, str(missing)]):
        with pytest.raises(sk.NotFound) as e:
            dev.load(source)
        names(e, "Device.load", "missing.o", "No such file")
        assert isinstance(e.value, OSError)
        assert e.value.errno == 2 and os.fsdecode(e.value.filename).endswith("missing.o")


def test_object_arrays_are_refused_as_pointers(dev, ops):
    # A kernel writing over an array of PyObject* would crash the interpreter at collection.
    axpy = ops.kernel("axpy")
    y = np.zeros(4, np.float32)
    boxes = np.array([object()] * 4, dtype=object)
    records = np.zeros(4, dtype=[("a", np.float32), ("o", object)])
    for bad, words in ((boxes, ["Python objects", "'O'"]),
                       (records, ["Python objects"]),
                       (np.zeros(4, "M8[D]"), ["cannot lend its memory"])):
        with pytest.raises(ValueError) as e:
            axpy.pack([1.0, bad, y, 4])
        names(e, "axpy", "argument 1", *words)
        with pytest.raises(ValueError) as e:
            dev.buffer(bad)
        names(e, "Device.buffer", *words)
        with pytest.raises(ValueError) as e:
            dev.memcpy(y, bad, 4)
        names(e, "memcpy source", *words)
    # Plain data of every kind is still taken: records of numbers, bytes, complex, half floats.
    for good in (np.zeros(4, [("a", np.float32), ("b", np.int16)]), np.zeros(4, "S3"),
                 np.zeros(4, np.complex64), np.zeros(4, np.float16), np.zeros(4, "U2")):
        axpy.pack([1.0, good, y, 4])


def malformed_exports():
    """(FakeProducer keyword arguments, words the refusal names) of DLPack exports that are
    malformed, or whose memory the address space cannot hold."""
    big = 1 << 62
    return [({"data": 0}, ["data", "NULL", "4 elements"]),
            ({"ndim": 10 ** 6}, ["ndim", str(10 ** 6)]),
            ({"ndim": -1}, ["ndim", "-1"]),
            ({"shape": (-4,)}, ["shape[0]", "negative"]),
            ({"shape": (2, -4)}, ["shape[1]", "negative"]),
            ({"shape": (big,)}, ["shape", "address space"]),
            ({"shape": (big // 2, 4), "dtype": (2, 64, 1)}, ["shape", "address space"]),
            ({"shape": (big, big, big)}, ["shape", "address space"]),
            ({"dtype": (2, 0, 1)}, ["dtype", "0 bits"]),
            ({"dtype": (2, 32, 0)}, ["dtype", "0 lanes"]),
            ({"byte_offset": (1 << 64) - 1}, ["byte_offset", "address space"]),
            ({"byte_offset": 1 << 63}, ["byte_offset", "address space"])]


@pytest.mark.parametrize("legacy", [False, True], ids=["dlpack 1.0", "dlpack 0.x"])
@pytest.mark.parametrize("fields,words", malformed_exports())
def test_malformed_dlpack_exports(dev, ops, fields, words, legacy):
    from test_buffers import FakeProducer
    axpy = ops.kernel("axpy")
    x, y = np.ones(4, np.float32), np.zeros(4, np.float32)
    producer = FakeProducer(x, legacy=legacy, **fields)
    with pytest.raises(ValueError) as e:
        axpy.pack([1.0, producer, y, 4])
    names(e, "axpy", "argument 1", "DLPack", *words)
    assert producer.exports == producer.deleted == 1  # consumed, and its deleter ran
    with pytest.raises(ValueError) as e:
        dev.buffer(FakeProducer(x, legacy=legacy, **fields))
    names(e, "Device.buffer", *words)
    assert list(y) == [0.0] * 4


def test_a_bad_dlpack_device_is_named(dev, ops):
    from test_buffers import FakeProducer
    axpy = ops.kernel("axpy")
    x, y = np.ones(4, np.float32), np.zeros(4, np.float32)

    class Failing(FakeProducer):
        def __dlpack_device__(self):
            raise RuntimeError("no device today")

    for producer, error, words in ((FakeProducer(x, device="cpu"), TypeError, ["'cpu'"]),
                                   (FakeProducer(x, device=(1,)), TypeError, ["(1,)"]),
                                   (FakeProducer(x, device=(1, 0, 0)), TypeError, ["(1, 0, 0)"]),
                                   (FakeProducer(x, device=(1.0, 0)), TypeError, ["(1.0, 0)"]),
                                   (FakeProducer(x, device=(1, 2 ** 40)), TypeError, []),
                                   (Failing(x), ValueError, ["RuntimeError", "no device today"])):
        with pytest.raises(error) as e:
            axpy.pack([1.0, producer, y, 4])
        names(e, "axpy", "argument 1", "__dlpack_device__()", *words)
        assert producer.exports == 0  # refused before an export


SYMBOL = "scale_\\xff\\xfe"  # tests/kernels/names_not_utf8.c's symbol, bytes ff fe shown as \xNN


def fused_and_unfused(dev, kernel, scope_name):
    """Runs kernel twice on copies of one input, unfused and fused; asserts the results are
    identical bit for bit and returns the super kernel's explain()."""
    a = np.linspace(-7, 7, 1000, dtype=np.float32)
    b = a.copy()
    kernel.launch(3, a, 1000)
    kernel.launch(2, a, 1000)
    dev.synchronize()
    with dev.scope(scope_name) as scope:
        scope.add(kernel, 3, b, 1000)
        scope.add(kernel, 2, b, 1000)
    scope.superkernel.launch()
    dev.synchronize()
    assert a.tobytes() == b.tobytes()
    plan = scope.superkernel.explain()
    scope.superkernel.close()
    return plan


def test_names_that_are_not_utf8(dev, kernel_dir):
    path = os.path.join(kernel_dir, "names_not_utf8.o")
    mod = dev.load(path)
    assert list(mod.kernels) == [SYMBOL]  # libsk's rule: a byte that is not UTF-8 is \xNN
    plan = fused_and_unfused(dev, mod.kernel(SYMBOL), "s\xe9\n")
    assert plan["name"] == "s\xe9\n"
    assert [s["symbol"] for s in plan["steps"]] == [SYMBOL] * 2
    with pytest.raises(sk.NotFound) as e:
        mod.kernel("scale_\n")
    names(e, "scale_\\n")
    assert "\n" not in str(e.value)


def test_module_paths_that_are_not_utf8(dev, kernel_dir, tmp_path):
    # Paths are str (or os.PathLike); bytes that are not UTF-8 come in as surrogates (fsdecode).
    raw_dir = os.fsencode(tmp_path)
    path = raw_dir + b"/obj\xe9\nline.o"
    with open(os.path.join(kernel_dir, "names_not_utf8.o"), "rb") as f, open(path, "wb") as g:
        g.write(f.read())
    mod = dev.load(os.fsdecode(path))
    plan = fused_and_unfused(dev, mod.kernel(SYMBOL), "s")
    assert plan["steps"][0]["module"].endswith("/obj\\xe9\nline.o")
    with pytest.raises(sk.NotFound) as e:
        dev.load(os.fsdecode(raw_dir + b"/gone\xff\r.o"))
    names(e, "gone\\xff\\r.o", "No such file")
    assert e.value.filename == os.fsdecode(raw_dir + b"/gone\xff\r.o")
    with open(path, "rb") as f, open(raw_dir + b"/bad\xff\n.o", "wb") as g:
        g.write(f.read(40))
    with pytest.raises(sk.BadBinary) as e:
        dev.load(os.fsdecode(raw_dir + b"/bad\xff\n.o"))
    names(e, "bad\\xff\\n.o", "truncated ELF header")
    assert "\n" not in str(e.value)
