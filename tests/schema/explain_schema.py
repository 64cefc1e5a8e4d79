"""Validation of explain JSON (sk_superkernel_explain) against include/sk_explain.schema.json,
with python3-jsonschema. Imported by the Python and CLI tests (validate); run as a script it
checks every document the C and C++ tests wrote into a folder (explain.schema):

    explain_schema.py DIR [--backends host,cuda]

Exit status 1 if a document does not match, if DIR holds none, or if a backend named in
--backends wrote none. A document's steps past the first and last SAMPLE_STEPS are not checked:
every step has the same schema, and a 100000-step document would take most of the suite's time.
"""
import argparse
import functools
import json
import os
import sys

import jsonschema

SAMPLE_STEPS = 1000

SCHEMA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "include",
                      "sk_explain.schema.json")


@functools.lru_cache(maxsize=None)
def _validator():
    with open(SCHEMA) as f:
        schema = json.load(f)
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


def problems(doc):
    """What in `doc` does not match the schema, one line per mismatch (none: it matches)."""
    return [f"{'/'.join(map(str, e.absolute_path)) or '(document)'}: {e.message}"
            for e in sorted(_validator().iter_errors(doc), key=lambda e: list(map(str, e.absolute_path)))]


def validate(doc, what="explain JSON"):
    """Raises AssertionError naming every mismatch of `doc` (parsed JSON) with the schema."""
    found = problems(doc)
    if found:
        raise AssertionError(f"{what} does not match {os.path.normpath(SCHEMA)}:\n  " + "\n  ".join(found))


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("dir")
    parser.add_argument("--backends", default="", help="backends that must have written a document")
    args = parser.parse_args(argv)
    names = sorted(n for n in os.listdir(args.dir) if n.endswith(".json")) if os.path.isdir(args.dir) else []
    if not names:
        print(f"explain_schema: no explain documents in {args.dir}", file=sys.stderr)
        return 1
    bad, backends = 0, {}
    for name in names:
        path = os.path.join(args.dir, name)
        try:
            with open(path) as f:
                doc = json.load(f)
        except ValueError as e:
            print(f"{path}: not JSON: {e}", file=sys.stderr)
            bad += 1
            continue
        steps = doc.get("steps") if isinstance(doc, dict) else None
        if isinstance(steps, list) and len(steps) > 2 * SAMPLE_STEPS:
            doc["steps"] = steps[:SAMPLE_STEPS] + steps[-SAMPLE_STEPS:]
        found = problems(doc)
        for line in found if bad < 10 else []:  # the first documents show what is wrong
            print(f"{path}: {line}", file=sys.stderr)
        bad += bool(found)
        backend = doc.get("backend") if isinstance(doc, dict) else None
        backends[backend] = backends.get(backend, 0) + 1
    missing = [b for b in args.backends.split(",") if b and b not in backends]
    for b in missing:
        print(f"explain_schema: no document of backend {b!r} in {args.dir}", file=sys.stderr)
    print(f"explain_schema: {len(names)} documents ({', '.join(f'{n} {b}' for b, n in sorted(backends.items(), key=str))}), "
          f"{bad} not matching {os.path.normpath(SCHEMA)}")
    return 1 if bad or missing else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
