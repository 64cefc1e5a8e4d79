#!/usr/bin/env python3
"""scripts/gpu-check's own behaviour on a machine without a GPU (ctest scripts.gpu_check).

It runs `gpu-check --prebuilt BUNDLE` on a bundle whose sk_cuda_tests is gpu_check_fixture.cpp
(CudaGpu tests on the stand-in driver: one passes, one reports a hang, one hits a sticky error,
one never returns, one skips; a test that needs no GPU fails if run), with stand-ins for
nvidia-smi, compute-sanitizer and bench_cuda first on PATH, and checks: a line per test in run
order, the hanging test killed at its timeout and the run going on, the summary printed last,
compute-sanitizer rerunning the first failure under its own timeout, the benchmark last (given
the bundle's Triton fixtures), the files in $OUT and the tarball's contents; then a failing smoke
test (straight to diagnostics: nothing else runs), a gVisor sandbox (no compute-sanitizer), and a
run where all passes (a bundle without Triton fixtures: the benchmark runs without them).

usage: test_gpu_check.py --repo DIR --fixture EXE --info EXE --driver SO --kernels DIR
"""
import argparse
import os
import signal
import subprocess
import sys
import tarfile
import tempfile
import time

PER_TEST_S = 4
SANITIZER_S = 3

NVIDIA_SMI = """#!/bin/sh
case "$*" in
  *compute_cap*) echo "9.0" ;;
  *name,driver_version*) echo "Stand-in GPU, 580.00" ;;
  -q) echo "==============NVSMI LOG=============="; echo "Product Name : Stand-in GPU" ;;
esac
"""

# Runs the program it is given, as compute-sanitizer would, between its banner and its summary.
COMPUTE_SANITIZER = """#!/bin/sh
echo "========= COMPUTE-SANITIZER"
[ "$1" = --tool ] || exit 2
echo "========= tool: $2"
shift 2
"$@"
echo "========= ERROR SUMMARY: 0 errors"
"""

BENCH = """#!/bin/sh
echo "bench_cuda: Stand-in GPU (sm_90, 4 SMs), driver 13.0"
echo "a legend line the summary leaves out"
echo "arguments: $*"
echo
echo "1 block x 128 threads (128 words a step): us per step, median of 5 rounds"
echo " steps |   stream    super"
echo "    10 |    9.999    1.111"
echo
echo "check: every method's words equal the CPU reference's (3 checks)"
"""

failures = []


def check(condition, what, context=""):
    if not condition:
        failures.append(what + (("\n--- context:\n" + context) if context else ""))


def write_exe(path, text):
    with open(path, "w") as f:
        f.write(text)
    os.chmod(path, 0o755)


def make_bundle(root, args):
    bundle = os.path.join(root, "bundle")
    os.makedirs(os.path.join(bundle, "bin"))
    os.makedirs(os.path.join(bundle, "lib"))
    os.symlink(args.fixture, os.path.join(bundle, "bin", "sk_cuda_tests"))
    os.symlink(args.info, os.path.join(bundle, "bin", "sk_cuda_info"))
    write_exe(os.path.join(bundle, "bin", "bench_cuda"), BENCH)
    os.symlink(args.kernels, os.path.join(bundle, "cuda-kernels"))
    os.makedirs(os.path.join(bundle, "triton-ptx"))
    with open(os.path.join(bundle, "cuda-arch"), "w") as f:
        f.write("sm_90\n")
    tools = os.path.join(root, "tools")
    os.makedirs(tools)
    write_exe(os.path.join(tools, "nvidia-smi"), NVIDIA_SMI)
    write_exe(os.path.join(tools, "compute-sanitizer"), COMPUTE_SANITIZER)
    return bundle, tools


def run(args, root, bundle, tools, name, **env):
    out = os.path.join(root, name)
    e = dict(os.environ)
    e.update({
        "PATH": tools + os.pathsep + e.get("PATH", ""),
        "OUT": out,
        "SK_GPU_BUILD_DIR": os.path.join(root, "build-" + name),
        "SK_CUDA_DRIVER_LIBRARY": args.driver,
        "SK_GPU_TEST_TIMEOUT_S": str(PER_TEST_S),
        "SK_GPU_SANITIZER_S": str(SANITIZER_S),
        "SK_GPU_SANDBOX": "firecracker",
        "XDG_CACHE_HOME": os.path.join(root, "cache"),
        "TMPDIR": root,
    })
    e.pop("SK_CUDA_TIMEOUT_MS", None)
    e.update(env)
    start = time.monotonic()
    # A session of its own: a run that hangs is ended with everything it started.
    p = subprocess.Popen([os.path.join(args.repo, "scripts", "gpu-check"), "--prebuilt", bundle], env=e,
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True)
    try:
        stdout, _ = p.communicate(timeout=120)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        stdout, _ = p.communicate()
        check(False, f"gpu-check ({name}) did not end within 120 s", stdout)
    return p.returncode, stdout, time.monotonic() - start, out


def lines_starting(text, prefixes):
    return [l for l in text.splitlines() if l.startswith(prefixes)]


