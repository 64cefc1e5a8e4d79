"""The `sk` command line: outputs and exit codes (0 ok, 1 fused != unfused, 2 usage, 3 bad
input, 4 libsk error), errors on stderr naming the culprit. $SK_CLI is the launcher to test.
Every scope a test explains, runs or traces has its explain JSON (`sk explain --json`) checked
against include/sk_explain.schema.json."""
import json
import os
import re
import subprocess
import sys
import threading

import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
SK = os.environ.get("SK_CLI", os.path.join(ROOT, "build", "tools", "sk"))
sys.path.insert(0, os.path.join(ROOT, "tests", "schema"))
import explain_schema  # noqa: E402


def run_sk(args, env=None):
    return subprocess.run([SK, *map(str, args)], capture_output=True, text=True,
                          env=dict(os.environ, **(env or {})), timeout=240)


def sk(*args, env=None):
    r = run_sk(args, env)
    if args and args[0] in ("explain", "run", "trace") and r.returncode in (0, 1):
        validate_explain(args, env, r.stdout if "--json" in args and args[0] == "explain" else None)
    return r


def validate_explain(args, env, explained):
    """Validates the explain JSON of the scope that `sk args...` built (none for --help):
    `explained`, or what `sk explain --json` prints given the options of `args` that shape it."""
    cmd, words = ["explain", "--json"], iter(map(str, args[1:]))
    for word in words:
        if word in ("-h", "--help"):
            return
        if word in ("--device", "--objects-dir"):
            cmd += [word, next(words)]
        elif word in ("--repeat", "--warmup", "-o", "--output"):
            next(words)
        elif not word.startswith("-"):
            cmd.append(word)
    if explained is None:
        r = run_sk(cmd, env)
        assert r.returncode == 0, r.stderr
        explained = r.stdout
    explain_schema.validate(json.loads(explained), f"sk {' '.join(map(str, args))}: explain JSON")


@pytest.fixture(scope="session")
def ops(tmp_path_factory):
    out = tmp_path_factory.mktemp("cli")
    obj = out / "py_ops.o"
    subprocess.run([os.environ.get("CC", "cc"), "-O2", "-fPIE", "-g0", "-std=gnu11",
                    "-I", os.path.join(ROOT, "include"), "-c",
                    os.path.join(ROOT, "tests", "python", "kernels", "py_ops.c"), "-o", str(obj)],
                   check=True)
    return obj


def scope_file(directory, kernels, buffers=None, **extra):
    doc = {"device": "host:cores=2", "name": "chain", "objects": {"ops": "py_ops.o"},
           "buffers": buffers or {
               "x": {"type": "f32", "count": 1000, "fill": "random", "seed": 3},
               "y": {"type": "f32", "count": 1000, "fill": "iota"},
               "partials": {"type": "f32", "count": 2}, "sum": {"type": "f32", "count": 1}},
           "kernels": kernels, **extra}
    path = directory / f"scope{len(list(directory.glob('scope*.json')))}.json"
    path.write_text(json.dumps(doc))
    return path


CHAIN = [{"object": "ops", "kernel": "axpy", "block_dim": 2, "args": [0.5, "@x", "@y", 1000],
          "name": "axpy.0"},
         {"object": "ops", "kernel": "square_plus_one", "block_dim": 3, "args": ["@y", 1000]},
         {"object": "ops", "kernel": "block_sum", "block_dim": 2,
          "args": ["@y", "@partials", "@sum", 1000], "name": "reduce"},
         {"object": "ops", "kernel": "axpy", "block_dim": 4, "args": [-1.0, "@x", "@y", 1000],
          "name": "axpy.1"}]


# ---- usage -------------------------------------------------------------------------------------
def test_usage_help_on_every_subcommand():
    for cmd in ([], ["inspect"], ["explain"], ["run"], ["trace"], ["bench"], ["devices"]):
        r = sk(*cmd, "--help")
        assert r.returncode == 0, (cmd, r.stderr)
        assert "usage: sk" in r.stdout
    assert "Exit status" in sk("--help").stdout


def test_usage_errors_exit_2():
    r = sk()
    assert r.returncode == 2 and "subcommand" in r.stderr
    r = sk("frobnicate")
    assert r.returncode == 2 and "frobnicate" in r.stderr
    assert sk("inspect").returncode == 2  # missing FILE


def test_usage_version():
    r = sk("--version")
    assert r.returncode == 0 and "libsk 0." in r.stdout


# ---- inspect -----------------------------------------------------------------------------------
def test_inspect_text(ops):
    r = sk("inspect", ops)
    assert r.returncode == 0, r.stderr
    out = r.stdout
    assert "axpy(f32,ptr,ptr,u32)  core type vector" in out
    assert "block_sum(ptr,ptr,ptr,u32)" in out
    assert "content hash (xxh3-128): " in out
    assert ".sk.kernels" in out and ".rela.text" in out
    assert "no_metadata_fill" in out  # a global function without a record is listed as such


def test_inspect_json_device_api_per_kernel(ops):
    r = sk("inspect", "--json", "--load", "host", ops)
    assert r.returncode == 0, r.stderr
    d = json.loads(r.stdout)
    kernels = {k["name"]: k for k in d["kernels"]}
    assert set(kernels) == {"axpy", "square_plus_one", "block_sum", "all_types", "nothing",
                            "call_counter", "half_sync", "count_and_stop"}
    assert "sk_sync_all" in kernels["block_sum"]["device_api"]
    assert "sk_sync_all" not in kernels["axpy"]["device_api"]
    assert kernels["all_types"]["signature"] == "i8,u8,i16,u16,i32,u32,i64,u64,f32,f64,ptr"
    assert "sk_sync_all" in d["undefined"]["device_api"]
    assert len(d["hash"]["value"]) == 32 and d["machine"] in ("x86-64", "AArch64")
    assert d["relocations"][".text"]
    assert "loads and links" in d["load"]["result"]


def test_inspect_static_reading_agrees_with_libsk(ops):
    # Without --load, sk inspect takes the device-API use from libsk's reading of the object
    # (sk_module_inspect, nothing linked); with --load from libsk's plan. Both must say the same.
    static = json.loads(sk("inspect", "--json", ops).stdout)
    loaded = json.loads(sk("inspect", "--json", "--load", "host", ops).stdout)
    assert static["device_api_source"] != loaded["device_api_source"]
    by_name = {k["name"]: k["device_api"] for k in loaded["kernels"]}
    for k in static["kernels"]:
        assert k["device_api"] == by_name[k["name"]], k["name"]


def test_inspect_device_api_through_a_call_without_relocation(tmp_path):
    # The assembler resolves a call to a static function of the same section itself: no
    # relocation says the kernel reaches sk_sync_all, its decoded code does (as libsk reads it).
    (tmp_path / "helper.c").write_text(
        "#include <sk_kernel.h>\n"
        "static __attribute__((noinline)) void wait_all(void) { sk_sync_all(); }\n"
        "SK_KERNEL(via_helper, \"\")\n"
        "void via_helper(void) { wait_all(); }\n")
    obj = tmp_path / "helper.o"
    subprocess.run([os.environ.get("CC", "cc"), "-O2", "-c", "-I", os.path.join(ROOT, "include"),
                    str(tmp_path / "helper.c"), "-o", str(obj)], check=True)
    static = json.loads(sk("inspect", "--json", obj).stdout)
    loaded = json.loads(sk("inspect", "--json", "--load", "host", obj).stdout)
    assert static["kernels"][0]["device_api"] == loaded["kernels"][0]["device_api"] == ["sk_sync_all"]


