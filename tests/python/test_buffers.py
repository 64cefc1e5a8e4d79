"""Pointer arguments from the ecosystem's protocols: the buffer protocol and DLPack.

A ctypes DLPack producer (FakeProducer) exports any memory as any device, versioned or not,
read-only, strided, and counts its deleter calls, so the consumer's side of the protocol is
checked exactly: one export per use, the capsule consumed, the deleter called once.
"""
import array
import ctypes
import gc
import mmap
import sys
import weakref

import numpy as np
import pytest

import superkernel as sk
from superkernel.args import address_of
from superkernel.memory import (DLManagedTensor, DLManagedTensorVersioned, DLPACK_FLAG_READ_ONLY,
                                check_device, cuda_ordinal)

N = 1000
KDL_CPU, KDL_CUDA, KDL_CUDA_MANAGED = 1, 2, 13

_capsule_new = ctypes.PYFUNCTYPE(ctypes.py_object, ctypes.c_void_p, ctypes.c_char_p,
                                 ctypes.c_void_p)(("PyCapsule_New", ctypes.pythonapi))
# Called from a capsule's destructor, on an object being freed: raw pointers, no error checks.
_capsule_is_valid = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_char_p)(
    ("PyCapsule_IsValid", ctypes.pythonapi))
_DESTRUCTOR = ctypes.CFUNCTYPE(None, ctypes.c_void_p)
_DELETER = ctypes.CFUNCTYPE(None, ctypes.c_void_p)


class FakeProducer:
    """Exports `array`'s memory (or `data`, an address) as DLPack tensors of `device`.
    versioned: answer max_version with DLPack 1.0; legacy: __dlpack__ has no max_version.
    ndim, dtype (code, bits, lanes) and byte_offset go into the tensor as given (ndim None: the
    shape's length), so malformed exports can be made too."""

    def __init__(self, array=None, device=(KDL_CPU, 0), versioned=True, legacy=False,
                 flags=0, shape=None, strides=None, data=None, dlpack_device=True, ndim=None,
                 dtype=(2, 32, 1), byte_offset=0):
        self.array = array
        self.data = data if data is not None else array.ctypes.data
        self.shape = shape if shape is not None else (array.size,)
        self.strides, self.device, self.flags = strides, device, flags
        self.ndim = len(self.shape) if ndim is None else ndim
        self.dtype, self.byte_offset = dtype, byte_offset
        self.versioned = versioned and not legacy
        self.legacy = legacy
        self.exports = self.deleted = self.calls = 0
        self.live = {}  # managed tensor address -> the ctypes objects behind it
        self._deleter = _DELETER(self._delete)
        self._destructor = _DESTRUCTOR(self._capsule_freed)
        if not dlpack_device:
            self.__dlpack_device__ = None

    def __dlpack_device__(self):
        return self.device

    def __dlpack__(self, *, stream=None, max_version=None):
        if self.legacy and max_version is not None:
            raise TypeError("__dlpack__() got an unexpected keyword argument 'max_version'")
        self.calls += 1
        assert stream is None
        versioned = self.versioned and max_version is not None and max_version[0] >= 1
        managed = DLManagedTensorVersioned() if versioned else DLManagedTensor()
        shape = (ctypes.c_int64 * len(self.shape))(*self.shape)
        strides = (ctypes.c_int64 * len(self.shape))(*self.strides) if self.strides else None
        t = managed.dl_tensor
        t.data, t.device.device_type, t.device.device_id = self.data, *self.device
        t.ndim, (t.dtype.code, t.dtype.bits, t.dtype.lanes) = self.ndim, self.dtype
        t.byte_offset = self.byte_offset
        t.shape = ctypes.cast(shape, ctypes.POINTER(ctypes.c_int64))
        if strides is not None:
            t.strides = ctypes.cast(strides, ctypes.POINTER(ctypes.c_int64))
        managed.deleter = ctypes.cast(self._deleter, ctypes.c_void_p).value
        if versioned:
            managed.version.major, managed.version.minor, managed.flags = 1, 0, self.flags
        address = ctypes.addressof(managed)
        self.live[address] = (managed, shape, strides)
        self.exports += 1
        name = b"dltensor_versioned" if versioned else b"dltensor"
        return _capsule_new(address, name, ctypes.cast(self._destructor, ctypes.c_void_p))

    def _delete(self, address):
        self.deleted += 1
        del self.live[address]

    def _capsule_freed(self, capsule):
        # The protocol: a capsule still named "dltensor..." was never consumed; free it here.
        for name in (b"dltensor", b"dltensor_versioned"):
            if _capsule_is_valid(capsule, name):
                for address in list(self.live):  # these tests export one tensor at a time
                    self._delete(address)


