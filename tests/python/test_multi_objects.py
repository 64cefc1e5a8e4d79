"""Device.load with a list: objects and an `ar` archive linked as one module, from paths and
from bytes, and the errors that name the object and the parameter."""
import os
import subprocess

import numpy as np
import pytest

import superkernel as sk
from conftest import ROOT, compile_kernel, cuda_kernel

MULTI = os.path.join(ROOT, "tests", "kernels", "multi")


@pytest.fixture(scope="module")
def multi(tmp_path_factory):
    out = str(tmp_path_factory.mktemp("multi"))
    objs = {name: compile_kernel(os.path.join(MULTI, name + ".c"), out)
            for name in ("multi_main", "multi_helper", "multi_dup", "multi_offset", "multi_base",
                         "multi_unused")}
    archive = os.path.join(out, "libmulti.a")
    subprocess.run([os.environ.get("AR", "ar"), "rcs", archive, objs["multi_offset"],
                    objs["multi_base"], objs["multi_unused"]], check=True)
    objs["libmulti"] = archive
    return objs


def run_multi_kernel(mod):
    buf = np.arange(-3, 5, dtype=np.int32)
    mod.kernel("multi_kernel").launch(3, buf, len(buf))
    mod.device.synchronize()
    return buf


def test_paths_and_archive(dev, multi):
    mod = dev.load([multi["libmulti"], multi["multi_main"], multi["multi_helper"]])
    # multi_main.c: (3 * v + 100) * 2 + 7, with the helper object and two archive members.
    assert list(run_multi_kernel(mod)) == [(3 * v + 100) * 2 + 7 for v in range(-3, 5)]
    assert {"multi_kernel", "multi_helper_kernel"} <= set(mod.kernels)


def test_bytes_and_paths_mixed(dev, multi):
    with open(multi["multi_helper"], "rb") as f:
        helper = f.read()
    mod = dev.load([multi["multi_main"], bytearray(helper), multi["libmulti"]])
    assert run_multi_kernel(mod)[0] == (3 * -3 + 100) * 2 + 7


def test_duplicate_definition_names_both(dev, multi):
    with pytest.raises(sk.BadBinary) as e:
        dev.load([multi["multi_main"], multi["multi_helper"], multi["multi_dup"]])
    assert "multi_scale" in str(e.value)
    assert "multi_helper.o" in str(e.value) and "multi_dup.o" in str(e.value)


def test_bad_lists(dev, multi):
    with pytest.raises(ValueError, match="empty"):
        dev.load([])
    with pytest.raises(TypeError, match=r"sources\[1\]"):
        dev.load([multi["multi_main"], 42])
    with pytest.raises(sk.BadBinary, match=r"sources\[0\]"):
        dev.load([b"", multi["multi_main"]])
    with pytest.raises(sk.InvalidArgument, match="only archives"):
        dev.load([multi["libmulti"]])


def test_nvcc_objects_of_separable_compilation_are_one_cuda_module(fake_gpu):
    # cross_a.o's kernel calls a function and reads a variable of cross_b.o: a list of them is
    # one module, and its super kernel links cross_b.o with it.
    a, b = cuda_kernel("cross_a.o"), cuda_kernel("cross_b.o")
    mod = fake_gpu.load([a, b])
    assert set(mod.kernels) == {"cross_apply", "cross_normalize", "cross_scale",
                                "_Z12cross_offsetIfEvPT_S0_i"}
    y = fake_gpu.alloc(4096)
    with fake_gpu.scope("separable") as scope:
        scope.add(mod.kernel("cross_apply"), 4, y, y, 512)
        scope.add(mod.kernel("cross_scale"), 4, y, 2.0, 512)
    fused = scope.superkernel
    apply_facts = fused.explain()["cuda_entry"]["sub_kernels"][0]
    assert apply_facts["module"] == a + " (compute_90 PTX)"
    assert apply_facts["linked_with"] == [b + " (compute_90 PTX)"]
    fused.launch()
    fake_gpu.synchronize()
    with pytest.raises(sk.Error, match=r"is defined by .*cross_b\.o and by .*cross_b_lineinfo\.o"):
        fake_gpu.load([b, cuda_kernel("cross_b_lineinfo.o")])
