"""Turning an sk_status into the exception of errors.py that carries sk_last_error()."""
from ._lib import lib
from .checks import c_text
from .errors import BY_STATUS, Error


def check(status, call):
    """Raises the exception of `status` (with sk_last_error()) unless it is SK_OK."""
    if status == 0:
        return
    library = lib()
    message = c_text(library.sk_last_error())
    name = library.sk_status_name(status).decode()
    raise BY_STATUS.get(status, Error)(message, status=status, status_name=name, call=call)
