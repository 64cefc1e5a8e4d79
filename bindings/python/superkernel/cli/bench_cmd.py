"""`sk bench [ARGS...]` (or `sk bench -- ARGS...`): runs sk-bench, the side-by-side benchmark (fused vs unfused vs OpenMP
vs a condition-variable pool vs the spin-barrier floor), passing ARGS through (--quick,
--cores 2,16, --only SCENARIO, --device KEYS, --json FILE; `sk bench -- --help` lists the
scenarios). sk-bench is looked up in $SK_BENCH, beside the `sk` command, in the build tree the
command came from, then on PATH."""
import os
import shutil
import subprocess

from .errors import InputError


def add_parser(sub):
    p = sub.add_parser("bench", help="run the benchmark (sk-bench); arguments pass through",
                       description=__doc__, add_help=True)
    p.add_argument("bench_args", nargs="...", help="arguments for sk-bench (see sk bench -- --help)")
    p.set_defaults(run=run)


def find_sk_bench():
    candidates = [os.environ.get("SK_BENCH")]
    here = os.environ.get("SK_TOOL_DIR")  # set by the `sk` launcher: where it lies
    if here:
        candidates += [os.path.join(here, "sk-bench"),
                       os.path.join(here, "..", "bench", "sk-bench")]  # build tree: tools/ ..
    candidates.append(shutil.which("sk-bench"))
    for c in candidates:
        if c and os.path.isfile(c) and os.access(c, os.X_OK):
            return c
    return None


def run(args, out, err):
    exe = find_sk_bench()
    if exe is None:
        raise InputError("sk-bench not found ($SK_BENCH, beside sk, the build tree's bench/, "
                         "PATH); build it with `cmake --build build --target sk-bench`")
    bench_args = [a for a in args.bench_args if a != "--"] if args.bench_args[:1] == ["--"] \
        else args.bench_args
    out.flush()
    return subprocess.call([exe] + bench_args)
