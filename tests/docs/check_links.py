#!/usr/bin/env python3
"""Checks the repository's Markdown links, and that no file points outside the repository.

    python3 tests/docs/check_links.py [REPO_ROOT]

Every relative link in every Markdown file of the repository (tracked, or new and not ignored)
must name a file or folder of the repository, and an `#anchor` must name a heading of its
Markdown target (GitHub's slugs). No file may cite the vendor digest or the folder beside the
checkout that the repository never ships. Each problem is printed as `file:line: target (why)`;
the exit status is 1 when there is one.
"""
import os
import re
import subprocess
import sys
import unicodedata
from urllib.parse import unquote

# Spelled in pieces so that this file does not name what it forbids.
FORBIDDEN = ("SEMANTICS" + ".md", ".." + "/shared")
# Folders the fallback walk (no git) leaves out: build trees and tool state, as .gitignore does.
SKIP_DIRS = re.compile(r"^(build.*|\..*|__pycache__|out|venv)$")

FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
CODE_SPAN = re.compile(r"(`+)((?:(?!\n[ \t]*\n).)+?)(?<!`)\1(?!`)", re.S)
INLINE_LINK = re.compile(
    r"!?\[((?:[^\[\]]|\[[^\[\]]*\])*)\]"  # [text], one level of nested brackets
    r"\(\s*(<[^>\n]*>|[^\s()]*(?:\([^\s()]*\)[^\s()]*)*)"  # (target
    r"(?:\s+(?:\"[^\"]*\"|'[^']*'|\([^)]*\)))?\s*\)")  # "title")
REFERENCE_DEF = re.compile(r"^ {0,3}\[[^\]]+\]:\s*(\S+)", re.M)
HEADING = re.compile(r"^ {0,3}(#{1,6})[ \t]+(.*?)(?:[ \t]+#+)?[ \t]*$")
HTML_ANCHOR = re.compile(r"<a\s[^>]*(?:name|id)=\"([^\"]+)\"", re.I)
SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:|^//")


def repository_files(root):
    """Paths (relative, '/'-separated) of the files git knows or would add; a walk without git."""
    try:
        out = subprocess.run(["git", "-C", root, "ls-files", "-z", "--cached", "--others",
                              "--exclude-standard"], capture_output=True, check=True).stdout
        files = [p for p in out.decode("utf-8", "surrogateescape").split("\0") if p]
    except (OSError, subprocess.CalledProcessError):
        files = []
        for top, dirs, names in os.walk(root):
            dirs[:] = [d for d in dirs if not SKIP_DIRS.match(d)]
            rel = os.path.relpath(top, root)
            files += [n if rel == "." else f"{rel}/{n}".replace(os.sep, "/") for n in names]
    return sorted(p for p in files if os.path.isfile(os.path.join(root, p)))


def blank_fences(text):
    """The text with fenced code blocks emptied (their lines kept), so that what they show is
    not read as headings or links and offsets keep their line numbers."""
    lines, fence = text.split("\n"), None
    for i, line in enumerate(lines):
        m = FENCE.match(line)
        if fence is None and m:
            fence = m.group(1)
            lines[i] = ""
        elif fence is not None:
            if m and m.group(1)[0] == fence[0] and len(m.group(1)) >= len(fence) \
                    and not line.strip()[len(m.group(1)):].strip():
                fence = None
            lines[i] = ""
    return "\n".join(lines)


def blank_code(text):
    """blank_fences, and code spans replaced by spaces: what they show is not a link."""
    return CODE_SPAN.sub(lambda m: re.sub(r"[^\n]", " ", m.group(0)), blank_fences(text))


def slug(heading):
    """GitHub's anchor for a heading: the rendered text lowercased, punctuation other than '-'
    and '_' dropped, each space a '-'."""
    text = re.sub(r"!?\[((?:[^\[\]]|\[[^\[\]]*\])*)\]\([^)]*\)", r"\1", heading)  # links: text
    text = re.sub(r"<[^>]+>", "", text)  # inline HTML
    kept = []
    for c in text.strip().lower():
        if c in " -_" or c.isalnum() or unicodedata.category(c)[0] in "MN" \
                or unicodedata.category(c) == "Pc":
            kept.append(c)
    return "".join(kept).replace(" ", "-")