def test_inspect_hash_changes_with_content(ops, tmp_path):
    other = tmp_path / "copy.o"
    data = bytearray(ops.read_bytes())
    other.write_bytes(bytes(data))
    h1 = json.loads(sk("inspect", "--json", ops).stdout)["hash"]["value"]
    assert json.loads(sk("inspect", "--json", other).stdout)["hash"]["value"] == h1
    data[-1] ^= 0xFF
    other.write_bytes(bytes(data))
    assert json.loads(sk("inspect", "--json", other).stdout)["hash"]["value"] != h1


def test_inspect_compares_signatures_with_the_debug_information(tmp_path):
    # Built with -g (and -gz), an object's DWARF says what each parameter is: a recorded
    # signature that gives a struct's members instead of the struct is named, parameter and
    # all; agreeing ones say so; a function without metadata gets the signature to give.
    objs = {}
    for name, flags in (("args_misdescribed", ["-g"]), ("args_aggregates", ["-g", "-gz"])):
        objs[name] = tmp_path / (name + ".o")
        subprocess.run([os.environ.get("CC", "cc"), "-O2", "-fPIE", *flags, "-std=gnu11",
                        "-I", os.path.join(ROOT, "include"), "-c",
                        os.path.join(ROOT, "tests", "kernels", name + ".c"), "-o", str(objs[name])],
                       check=True)
    r = sk("inspect", objs["args_misdescribed"])
    assert r.returncode == 0, r.stderr
    assert ("WARNING: signature \"ptr,f32,f32,u32\" disagrees with the debug information: "
            "parameter 1 'p' is {f32,f32} in the debug information, the signature says f32: it is "
            "a struct passed by value, written {f32,f32}, not its members") in r.stdout, r.stdout
    assert 'undescribed (debug information: "ptr,{f32,f32},i16")' in r.stdout
    d = json.loads(sk("inspect", "--json", objs["args_misdescribed"]).stdout)
    assert d["kernels"][0]["debug_info"]["signature"] == "ptr,{f32,f32},u32"
    assert d["debug_info_signatures"] == {"undescribed": "ptr,{f32,f32},i16"}
    d = json.loads(sk("inspect", "--json", objs["args_aggregates"]).stdout)
    for k in d["kernels"]:
        assert k["debug_info"] == {"signature": k["signature"], "mismatches": []}, k
    assert "debug information: the same parameter types" in sk("inspect", objs["args_aggregates"]).stdout


def test_inspect_bad_inputs_exit_3(tmp_path):
    r = sk("inspect", tmp_path / "missing.o")
    assert r.returncode == 3 and "missing.o" in r.stderr
    junk = tmp_path / "junk.o"
    junk.write_bytes(b"hello, not an object" * 4)
    r = sk("inspect", junk)
    assert r.returncode == 3 and "junk.o" in r.stderr and "not an ELF" in r.stderr


def test_inspect_load_failure_exit_4(tmp_path):
    bad = tmp_path / "shared.so"  # a shared object is ELF, but not what libsk loads
    subprocess.run(["cc", "-shared", "-fPIC", "-x", "c", "-", "-o", str(bad)],
                   input="int f(void) { return 1; }\n", text=True, check=True)
    r = sk("inspect", "--load", "host", bad)
    assert r.returncode == 4 and "SK_ERR_" in r.stderr


# ---- explain -----------------------------------------------------------------------------------
def test_explain_prints_the_plan(ops):
    path = scope_file(ops.parent, CHAIN)
    r = sk("explain", path)
    assert r.returncode == 0, r.stderr
    assert "super kernel 'chain'" in r.stdout and "4 sub-kernels" in r.stdout
    lines = [l for l in r.stdout.splitlines() if l.strip().startswith(("0 ", "1 ", "2 ", "3 "))]
    assert [l.split()[1] for l in lines] == ["axpy.0", "square_plus_one", "reduce", "axpy.1"]
    assert "sk_sync_all" in lines[2]
    assert ("execution: central barrier, chain step loop, complete at last release, core 0 run "
            "by the caller, ") in r.stdout
    assert "KiB core stacks; kernels called: 2 direct, 2 register map" in r.stdout  # axpy takes a float
    plan = json.loads(sk("explain", "--json", path).stdout)
    assert [s["block_dim"] for s in plan["steps"]] == [2, 3, 2, 4]
    assert plan["execution"]["barrier"] == "central"


def test_explain_errors_name_the_field(ops):
    bad = [dict(CHAIN[0], args=[0.5, "@nope", "@y", 1000])]
    r = sk("explain", scope_file(ops.parent, bad))
    assert r.returncode == 3 and "kernels[0].args[1]" in r.stderr and "@nope" in r.stderr
    r = sk("explain", scope_file(ops.parent, [dict(CHAIN[0], kernel="missing_kernel")]))
    assert r.returncode == 4 and "missing_kernel" in r.stderr and "SK_ERR_NOT_FOUND" in r.stderr
    r = sk("explain", scope_file(ops.parent, CHAIN, options="bogus-option=1"))
    assert r.returncode == 4 and "bogus-option" in r.stderr
    notjson = ops.parent / "broken.json"
    notjson.write_text("{ not json")
    r = sk("explain", notjson)
    assert r.returncode == 3 and "broken.json" in r.stderr and "JSON" in r.stderr
    r = sk("explain", scope_file(ops.parent, [dict(CHAIN[0], args=[0.5, "@x"])]))
    assert r.returncode == 3 and "takes 4 arguments, 2 given" in r.stderr


# A captured launch takes the symbol as name: the chain without "name" fields, and two
# independent streams (stream 1 left empty: the capture joins it all the same), stream fusion.
UNNAMED_CHAIN = [{k: v for k, v in kernel.items() if k != "name"} for kernel in CHAIN]
STREAMS = [dict(UNNAMED_CHAIN[0], block_dim=1),
           dict(UNNAMED_CHAIN[1], block_dim=1, args=["@z", 1000], stream=2),
           dict(UNNAMED_CHAIN[3], block_dim=1),
           dict(UNNAMED_CHAIN[2], args=["@z", "@partials", "@sum", 1000], stream=2)]
STREAM_BUFFERS = {"x": {"type": "f32", "count": 1000, "fill": "random", "seed": 3},
                  "y": {"type": "f32", "count": 1000, "fill": "iota"},
                  "z": {"type": "f32", "count": 1000, "fill": "random", "seed": 4},
                  "partials": {"type": "f32", "count": 2}, "sum": {"type": "f32", "count": 1}}


def test_explain_capture_equals_the_scope(ops):
    for kernels, options in ((UNNAMED_CHAIN, "early-start=1"), (STREAMS, "stream-fusion=1")):
        path = scope_file(ops.parent, kernels, STREAM_BUFFERS, options=options)
        built = sk("explain", "--json", path)
        captured = sk("explain", "--json", "--capture", path)
        assert built.returncode == 0 and captured.returncode == 0, built.stderr + captured.stderr
        assert json.loads(captured.stdout) == json.loads(built.stdout)
        text = sk("explain", "--capture", path)
        assert text.returncode == 0 and text.stdout == sk("explain", path).stdout
    steps = json.loads(captured.stdout)["steps"]
    assert [s.get("stream", 0) for s in steps] == [0, 2, 0, 2]