class DLPackOnly:
    """An object with DLPack and nothing else (no buffer protocol), over numpy's export."""

    def __init__(self, array):
        self.array = array

    def __dlpack__(self, **kw):
        return self.array.__dlpack__(**kw)

    def __dlpack_device__(self):
        return self.array.__dlpack_device__()


def reference(a, x, y0):
    return np.float32(a) * x + y0


@pytest.fixture
def axpy(ops):
    return ops.kernel("axpy")


def data(seed):
    rng = np.random.default_rng(seed)
    return (rng.uniform(-1, 1, N).astype(np.float32), rng.uniform(-1, 1, N).astype(np.float32))


@pytest.mark.parametrize("kind", ["numpy", "bytearray", "memoryview", "array", "ctypes",
                                  "dlpack numpy", "dlpack 0.x", "dlpack 1.0"])
def test_kernels_read_and_write_through_every_kind(dev, axpy, kind):
    x, y0 = data(7)

    def make(values):
        if kind == "numpy":
            return values.copy(), lambda o: o
        if kind == "bytearray":
            return bytearray(values.tobytes()), lambda o: np.frombuffer(o, np.float32)
        if kind == "memoryview":
            return memoryview(bytearray(values.tobytes())), lambda o: np.frombuffer(o, np.float32)
        if kind == "array":
            return array.array("f", values.tolist()), lambda o: np.array(o, np.float32)
        if kind == "ctypes":
            return (ctypes.c_float * N)(*values.tolist()), lambda o: np.ctypeslib.as_array(o)
        backing = values.copy()
        if kind == "dlpack numpy":  # numpy's own __dlpack__ (0.x on numpy < 2.1)
            return DLPackOnly(backing), lambda o: o.array
        return (FakeProducer(backing, versioned=kind == "dlpack 1.0", legacy=kind == "dlpack 0.x"),
                lambda o: o.array)

    xs, read_x = make(x)
    ys, read_y = make(y0)
    axpy.launch(3, 2.5, xs, ys, N)
    dev.synchronize()
    np.testing.assert_array_equal(read_x(xs), x)                  # read, not written
    np.testing.assert_allclose(read_y(ys), reference(2.5, x, y0), rtol=1e-6)
    with dev.scope(kind) as scope:
        scope.add(axpy, 2, 1.0, xs, ys, N)
    with scope.superkernel as fused:
        fused.launch()
        dev.synchronize()
    np.testing.assert_allclose(read_y(ys), reference(2.5, x, y0) + x, rtol=1e-6)
    for o in (xs, ys):
        if isinstance(o, FakeProducer):
            assert o.exports == 2 and o.deleted == 2 and not o.live


def test_legacy_producer_is_asked_again_without_max_version(dev, axpy):
    x, y = data(1)
    legacy = FakeProducer(y, legacy=True)
    axpy.launch(1, 1.0, x, legacy, N)
    dev.synchronize()
    assert legacy.calls == 1 and legacy.exports == 1 and legacy.deleted == 1


def test_dlpack_deleter_runs_once_when_the_binding_ends(dev, axpy):
    x, y = data(2)
    first, second = FakeProducer(y.copy()), FakeProducer(y.copy())
    with dev.scope("rebind") as scope:
        scope.add(axpy, 2, 1.0, x, first, N)
    fused = scope.superkernel
    fused.launch()
    dev.synchronize()
    assert (first.exports, first.deleted) == (1, 0)  # in use by the super kernel
    fused.set_arg(0, 2, second)
    assert (first.exports, first.deleted) == (1, 1)  # the old binding is let go at once
    fused.launch()
    dev.synchronize()
    np.testing.assert_allclose(second.array, x + y, rtol=1e-6)
    assert second.deleted == 0
    fused.close()
    assert (second.exports, second.deleted) == (1, 1)
    assert (first.exports, first.deleted) == (1, 1)


def test_set_arg_keeps_only_the_current_binding_alive(dev, axpy):
    x = np.ones(N, np.float32)
    bound = [np.zeros(N, np.float32) for _ in range(3)]
    refs = [weakref.ref(a) for a in bound]
    with dev.scope("rebind") as scope:
        scope.add(axpy, 2, 1.0, x, bound[0], N)
    fused = scope.superkernel
    fused.set_arg(0, 2, bound[1])
    fused.set_arg(0, 2, bound[2])
    fused.launch()
    dev.synchronize()
    last = bound[2]
    assert np.all(last == 1.0)
    del bound
    gc.collect()
    assert refs[0]() is None and refs[1]() is None and refs[2]() is last
    fused.set_arg(0, 2, None)  # a NULL binding holds nothing
    del last
    gc.collect()
    assert refs[2]() is None
    fused.close()


