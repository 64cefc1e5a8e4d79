"""Arguments read by reference (sk_kernel_options.arg_refs): `Scope.add(k, n, out, Ref(pos))`
makes sub-kernel k read that argument from pos's memory each time it is called, in every launch,
instead of the value pos held at add(): an engine writes the next token's position there between
launches and never calls set_arg. The memory must outlive the super kernel (the super kernel
keeps the object alive) and hold a value of the parameter's type; on a CUDA device, memory the
GPU can read (a Buffer). `SuperKernel.set_arg(step, i, Ref(other))` moves the reference.
"""


class Ref:
    """The memory an argument is read from at every call: a ctypes object, a Buffer, an array
    with the buffer protocol or DLPack (numpy, torch), or an int address."""

    def __init__(self, target):
        self.target = target

    def __repr__(self):
        return f"Ref({self.target!r})"

