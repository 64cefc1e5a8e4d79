"""Fixtures of the Python binding's tests.

The binding is imported from bindings/python (or from wherever PYTHONPATH puts it: the install
check imports an installed copy). libsk comes from $SK_LIBRARY, which scripts/test sets to the
library built in the same run. Kernels are compiled here, with cc -c, as a user would. Every
super kernel a test finalizes has its explain JSON checked against include/sk_explain.schema.json.
"""
import os
import subprocess
import sys

import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
if not any(os.path.isdir(os.path.join(p, "superkernel")) for p in sys.path if p):
    sys.path.insert(0, os.path.join(ROOT, "bindings", "python"))

import superkernel as sk  # noqa: E402

sys.path.insert(0, os.path.join(ROOT, "tests", "schema"))
import explain_schema  # noqa: E402


@pytest.fixture(scope="session", autouse=True)
def explain_matches_the_schema():
    finalize = sk.Scope.finalize

    def finalize_and_validate(scope):
        fused = finalize(scope)
        explain_schema.validate(fused.explain(), f"the explain JSON of super kernel {scope.name!r}")
        return fused

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(sk.Scope, "finalize", finalize_and_validate)
        yield


def compile_kernel(source, out_dir):
    obj = os.path.join(out_dir, os.path.splitext(os.path.basename(source))[0] + ".o")
    cc = os.environ.get("CC", "cc")
    subprocess.run([cc, "-O2", "-fPIE", "-g0", "-std=gnu11", "-Wall", "-Werror",
                    "-I", os.path.join(ROOT, "include"), "-c", source, "-o", obj], check=True)
    return obj


@pytest.fixture(scope="session")
def kernel_dir(tmp_path_factory):
    out = str(tmp_path_factory.mktemp("kernels"))
    compile_kernel(os.path.join(ROOT, "tests", "python", "kernels", "py_ops.c"), out)
    compile_kernel(os.path.join(ROOT, "examples", "quickstart_kernel.c"), out)
    # A symbol that is not UTF-8 (bytes ff fe), shared with the C tests.
    compile_kernel(os.path.join(ROOT, "tests", "kernels", "names_not_utf8.c"), out)
    return out


@pytest.fixture(scope="session")
def ops_path(kernel_dir):
    return os.path.join(kernel_dir, "py_ops.o")


@pytest.fixture
def dev():
    with sk.Device("host:cores=2,timeout_ms=5000") as d:
        yield d


@pytest.fixture
def ops(dev, ops_path):
    return dev.load(ops_path)


def cuda_kernel(name):
    """A CUDA test kernel of the build that made the library (tests/kernels/cuda)."""
    build = os.path.dirname(os.path.dirname(os.path.abspath(sk.library_path())))
    path = os.path.join(build, "tests", "kernels", "cuda", name)
    if not os.path.exists(path):
        pytest.skip(f"no {path} (the CUDA tests were not built)")
    return path


@pytest.fixture
def fake_gpu(monkeypatch, tmp_path):
    """cuda:0 on the stand-in driver the C++ tests build (no GPU needed): its "device memory"
    is host memory, so copies through it can be checked."""
    build = os.path.dirname(os.path.dirname(os.path.abspath(sk.library_path())))
    driver = os.path.join(build, "tests", "cpp", "libsk_fake_cuda_driver.so")
    if not os.path.exists(driver):
        pytest.skip(f"no stand-in CUDA driver at {driver} (the CUDA tests were not built)")
    monkeypatch.setenv("SK_CUDA_DRIVER_LIBRARY", driver)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))  # super kernels linked here stay here
    try:
        gpu = sk.Device("cuda:0")
    except sk.Error as e:
        pytest.skip(f"cuda:0 does not open on the stand-in driver: {e}")
    with gpu:
        yield gpu
