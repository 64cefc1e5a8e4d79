"""The errors of the `sk` commands that are not libsk's: each has its exit status (cli/__init__.py)."""


class InputError(Exception):
    """A file or description the user gave is missing or malformed (exit status 3)."""


class UsageError(Exception):
    """A bad command line (exit status 2)."""