def test_exports_do_not_leak_references(dev, axpy):
    x, y = data(3)
    wrapped = DLPackOnly(y)
    before = sys.getrefcount(x), sys.getrefcount(y)
    for _ in range(3):
        axpy.launch(2, 1.0, x, wrapped, N)
        with dev.scope("leak") as scope:
            scope.add(axpy, 2, 1.0, x, wrapped, N)
        scope.superkernel.launch()
        dev.synchronize()
        scope.superkernel.close()
    gc.collect()
    assert (sys.getrefcount(x), sys.getrefcount(y)) == before
    ref_x, ref_y, ref_w = weakref.ref(x), weakref.ref(y), weakref.ref(wrapped)
    del x, y, wrapped, scope
    gc.collect()
    assert ref_x() is None and ref_y() is None and ref_w() is None


def test_a_bound_buffer_cannot_be_resized_under_the_kernel(dev, axpy):
    x, y = np.ones(N, np.float32), bytearray(4 * N)
    with dev.scope("locked") as scope:
        scope.add(axpy, 1, 1.0, x, y, N)
    with pytest.raises(BufferError):
        y.extend(b"1234")  # would move the memory the super kernel writes
    scope.superkernel.close()
    y.extend(b"1234")


def _read_only_objects(tmp_path):
    frozen = np.ones(N, np.float32)
    frozen.flags.writeable = False
    path = tmp_path / "x.bin"
    np.ones(N, np.float32).tofile(path)
    f = open(path, "rb")
    mapped = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    f.close()
    return {
        "numpy": frozen,
        "memmap": np.memmap(path, np.float32, mode="r"),
        "bytes": np.ones(N, np.float32).tobytes(),
        "memoryview": memoryview(bytearray(np.ones(N, np.float32).tobytes())).toreadonly(),
        "mmap": mapped,
        "dlpack": FakeProducer(np.ones(N, np.float32), flags=DLPACK_FLAG_READ_ONLY),
    }


def test_read_only_memory_is_refused_unless_vouched_for(dev, axpy, tmp_path):
    for kind, ro in _read_only_objects(tmp_path).items():
        y = np.zeros(N, np.float32)
        with pytest.raises(ValueError, match=r"argument 1 \(ptr\).*read-only.*readonly"):
            axpy.launch(1, 2.0, ro, y, N)
        with pytest.raises(ValueError, match=r"argument 2 \(ptr\).*read-only"):
            axpy.launch(1, 2.0, y, ro, N)
        axpy.launch(2, 2.0, sk.readonly(ro), y, N)  # the kernel only reads x
        dev.synchronize()
        assert np.all(y == 2.0), kind
        if isinstance(ro, FakeProducer):
            assert ro.exports == 3 and ro.deleted == 3
    with pytest.raises(ValueError, match="read-only"):
        dev.buffer(np.ones(4, np.float32).tobytes())
    lent = dev.buffer(sk.readonly(b"abcd"))
    assert lent.readonly and lent.view().readonly and bytes(lent.view()) == b"abcd"