def test_explain_capture_refuses_what_a_launch_cannot_say(ops):
    for field, value in (("name", "axpy.0"), ("core_type", "vector"), ("flags", 1)):
        path = scope_file(ops.parent, [UNNAMED_CHAIN[0], dict(UNNAMED_CHAIN[1], **{field: value})])
        r = sk("explain", "--capture", path)
        assert r.returncode == 3, r.stderr
        assert f'kernels[1]: "{field}" cannot be captured' in r.stderr
        assert "Traceback" not in r.stderr and len(r.stderr.splitlines()) == 1
    # Several streams without stream fusion: libsk's refusal, naming the kernel that needs one.
    r = sk("explain", "--capture", scope_file(ops.parent, STREAMS, STREAM_BUFFERS))
    assert r.returncode == 4 and "kernels[1]: stream 2 needs stream 1 joined" in r.stderr
    assert "stream-fusion=1" in r.stderr and "Traceback" not in r.stderr
    many = [dict(STREAMS[0]), dict(STREAMS[1], stream=100)]
    r = sk("explain", "--capture", scope_file(ops.parent, many, STREAM_BUFFERS,
                                              options="stream-fusion=1"))
    assert r.returncode == 4 and "kernels[1]: stream 100 needs stream 64" in r.stderr
    assert "Traceback" not in r.stderr


# Triton's PTX as scope-file objects, on the stand-in CUDA driver (it links for real and runs
# no kernel code): threads and dynamic_shared as sk_kernel_desc takes them, the scratch pointers
# Triton appends as null.
needs_fake_cuda = pytest.mark.skipif(not os.environ.get("SK_FAKE_CUDA_DRIVER"),
                                     reason="no stand-in CUDA driver in this build (CUDA tests not built)")
TRITON_PTX = os.path.join(ROOT, "tests", "kernels", "triton", "ptx")
TRITON_STEP = [
    {"object": "rms", "kernel": "rmsnorm_kernel", "block_dim": 1, "threads": 128, "dynamic_shared": 16,
     "args": ["@x", "@w", "@y", 256, 1e-6, None, None]},
    {"object": "gemv", "kernel": "gemv_kernel", "block_dim": 4, "dynamic_shared": 512,
     "args": ["@m", "@y", "@out", 16, 256, None, None]}]
TRITON_BUFFERS = {"x": {"type": "f32", "count": 256, "fill": "random"},
                  "w": {"type": "f32", "count": 256, "fill": 1}, "y": {"type": "f32", "count": 256},
                  "m": {"type": "f32", "count": 4096, "fill": "random"},
                  "out": {"type": "f32", "count": 16}}


def triton_scope(directory, kernels, device="cuda:0"):
    return scope_file(directory, kernels, TRITON_BUFFERS, device=device, name="triton_step",
                      objects={"rms": os.path.join(TRITON_PTX, "rmsnorm.ptx"),
                               "gemv": os.path.join(TRITON_PTX, "gemv.ptx")})


def fake_cuda_env(tmp_path):
    return {"SK_CUDA_DRIVER_LIBRARY": os.environ["SK_FAKE_CUDA_DRIVER"], "XDG_CACHE_HOME": str(tmp_path)}


@needs_fake_cuda
def test_explain_a_scope_of_triton_ptx_with_its_launch_facts(tmp_path):
    env = fake_cuda_env(tmp_path)
    path = triton_scope(tmp_path, TRITON_STEP)
    r = sk("explain", path, env=env)
    assert r.returncode == 0, r.stderr
    assert "super kernel 'triton_step' on cuda: 2 sub-kernels" in r.stdout
    # The launch facts of each sub-kernel, where they came from, and what loading rewrote.
    assert "  rmsnorm_kernel: 128 threads (from caller), 16 B dynamic shared (from caller);" in r.stdout
    assert "  gemv_kernel: 128 threads (from .reqntid), 512 B dynamic shared (from caller);" in r.stdout
    assert "    %ctaid.x read as sk_block_idx()\n" in r.stdout
    assert "  step loop: 2 block barriers, 1 release(s), 1 acquire fence(s) after 1 relaxed poll(s)," in r.stdout
    plan = json.loads(sk("explain", "--json", path, env=env).stdout)
    assert [(s["name"], s["block_dim"]) for s in plan["steps"]] == [("rmsnorm_kernel", 1), ("gemv_kernel", 4)]
    assert plan["steps"][1]["module"].endswith("gemv.ptx")
    assert plan["cuda_entry"]["dynamic_shared_bytes"] >= 512


@needs_fake_cuda
def test_explain_names_the_field_of_a_triton_kernels_launch_facts(tmp_path):
    env = fake_cuda_env(tmp_path)
    # Without dynamic_shared: libsk's refusal, at the kernel's entry, naming what to give.
    no_shared = [TRITON_STEP[0], {k: v for k, v in TRITON_STEP[1].items() if k != "dynamic_shared"}]
    r = sk("explain", triton_scope(tmp_path, no_shared), env=env)
    assert r.returncode == 4 and "kernels[1]: " in r.stderr and "sk_kernel_desc.dynamic_shared" in r.stderr
    # Threads its .reqntid contradicts.
    r = sk("explain", triton_scope(tmp_path, [dict(TRITON_STEP[0], threads=64)]), env=env)
    assert r.returncode == 4 and "kernels[0]: " in r.stderr and "requires 128 threads per block" in r.stderr
    for field, value in (("threads", 0), ("threads", True), ("dynamic_shared", -1), ("dynamic_shared", 1.5),
                         ("threads", [32, "4"])):
        r = sk("explain", triton_scope(tmp_path, [dict(TRITON_STEP[0], **{field: value})]), env=env)
        name = field + ("[1]" if isinstance(value, list) else "")
        assert r.returncode == 3 and f"kernels[0]: {name} must be an integer" in r.stderr, r.stderr
        assert "Traceback" not in r.stderr and len(r.stderr.splitlines()) == 1
    # cooperative: its blocks run at once, each on a block of its own (SK_KERNEL_DESC_COOPERATIVE).
    plan = json.loads(sk("explain", "--json", triton_scope(tmp_path, [dict(TRITON_STEP[0], cooperative=True)]),
                         env=env).stdout)
    assert plan["steps"][0]["sync_all_scope"] == "own cores"
    r = sk("explain", triton_scope(tmp_path, [dict(TRITON_STEP[0], cooperative="yes")]), env=env)
    assert r.returncode == 3 and "kernels[0]: cooperative must be" in r.stderr, r.stderr
    r = sk("explain", triton_scope(tmp_path, [dict(TRITON_STEP[0], threads=[1, 2, 3, 4])]), env=env)
    assert r.returncode == 3 and "threads as a block has 1 to 3 extents, not 4" in r.stderr, r.stderr
    # A block's shape is .reqntid's (128 x 1 x 1 for this Triton kernel), else refused by libsk.
    r = sk("explain", triton_scope(tmp_path, [dict(TRITON_STEP[0], threads=[128])]), env=env)
    assert r.returncode == 0, r.stderr
    r = sk("explain", triton_scope(tmp_path, [dict(TRITON_STEP[0], threads=[32, 4])]), env=env)
    assert r.returncode == 4 and "requires a block of 128 x 1 x 1 threads (.reqntid), not {32, 4, 1}" in r.stderr
    # The scratch pointers are arguments of the PTX kernel: leaving them out is a count mismatch.
    r = sk("explain", triton_scope(tmp_path, [dict(TRITON_STEP[0], args=TRITON_STEP[0]["args"][:5])]),
           env=env)
    assert r.returncode == 3 and "takes 7 arguments, 5 given" in r.stderr
    # PTX on the host device: libsk's refusal names the file.
    r = sk("explain", triton_scope(tmp_path, TRITON_STEP, device="host"), env=env)
    assert r.returncode == 4 and "rmsnorm.ptx: not an ELF object" in r.stderr, r.stderr
    assert "Traceback" not in r.stderr and len(r.stderr.splitlines()) == 1


