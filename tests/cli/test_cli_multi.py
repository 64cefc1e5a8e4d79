"""`sk inspect` and scope files with several objects and an `ar` archive, linked by libsk as
one module (tests/kernels/multi compiled here with cc and ar, as a user would)."""
import json
import os
import subprocess

import pytest

from test_cli import ROOT, sk

MULTI = os.path.join(ROOT, "tests", "kernels", "multi")


@pytest.fixture(scope="module")
def multi(tmp_path_factory):
    out = tmp_path_factory.mktemp("cli_multi")
    objs = {}
    for name in ("multi_main", "multi_helper", "multi_dup", "multi_offset", "multi_base",
                 "multi_unused"):
        objs[name] = out / f"{name}.o"
        subprocess.run([os.environ.get("CC", "cc"), "-O2", "-fPIE", "-g0", "-std=gnu11",
                        "-I", os.path.join(ROOT, "include"), "-c",
                        os.path.join(MULTI, f"{name}.c"), "-o", str(objs[name])], check=True)
    objs["libmulti"] = out / "libmulti.a"
    subprocess.run([os.environ.get("AR", "ar"), "rcs", str(objs["libmulti"]),
                    str(objs["multi_offset"]), str(objs["multi_base"]), str(objs["multi_unused"])],
                   check=True)
    return objs


def test_inspect_several_files_json(multi):
    r = sk("inspect", "--json", multi["multi_main"], multi["multi_helper"], multi["libmulti"])
    assert r.returncode == 0, r.stderr
    d = json.loads(r.stdout)
    assert [f["file"] for f in d["files"]] == [str(multi[n]) for n in ("multi_main", "multi_helper", "libmulti")]
    assert d["files"][0]["kernels"][0]["name"] == "multi_kernel"
    assert d["files"][2]["archive"] and len(d["files"][2]["members"]) == 3
    assert d["link"]["kernels"] == ["multi_kernel", "multi_helper_kernel"]


def test_inspect_several_files_text(multi):
    r = sk("inspect", multi["multi_main"], multi["multi_helper"], multi["libmulti"])
    assert r.returncode == 0, r.stderr
    assert "ar archive, 3 members" in r.stdout
    assert "all 3 file(s) as one module: loads and links" in r.stdout


def test_inspect_archive_alone_is_described_not_linked(multi):
    r = sk("inspect", multi["libmulti"])
    assert r.returncode == 0, r.stderr
    assert "not linked: archives alone link nothing" in r.stdout


def test_inspect_archive_with_extern_script_links_it(multi, tmp_path):
    script = tmp_path / "pull.ld"
    script.write_text("/* as ld -u */ EXTERN(multi_offset)\n")
    r = sk("inspect", "--json", script, multi["libmulti"])
    assert r.returncode == 0, r.stderr
    d = json.loads(r.stdout)
    assert d["files"][0] == {"file": str(script), "script": True, "externs": ["multi_offset"]}
    assert d["link"]["result"].startswith("loads and links as one module")
    r = sk("inspect", script, multi["libmulti"])
    assert f"{script}: linker script, EXTERN multi_offset" in r.stdout, r.stdout
    script.write_text("EXTERN(multi_nowhere)")
    r = sk("inspect", script, multi["libmulti"])
    assert r.returncode != 0 and "EXTERN(multi_nowhere)" in r.stderr and "Traceback" not in r.stderr


def test_inspect_archive_member_with_a_malformed_record_exit_4(multi, tmp_path):
    # The member's kernels are libsk's reading of it: a record it refuses names the member.
    (tmp_path / "odd.c").write_text(
        "#include <sk_kernel.h>\n"
        "SK_KERNEL_TYPED(odd, \"ptr\", \"warp9\")\n"
        "void odd(int *p) { *p = 1; }\n")
    odd, archive = tmp_path / "odd.o", tmp_path / "libodd.a"
    subprocess.run([os.environ.get("CC", "cc"), "-c", "-I", os.path.join(ROOT, "include"),
                    str(tmp_path / "odd.c"), "-o", str(odd)], check=True)
    subprocess.run([os.environ.get("AR", "ar"), "rcs", str(archive), str(multi["multi_base"]), str(odd)],
                   check=True)
    r = sk("inspect", archive)
    assert r.returncode == 4 and "Traceback" not in r.stderr, r.stderr
    assert str(archive) in r.stderr and "(odd.o): kernel 'odd': unknown core type 'warp9'" in r.stderr


def test_inspect_duplicate_definition_exit_4(multi):
    r = sk("inspect", multi["multi_main"], multi["multi_helper"], multi["multi_dup"])
    assert r.returncode == 4
    assert "'multi_scale' is defined in" in r.stderr
    assert "multi_helper.o" in r.stderr and "multi_dup.o" in r.stderr
    assert "Traceback" not in r.stderr


def test_run_scope_with_a_list_of_objects(multi, tmp_path):
    doc = {"device": "host:cores=2", "objects": {"m": [str(multi["multi_main"]),
                                                       str(multi["multi_helper"]),
                                                       str(multi["libmulti"])]},
           "buffers": {"buf": {"type": "i32", "count": 64, "fill": "iota"}},
           "kernels": [{"object": "m", "kernel": "multi_kernel", "block_dim": 2, "args": ["@buf", 64]},
                       {"object": "m", "kernel": "multi_helper_kernel", "block_dim": 2,
                        "args": ["@buf", 64]}]}
    path = tmp_path / "multi.json"
    path.write_text(json.dumps(doc))
    r = sk("run", path, "--repeat", "2")
    assert r.returncode == 0, r.stdout + r.stderr
    doc["objects"]["m"] = []
    path.write_text(json.dumps(doc))
    r = sk("run", path)
    assert r.returncode == 3 and "objects.m" in r.stderr
