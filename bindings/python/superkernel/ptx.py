"""PTX text as Device.load takes it: telling text from a path. libsk reads and rewrites the PTX
itself (cuda/ptx_module.hpp); nothing here interprets it."""
import re

# Whitespace and comments PTX may begin with, as libsk's tokenizer skips them.
_LEADING = re.compile(r"(?:\s+|//[^\n]*|/\*.*?\*/)*", re.S)
_VERSION = re.compile(r"\.version(?![\w$.])")


def looks_like_ptx(text):
    """True for a str that begins, past whitespace and comments, with a `.version` directive:
    libsk's test for PTX bytes (nvcc -ptx and Triton write `.version` first). A file name does
    not begin so, which is what lets Device.load tell PTX text from a path."""
    return bool(_VERSION.match(text, _LEADING.match(text).end()))