@needs_fake_cuda
def test_run_a_scope_of_triton_ptx_fused_and_unfused(tmp_path):
    r = sk("run", "--repeat", 1, triton_scope(tmp_path, TRITON_STEP), env=fake_cuda_env(tmp_path))
    assert r.returncode == 0, r.stderr
    assert "bit-identical" in r.stdout  # the stand-in runs no kernel: both leave the buffers


# A grid's shape as block_dim: explain shows it, the runs (fused, unfused through
# sk_launch_kernel_grid, captured) agree, and a malformed shape is refused naming the field.
def test_run_a_grid_shape_as_block_dim(ops):
    shaped = [dict(UNNAMED_CHAIN[0], block_dim=[2, 2]), dict(UNNAMED_CHAIN[1], block_dim=[3, 1, 1])]
    path = scope_file(ops.parent, shaped, repeat=2)
    plan = json.loads(sk("explain", "--json", path).stdout)
    assert [(s["block_dim"], s["grid"]) for s in plan["steps"]] == [(4, [2, 2, 1]), (3, [3, 1, 1])]
    for how in ((), ("--capture",)):
        r = sk("run", *how, path)
        assert r.returncode == 0 and "bit-identical" in r.stdout, r.stdout + r.stderr
    for bad, message in (([2, 0], "kernels[0]: block_dim[1] must be an integer 1..4294967295"),
                         ([1, 2, 3, 4], "kernels[0]: block_dim as a grid has 1 to 3 extents, not 4"),
                         ([], "kernels[0]: block_dim as a grid has 1 to 3 extents, not 0"),
                         ([65536, 65536], "kernels[0]: block_dim [65536, 65536] makes 4294967296 blocks"),
                         ([2, "2"], "kernels[0]: block_dim[1] must be an integer")):
        r = sk("explain", scope_file(ops.parent, [dict(UNNAMED_CHAIN[0], block_dim=bad)]))
        assert r.returncode == 3 and message in r.stderr, (bad, r.stderr)
        assert "Traceback" not in r.stderr and len(r.stderr.splitlines()) == 1


@needs_fake_cuda
def test_run_a_triton_kernel_of_a_two_dimensional_grid(tmp_path):
    env = fake_cuda_env(tmp_path)
    planes = {"object": "planes", "kernel": "grid2d_kernel", "block_dim": [4, 2],
              "args": ["@x", "@y", 256, None, None]}
    objects = {"planes": os.path.join(TRITON_PTX, "grid2d.ptx")}
    path = scope_file(tmp_path, [planes], TRITON_BUFFERS, device="cuda:0", objects=objects)
    r = sk("explain", path, env=env)
    assert r.returncode == 0 and "%ctaid.y read from the step's grid shape (__sk_grid)" in r.stdout, r.stderr
    r = sk("run", "--repeat", 1, path, env=env)
    assert r.returncode == 0 and "bit-identical" in r.stdout, r.stdout + r.stderr
    flat = scope_file(tmp_path, [dict(planes, block_dim=8)], TRITON_BUFFERS, device="cuda:0", objects=objects)
    r = sk("explain", flat, env=env)
    assert r.returncode == 4 and "kernels[0]: " in r.stderr and "give its grid's shape" in r.stderr, r.stderr
    assert "Traceback" not in r.stderr and len(r.stderr.splitlines()) == 1
    r = sk("run", flat, env=env)
    assert r.returncode == 4 and "kernels[0]: " in r.stderr and "give its grid's shape" in r.stderr, r.stderr


# axpy then square_plus_one, block-local, on the same 2 blocks: the fused run stays
# bit-identical, explain marks the edge, and what cannot be said is refused naming the field.
BLOCK_LOCAL = [dict(UNNAMED_CHAIN[0]), dict(UNNAMED_CHAIN[1], block_dim=2, block_local=True)]


def test_explain_and_run_block_local_kernels(ops):
    path = scope_file(ops.parent, BLOCK_LOCAL, repeat=3)
    r = sk("explain", path)
    assert r.returncode == 0, r.stderr
    lines = [l for l in r.stdout.splitlines() if l.strip().startswith(("0 ", "1 "))]
    assert "block-local" not in lines[0] and "block-local" in lines[1], r.stdout
    plan = json.loads(sk("explain", "--json", path).stdout)
    assert [s.get("edge") for s in plan["steps"]] == [None, "block-local"]
    r = sk("run", path)
    assert r.returncode == 0 and "bit-identical" in r.stdout, r.stdout + r.stderr
    # A capture says it by name, in the scope option.
    by_name = [dict(k) for k in BLOCK_LOCAL]
    del by_name[1]["block_local"]
    named = scope_file(ops.parent, by_name, options="block-local=square_plus_one", repeat=3)
    captured = json.loads(sk("explain", "--json", "--capture", named).stdout)
    assert [s.get("edge") for s in captured["steps"]] == [None, "block-local"]
    r = sk("run", "--capture", named)
    assert r.returncode == 0 and "bit-identical" in r.stdout, r.stdout + r.stderr
    r = sk("explain", "--capture", path)
    assert r.returncode == 3 and 'kernels[1]: "block_local" cannot be captured' in r.stderr
    assert "block-local=LIST" in r.stderr and "Traceback" not in r.stderr
    r = sk("explain", scope_file(ops.parent, [BLOCK_LOCAL[0], dict(BLOCK_LOCAL[1], block_local=1)]))
    assert r.returncode == 3 and "kernels[1]: block_local must be true or false, not 1" in r.stderr
    r = sk("explain", scope_file(ops.parent, [BLOCK_LOCAL[0], dict(BLOCK_LOCAL[1], block_dim=3)]))
    assert r.returncode == 4 and "SK_ERR_INCOMPATIBLE" in r.stderr, r.stderr
    assert "kernel 1 'square_plus_one' is block-local to kernel 0 'axpy'" in r.stderr
    assert "their block counts differ (3 vs 2)" in r.stderr and "Traceback" not in r.stderr


# sk inspect of CUDA modules: libsk's reading for an architecture (sk_module_inspect), no GPU
# needed. The Triton fixtures are in the source tree; nvcc's PTX, cubins and objects in the build
# tree's tests/kernels/cuda ($SK_CUDA_KERNELS).
CUDA_KERNELS = os.environ.get("SK_CUDA_KERNELS")
needs_cuda_kernels = pytest.mark.skipif(not CUDA_KERNELS,
                                        reason="no nvcc-built CUDA kernels in this build")
CUDA_SOURCES = os.path.join(ROOT, "tests", "kernels", "cuda")
# Why libsk refuses each kernel of refuse_global.cu: the construct its message names.
REFUSALS = {"refuse_cluster": "a thread block cluster (.reqnctapercluster)",
            "refuse_child": "does not say its threads per block",
            "refuse_dynamic_parallelism": "dynamic parallelism",
            "refuse_named_barrier": "barrier 15 (bar.sync), which the super kernel's own block barriers use"}


def triton_meta(name):
    with open(os.path.join(TRITON_PTX, name + ".json")) as f:
        return json.load(f)


def one_error_line(r, code, *culprits):
    assert r.returncode == code, (r.returncode, r.stdout, r.stderr)
    assert "Traceback" not in r.stderr and len(r.stderr.splitlines()) == 1, r.stderr
    for c in culprits:
        assert str(c) in r.stderr, (c, r.stderr)