def summary_of(stdout):
    at = stdout.rfind("==== gpu-check:")
    return stdout[at:] if at >= 0 else ""


def test_a_run_with_every_outcome(args, root, bundle, tools):
    rc, stdout, took, out = run(args, root, bundle, tools, "every")
    check(rc == 1, f"the run with failures exits 1, not {rc}", stdout)
    log = open(os.path.join(out, "gpu-check.log")).read()
    # The same lines, streamed into $OUT as printed.
    check(stdout.strip() == log.strip(), "gpu-check.log holds what was printed", log)
    # A line per test, in run order: the smoke test first; the hanging test killed at its
    # timeout, and the tests after it still run. The test that needs no GPU is not run.
    tests = lines_starting(log, ("ok ", "FAIL ", "TIMEOUT ", "SKIP ", "NOT RUN "))
    names = [l.split()[1].rstrip(":") for l in tests]
    check(names == ["CudaGpu.SmokeTwoStepsOnOneBlockAndOneBlockPerSm", "CudaGpu.NeverReturns",
                    "CudaGpu.AHangIsReported", "CudaGpu.AStickyError", "CudaGpu.Passes", "CudaGpu.Skips"],
          f"one line per GPU test, smoke first, in order: {names}", log)
    check("CudaFixture" not in log, "the test that needs no GPU is not run", log)
    check(f"TIMEOUT CudaGpu.NeverReturns (killed after {PER_TEST_S} s)" in log, "the hanging test is killed", log)
    # Killed at the timeout (and compute-sanitizer's two reruns of it at theirs): the run did
    # not wait for it.
    check(took < 60, f"the run took {took:.0f} s: a hanging test was waited for", log)
    hang = [l for l in tests if l.startswith("FAIL    CudaGpu.AHangIsReported")]
    check(hang and "waited past the 2000 ms deadline" in hang[0] and hang[0].endswith("[sync buffer dumped]"),
          "the hang's line names the lowered deadline (SK_CUDA_TIMEOUT_MS) and the dump", log)
    sticky = [l for l in tests if l.startswith("FAIL    CudaGpu.AStickyError")]
    check(sticky and "cuStreamSynchronize on Fake GPU (cuda:0) failed: CUDA_ERROR_ILLEGAL_ADDRESS" in sticky[0]
          and "is lost" not in sticky[0], "the first failure's message names the sticky error", log)
    check(any(l.startswith("SKIP    CudaGpu.Skips: no CUDA device: the fixture's skipping test") for l in tests),
          "a skip says why", log)
    # The first failure rerun under compute-sanitizer, each tool under its timeout.
    check(f"compute-sanitizer on CudaGpu.NeverReturns: synccheck: timed out after {SANITIZER_S} s; memcheck: "
          f"timed out after {SANITIZER_S} s;" in log, "compute-sanitizer reruns the first failure, timed", log)
    # The benchmark last, its tables (not its legend) just before the summary, which ends the output.
    summary = summary_of(stdout)
    check(stdout.rstrip().endswith("gpu-check: FAILED"), "the verdict is the last line", stdout[-2000:])
    check(stdout.find("    10 |    9.999    1.111") < stdout.find("==== gpu-check:")
          and "a legend line" not in stdout, "the benchmark's table, without its legend, before the summary",
          stdout[-3000:])
    for want in ["smoke: ok (CudaGpu.SmokeTwoStepsOnOneBlockAndOneBlockPerSm)",
                 "CudaGpu tests: 2 ok, 2 failed, 1 timed out, 1 skipped, 0 not run (of 6)",
                 "  TIMEOUT CudaGpu.NeverReturns", "  FAIL    CudaGpu.AHangIsReported", "  FAIL    CudaGpu.AStickyError",
                 "bench_cuda: ok in", "driver: " + args.driver, "nvJitLink: ", "artifacts: "]:
        check(want in summary, f"the summary says {want!r}", summary)
    check(len(summary) < 4000, "the summary is short", summary)
    bench = open(os.path.join(out, "bench-cuda.txt")).read()
    check(f"arguments: {bundle}/cuda-kernels/bench_chain.cubin --rounds 5 --triton {bundle}/triton-ptx\n" in bench,
          "the benchmark is given the bundle's Triton fixtures", bench)
    # $OUT: a few files (a device run returns at most 8), the artifacts in one tarball.
    check(sorted(os.listdir(out)) == ["bench-cuda.txt", "gpu-artifacts.tar.gz", "gpu-check.log", "summary.txt"],
          f"$OUT holds {sorted(os.listdir(out))}")
    with tarfile.open(os.path.join(out, "gpu-artifacts.tar.gz")) as t:
        files = t.getnames()
        text = lambda name: t.extractfile(name).read().decode(errors="replace")
        have = lambda prefix, suffix="": [f for f in files if f.startswith(prefix) and f.endswith(suffix)]
        check(have("run/sk_cuda_info.txt") and "driver: " + args.driver in text("run/sk_cuda_info.txt"),
              "sk_cuda_info says which driver libsk loaded", "\n".join(files))
        check(have("run/nvidia-smi-q.txt") and "Stand-in GPU" in text("run/nvidia-smi-q.txt"), "nvidia-smi -q is kept")
        check(have("run/gpu-check.log") and have("run/bench-cuda.txt"), "the log and the benchmark are kept")
        hung = "tests/CudaGpu.AHangIsReported/"
        sync = have(hung + "dump/", ".sync.txt")
        check(sync and "report.step 1 'chain_step'" in text(sync[0]), "the hang's sync buffer words", "\n".join(files))
        check(have(hung + "dump/", "-hung.cubin"), "the failing test's linked cubin", "\n".join(files))
        check(have(hung + "explain/", ".json"), "the failing test's explain JSON", "\n".join(files))
        check(have(hung + "output.txt"), "the failing test's output")
        never = "tests/CudaGpu.NeverReturns/"
        check(have(never + "compute-sanitizer-synccheck.txt") and have(never + "compute-sanitizer-memcheck.txt"),
              "compute-sanitizer's reports", "\n".join(files))
        check(not have("tests/CudaGpu.Passes/dump/") and have("tests/CudaGpu.Passes/output.txt")
              and have("tests/CudaGpu.Passes/explain/", ".json"),
              "a passing test keeps its output and explain JSON, not its cubins", "\n".join(files))
        if os.environ.get("SK_NVDISASM"):  # where CMake found NVIDIA's disassembler
            sass = have(hung + "dump/", "-hung.sass")
            check(sass and "sk_superkernel_entry" in text(sass[0]), "the failing test's SASS", "\n".join(files))
        if os.environ.get("SK_CUOBJDUMP"):
            usage = have(hung + "dump/", "-hung.res-usage.txt")
            check(usage and "REG:" in text(usage[0]), "the failing test's resource usage", "\n".join(files))


