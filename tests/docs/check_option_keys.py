#!/usr/bin/env python3
"""The keys include/sk.h documents (its `@options` comments, which docs/options.md is made of)
are the keys the code parses: a key added to a parser without its documentation, or documented
but not parsed, fails this test, naming it. A device parser's key table (`SpecKey ...[]`: the
ranges and the names its unknown-key message lists) holds the same keys.

usage: check_option_keys.py REPO_ROOT
"""
import os
import re
import sys

# @options block of sk.h -> the source files whose `key == "..."` tests parse its keys.
PARSERS = {
    "Host device keys": ["src/host/host_device.cpp"],
    "CUDA device keys": ["src/cuda/cuda_device.cpp"],
    "Scope options": ["src/common/scope_options.cpp"],
}


def documented(header):
    """{block title: set of keys}: the backticked names an item starts with, and its aliases."""
    blocks = {}
    for m in re.finditer(r"/\*\*\s*\n\s*\* @options ([^\n]+)\n(.*?)\*/", header, re.S):
        body = re.sub(r"^\s*\* ?", "", m.group(2), flags=re.M)
        keys = set()
        for item in re.findall(r"^- .*(?:\n  .*)*", body, re.M):
            head = item.split(" (", 1)[0]
            keys |= set(re.findall(r"`([a-z_-]+)(?:=[^`]*)?`", head))
            keys |= set(re.findall(r"alias `([a-z_-]+)`", item))
        blocks[m.group(1).strip()] = keys
    return blocks


def parsed(root, paths):
    keys = set()
    for path in paths:
        keys |= set(re.findall(r'key == "([a-z_-]+)"', open(os.path.join(root, path)).read()))
    return keys


def tabled(root, paths):
    """The names of the `constexpr SpecKey k...[] = {...}` tables in `paths`; None without one."""
    keys = None
    for path in paths:
        text = open(os.path.join(root, path)).read()
        for table in re.findall(r"constexpr SpecKey \w+\[\] = \{(.*?)\n\};", text, re.S):
            keys = (keys or set()) | set(re.findall(r'\{"([a-z_-]+)"', table))
    return keys


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__.strip().splitlines()[-1])
    root = sys.argv[1]
    blocks = documented(open(os.path.join(root, "include", "sk.h")).read())
    problems = []
    for title, paths in PARSERS.items():
        if title not in blocks:
            problems.append(f"include/sk.h has no '@options {title}' comment")
            continue
        code = parsed(root, paths)
        if not code:
            problems.append(f"{', '.join(paths)}: no `key == \"...\"` tests found (parser moved?)")
        for key in sorted(code - blocks[title]):
            problems.append(f"{title}: '{key}' is parsed by {', '.join(paths)} but not documented")
        for key in sorted(blocks[title] - code):
            problems.append(f"{title}: '{key}' is documented in include/sk.h but not parsed")
        table = tabled(root, paths)
        if table is not None and table != code:
            problems.append(f"{title}: the SpecKey table of {', '.join(paths)} has "
                            f"{sorted(table ^ code)} where its parser differs")
    if problems:
        sys.exit("\n".join(problems))
    print("every documented key is parsed, every parsed key documented: "
          + ", ".join(f"{t} ({len(blocks[t])})" for t in PARSERS))


main()