@needs_fake_cuda  # the CUDA backend is built
def test_inspect_triton_ptx_shows_its_launch_facts_and_rewrites():
    rope, rms = (os.path.join(TRITON_PTX, n + ".ptx") for n in ("rope", "rmsnorm"))
    threads = triton_meta("rope")["num_warps"] * 32
    r = sk("inspect", rope, rms)  # each CUDA module on its own
    assert r.returncode == 0, r.stderr
    out = r.stdout
    assert out.startswith(f"{rope}: PTX text, {os.path.getsize(rope)} bytes; for sm_90 libsk reads PTX"), out
    assert "PTX 9.4, .target sm_90a, linked for sm_90a\nmodule rewrites:\n  .version 9.4 lowered to " in out
    rope_text = out[:out.index(rms)]
    assert (f"  rope_kernel(ptr,ptr,ptr,ptr,u32,u32,ptr,ptr)\n    threads: {threads} (from .reqntid)\n"
            "    static shared: 0 bytes\n    dynamic shared: 0 bytes\n") in rope_text
    assert f"    PTX .entry: reqntid {threads},1,1\n" in rope_text
    assert "\n      %ctaid.x read as sk_block_idx()\n" in rope_text
    assert "  rmsnorm_kernel: cannot be taken: " in out
    assert "uses an .extern .shared array" in out and "(sk_kernel_desc.dynamic_shared" in out
    # Nothing else refuses it: the field to give, and its facts with a stand-in for it.
    rms_text = out[out.index("  rmsnorm_kernel: "):]
    assert ("\n    taken once given sk_kernel_desc.dynamic_shared; with stand-ins for them:\n"
            "    signature: ptr,ptr,ptr,u32,f32,ptr,ptr\n") in rms_text, rms_text
    assert "    dynamic shared: 0 bytes (from stand-in)\n" in rms_text
    r = sk("inspect", "--json", rope)
    assert r.returncode == 0, r.stderr
    d = json.loads(r.stdout)
    assert (d["file"], d["file_kind"], d["kind"], d["arch"]) == (rope, "PTX text", "ptx", "sm_90")
    assert (d["ptx"]["version"], d["ptx"]["target"]) == ("9.4", "sm_90a")
    assert d["ptx"]["rewrites"][0].startswith(".version 9.4 lowered to ")
    [k] = d["kernels"]
    assert (k["name"], k["threads"], k["threads_from"]) == ("rope_kernel", threads, ".reqntid")
    assert (k["static_shared_bytes"], k["dynamic_shared_bytes"]) == (0, 0)  # Triton's is global_smem, dynamic
    assert k["ptx"]["reqntid"] == [threads, 1, 1] and "%ctaid.x read as sk_block_idx()" in k["ptx"]["rewrites"]
    [k] = json.loads(sk("inspect", "--json", rms).stdout)["kernels"]
    assert k["name"] == "rmsnorm_kernel" and "sk_kernel_desc.dynamic_shared" in k["error"]
    assert (k["needs"], k["dynamic_shared_from"], k["threads_from"]) == (["dynamic_shared"], "stand-in", ".reqntid")


@needs_fake_cuda
def test_inspect_of_cuda_modules_refuses_what_it_cannot_read(tmp_path):
    rms = os.path.join(TRITON_PTX, "rmsnorm.ptx")
    # Triton's sm_90a PTX on an sm_80: libsk's refusal, naming the file and both architectures.
    one_error_line(sk("inspect", "--arch", "sm_80", rms), 4, rms, "SK_ERR_INCOMPATIBLE", "sm_90a", "sm_80")
    one_error_line(sk("inspect", "--arch", "sm_80", "--json", rms), 4, rms, "sm_90a")
    broken = tmp_path / "broken.ptx"  # cut inside a declaration
    with open(rms) as f:
        broken.write_text(f.read()[:300])
    one_error_line(sk("inspect", broken), 4, broken, "SK_ERR_BAD_BINARY", "line ")
    for arch in ("bogus", "sm_90,timeout_ms=1", "90"):
        one_error_line(sk("inspect", "--arch", arch, rms), 2, "--arch", f"'{arch}'")
    one_error_line(sk("inspect", "--load", "host", rms), 2, "--load", rms)
    # Host objects are linked as one module, CUDA modules read each on its own: not mixed.
    host = tmp_path / "host.o"
    subprocess.run([os.environ.get("CC", "cc"), "-c", "-x", "c", "-", "-o", str(host)],
                   input="int f(void) { return 1; }\n", text=True, check=True)
    one_error_line(sk("inspect", rms, host), 2, rms, host, "separate commands")
    one_error_line(sk("inspect", "--arch", "sm_90", host), 2, "--arch", host)


@needs_fake_cuda
def test_inspect_of_ptx_needs_no_pyelftools(tmp_path):
    # A python without pyelftools: an elftools package that fails to import, first on the path.
    (tmp_path / "elftools").mkdir()
    (tmp_path / "elftools" / "__init__.py").write_text(
        "raise ModuleNotFoundError(\"No module named 'elftools'\", name='elftools')\n")
    env = {"PYTHONPATH": str(tmp_path)}
    r = sk("inspect", os.path.join(TRITON_PTX, "rope.ptx"), env=env)
    assert r.returncode == 0 and "rope_kernel(" in r.stdout, r.stderr
    host = tmp_path / "host.o"
    subprocess.run([os.environ.get("CC", "cc"), "-c", "-x", "c", "-", "-o", str(host)],
                   input="int f(void) { return 1; }\n", text=True, check=True)
    one_error_line(sk("inspect", host, env=env), 3, "needs pyelftools")


@needs_cuda_kernels
def test_inspect_nvcc_ptx_names_each_refusal():
    path = os.path.join(CUDA_KERNELS, "refuse_global.ptx")
    with open(os.path.join(CUDA_SOURCES, "refuse_global.cu")) as f:
        kernels = re.findall(r"__global__ void (?:__\w+__\([^)]*\) )?(\w+)\(", f.read())
    assert sorted(kernels) == sorted(REFUSALS)
    r = sk("inspect", path)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert f"kernels ({len(kernels)}):" in lines
    for name in kernels:
        [line] = [l for l in lines if l.startswith(f"  {name}: ")]
        assert line.startswith(f"  {name}: cannot be taken: sk_module_get_kernel: kernel '{name}' "), line
        assert REFUSALS[name] in line, line
    d = json.loads(sk("inspect", "--json", path).stdout)
    assert d["kind"] == "ptx" and [k["name"] for k in d["kernels"]] == kernels
    for k in d["kernels"]:
        assert REFUSALS[k["name"]] in k["error"], k
        # Only what its PTX does not say keeps refuse_child: the field to give, and its facts.
        if k["name"] == "refuse_child":
            assert (k["needs"], k["threads_from"], k["signature"]) == (["threads"], "stand-in", "ptr,u32"), k
        else:
            assert set(k) == {"name", "error"}, k


