"""`sk run SCOPE.json` and `sk explain SCOPE.json`: a scope described in JSON, run fused and
unfused and compared, or only planned."""

RUN_DESCRIPTION = """\
Runs the scope of SCOPE.json unfused (one sk_launch_kernel per kernel) and fused (one sk_launch
of the super kernel), side by side on two copies of the buffers filled alike, compares every
buffer bit for bit, and prints the plan and both timings (medians). Exit status 1 if the
outputs differ. With --capture the fused super kernel is the one captured from the unfused
launches (Device.capture) instead of the one sk_add_kernel builds.
"""
import json
import statistics
import time

from .errors import UsageError
from .plan_text import print_plan
from .scope_file import CAPTURE_HELP, Instance, ScopeSpec


def add_parsers(sub):
    common = dict(formatter_class=__import__("argparse").RawDescriptionHelpFormatter)
    e = sub.add_parser("explain", help="print the plan of a scope described in JSON",
                       description="Builds the scope of SCOPE.json into a super kernel and prints "
                                   "its plan (sk_superkernel_explain): sub-kernels, block dims, "
                                   "cores, sync points, device-API use. Nothing runs.\n\n"
                                   "The JSON format: see `sk run --help`.", **common)
    e.add_argument("scope", help="scope description (JSON)")
    e.add_argument("--device", help="device spec, overriding the file's \"device\"")
    e.add_argument("--objects-dir", metavar="DIR",
                      help="resolve relative object paths against DIR, not the file's folder")
    e.add_argument("--json", action="store_true", help="print the explain JSON as is")
    e.add_argument("--capture", action="store_true", help=CAPTURE_HELP)
    e.set_defaults(run=explain)

    from . import scope_file
    r = sub.add_parser("run", help="run a scope fused and unfused, compare, time",
                       description=RUN_DESCRIPTION + "\n" + scope_file.__doc__, **common)
    r.add_argument("scope", help="scope description (JSON)")
    r.add_argument("--device", help="device spec, overriding the file's \"device\"")
    r.add_argument("--objects-dir", metavar="DIR",
                      help="resolve relative object paths against DIR, not the file's folder")
    r.add_argument("--repeat", type=int, help="timed runs of each (default: the file's, or 10)")
    r.add_argument("--json", action="store_true", help="print a JSON summary instead of text")
    r.add_argument("--capture", action="store_true", help=CAPTURE_HELP + "; it is what runs fused")
    r.set_defaults(run=run)


def explain(args, out, err):
    import superkernel as sk
    spec = ScopeSpec(args.scope, args.objects_dir)
    with sk.Device(args.device or spec.device) as dev:
        inst = Instance(spec, dev, copies=1)
        with inst.build(0, args.capture) as fused:
            if args.json:
                out.write(fused.explain_json() + "\n")
            else:
                print_plan(fused.explain(), out)
    return 0


def _first_difference(a, b):
    """(index, unfused value, fused value) of the first element whose bytes differ."""
    import ctypes
    size, ba, bb = ctypes.sizeof(a._type_), bytes(a), bytes(b)
    for i in range(len(a)):
        if ba[i * size:(i + 1) * size] != bb[i * size:(i + 1) * size]:
            return i, a[i], b[i]
    return None


def run(args, out, err):
    import superkernel as sk
    spec = ScopeSpec(args.scope, args.objects_dir)
    repeat = spec.repeat if args.repeat is None else args.repeat
    if repeat < 1:
        raise UsageError("--repeat must be >= 1")
    with sk.Device(args.device or spec.device) as dev:
        inst = Instance(spec, dev, copies=2)  # copy 0: unfused, copy 1: fused
        t0 = time.perf_counter()
        fused = inst.build(1, args.capture)
        build_us = (time.perf_counter() - t0) * 1e6
        unfused = inst.unfused_launcher(0)
        times = ([], [])
        for _ in range(repeat):  # interleaved: machine noise hits both alike
            t0 = time.perf_counter()
            unfused()
            dev.synchronize()
            times[0].append((time.perf_counter() - t0) * 1e6)
            t0 = time.perf_counter()
            fused.launch()
            dev.synchronize()
            times[1].append((time.perf_counter() - t0) * 1e6)
        diffs = {}
        for name in spec.compare:
            a, b = inst.contents(0, name), inst.contents(1, name)
            if bytes(a) != bytes(b):
                diffs[name] = _first_difference(a, b)
        plan = fused.explain()
        fused.close()
    n = len(spec.kernels)
    med = [statistics.median(t) for t in times]
    summary = {"scope": spec.name, "kernels": n, "repeat": repeat,
               "built_by": "capture" if args.capture else "scope", "build_us": build_us,
               "unfused_us": med[0], "fused_us": med[1],
               "saved_per_kernel_us": (med[0] - med[1]) / n,
               "speedup": med[0] / med[1] if med[1] else None,
               "compared": spec.compare, "identical": not diffs,
               "differences": {k: {"index": v[0], "unfused": v[1], "fused": v[2]}
                               for k, v in diffs.items()}}
    if args.json:
        json.dump(summary, out, indent=2)
        out.write("\n")
    else:
        print_plan(plan, out, limit=40)
        how = "captured from the unfused launches" if args.capture else "built"
        out.write(f"\n{how} in {build_us:.0f} us; {repeat} runs of each, medians:\n")
        out.write(f"  unfused  {med[0]:10.1f} us/run  ({n} launches + 1 sync; each launch one "
                  "ctypes call)\n")
        out.write(f"  fused    {med[1]:10.1f} us/run  (1 launch + 1 sync)\n")
        out.write(f"  saved    {summary['saved_per_kernel_us']:10.2f} us per kernel; "
                  f"speed-up {summary['speedup']:.2f}x\n")
        if diffs:
            for name, (i, x, y) in diffs.items():
                out.write(f"  MISMATCH in buffer {name!r} at element {i}: unfused {x!r}, "
                          f"fused {y!r}\n")
        else:
            out.write(f"  outputs: bit-identical ({', '.join(spec.compare) or 'no buffers'})\n")
    if diffs:
        err.write(f"sk run: {spec.path}: fused and unfused outputs differ in "
                  f"{', '.join(diffs)}\n")
        return 1
    return 0
