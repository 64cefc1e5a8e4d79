"""`sk trace SCOPE.json`: runs the scope fused with profiling=1 and writes the profile of the
last launch as Chrome trace-event JSON (sk_superkernel_write_trace; open it in
ui.perfetto.dev or chrome://tracing) and as an SVG timeline: one row per core, one box per
sub-kernel; the grey lead-in before a box is the time the core waited for the sub-kernel's
inputs (ready -> start), the red bar under a box the time spent inside runtime waits
(sk_sync_all, flags, task overlap) while it ran.
"""
import html

from .scope_file import CAPTURE_HELP, Instance, ScopeSpec


def add_parser(sub):
    p = sub.add_parser("trace", help="profile a fused run; write Chrome trace JSON and SVG",
                       description=__doc__)
    p.add_argument("scope", help="scope description (JSON; see `sk run --help`)")
    p.add_argument("-o", "--output", default=None,
                   help="output path without extension (default: the scope file's, beside it): "
                        "writes OUTPUT.json and OUTPUT.svg")
    p.add_argument("--device", help="device spec, overriding the file's \"device\"")
    p.add_argument("--objects-dir", metavar="DIR",
                      help="resolve relative object paths against DIR, not the file's folder")
    p.add_argument("--warmup", type=int, default=3, help="launches before the profiled one")
    p.add_argument("--capture", action="store_true", help=CAPTURE_HELP)
    p.set_defaults(run=run)


def run(args, out, err):
    import os

    import superkernel as sk
    spec = ScopeSpec(args.scope, args.objects_dir)
    base = args.output or os.path.splitext(args.scope)[0] + ".trace"
    with sk.Device(args.device or spec.device) as dev:
        inst = Instance(spec, dev, copies=1)
        with inst.build(0, args.capture, "profiling=1") as fused:
            for _ in range(max(0, args.warmup) + 1):
                fused.launch()
                dev.synchronize()
            records = fused.profile()
            fused.write_trace(base + ".json")
            names = [s["name"] for s in fused.explain()["steps"]]
    with open(base + ".svg", "w") as f:
        f.write(svg_timeline(records, names, spec.name))
    cores = sorted({r.core for r in records})
    t0 = min(r.ready_ns for r in records)
    span = max(r.end_ns for r in records) - t0
    out.write(f"profiled launch of {spec.name!r}: {len(names)} sub-kernels on {len(cores)} "
              f"cores, {span / 1000:.1f} us\n")
    for c in cores:
        mine = [r for r in records if r.core == c]
        busy = sum(r.end_ns - r.start_ns for r in mine)
        ready_wait = sum(r.start_ns - r.ready_ns for r in mine)
        sync = sum(r.sync_wait_ns for r in mine)
        out.write(f"  core {c}: {len(mine)} sub-kernels, running {busy / 1000:.1f} us, waiting "
                  f"for inputs {ready_wait / 1000:.1f} us, in runtime waits {sync / 1000:.1f} us\n")
    out.write(f"wrote {base}.json (Chrome trace) and {base}.svg (timeline)\n")
    return 0


PALETTE = ["#4e79a7", "#f28e2b", "#59a14f", "#b07aa1", "#76b7b2", "#edc948", "#9c755f",
           "#ff9da7", "#8cd17d", "#86bcb6"]


def svg_timeline(records, names, title):
    """SVG: a row per core, a box per (sub-kernel, core); waits drawn as described above."""
    if not records:
        return '<svg xmlns="http://www.w3.org/2000/svg" width="400" height="40"><text x="10" ' \
               'y="25">no profile records</text></svg>\n'
    cores = sorted({r.core for r in records})
    t0 = min(r.ready_ns for r in records)
    span = max(1, max(r.end_ns for r in records) - t0)
    left, width, row, top = 90, 1200, 34, 40
    scale = width / span
    height = top + row * len(cores) + 50
    kinds = {}
    for s, n in enumerate(names):  # same kernel kind (name before ".layer"), same colour
        kinds.setdefault(n.split(".")[0], PALETTE[len(kinds) % len(PALETTE)])
    e = html.escape
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{left + width + 20}" '
             f'height="{height}" font-family="sans-serif" font-size="11">',
             f'<text x="10" y="20" font-size="14">{e(title)}: {len(names)} sub-kernels, '
             f'{span / 1000:.1f} us (grey: waiting for inputs; red: runtime waits)</text>']
    for i, c in enumerate(cores):
        y = top + i * row
        parts.append(f'<text x="10" y="{y + 18}">core {c}</text>'
                     f'<line x1="{left}" y1="{y + row - 2}" x2="{left + width}" '
                     f'y2="{y + row - 2}" stroke="#ddd"/>')
    for r in records:
        y = top + cores.index(r.core) * row
        name = names[r.step] if r.step < len(names) else f"step {r.step}"
        xr, xs, xe = (left + (t - t0) * scale for t in (r.ready_ns, r.start_ns, r.end_ns))
        if xs - xr > 0.2:
            parts.append(f'<rect x="{xr:.2f}" y="{y + 4}" width="{xs - xr:.2f}" height="22" '
                         f'fill="#bbb"><title>{e(name)}: waiting for inputs '
                         f'{(r.start_ns - r.ready_ns) / 1000:.2f} us</title></rect>')
        w = max(xe - xs, 0.5)
        parts.append(f'<rect x="{xs:.2f}" y="{y + 4}" width="{w:.2f}" height="22" '
                     f'fill="{kinds.get(name.split(".")[0], "#888")}" stroke="#fff" '
                     f'stroke-width="0.3"><title>{e(name)} (step {r.step}, core {r.core}, '
                     f'{r.blocks} blocks): {(r.end_ns - r.start_ns) / 1000:.2f} us, runtime '
                     f'waits {r.sync_wait_ns / 1000:.2f} us</title></rect>')
        if r.sync_wait_ns:
            sw = max(r.sync_wait_ns * scale, 0.5)
            parts.append(f'<rect x="{xs:.2f}" y="{y + 26}" width="{sw:.2f}" height="4" '
                         f'fill="#d62728"/>')
        if w > 40:
            parts.append(f'<text x="{xs + 2:.2f}" y="{y + 19}" fill="#fff">{e(name)}</text>')
    for ms in range(0, 11):
        x = left + width * ms / 10
        parts.append(f'<text x="{x:.1f}" y="{height - 20}" text-anchor="middle">'
                     f'{span * ms / 10 / 1000:.1f}</text>')
    parts.append(f'<text x="{left + width / 2}" y="{height - 5}" text-anchor="middle">us</text>')
    parts.append("</svg>\n")
    return "\n".join(parts)