@needs_fake_cuda
@needs_cuda_kernels
def test_explain_names_the_copy_a_narrower_kernel_is_called_as(tmp_path):
    # nvcc's rmsnorm at 128 and 256 threads beside silu_mul at 256: the narrower one's steps
    # call its copy counting 128 threads.
    rms = {"object": "global", "kernel": "rmsnorm_global", "block_dim": 2, "threads": 128,
           "args": ["@x", "@w", "@y", 256, 1e-6]}
    kernels = [rms, {**rms, "threads": 256, "args": ["@x", "@w", "@out", 256, 1e-6]},
               {"object": "global", "kernel": "silu_mul_global", "block_dim": 2, "threads": 256,
                "args": ["@x", "@w", "@out", 256]}]
    path = scope_file(tmp_path, kernels, TRITON_BUFFERS, device="cuda:0", name="widths",
                      objects={"global": os.path.join(CUDA_KERNELS, "decode_global.ptx")})
    env = fake_cuda_env(tmp_path)
    r = sk("explain", path, env=env)
    assert r.returncode == 0, r.stderr
    assert "cuda entry: sm_90, 256 threads," in r.stdout, r.stdout
    assert "  rmsnorm_global: 128 threads (from caller), called as its copy rmsnorm_global$w128;" in r.stdout
    assert "  rmsnorm_global: 256 threads (from caller);" in r.stdout
    plan = json.loads(sk("explain", "--json", path, env=env).stdout)
    assert [k["function"] for k in plan["cuda_entry"]["sub_kernels"]] == [
        "rmsnorm_global$w128", "rmsnorm_global", "silu_mul_global"]


@needs_cuda_kernels
def test_inspect_cubins_fatbinaries_and_nvcc_objects():
    # chain.cu's SK_KERNEL_CUDA records: each kernel's name, signature and threads.
    with open(os.path.join(CUDA_SOURCES, "chain.cu")) as f:
        records = re.findall(r'SK_KERNEL_CUDA\((\w+), "([^"]*)", (\d+)\)', f.read())
    assert records
    for name, file_kind, kind in (("chain.cubin", "cubin", "cubin"),
                                  ("chain_plain.fatbin", "fatbinary", "cubin"),
                                  ("chain_host.o", "nvcc host object", "cubin"),
                                  ("decode_global.o", "nvcc host object", "ptx"),
                                  ("decode_global_rdc.o", "nvcc host object", "ptx")):
        path = os.path.join(CUDA_KERNELS, name)
        r = sk("inspect", "--json", path)
        assert r.returncode == 0, (name, r.stderr)
        d = json.loads(r.stdout)
        assert (d["file"], d["file_kind"], d["kind"]) == (path, file_kind, kind), d
        if name.startswith("chain"):
            assert [(k["name"], k["signature"], str(k["threads"]), k["threads_from"])
                    for k in d["kernels"]] == [r + ("metadata",) for r in records], d
            assert "ptx" not in d
    r = sk("inspect", os.path.join(CUDA_KERNELS, "chain.cubin"))
    assert r.returncode == 0, r.stderr
    for name, signature, threads in records:
        assert f"  {name}({signature})\n    threads: {threads} (from metadata)\n" in r.stdout
    # decode_global.o is a plain nvcc -c: its cubin is linked, so libsk reads its PTX.
    r = sk("inspect", os.path.join(CUDA_KERNELS, "decode_global.o"))
    assert "libsk reads PTX" in r.stdout and "(compute_" in r.stdout
    assert "\n      %ctaid.x read as sk_block_idx()\n" in r.stdout


@needs_cuda_kernels
def test_inspect_shared_library():
    # nvcc -shared of two translation units: the kernels of both, from their PTX.
    path = os.path.join(CUDA_KERNELS, "libdecode_two.so")
    r = sk("inspect", "--json", path)
    assert r.returncode == 0, r.stderr
    d = json.loads(r.stdout)
    assert (d["file_kind"], d["kind"]) == ("shared library", "library"), d
    names = [k["name"] for k in d["kernels"]]
    assert "rmsnorm_global" in names and "er_guard" in names and len(names) == 13, names
    r = sk("inspect", path)
    assert "libdecode_two.so: shared library" in r.stdout
    assert "libsk reads the PTX or SASS of its translation units" in r.stdout
    # SASS alone: its kernels are launched as compiled; for sm_80, what to build.
    d = json.loads(sk("inspect", "--json", os.path.join(CUDA_KERNELS, "libdecode_sass.so")).stdout)
    assert all(k.get("plain_launch") for k in d["kernels"]) and len(d["kernels"]) == 6, d["kernels"]
    r = sk("inspect", "--arch", "sm_80", os.path.join(CUDA_KERNELS, "libdecode_sass.so"))
    assert r.returncode != 0 and "Traceback" not in r.stderr
    assert "no PTX or SASS the device (sm_80) runs" in r.stderr, r.stderr


@needs_cuda_kernels
def test_inspect_of_linked_sass_says_which_kernels_are_launched_as_compiled():
    # nvcc -c code=sm_90: a linked cubin alone, whose kernels are plain launches, their
    # signatures read from the parameters' sizes.
    path = os.path.join(CUDA_KERNELS, "decode_global_sass.o")
    d = json.loads(sk("inspect", "--json", path).stdout)
    kernels = {k["name"]: k for k in d["kernels"]}
    assert kernels["residual_add_global"]["plain_launch"] is True
    assert kernels["residual_add_global"]["signature"] == "ptr,ptr,ptr,u32"
    assert kernels["silu_mul_global"]["needs"] == ["threads"]
    r = sk("inspect", path)
    assert r.returncode == 0, r.stderr
    assert ("  residual_add_global(ptr,ptr,ptr,u32)\n"
            "    launched as compiled (linked SASS: a dispatch of its own, not fused)\n"
            "    threads: 256 (from .maxntid)\n") in r.stdout, r.stdout


@needs_fake_cuda
@needs_cuda_kernels
def test_a_scope_files_kernel_of_linked_sass_runs_in_the_cluster_it_gives(tmp_path):
    env = fake_cuda_env(tmp_path)
    objects = {"fused": os.path.join(CUDA_KERNELS, "decode_global.ptx"),
               "sass": os.path.join(CUDA_KERNELS, "clusters_sass.cubin")}
    buffers = {"a": {"type": "f32", "count": 1024}}
    add = {"object": "fused", "kernel": "residual_add_global", "block_dim": 4, "args": ["@a", "@a", "@a", 1024]}

    def scope(**rotate):
        step = {"object": "sass", "kernel": "cluster_any", "block_dim": 8, "args": ["@a", "@a"], **rotate}
        return scope_file(tmp_path, [add, step, add], buffers, device="cuda:0", name="clusters", objects=objects)

    plan = json.loads(sk("explain", "--json", scope(cluster=[4]), env=env).stdout)
    assert [d.get("cluster") for d in plan["cuda_entry"]["dispatches"]] == [None, [4, 1, 1], None]
    r = sk("explain", scope(cluster=3), env=env)
    assert r.returncode == 4 and "clusters of {3, 1, 1} blocks (caller), which its grid {8, 1, 1}" in r.stderr, r.stderr
    r = sk("explain", scope(cluster=[2, "1"]), env=env)
    assert r.returncode == 3 and "kernels[1]: cluster[1] must be an integer" in r.stderr, r.stderr
    assert "Traceback" not in r.stderr and len(r.stderr.splitlines()) == 1
    # sk inspect: the cluster a kernel was compiled for, and where one must be given.
    r = sk("inspect", objects["sass"])
    assert r.returncode == 0, r.stderr
    assert "    cluster: 2 x 1 x 1 blocks (from __cluster_dims__)\n" in r.stdout, r.stdout
    assert "taken once given sk_kernel_desc.cluster" in r.stdout, r.stdout


