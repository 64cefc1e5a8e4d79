"""Kernel metadata as libsk reports it (sk_module_kernel_count, sk_kernel_signature,
sk_kernel_core_type): Module.kernels and Kernel, host and CUDA, and the same records read from
the object's bytes by libsk without loading it (superkernel.kernel_records, sk_module_inspect:
what sk inspect shows)."""
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


def test_kernel_records_of_bytes_that_are_not_an_object_raise_naming_them():
    with pytest.raises(sk.BadBinary, match="empty"):
        sk.kernel_records(b"")
    with pytest.raises(sk.BadBinary) as e:
        sk.kernel_records(b"\x7fELF\x02\x01" + b"\0" * 10, "short.o")
    assert "short.o" in str(e.value) and "16 bytes" in str(e.value)


# Records sk_kernel.h does not write, each of which libsk's parser refuses: a reader that skipped
# them would show an object sk_module_load refuses as one with fewer kernels.
MALFORMED_RECORDS = {"sk1;sig=ptr": "names no kernel",
                     "sk2;kernel=later;sig=ptr": "not an sk1 record",
                     "sk1;kernel=bad_type;sig=ptr;type=warp9": "unknown core type 'warp9'"}


@pytest.mark.parametrize("record", sorted(MALFORMED_RECORDS))
def test_a_record_libsk_refuses_is_reported_not_skipped(dev, tmp_path, record):
    (tmp_path / "bad.c").write_text(
        "#include <sk_kernel.h>\n"
        "SK_KERNEL(fine, \"ptr\")\n"
        "void fine(int *p) { *p = 1; }\n"
        f'__attribute__((section(".sk.kernels"), used)) static const char rec[] = "{record}";\n')
    path = compile_kernel(str(tmp_path / "bad.c"), str(tmp_path))
    image = open(path, "rb").read()
    with pytest.raises(sk.BadBinary) as loaded:
        dev.load(path)
    with pytest.raises(sk.BadBinary) as read:
        sk.kernel_records(image, "bad.o")
    assert MALFORMED_RECORDS[record] in str(read.value) and "bad.o" in str(read.value)
    # The same refusal as sk_module_load's, of the same bytes under another name.
    label = f"<memory image of {len(image)} bytes>"
    assert loaded.value.message.replace(path, label) == read.value.message


def test_kernel_records_of_an_archive_are_its_members(tmp_path, ops_path, typed_path):
    archive = tmp_path / "libboth.a"
    subprocess.run([os.environ.get("AR", "ar"), "rcs", str(archive), ops_path, typed_path], check=True)
    members = [sk.kernel_records(open(p, "rb").read()) for p in (ops_path, typed_path)]
    assert sk.kernel_records(archive.read_bytes()) == {**members[0], **members[1]}
    d = sk.inspect_module(str(archive), "host")
    assert [m["name"] for m in d["members"]] == [os.path.basename(ops_path), os.path.basename(typed_path)]
    assert d["members"][1]["module"].endswith(f"({os.path.basename(typed_path)})")


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
