"""`sk` fed hostile input: devices, pipes, /proc files, directories, truncated and corrupted ELF
objects, malformed scope files. Each must end in exit 3 (bad input) with one line on stderr
naming the culprit, without reading an endless file to its end and without a traceback."""
import json
import os
import struct
import subprocess
import threading

import pytest

from test_cli import CHAIN, ROOT, ops, run_sk, scope_file  # noqa: F401 (ops: a fixture)

EXIT_USAGE, EXIT_INPUT = 2, 3


def refused(r, *culprits, code=EXIT_INPUT):
    """Asserts exit `code` and one line on stderr naming every culprit."""
    assert r.returncode == code, (r.returncode, r.stdout, r.stderr)
    assert "Traceback" not in r.stderr, r.stderr
    lines = r.stderr.splitlines()
    assert len(lines) == 1, r.stderr
    for c in culprits:
        assert str(c) in lines[0], (c, r.stderr)
    return lines[0]


def test_misuse_inspect_special_files(tmp_path):
    # /dev/zero is endless: reading it to the end before a check would never finish.
    refused(run_sk(["inspect", "/dev/zero"]), "/dev/zero", "not an ELF")
    refused(run_sk(["inspect", "/proc/self/status"]), "/proc/self/status", "not an ELF")
    refused(run_sk(["inspect", tmp_path]), str(tmp_path), "directory")
    refused(run_sk(["inspect", tmp_path / "missing.o"]), "missing.o", "No such file")
    refused(run_sk(["inspect", "--load", "host", "/dev/zero"]), "/dev/zero", "not an ELF")
    huge = tmp_path / "huge.o"
    with open(huge, "wb") as f:  # sparse: 1 GiB that takes no disk, refused before a read
        f.write(b"\x7fELF")
        f.truncate(1 << 30)
    refused(run_sk(["inspect", huge]), "huge.o", "smaller than")


def feed_fifo(path, data):
    """A FIFO at path whose writer (a thread) writes data and closes it."""
    os.mkfifo(path)

    def write():
        try:
            with open(path, "wb") as f:
                f.write(data)
        except BrokenPipeError:  # the reader stopped early, as it should for some inputs
            pass
    t = threading.Thread(target=write, daemon=True)
    t.start()
    return t


def test_misuse_inspect_pipes(tmp_path, ops):
    image = ops.read_bytes()
    feed_fifo(tmp_path / "object", image)
    # A pipe is read once: the bytes read for inspection are what libsk loads.
    r = run_sk(["inspect", "--load", "host", tmp_path / "object"])
    assert r.returncode == 0, r.stderr
    assert "axpy(f32,ptr,ptr,u32)" in r.stdout and "loads and links" in r.stdout
    feed_fifo(tmp_path / "empty", b"")
    refused(run_sk(["inspect", tmp_path / "empty"]), "empty", "file is empty")
    feed_fifo(tmp_path / "text", b"hello\n" * 100000)
    refused(run_sk(["inspect", tmp_path / "text"]), "text", "not an ELF")


def with_section_size(image, name, size):
    """image with section `name`'s sh_size set to size (ELF64 little-endian, as cc -c writes)."""
    b = bytearray(image)
    shoff, = struct.unpack_from("<Q", b, 0x28)
    shnum, shstrndx = struct.unpack_from("<HH", b, 0x3C)
    names_off, = struct.unpack_from("<Q", b, shoff + shstrndx * 64 + 24)
    for i in range(shnum):
        at = shoff + i * 64
        start = names_off + struct.unpack_from("<I", b, at)[0]
        if bytes(b[start:b.index(b"\0", start)]) == name:
            struct.pack_into("<Q", b, at + 32, size)
            return bytes(b)
    raise AssertionError(f"no section {name!r}")