@needs_cuda_kernels
def test_inspect_static_library_of_nvcc_objects():
    # nvcc -lib's archive: its members of device code (not cross_host.o's host code), and each
    # kernel's member and the members it is linked with, named by the file's path.
    path = os.path.join(CUDA_KERNELS, "libcross.a")
    d = json.loads(sk("inspect", "--json", path).stdout)
    assert (d["file_kind"], d["kind"]) == ("static library of nvcc objects", "archive"), d
    assert d["objects"] == [f"{path}({m}) (compute_90 PTX)" for m in ("cross_a.o", "cross_b.o", "cross_c.o")]
    kernels = {k["name"]: k for k in d["kernels"]}
    assert kernels["cross_apply"]["module"] == d["objects"][0]
    assert kernels["cross_apply"]["linked_with"] == [d["objects"][1]]
    assert "linked_with" not in kernels["cross_square"]
    r = sk("inspect", path)
    assert r.returncode == 0, r.stderr
    assert f"    object: {path}(cross_a.o) (compute_90 PTX)\n    linked with: {path}(cross_b.o)" in r.stdout


@needs_cuda_kernels
def test_inspect_lto_ir(tmp_path):
    # LTO-IR of __global__ kernels: read from the PTX the IR links to, as decode_global.ptx is.
    path = os.path.join(CUDA_KERNELS, "decode_global.ltoir")
    d = json.loads(sk("inspect", "--json", path).stdout)
    ptx = json.loads(sk("inspect", "--json", os.path.join(CUDA_KERNELS, "decode_global.ptx")).stdout)
    assert (d["file_kind"], d["kind"]) == ("LTO-IR", "lto-ir"), d
    assert [(k["name"], k.get("signature"), k.get("threads")) for k in d["kernels"]] == \
        [(k["name"], k.get("signature"), k.get("threads")) for k in ptx["kernels"]]
    r = sk("inspect", path)
    assert r.returncode == 0, r.stderr
    assert "LTO-IR" in r.stdout and "read from the PTX its IR links to" in r.stdout
    assert "  rmsnorm_global(ptr,ptr,ptr,u32,f32)\n    threads: 256 (from .maxntid)\n" in r.stdout
    # Through a pipe (read in chunks, stopping at bytes no module begins with): the same.
    fifo = tmp_path / "ir"
    os.mkfifo(fifo)
    with open(path, "rb") as f:
        image = f.read()
    writer = threading.Thread(target=lambda: fifo.write_bytes(image), daemon=True)
    writer.start()
    piped = json.loads(sk("inspect", "--json", fifo).stdout.replace(str(fifo), path))
    writer.join()
    assert piped["kernels"] == d["kernels"]
    # A libsk sub-kernel's IR: its record, and the device API it is planned with.
    d = json.loads(sk("inspect", "--json", os.path.join(CUDA_KERNELS, "lto.ltoir")).stdout)
    [k] = d["kernels"]
    assert (k["name"], k["signature"], k["threads_from"]) == ("lto_scale", "ptr,u32,u32", "metadata")
    assert "ptx" not in d
    # LTO-IR alone in an nvcc object (code=lto_90) cannot be read: said, with what to build.
    r = sk("inspect", os.path.join(CUDA_KERNELS, "decode_global_lto.o"))
    assert r.returncode != 0 and "Traceback" not in r.stderr
    assert "holds LTO-IR for lto_" in r.stderr and "nvcc -dc -dlto -ltoir" in r.stderr, r.stderr


# ---- run ---------------------------------------------------------------------------------------
def test_run_fused_equals_unfused(ops):
    path = scope_file(ops.parent, CHAIN, repeat=5)
    r = sk("run", path)
    assert r.returncode == 0, r.stderr
    assert "unfused" in r.stdout and "fused" in r.stdout and "bit-identical" in r.stdout
    r = sk("run", "--json", "--repeat", 3, path)
    assert r.returncode == 0, r.stderr
    d = json.loads(r.stdout)
    assert d["identical"] and d["kernels"] == 4 and d["repeat"] == 3
    assert set(d["compared"]) == {"x", "y", "partials", "sum"}
    assert d["unfused_us"] > 0 and d["fused_us"] > 0


def test_run_detects_a_difference(ops):
    # call_counter keeps a counter in the object: the unfused and fused copies see different
    # counts, which `sk run` must report (exit 1, the buffer and element named).
    kernels = [{"object": "ops", "kernel": "call_counter", "args": ["@count"]}]
    path = scope_file(ops.parent, kernels, buffers={"count": {"type": "u32", "count": 1}},
                      repeat=2)
    r = sk("run", path)
    assert r.returncode == 1, r.stdout + r.stderr
    assert "MISMATCH in buffer 'count' at element 0" in r.stdout
    assert "differ in count" in r.stderr
    r = sk("run", "--repeat", 0, path)
    assert r.returncode == 2 and "--repeat" in r.stderr


def test_run_capture_equals_unfused(ops):
    for kernels, options in ((UNNAMED_CHAIN, ""), (STREAMS, "stream-fusion=1")):
        path = scope_file(ops.parent, kernels, STREAM_BUFFERS, options=options, repeat=3)
        r = sk("run", "--capture", path)
        assert r.returncode == 0, r.stderr
        assert "captured from the unfused launches" in r.stdout and "bit-identical" in r.stdout
        d = json.loads(sk("run", "--capture", "--json", path).stdout)
        assert d["identical"] and d["built_by"] == "capture" and d["kernels"] == 4
    assert json.loads(sk("run", "--json", path).stdout)["built_by"] == "scope"
    # A captured super kernel that computes something else is caught: call_counter's count
    # differs between the unfused and the captured copies (as in test_run_detects_a_difference).
    path = scope_file(ops.parent, [{"object": "ops", "kernel": "call_counter", "args": ["@count"]}],
                      buffers={"count": {"type": "u32", "count": 1}}, repeat=2)
    r = sk("run", "--capture", path)
    assert r.returncode == 1 and "MISMATCH in buffer 'count' at element 0" in r.stdout
    r = sk("run", "--capture", scope_file(ops.parent, CHAIN))
    assert r.returncode == 3 and 'kernels[0]: "name" cannot be captured' in r.stderr


def test_run_aggregates_and_arguments_read_by_reference(ops):
    # Structs by value as JSON lists, a position read by reference from a buffer: fused and
    # unfused agree; a reference cannot be captured; bad ones are named.
    for name in ("args_aggregates", "args_refs"):
        subprocess.run([os.environ.get("CC", "cc"), "-O2", "-fPIE", "-g0", "-std=gnu11",
                        "-I", os.path.join(ROOT, "include"), "-c",
                        os.path.join(ROOT, "tests", "kernels", name + ".c"),
                        "-o", str(ops.parent / (name + ".o"))], check=True)
    buffers = {"rec": {"type": "u8", "count": 256}, "nest": {"type": "u8", "count": 256},
               "pos": {"type": "i32", "count": 1, "fill": 2},
               "out": {"type": "f32", "count": 64}, "inp": {"type": "f32", "count": 4, "fill": "iota"}}
    kernels = [{"object": "agg", "kernel": "agg_f2", "args": ["@rec", [1.5, -2.0]]},
               {"object": "agg", "kernel": "agg_nest", "args": ["@nest", [[[1, 2], [3, 4]], -5], 0.5]},
               {"object": "refs", "kernel": "ref_scale_at", "block_dim": 4,
                "args": ["@out", "@inp", {"ref": "@pos"}, 0.5]}]
    objects = {"agg": "args_aggregates.o", "refs": "args_refs.o"}
    path = scope_file(ops.parent, kernels, buffers, objects=objects, repeat=3)
    r = sk("run", "--json", path)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["identical"]
    r = sk("explain", "--json", path)
    assert json.loads(r.stdout)["steps"][2]["arguments_by_reference"] == [2]
    r = sk("run", "--capture", path)
    assert r.returncode == 3 and 'kernels[2].args[2]: {"ref": ...} cannot be captured' in r.stderr
    for bad, needle in (({"ref": "@nope"}, "kernels[2].args[2]: {'ref': '@nope'} is not"),
                        ([1.0], "kernels[2].args: kernel 'ref_scale_at' argument 2 (i32)")):
        kernels[2]["args"][2] = bad
        r = sk("run", scope_file(ops.parent, kernels, buffers, objects=objects))
        assert r.returncode == 3 and needle in r.stderr, r.stderr
    kernels[2]["args"][2] = {"ref": "@pos"}
    kernels[0]["args"][1] = [1.5, 1e300]
    r = sk("run", scope_file(ops.parent, kernels, buffers, objects=objects))
    assert r.returncode == 3 and "argument 1 ({f32,f32}) member 1: 1e+300 does not fit f32" in r.stderr, r.stderr