def test_non_contiguous_memory_is_refused(dev, axpy):
    y = np.zeros(N, np.float32)
    with pytest.raises(ValueError, match=r"argument 1 \(ptr\).*C-contiguous"):
        axpy.launch(1, 1.0, np.zeros((N, 2), np.float32)[:, 0], y, N)
    with pytest.raises(ValueError, match="C-contiguous"):
        axpy.launch(1, 1.0, memoryview(bytearray(8 * N)).cast("f")[::2], y, N)
    backing = np.zeros(2 * N, np.float32)
    strided = FakeProducer(backing, shape=(N,), strides=(2,))
    with pytest.raises(ValueError, match=r"argument 2 \(ptr\).*C-contiguous"):
        axpy.launch(1, 1.0, y, strided, N)
    assert strided.exports == 1 and strided.deleted == 1  # refused, and still freed once
    # Explicit strides that are compact (and any stride on a dimension of 1) are fine.
    compact = FakeProducer(backing, shape=(N // 10, 1, 10), strides=(10, 77, 1))
    axpy.launch(1, 1.0, np.ones(N, np.float32), compact, N)
    dev.synchronize()
    assert np.all(backing[:N] == 1.0) and np.all(backing[N:] == 0.0)


def test_memory_of_another_device_is_refused_on_the_host(dev, axpy):
    y = np.zeros(N, np.float32)
    gpu = FakeProducer(np.zeros(N, np.float32), device=(KDL_CUDA, 0))
    with pytest.raises(ValueError, match=r"argument 2 \(ptr\).*kDLCUDA:0.*'host:.*host memory"):
        axpy.launch(1, 1.0, y, gpu, N)
    assert gpu.exports == 0  # refused on __dlpack_device__, before an export
    # Without __dlpack_device__ the tensor's own device is checked, and the export freed.
    silent = FakeProducer(np.zeros(N, np.float32), device=(KDL_CUDA_MANAGED, 1),
                          dlpack_device=False)
    with pytest.raises(ValueError, match="kDLCUDAManaged:1"):
        dev.memcpy(silent, y)
    assert silent.exports == 1 and silent.deleted == 1


def test_check_device_rules():
    host = type("D", (), {"is_host": True, "spec": "host"})()
    gpu1 = type("D", (), {"is_host": False, "spec": "cuda:1,timeout_ms=100"})()
    check_device("p", KDL_CPU, 0, host, False)
    check_device("p", 3, 0, host, False)  # kDLCUDAHost: pinned host memory
    check_device("p", KDL_CUDA, 1, gpu1, False)
    check_device("p", KDL_CUDA_MANAGED, 1, gpu1, False)
    check_device("p", KDL_CPU, 0, gpu1, True)  # a copy from or to host memory
    for kind, ordinal, device in ((KDL_CUDA, 0, host), (KDL_CUDA_MANAGED, 0, host),
                                  (KDL_CUDA, 0, gpu1), (KDL_CPU, 0, gpu1), (3, 0, gpu1)):
        with pytest.raises(ValueError, match=r"^p: the memory is on .* but device"):
            check_device("p", kind, ordinal, device, False)
    assert [cuda_ordinal(s) for s in ("cuda", "cuda:2", "cuda:3,timeout_ms=5",
                                      "cuda:timeout_ms=5,device=4")] == [0, 2, 3, 4]


def test_a_gpu_takes_its_own_memory_by_dlpack(fake_gpu):
    mem = fake_gpu.alloc(4 * N)
    tensor = FakeProducer(np.empty(0, np.float32), device=(KDL_CUDA, 0), data=mem.address,
                          shape=(N,))
    src = np.arange(N, dtype=np.float32)
    fake_gpu.memcpy(tensor, src)            # host -> the tensor on the GPU
    back = np.zeros(N, np.float32)
    fake_gpu.memcpy(back, mem)
    np.testing.assert_array_equal(back, src)
    lent = fake_gpu.buffer(tensor)
    assert lent.address == mem.address and lent.nbytes == 4 * N
    assert address_of(tensor, "p", fake_gpu)[0] == mem.address
    lent.close()
    assert tensor.exports == tensor.deleted == 3
    other = FakeProducer(np.empty(0, np.float32), device=(KDL_CUDA, 1), data=mem.address,
                         shape=(N,))
    with pytest.raises(ValueError, match=r"p: the memory is on kDLCUDA:1.*'cuda:0'.*GPU 0"):
        address_of(other, "p", fake_gpu)
    for host_memory in (np.zeros(N, np.float32), FakeProducer(np.zeros(N, np.float32)),
                        (ctypes.c_float * N)()):
        with pytest.raises(ValueError, match=r"p: the memory is on kDLCPU:0.*'cuda:0'"):
            address_of(host_memory, "p", fake_gpu)


def test_memcpy_reads_read_only_sources_and_checks_sizes(dev):
    dst = np.zeros(4, np.float32)
    dev.memcpy(dst, np.arange(4, dtype=np.float32).tobytes())
    assert list(dst) == [0, 1, 2, 3]
    with pytest.raises(ValueError, match="memcpy destination.*read-only"):
        dev.memcpy(b"1234", dst, 4)
    with pytest.raises(ValueError, match="memcpy destination.*read-only"):
        dev.memcpy(sk.readonly(bytearray(4)), dst, 4)
    with pytest.raises(ValueError, match="32 bytes do not fit the source's 16"):
        dev.memcpy(dev.alloc(64), dst, 32)
    with pytest.raises(TypeError, match="give nbytes"):
        dev.memcpy(dst, dst.ctypes.data)


def test_torch_tensors_when_torch_is_installed(dev, axpy):
    torch = pytest.importorskip("torch")
    x, y0 = data(5)
    tx, ty = torch.tensor(x), torch.tensor(y0)
    axpy.launch(2, 3.0, tx, ty, N)
    dev.synchronize()
    np.testing.assert_allclose(ty.numpy(), reference(3.0, x, y0), rtol=1e-6)
