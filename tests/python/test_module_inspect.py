"""superkernel.inspect_module (sk_module_inspect): what a CUDA device of an architecture reads
from a module, without a device, on the checked-in Triton PTX fixtures; what it says agrees with
loading the module on the stand-in CUDA driver."""
import json
import os
import pathlib

import pytest

import superkernel as sk
from conftest import ROOT

FIXTURES = os.path.join(ROOT, "tests", "kernels", "triton", "ptx")
NAMES = sorted(f[:-5] for f in os.listdir(FIXTURES) if f.endswith(".json"))


def fixture(name):
    with open(os.path.join(FIXTURES, name + ".json")) as f:
        return json.load(f), os.path.join(FIXTURES, name + ".ptx")


@pytest.mark.parametrize("name", NAMES)
def test_each_fixtures_kernel_with_its_launch_facts_or_why_not(fake_gpu, name):
    meta, path = fixture(name)
    d = sk.inspect_module(path)
    assert (d["kind"], d["arch"], d["ptx"]["target"]) == ("ptx", "sm_90", "sm_90a")
    [k] = d["kernels"]
    assert k["name"] == meta["name"]
    mod = fake_gpu.load(path)
    if meta["refused"] or meta["shared"]:  # refused, or its dynamic shared size is not in the PTX
        why = "cannot be fused" if meta["refused"] else "sk_kernel_desc.dynamic_shared"
        assert why in k["error"]
        with pytest.raises(sk.Error):
            mod.kernel(meta["name"])
        if meta["refused"]:
            assert set(k) == {"name", "error"}
            return
        # Nothing else refuses it: taken with the size given, as inspect said with a stand-in.
        assert (k["needs"], k["dynamic_shared_from"]) == (["dynamic_shared"], "stand-in")
        given = mod.kernel(meta["name"], dynamic_shared=meta["shared"])
        assert given.signature == k["signature"]
        return
    assert (k["threads"], k["threads_from"]) == (meta["num_warps"] * 32, ".reqntid")
    assert k["ptx"]["reqntid"] == [meta["num_warps"] * 32, 1, 1]
    # A kernel of a two-dimensional grid reads its grid registers from the step's shape.
    read_x = ("%ctaid.x read from the step's grid shape (__sk_grid)" if len(meta["grid"]) > 1
              else "%ctaid.x read as sk_block_idx()")
    assert read_x in k["ptx"]["rewrites"]
    assert k["signature"] == mod.kernel(meta["name"]).signature


def test_every_source_form_reads_the_same(fake_gpu):
    _, path = fixture("rope")
    with open(path, "rb") as f:
        image = f.read()
    d = sk.inspect_module(path)
    for source in (pathlib.Path(path), image, bytearray(image), memoryview(image), image.decode()):
        assert sk.inspect_module(source) == d, type(source)


def test_what_it_cannot_read_raises_naming_it(fake_gpu, tmp_path):
    _, path = fixture("rmsnorm")
    with pytest.raises(sk.Incompatible) as e:
        sk.inspect_module(path, "cuda:arch=sm_80")
    assert path in str(e.value) and "sm_90a" in str(e.value) and "sm_80" in str(e.value)
    with pytest.raises(sk.BadBinary) as e:  # PTX is no host object
        sk.inspect_module(path, "host")
    assert path in str(e.value) and "ELF" in str(e.value)
    with pytest.raises(sk.InvalidArgument) as e:
        sk.inspect_module(path, "cuda")
    assert "arch=sm_XY" in str(e.value)
    with pytest.raises(sk.FileNotReadable) as e:
        sk.inspect_module(str(tmp_path / "missing.ptx"))
    assert "missing.ptx" in str(e.value)
    with pytest.raises(sk.BadBinary):
        sk.inspect_module(b"")
    with pytest.raises(sk.BadBinary) as e:
        sk.inspect_module(b".version 9.0\n.target sm_90\n.visible .entry k(")
    assert "line " in str(e.value)
    with pytest.raises(TypeError) as e:
        sk.inspect_module(3)
    assert "inspect_module" in str(e.value)
    with pytest.raises(ValueError):
        sk.inspect_module(path, "cuda:arch=sm_90\0")


def test_json_past_the_first_guess_is_read_again_whole(monkeypatch):
    # inspect_module reads once into a buffer of FIRST_GUESS bytes, and again where the JSON is
    # longer: the same object either way.
    from superkernel import module_inspect
    _, path = fixture(NAMES[0])
    whole = sk.inspect_module(path)
    monkeypatch.setattr(module_inspect, "FIRST_GUESS", 16)
    assert sk.inspect_module(path) == whole
