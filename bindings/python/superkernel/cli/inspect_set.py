"""`sk inspect` of several files or of an archive: each object described as for one file, each
archive as its members, then the set linked by libsk as one module (sk_module_load_files) and
the kernels that module has: a kernel of an archive member no object needs is not linked."""
import json

import superkernel as sk

from ..object_file import AR_MAGIC, extern_names
from .errors import InputError
from .inspect_object import content_hash, describe, print_text


def _describe_archive(path, image):
    algo, digest = content_hash(image)
    members = [{"name": m["name"], "bytes": m["bytes"], "kernels": sorted(k["name"] for k in m["kernels"])}
               for m in sk.inspect_module(image, "host", path)["members"]]
    return {"file": path, "archive": True, "bytes": len(image),
            "hash": {"algorithm": algo, "value": digest}, "members": members}


def _link(files, sources, spec):
    names = []
    for f in files:
        if f.get("script"):
            continue
        names += [k for m in f["members"] for k in m["kernels"]] if f.get("archive") else \
            [k["name"] for k in f["kernels"]]
    linked, not_linked = [], []
    with sk.Device(spec) as dev:
        with dev.load(sources) as mod:
            for name in dict.fromkeys(names):
                try:
                    mod.kernel(name)
                    linked.append(name)
                except sk.NotFound:
                    not_linked.append(name)
    return {"spec": spec, "result": f"loads and links as one module; {len(linked)} kernel(s)",
            "kernels": linked, "not_linked": not_linked}


def run_set(args, inputs, out):
    """`inputs`: (path, regular, bytes) of each file, read once (a pipe cannot be read twice)."""
    files, sources = [], []
    for path, regular, image in inputs:
        externs = None if image.startswith(AR_MAGIC) else extern_names(image)
        if image.startswith(AR_MAGIC):
            files.append(_describe_archive(path, image))
        elif externs is not None:
            files.append({"file": path, "script": True, "externs": externs})
        else:
            try:
                d = describe(path, image)
            except ValueError as e:
                raise InputError(str(e)) from None
            d["device_api_source"] = "libsk's reading of the code"
            files.append(d)
        sources.append(path if regular else image)  # a pipe can be read only once
    # Archives alone link nothing (members are linked when an object or a script's EXTERN
    # needs them): not loaded.
    only_archives = all(f.get("archive") for f in files)
    result = {"files": files, "link": None if only_archives else _link(files, sources, args.load or "host")}
    if args.json:
        json.dump(result, out, indent=2)
        out.write("\n")
        return 0
    for f in files:
        if f.get("script"):
            out.write(f"{f['file']}: linker script, EXTERN {' '.join(f['externs'])}\n")
        elif f.get("archive"):
            out.write(f"{f['file']}: ar archive, {len(f['members'])} members, {f['bytes']} bytes\n")
            out.write(f"content hash ({f['hash']['algorithm']}): {f['hash']['value']}\n")
            for m in f["members"]:
                if m["kernels"]:
                    out.write(f"  {m['name']}: kernels {', '.join(m['kernels'])}\n")
        else:
            print_text(f, out)
        out.write("\n")
    link = result["link"]
    if link is None:
        out.write("not linked: archives alone link nothing (a member is linked when an object of "
                  "the set needs it; name the objects too, or a linker script holding "
                  "EXTERN(symbol ...))\n")
        return 0
    out.write(f"libsk ({link['spec']}), all {len(files)} file(s) as one module: {link['result']}\n")
    out.write(f"  kernels: {', '.join(link['kernels']) or 'none'}\n")
    if link["not_linked"]:
        out.write(f"  recorded but not linked (no object needs their member): "
                  f"{', '.join(link['not_linked'])}\n")
    return 0
