"""Device.load with a list: objects and an `ar` archive linked as one module, from paths and
from bytes, and the errors that name the object and the parameter."""
import os
import subprocess

import numpy as np
import pytest

import superkernel as sk
from conftest import ROOT, compile_kernel

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