def anchors(text):
    """Every anchor a Markdown text has: its headings' slugs (repeats get -1, -2, ...) and
    explicit HTML anchors."""
    found, seen = set(), {}
    body = blank_fences(text)  # a heading's code spans are part of its slug
    for line in body.split("\n"):
        m = HEADING.match(line)
        if not m:
            continue
        base = slug(m.group(2))
        n = seen.get(base, 0)
        seen[base] = n + 1
        found.add(base if n == 0 else f"{base}-{n}")
    found.update(HTML_ANCHOR.findall(text))
    return found


def links(text):
    """(line, target) of every inline link, image and reference definition outside code."""
    body = blank_code(text)
    for m in INLINE_LINK.finditer(body):
        target = m.group(2)
        if target.startswith("<"):
            target = target[1:-1]
        yield body.count("\n", 0, m.start(2)) + 1, target
    for m in REFERENCE_DEF.finditer(body):
        yield body.count("\n", 0, m.start(1)) + 1, m.group(1).strip("<>")


def check(root):
    files = repository_files(root)
    known = set(files)
    folders = {"."}
    for p in files:
        parts = p.split("/")
        folders.update("/".join(parts[:i]) for i in range(1, len(parts)))
    problems, anchor_cache, checked = [], {}, 0

    def anchors_of(path):
        if path not in anchor_cache:
            with open(os.path.join(root, path), encoding="utf-8", errors="replace") as f:
                anchor_cache[path] = anchors(f.read())
        return anchor_cache[path]

    for path in files:
        if path.endswith(".md"):
            with open(os.path.join(root, path), encoding="utf-8", errors="replace") as f:
                text = f.read()
            for line, target in links(text):
                if not target or SCHEME.match(target):
                    continue  # an empty link, or a URL: nothing in the repository to check
                checked += 1
                where, _, anchor = target.partition("#")
                where = unquote(where)
                if not where:
                    resolved = path
                elif where.startswith("/"):
                    resolved = os.path.normpath(where.lstrip("/"))
                else:
                    resolved = os.path.normpath(os.path.join(os.path.dirname(path), where))
                resolved = resolved.replace(os.sep, "/")
                if resolved == ".." or resolved.startswith("../"):
                    problems.append(f"{path}:{line}: {target} (outside the repository)")
                elif resolved not in known and resolved not in folders:
                    problems.append(f"{path}:{line}: {target} (no such file in the repository)")
                elif anchor and resolved.endswith(".md") and resolved in known \
                        and unquote(anchor) not in anchors_of(resolved):
                    problems.append(f"{path}:{line}: {target} (no heading '{anchor}' in {resolved})")
        try:
            with open(os.path.join(root, path), "rb") as f:
                data = f.read()
        except OSError as e:
            problems.append(f"{path}:0: ({e.strerror})")
            continue
        if b"\0" in data[:8192]:
            continue  # binary
        for needle in FORBIDDEN:
            start = 0
            while (at := data.find(needle.encode(), start)) >= 0:
                line = data.count(b"\n", 0, at) + 1
                problems.append(f"{path}:{line}: {needle} (names something outside the repository)")
                start = at + 1
    return problems, checked, sum(p.endswith(".md") for p in files)


def main(argv):
    if len(argv) > 2 or (len(argv) == 2 and argv[1].startswith("-")):
        print("usage: check_links.py [REPO_ROOT]", file=sys.stderr)
        return 2
    root = argv[1] if len(argv) == 2 else os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                                         "..", "..")
    root = os.path.abspath(root)
    if not os.path.isdir(root):
        print(f"check_links.py: {root}: not a folder", file=sys.stderr)
        return 2
    problems, checked, documents = check(root)
    for p in problems:
        print(p)
    if problems:
        print(f"{len(problems)} problem(s) in the documentation's links", file=sys.stderr)
        return 1
    print(f"{checked} relative links in {documents} Markdown files resolve")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
