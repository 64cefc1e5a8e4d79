"""PTX text as Device.load takes it: telling text from a path, and reading the names of an
entry's parameters (for messages). libsk reads and rewrites the PTX itself (cuda/ptx_module.hpp);
nothing here interprets the code."""
import re

# Whitespace and comments PTX may begin with, as libsk's tokenizer skips them.
_LEADING = re.compile(r"(?:\s+|//[^\n]*|/\*.*?\*/)*", re.S)
_VERSION = re.compile(r"\.version(?![\w$.])")


def looks_like_ptx(text):
    """True for a str that begins, past whitespace and comments, with a `.version` directive:
    libsk's test for PTX bytes (nvcc -ptx and Triton write `.version` first). A file name does
    not begin so, which is what lets Device.load tell PTX text from a path."""
    return bool(_VERSION.match(text, _LEADING.match(text).end()))


def entry_params(text, name):
    """The names of the parameters of `.entry name(...)` in PTX `text`, in order, or None when
    the text has no such entry (the caller then names parameters by index)."""
    entry = re.search(r"\.entry\s+" + re.escape(name) + r"\s*\(([^)]*)\)", text)
    if entry is None:
        return None
    if not entry.group(1).strip():
        return []
    params = []
    for decl in entry.group(1).split(","):
        words = decl.split()
        if not words:
            return None
        params.append(re.sub(r"\[\d*\]$", "", words[-1]))  # a byte array: x_param_4[12]
    return params