def test_a_failing_smoke_test_goes_straight_to_diagnostics(args, root, bundle, tools):
    rc, stdout, _, out = run(args, root, bundle, tools, "smoke", SK_GPU_FIXTURE_SMOKE="sticky", SK_GPU_SANDBOX="gvisor")
    check(rc == 1, f"a failing smoke test exits 1, not {rc}", stdout)
    tests = lines_starting(stdout, ("ok ", "FAIL ", "TIMEOUT ", "SKIP "))
    check(len(tests) == 1 and tests[0].startswith("FAIL    CudaGpu.SmokeTwoSteps") and "CUDA_ERROR_ILLEGAL_ADDRESS" in tests[0],
          "only the smoke test runs", stdout)
    summary = summary_of(stdout)
    for want in ["smoke: FAILED (CudaGpu.SmokeTwoStepsOnOneBlockAndOneBlockPerSm): nothing else ran",
                 "CudaGpu tests: 0 ok, 1 failed, 0 timed out, 0 skipped, 5 not run (of 6)",
                 "compute-sanitizer not run: this is a gVisor sandbox", "bench_cuda: not run (the smoke test failed)"]:
        check(want in summary, f"the summary says {want!r}", summary)
    check("bench-cuda.txt" not in os.listdir(out), "no benchmark after a failed smoke test")
    with tarfile.open(os.path.join(out, "gpu-artifacts.tar.gz")) as t:
        files = t.getnames()
    check(any(f.startswith("tests/CudaGpu.SmokeTwoStepsOnOneBlockAndOneBlockPerSm/dump/") and f.endswith(".cubin")
              for f in files), "the smoke test's cubins are kept", "\n".join(files))


def test_a_run_where_everything_passes(args, root, bundle, tools):
    triton = os.path.join(bundle, "triton-ptx")
    os.rename(triton, triton + ".hidden")  # a bundle without the Triton fixtures
    try:
        rc, stdout, _, out = run(args, root, bundle, tools, "pass", SK_GPU_TESTS="Passes$")
    finally:
        os.rename(triton + ".hidden", triton)
    summary = summary_of(stdout)
    check(f"gpu-check: no Triton fixtures in {triton}: bench_cuda skips its Triton table" in stdout,
          "a bundle without the Triton fixtures is said", stdout)
    bench = open(os.path.join(out, "bench-cuda.txt")).read()
    check("arguments: " in bench and "--triton" not in bench, "no --triton without the fixtures", bench)
    check(rc == 0, f"a clean run exits 0, not {rc}", stdout)
    check("CudaGpu tests: 2 ok, 0 failed, 0 timed out, 0 skipped, 0 not run (of 2)" in summary,
          "SK_GPU_TESTS picks the tests after the smoke test", summary)
    check(stdout.rstrip().endswith("gpu-check: OK"), "the verdict is the last line", summary)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    for option in ("--repo", "--fixture", "--info", "--driver", "--kernels"):
        parser.add_argument(option, required=True)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="sk-gpu-check-") as root:
        bundle, tools = make_bundle(root, args)
        for test in (test_a_run_with_every_outcome, test_a_failing_smoke_test_goes_straight_to_diagnostics,
                     test_a_run_where_everything_passes):
            before = len(failures)
            test(args, root, bundle, tools)
            print(("ok   " if len(failures) == before else "FAIL ") + test.__name__)
    if failures:
        print("\n\n".join(failures))
        sys.exit(1)


main()