def test_misuse_inspect_corrupted_objects(tmp_path, ops):
    image = ops.read_bytes()
    cases = {
        "header.o": (image[:40], ["header.o", "truncated ELF header"]),
        "magic.o": (image[:3], ["magic.o", "not an ELF"]),
        "table.o": (image[:len(image) - 100], ["table.o", "section table"]),
        "rela.o": (with_section_size(image, b".rela.text", 1 << 28),
                   ["rela.o", ".rela.text", "past the end"]),
        "ragged.o": (with_section_size(image, b".rela.text", 24 * 3 + 5),
                     ["ragged.o", ".rela.text", "multiple of its entry size"]),
        "symtab.o": (with_section_size(image, b".symtab", 1 << 40),
                     ["symtab.o", ".symtab", "past the end"]),
        "class.o": (image[:4] + b"\x07" + image[5:], ["class.o", "bad ELF class"]),
    }
    for name, (data, culprits) in cases.items():
        (tmp_path / name).write_bytes(data)
        refused(run_sk(["inspect", tmp_path / name]), *culprits)
        refused(run_sk(["inspect", "--json", tmp_path / name]), *culprits)


def test_misuse_inspect_malformed_record_is_libsks_refusal(tmp_path):
    # A record libsk's parser refuses (sk_module_load fails on the object): sk inspect says so,
    # naming the file and the record, instead of listing the kernels it could read.
    (tmp_path / "bad.c").write_text(
        "#include <sk_kernel.h>\n"
        "SK_KERNEL(fine, \"ptr\")\n"
        "void fine(int *p) { *p = 1; }\n"
        '__attribute__((section(".sk.kernels"), used)) static const char rec[] = "sk1;sig=u32";\n')
    obj = tmp_path / "bad.o"
    subprocess.run([os.environ.get("CC", "cc"), "-c", "-I", os.path.join(ROOT, "include"),
                    str(tmp_path / "bad.c"), "-o", str(obj)], check=True)
    for args in (["inspect", obj], ["inspect", "--json", obj]):
        refused(run_sk(args), obj, "SK_ERR_BAD_BINARY", '"sk1;sig=u32" names no kernel', code=4)


def scope_with(tmp_path, ops, **changes):
    """A valid scope file (the CHAIN of test_cli) with top-level keys replaced."""
    (tmp_path / "py_ops.o").write_bytes(ops.read_bytes())
    path = scope_file(tmp_path, CHAIN)
    doc = json.loads(path.read_text())
    doc.update(changes)
    path.write_text(json.dumps(doc))
    return path


def buffer_with(tmp_path, ops, **fields):
    buffers = {"x": {"type": "f32", "count": 1000}, "y": {"type": "f32", "count": 1000},
               "partials": {"type": "f32", "count": 2}, "sum": {"type": "f32", "count": 1}}
    buffers["x"].update(fields)
    return scope_with(tmp_path, ops, buffers=buffers)


def kernel_with(tmp_path, ops, **fields):
    kernels = [dict(k) for k in CHAIN]
    kernels[1].update(fields)
    return scope_with(tmp_path, ops, kernels=kernels)


