"""Kernel metadata as libsk reports it (sk_module_kernel_count, sk_kernel_signature,
sk_kernel_core_type): Module.kernels and Kernel, host and CUDA, and the same records read from
the object's bytes with pyelftools (superkernel.kernel_records, what sk inspect shows)."""
import os
import subprocess
import sys

import pytest

import superkernel as sk
from conftest import compile_kernel

TYPED = r"""
#include <sk_kernel.h>
SK_KERNEL_TYPED(tile, "ptr,u32", SK_CORE_CUBE)
void tile(uint32_t *p, uint32_t n) { if (n) p[0] = n; }
SK_KERNEL_TYPED(pair, "ptr", SK_CORE_MIX_1_2)
void pair(uint32_t *p) { p[0] = 1; }
SK_KERNEL(declared_only, "u32")
"""


@pytest.fixture(scope="module")
def typed_path(tmp_path_factory):
    out = tmp_path_factory.mktemp("typed")
    (out / "typed.c").write_text(TYPED)
    return compile_kernel(str(out / "typed.c"), str(out))


def test_module_kernels_come_from_libsk_and_agree_with_the_object(ops, ops_path):
    with open(ops_path, "rb") as f:
        records = sk.kernel_records(f.read())
    assert records["axpy"] == {"sig": "f32,ptr,ptr,u32", "type": "vector"}
    assert list(ops.kernels.items()) == list(records.items())  # in the section's order too
    assert set(records) == {"axpy", "square_plus_one", "block_sum", "all_types", "nothing",
                            "call_counter", "half_sync", "count_and_stop"}


def test_core_types_and_kernels_declared_without_code(dev, typed_path):
    mod = dev.load(typed_path)
    # declared_only has a record but no function: libsk cannot hand it out, so it is left out.
    assert mod.kernels == {"tile": {"sig": "ptr,u32", "type": "cube"},
                           "pair": {"sig": "ptr", "type": "mix_1_2"}}
    assert "declared_only" in sk.kernel_records(open(typed_path, "rb").read())
    with pytest.raises(sk.NotFound) as e:
        mod.kernel("declared_only")
    assert "declared_only" in str(e.value)
    tile = mod.kernel("tile")
    assert (tile.signature, tile.core_type) == ("ptr,u32", "cube")
    # A signature given is kept as given; the core type is still the metadata's.
    given = mod.kernel("pair", "ptr")
    assert (given.signature, given.core_type) == ("ptr", "mix_1_2")


def test_a_kernel_without_metadata_is_a_vector_kernel(ops):
    plain = ops.kernel("no_metadata_fill", "ptr,u32,u32")
    assert plain.core_type == "vector" and plain.signature == "ptr,u32,u32"
    assert "no_metadata_fill" not in ops.kernels


def test_kernel_records_of_bytes_that_are_not_an_object_are_empty():
    assert sk.kernel_records(b"") == {}
    assert sk.kernel_records(b"\x7fELF\x02\x01" + b"\0" * 10) == {}


def cuda_fixtures():
    """The stand-in CUDA driver and a cubin of the build that made $SK_LIBRARY, or None."""
    library = os.environ.get("SK_LIBRARY")
    if not library:
        return None
    build = os.path.dirname(os.path.dirname(os.path.abspath(library)))
    driver = os.path.join(build, "tests", "cpp", "libsk_fake_cuda_driver.so")
    cubin = os.path.join(build, "tests", "kernels", "cuda", "chain.cubin")
    return (driver, cubin) if os.path.exists(driver) and os.path.exists(cubin) else None


@pytest.mark.skipif(cuda_fixtures() is None, reason="no stand-in CUDA driver in this build")
def test_module_kernels_of_a_cuda_module(tmp_path):
    driver, cubin = cuda_fixtures()
    # In a child: libsk keeps the first CUDA driver it loads for the rest of the process.
    code = ("import superkernel as sk\n"
            f"with sk.Device('cuda:0') as dev, dev.load({cubin!r}) as mod:\n"
            "    print(sorted(mod.kernels.items()))\n"
            "    k = mod.kernel('chain_axpy')\n"
            "    print(k.signature, k.core_type)\n")
    env = dict(os.environ, SK_CUDA_DRIVER_LIBRARY=driver, XDG_CACHE_HOME=str(tmp_path),
               PYTHONPATH=os.path.dirname(os.path.dirname(sk.__file__)))
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    kernels, kernel = r.stdout.splitlines()
    assert kernels == str(sorted({"chain_step": {"sig": "ptr,u32,u32", "type": "vector"},
                                  "chain_axpy": {"sig": "ptr,f32,ptr,u32", "type": "vector"},
                                  "mark_blocks": {"sig": "ptr,u8,i64", "type": "vector"}}.items()))
    assert kernel == "ptr,f32,ptr,u32 vector"
