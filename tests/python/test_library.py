"""Loading libsk: lookup order, version, status names, exceptions carrying sk_last_error()."""
import os
import re
import shutil
import struct
import subprocess
import sys

import pytest

import superkernel as sk
from conftest import ROOT


def run_python(code, env_update, cwd):
    env = {k: v for k, v in os.environ.items() if k not in ("SK_LIBRARY", "PYTHONPATH")}
    env.update(env_update)
    return subprocess.run([sys.executable, "-c", code], env=env, cwd=cwd, capture_output=True,
                          text=True)


def test_version_matches_header():
    header = open(os.path.join(ROOT, "include", "sk.h")).read()
    major = int(header.split("#define SK_VERSION_MAJOR ")[1].split()[0])
    minor = int(header.split("#define SK_VERSION_MINOR ")[1].split()[0])
    assert sk.version()[:2] == (major, minor)
    assert sk.BINDING_VERSION[:2] == (major, minor)


def test_version_string_spells_the_version():
    assert sk.version_string() == ".".join(map(str, sk.version()))


def test_status_names():
    assert sk.status_name(0) == "SK_OK"
    assert sk.status_name(8) == "SK_ERR_HANG"
    assert sk.status_name(sk.KernelError.status) == "SK_ERR_KERNEL"
    assert sk.status_name(1234) == "SK_ERR_UNKNOWN"


def test_sk_library_that_does_not_exist_fails_the_first_use(tmp_path):
    # The import succeeds (so that `sk` can report it on one line); the first use raises.
    package = os.path.dirname(os.path.dirname(sk.__file__))
    r = run_python("import superkernel\nprint('imported', flush=True)\nsuperkernel.Device()",
                   {"SK_LIBRARY": str(tmp_path / "nope.so"), "PYTHONPATH": package},
                   str(tmp_path))
    assert r.returncode != 0
    assert r.stdout == "imported\n"
    assert "LibraryNotFound" in r.stderr and "nope.so" in r.stderr


def test_library_next_to_the_package_is_found(tmp_path):
    # A copy of the package with libsk.so.0 beside it, SK_LIBRARY unset: that copy is used.
    shutil.copytree(os.path.dirname(sk.__file__), tmp_path / "superkernel",
                    ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(sk.library_path(), tmp_path / "superkernel" / "libsk.so.0")
    r = run_python("import superkernel; print(superkernel.library_path())",
                   {"PYTHONPATH": str(tmp_path)}, str(tmp_path))
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == str(tmp_path / "superkernel" / "libsk.so.0")


def test_every_sk_h_function_is_bound():
    header = open(os.path.join(ROOT, "include", "sk.h")).read()
    declared = set(re.findall(r"SK_API[^;(]*?\b(sk_\w+)\s*\(", header))
    from superkernel._lib import PROTOTYPES
    assert declared and declared <= set(PROTOTYPES), declared - set(PROTOTYPES)


def test_device_cores_follow_the_spec_and_the_affinity_mask():
    with sk.Device("host:cores=3,pin=0") as three:
        assert three.cores == 3
    with sk.Device("host") as default:
        assert 1 <= default.cores <= len(os.sched_getaffinity(0))


def test_bad_device_spec_raises_invalid_argument_naming_the_key():
    with pytest.raises(sk.InvalidArgument) as e:
        sk.Device("host:bogus_key=1")
    assert "bogus_key" in str(e.value)
    assert e.value.status == 1 and e.value.status_name == "SK_ERR_INVALID_ARGUMENT"
    assert isinstance(e.value, ValueError)


def test_bad_binary(dev):
    with pytest.raises(sk.BadBinary) as e:
        # An x86-64 ET_REL header whose section table lies far past the end of the bytes.
        header = b"\x7fELF\x02\x01\x01" + bytes(9) + struct.pack(
            "<HHIQQQIHHHHHH", 1, 62, 1, 0, 0, 1 << 40, 0, 64, 0, 0, 64, 5, 1)
        dev.load(header)
    assert e.value.status == 2 and e.value.message


def test_missing_kernel_is_not_found(ops):
    with pytest.raises(sk.NotFound) as e:
        ops.kernel("no_such_kernel")
    assert "no_such_kernel" in str(e.value)


def test_signature_disagreeing_with_metadata_is_incompatible(ops):
    with pytest.raises(sk.Incompatible):
        ops.kernel("axpy", signature="ptr,ptr")


def test_unknown_scope_option(dev):
    with pytest.raises(sk.InvalidArgument) as e:
        dev.scope("s", "early_start=1")
    assert "early_start" in str(e.value)


def test_empty_scope_finalize_is_state_error(dev):
    scope = dev.scope("empty")
    with pytest.raises(sk.StateError):
        scope.finalize()
    assert scope.closed  # finalize consumes the scope even when it fails


def test_closed_objects_raise_state_error(dev, ops):
    k = ops.kernel("nothing")
    with dev.scope("s") as scope:
        scope.add(k, 1)
    fused = scope.superkernel
    fused.close()
    fused.close()  # idempotent
    with pytest.raises(sk.StateError):
        fused.launch()
    with pytest.raises(sk.StateError):
        scope.add(k, 1)


def test_version_mismatch_is_refused(monkeypatch):
    # A binding written for another major version must refuse the library, naming both.
    from superkernel import _lib
    monkeypatch.setattr(_lib, "BINDING_VERSION", (sk.version()[0] + 1, 0, 0))
    with pytest.raises(sk.VersionMismatch) as e:
        _lib.Library()
    assert sk.library_path() in str(e.value) and isinstance(e.value, ImportError)