@pytest.mark.parametrize("command", ["explain", "run", "trace"])
def test_misuse_scope_files(tmp_path, ops, command):
    def check(path, *culprits):
        refused(run_sk([command, path]), str(path), *culprits), path.read_text()

    check(scope_with(tmp_path, ops, buffers=[]), "buffers", "must be an object")
    check(scope_with(tmp_path, ops, device=5), "device", "must be a string")
    check(scope_with(tmp_path, ops, device="host\0cores=1"), "device", "NUL")
    check(scope_with(tmp_path, ops, objects={"ops": 7}), "objects.ops", "must be a string")
    check(scope_with(tmp_path, ops, objects={"ops": "missing.o"}), "objects.ops", "missing.o")
    check(scope_with(tmp_path, ops, compare=5), "compare", "list")
    check(scope_with(tmp_path, ops, repeat=True), "repeat", "integer")
    check(scope_with(tmp_path, ops, options={"early-start": [1]}), "options.early-start")
    check(buffer_with(tmp_path, ops, count=2 ** 62), "buffers.x", "count")
    check(buffer_with(tmp_path, ops, count=True), "buffers.x", "count")
    check(buffer_with(tmp_path, ops, count=4, fill=[1, 2, "3", 4]), "buffers.x.fill[2]")
    check(buffer_with(tmp_path, ops, fill=1e300), "buffers.x.fill", "does not fit f32")
    check(buffer_with(tmp_path, ops, type="u8", fill="iota"), "buffers.x.fill", "u8")
    check(buffer_with(tmp_path, ops, fill="random", range=5), "buffers.x.range")
    check(buffer_with(tmp_path, ops, type="u32", fill="random"), "buffers.x.range", "u32")
    check(kernel_with(tmp_path, ops, block_dim=2 ** 32 + 2), "kernels[1]", "block_dim")
    check(kernel_with(tmp_path, ops, block_dim=True), "kernels[1]", "block_dim")
    check(kernel_with(tmp_path, ops, stream=2 ** 32), "kernels[1]", "stream")
    check(kernel_with(tmp_path, ops, name=3), "kernels[1]", "name")
    check(kernel_with(tmp_path, ops, kernel="square\0plus"), "kernels[1]", "NUL")
    check(kernel_with(tmp_path, ops, args=["@y", 2 ** 32]), "kernels[1].args", "u32")
    check(kernel_with(tmp_path, ops, args=["@y", 1.5]), "kernels[1].args", "u32")
    check(kernel_with(tmp_path, ops, args=["@y"]), "kernels[1].args", "takes 2 arguments")
    check(kernel_with(tmp_path, ops, signature="ptr,u33"), "kernels[1]", "u33")
    # A number where a pointer goes would be an address the kernel writes to.
    for address in (12345, 0, -1, 0.5, 2 ** 70):
        check(kernel_with(tmp_path, ops, args=[address, 1000]), "kernels[1].args[0]",
              "square_plus_one", "argument 0", "ptr", "@buffer")
    f32 = [dict(k) for k in CHAIN]
    f32[0]["args"] = [1e300, "@x", "@y", 1000]
    check(scope_with(tmp_path, ops, kernels=f32), "kernels[0].args", "does not fit f32")


@pytest.mark.parametrize("command", ["explain", "run"])
def test_misuse_scope_file_contents(tmp_path, command):
    def check(name, data, *culprits):
        path = tmp_path / name
        path.write_bytes(data)
        refused(run_sk([command, path]), name, *culprits)

    check("nested.json", b"[" * 100000 + b"]" * 100000, "nested too deeply")
    check("latin1.json", b'{"name": "caf\xe9"}', "not UTF-8")
    check("broken.json", b'{"name": ', "not valid JSON")
    check("empty.json", b"", "file is empty")
    check("digits.json", b'{"repeat": ' + b"9" * 5000 + b"}", "not valid JSON")
    refused(run_sk([command, tmp_path]), str(tmp_path), "directory")
    refused(run_sk([command, tmp_path / "missing.json"]), "missing.json", "No such file")
    refused(run_sk([command, "/proc/self/status"]), "/proc/self/status", "not valid JSON")
    refused(run_sk([command, "/dev/zero"]), "/dev/zero", "larger than")
    feed_fifo(tmp_path / "fifo", b'{"kernels": 3}')
    refused(run_sk([command, tmp_path / "fifo"]), "fifo", "objects")


