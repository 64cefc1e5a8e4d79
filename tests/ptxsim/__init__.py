"""A functional simulator of PTX for tests on machines without a GPU (machine.py says what it
models and what it does not)."""
from .machine import Hang, Simulator
from .ptx_text import PtxError

__all__ = ["Hang", "PtxError", "Simulator"]