def test_run_demo_attention_block():
    # examples/demo/attention_block.json on the demo's own kernel objects (sk_sync_all, task
    # overlap, the KV cache): fused and unfused agree bit for bit.
    objects = os.environ.get("SK_DEMO_OBJECTS", "")
    if not os.path.exists(os.path.join(objects, "attention.o")):
        pytest.skip("the demo's kernels are not built in this tree")
    r = sk("run", "--json", "--repeat", 3, "--objects-dir", objects,
           os.path.join(ROOT, "examples", "demo", "attention_block.json"))
    assert r.returncode == 0, r.stderr
    d = json.loads(r.stdout)
    assert d["identical"] and d["kernels"] == 11 and "k_cache" in d["compared"]


def test_run_device_override_and_bad_device(ops):
    path = scope_file(ops.parent, CHAIN, repeat=2)
    assert sk("run", "--device", "host:cores=3", path).returncode == 0
    r = sk("run", "--device", "host:wat=1", path)
    assert r.returncode == 4 and "wat" in r.stderr


# ---- trace -------------------------------------------------------------------------------------
def test_trace_capture_profiles_the_captured_super_kernel(ops, tmp_path):
    path = scope_file(ops.parent, STREAMS, STREAM_BUFFERS, options="stream-fusion=1")
    r = sk("trace", "--capture", path, "-o", tmp_path / "c")
    assert r.returncode == 0, r.stderr
    trace = json.loads((tmp_path / "c.json").read_text())
    events = trace["traceEvents"] if isinstance(trace, dict) else trace
    names = {e["name"] for e in events if e.get("ph") == "X"} - {"wait"}  # runtime waits
    assert names == {"axpy", "square_plus_one", "block_sum"}
    assert "profiled launch of 'chain': 4 sub-kernels" in r.stdout
    r = sk("trace", "--capture", scope_file(ops.parent, CHAIN), "-o", tmp_path / "n")
    assert r.returncode == 3 and 'kernels[0]: "name" cannot be captured' in r.stderr
    assert not (tmp_path / "n.json").exists()


def test_trace_writes_chrome_json_and_svg(ops, tmp_path):
    path = scope_file(ops.parent, CHAIN)
    r = sk("trace", path, "-o", tmp_path / "t")
    assert r.returncode == 0, r.stderr
    trace = json.loads((tmp_path / "t.json").read_text())
    events = trace["traceEvents"] if isinstance(trace, dict) else trace
    slices = [e for e in events if e.get("ph") == "X"]
    assert {"axpy.0", "square_plus_one", "reduce", "axpy.1"} <= {e["name"] for e in slices}
    svg = (tmp_path / "t.svg").read_text()
    assert svg.startswith("<svg") and svg.rstrip().endswith("</svg>")
    assert "core 0" in svg and "core 1" in svg and "reduce" in svg
    assert "core 0:" in r.stdout and "wrote" in r.stdout
    # Which libsk wrote it, and the trace layout's version.
    assert trace["otherData"]["libsk_version"] in sk("--version").stdout
    assert trace["otherData"]["trace_format_version"] == 1


# ---- bench -------------------------------------------------------------------------------------
def test_bench_runs_sk_bench():
    exe = os.environ.get("SK_BENCH_EXE", "")
    if not os.path.exists(exe):
        pytest.skip("sk-bench is not built in this tree")
    # Arguments pass through to sk-bench, with or without "--": its own usage error comes back.
    for args in (["--", "--bogus"], ["--bogus"]):
        r = sk("bench", *args, env={"SK_BENCH": exe})
        assert r.returncode == 2 and "usage:" in r.stderr and "sk-bench" in r.stderr, args
        # The scenarios --only takes, listed from the one table that accepts them.
        names = next(line for line in r.stderr.splitlines() if line.startswith("SCENARIO:")).split()[1:]
        assert {"overhead", "repeat", "streams", "core0", "core-sharing"} <= set(names), r.stderr


def test_bench_missing_exit_3(tmp_path):
    env = {"SK_BENCH": str(tmp_path / "none"), "SK_TOOL_DIR": str(tmp_path), "PATH": "/usr/bin:/bin"}
    r = sk("bench", env=env)
    if r.returncode == 0:
        pytest.skip("an sk-bench is on PATH")
    assert r.returncode == 3 and "sk-bench not found" in r.stderr


# ---- sk devices ----------------------------------------------------------------------------------

def test_devices_reports_the_host_default_and_why_cuda_is_there_or_not():
    r = sk("devices")
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    allowed = len(os.sched_getaffinity(0))
    host = json.loads(sk("devices", "--json").stdout)["devices"][0]
    assert host["spec"] == "host" and 1 <= host["cores"] <= allowed
    assert host["allowed_cpus"] == sorted(os.sched_getaffinity(0))
    assert lines[0].startswith(f"host: {host['cores']} core")
    assert any(line.startswith("cuda") for line in lines[1:]), r.stdout  # a GPU, or the reason


def test_devices_default_follows_the_affinity_mask():
    cpu = max(os.sched_getaffinity(0))
    r = subprocess.run([SK, "devices", "--json", "host"], capture_output=True, text=True, timeout=240,
                       preexec_fn=lambda: os.sched_setaffinity(0, {cpu}))
    assert r.returncode == 0, r.stderr
    host = json.loads(r.stdout)["devices"][0]
    assert host["cores"] == 1 and host["allowed_cpus"] == [cpu]
    if (os.cpu_count() or 1) > 1:
        assert host["limited_by"] == "affinity mask"


def test_devices_opens_the_specs_given_and_names_a_bad_one():
    r = sk("devices", "host:cores=3,pin=0", "host:bogus=1")
    assert r.returncode == 4
    assert r.stdout.splitlines()[0].startswith("host:cores=3,pin=0: 3 cores (cores= in the spec)")
    assert "bogus" in r.stdout.splitlines()[1] and "bogus" in r.stderr


@pytest.mark.skipif(not os.environ.get("SK_FAKE_CUDA_DRIVER"),
                    reason="no stand-in CUDA driver in this build (CUDA tests not built)")
def test_devices_lists_each_gpu_that_opens_through_the_driver():
    # The stand-in driver has one GPU of 4 multiprocessors: cuda:0 is listed, cuda:1 ends it.
    r = sk("devices", "--json", env={"SK_CUDA_DRIVER_LIBRARY": os.environ["SK_FAKE_CUDA_DRIVER"]})
    assert r.returncode == 0, r.stderr
    cuda = [d for d in json.loads(r.stdout)["devices"] if d["backend"] == "cuda"]
    assert cuda == [{"spec": "cuda:0", "backend": "cuda", "cores": 4}], cuda