@pytest.mark.parametrize("command", ["explain", "run"])
def test_misuse_loose_json(tmp_path, ops, command):
    """Numbers JSON has no C value for (1e400, NaN, Infinity) and keys given twice, which
    Python's json would take silently (as inf, nan, the last value), are refused by field."""
    def check(text, *culprits):
        path = tmp_path / "loose.json"
        path.write_text(text)
        refused(run_sk([command, path]), "loose.json", *culprits)

    kernels = [dict(k) for k in CHAIN]
    kernels[0]["args"] = ["A0", "@x", "@y", 1000]
    text = scope_with(tmp_path, ops, kernels=kernels,
                      buffers={"x": {"type": "f64", "count": 1000, "fill": "FILL"},
                               "y": {"type": "f32", "count": 1000}, "partials": {"count": 2},
                               "sum": {"count": 1}}).read_text()
    ok = text.replace('"A0"', "0.5").replace('"FILL"', "1")
    for literal in ("1e400", "-1e400", "NaN", "Infinity", "-Infinity", "1E+309"):
        check(ok.replace("0.5", literal, 1), "kernels[0].args[0]", literal, "finite")
        check(text.replace('"A0"', "0.5").replace('"FILL"', literal), "buffers.x.fill", literal)
    check(ok.replace("{", '{"repeat": 5, "repeat": 6, ', 1), "'repeat'", "more than once")
    check(ok.replace('"name": "axpy.0"', '"name": "axpy.0", "name": "axpy.9"'), "kernels[0]",
          "'name'", "more than once")
    check(ok.replace('"count": 2', '"count": 2, "count": 3'), "buffers.partials", "'count'")
    (tmp_path / "ok.json").write_text(ok)  # without them the file is fine
    assert run_sk([command, tmp_path / "ok.json"]).returncode == 0


def test_misuse_names_not_utf8(tmp_path):
    """An object whose symbol is not UTF-8 (bytes ff fe): sk shows it as libsk does, with \\xNN,
    a scope file names it so, and the explain JSON sk prints stays JSON."""
    obj = tmp_path / "names.o"
    subprocess.run([os.environ.get("CC", "cc"), "-O2", "-fPIE", "-g0", "-std=gnu11",
                    "-I", os.path.join(ROOT, "include"), "-c",
                    os.path.join(ROOT, "tests", "kernels", "names_not_utf8.c"), "-o", str(obj)],
                   check=True)
    symbol = "scale_\\xff\\xfe"
    r = run_sk(["inspect", obj])
    assert r.returncode == 0 and symbol in r.stdout, r.stdout + r.stderr
    r = run_sk(["inspect", "--load", "host", "--json", obj])
    assert r.returncode == 0, r.stderr
    assert [k["name"] for k in json.loads(r.stdout)["kernels"]] == [symbol]
    doc = {"device": "host:cores=2", "name": "s\u00e9\n", "objects": {"o": "names.o"},
           "buffers": {"x": {"type": "f32", "count": 100, "fill": "iota"}},
           "kernels": [{"object": "o", "kernel": symbol, "block_dim": 2, "args": ["@x", 100]},
                       {"object": "o", "kernel": symbol, "block_dim": 1, "args": ["@x", 100]}]}
    (tmp_path / "names.json").write_text(json.dumps(doc))
    r = run_sk(["explain", "--json", tmp_path / "names.json"])
    assert r.returncode == 0, r.stderr
    plan = json.loads(r.stdout)
    assert [s["symbol"] for s in plan["steps"]] == [symbol] * 2 and plan["name"] == "s\u00e9\n"
    r = run_sk(["run", tmp_path / "names.json"])
    assert r.returncode == 0 and "bit-identical" in r.stdout, r.stdout + r.stderr
    doc["kernels"][0]["kernel"] = "scale_\n"
    (tmp_path / "names.json").write_text(json.dumps(doc))
    refused(run_sk(["run", tmp_path / "names.json"]), "scale_\\n", code=4)


def test_misuse_library_not_found(tmp_path, ops):
    env = {"SK_LIBRARY": str(tmp_path / "nonexistent.so")}
    refused(run_sk(["--version"], env), "nonexistent.so")
    refused(run_sk(["devices"], env), "nonexistent.so")
    refused(run_sk(["inspect", "--load", "host", ops], env), "nonexistent.so")
    # An object's kernels are libsk's reading of its records.
    refused(run_sk(["inspect", ops], env), "nonexistent.so")


def test_misuse_usage():
    # argparse's own message: a usage line and the error.
    r = run_sk(["inspect"])
    assert r.returncode == EXIT_USAGE and "Traceback" not in r.stderr
    r = run_sk(["frobnicate"])
    assert r.returncode == EXIT_USAGE and "Traceback" not in r.stderr
