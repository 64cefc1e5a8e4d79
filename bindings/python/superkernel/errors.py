"""Exceptions: one class per sk_status, each carrying the message of sk_last_error()."""
import os

from .checks import message_text


class Error(Exception):
    """A libsk call failed. `status` is the sk_status value, `status_name` its name ("SK_ERR_...")
    and `message` what sk_last_error() said (it names the culprit)."""

    status = None

    def __init__(self, message, status=None, status_name=None, call=None):
        super().__init__(message)
        self.message = message
        if status is not None:
            self.status = status
        self.status_name = status_name
        self.call = call

    def __str__(self):
        prefix = f"{self.call}: " if self.call else ""
        name = f"{self.status_name}: " if self.status_name else ""
        return f"{prefix}{name}{self.message}"


class LibraryNotFound(Error, ImportError):
    """libsk.so.0 could not be loaded from any place of the lookup order."""


class VersionMismatch(Error, ImportError):
    """The loaded libsk is not a version this binding was written for."""


class InvalidArgument(Error, ValueError):
    status = 1


class BadBinary(Error):
    status = 2


class Unsupported(Error):
    status = 3


class NotFound(Error, LookupError):
    status = 4


class FileNotReadable(NotFound, OSError):
    """A kernel object file that cannot be opened or read: NotFound, as libsk's
    sk_module_load_file says of it, and an OSError with the errno, strerror and filename (the
    message shows the path's bytes that are not UTF-8 as \\xNN, as libsk's do)."""

    def __init__(self, error, path, call=None):
        name = message_text(os.fsencode(path))
        super().__init__(f"{name}: {error.strerror or error}", status=self.status, call=call)
        self.errno, self.strerror, self.filename = error.errno, error.strerror, os.fsdecode(path)


class Incompatible(Error):
    status = 5


class OutOfMemory(Error, MemoryError):
    status = 6


class DeviceError(Error):
    status = 7


class Hang(Error):
    status = 8


class StateError(Error):
    status = 9


class KernelError(Error):
    """An exception escaped a kernel (the launch failed) or a constructor (the load failed)."""
    status = 10


BY_STATUS = {cls.status: cls for cls in (InvalidArgument, BadBinary, Unsupported, NotFound,
                                          Incompatible, OutOfMemory, DeviceError, Hang,
                                          StateError, KernelError)}

