"""`sk devices [--json] [SPEC...]`: what each device would get here, and why.

For the host device: the cores a device opened with SPEC gets (default `host`: one per CPU this
process can use), beside the online CPUs and the CPUs of this process's affinity mask, and
which of them limits the default (the affinity mask, as taskset or a container's cpuset set it,
or the cgroup's CPU quota, as docker --cpus or a Kubernetes CPU limit set it). For CUDA: each GPU
`cuda:N` that opens, with its multiprocessors, or libsk's reason why none does (no driver, no
nvJitLink, no GPU). SPEC arguments open those devices instead (e.g. host:cores=4 cuda:1); a
SPEC that does not open is reported with libsk's message (exit 4).
"""
import json
import os


def add_parser(sub):
    p = sub.add_parser("devices", help="the cores each device gets here, and what limits them",
                       description=__doc__)
    p.add_argument("specs", nargs="*", metavar="SPEC",
                   help="device specs to open (default: host, then cuda:0, cuda:1...)")
    p.add_argument("--json", action="store_true", help="print one JSON object instead of text")
    p.set_defaults(run=run)


def host_cpus():
    """Online CPUs and the CPUs this process may run on (its affinity mask)."""
    allowed = sorted(os.sched_getaffinity(0))
    return os.cpu_count() or len(allowed), allowed


def cpu_list(cpus):
    """[0, 1, 2, 5] -> "0-2,5"."""
    runs, start = [], None
    for i, c in enumerate(cpus):
        if start is None:
            start = c
        if i + 1 == len(cpus) or cpus[i + 1] != c + 1:
            runs.append(f"{start}" if start == c else f"{start}-{c}")
            start = None
    return ",".join(runs)


def open_cores(sk, spec):
    """(cores, None) for a device that opens, (None, the sk.Error) for one that does not."""
    try:
        with sk.Device(spec) as dev:
            return dev.cores, None
    except (sk.LibraryNotFound, sk.VersionMismatch):  # no device at all: not a device's verdict
        raise
    except sk.Error as e:
        return None, e


def describe_host(sk, spec, online, allowed):
    cores, error = open_cores(sk, spec)
    entry = {"spec": spec, "backend": "host", "online_cpus": online, "allowed_cpus": allowed}
    if error is not None:
        entry["error"] = str(error)
        return entry, error
    entry["cores"] = cores
    if spec.split(":", 1)[0] == "host" and "cores=" not in spec:
        # The default: one core per usable CPU. Below the affinity mask, the quota cut it.
        entry["limited_by"] = "cgroup CPU quota" if cores < len(allowed) else \
            "affinity mask" if len(allowed) < online else "online CPUs"
    else:
        entry["limited_by"] = "cores= in the spec"
    return entry, None


def describe_cuda(sk):
    """cuda:0, cuda:1, ... until one does not open; the first failure says why when none does."""
    entries = []
    for n in range(64):
        cores, error = open_cores(sk, f"cuda:{n}")
        if error is not None:
            if not entries:
                entries.append({"spec": "cuda", "backend": "cuda", "error": str(error)})
            break
        entries.append({"spec": f"cuda:{n}", "backend": "cuda", "cores": cores})
    return entries


def cores_text(n):
    return f"{n} core" if n == 1 else f"{n} cores"


def text_line(entry):
    spec = entry["spec"]
    if "error" in entry:
        return f"{spec}: unavailable: {entry['error']}"
    if entry["backend"] == "cuda":
        return f"{spec}: {cores_text(entry['cores'])} (multiprocessors)"
    allowed = entry["allowed_cpus"]
    return (f"{spec}: {cores_text(entry['cores'])} ({entry['limited_by']}); CPUs: {entry['online_cpus']} "
            f"online, {len(allowed)} in this process's affinity mask ({cpu_list(allowed)})")


def run(args, out, err):
    import superkernel as sk
    online, allowed = host_cpus()
    entries, failed = [], None
    if args.specs:
        for spec in args.specs:
            if spec.split(":", 1)[0] == "host":
                entry, error = describe_host(sk, spec, online, allowed)
            else:
                cores, error = open_cores(sk, spec)
                entry = {"spec": spec, "backend": spec.split(":", 1)[0]}
                entry.update({"error": str(error)} if error else {"cores": cores})
            entries.append(entry)
            failed = failed or error
    else:
        entries.append(describe_host(sk, "host", online, allowed)[0])
        entries += describe_cuda(sk)
    if args.json:
        out.write(json.dumps({"devices": entries}, indent=2) + "\n")
    else:
        for entry in entries:
            out.write(text_line(entry) + "\n")
    if failed is not None:
        raise failed  # exit 4, with libsk's message on stderr
    return 0
