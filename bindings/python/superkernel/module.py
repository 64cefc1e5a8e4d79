"""Module (a loaded kernel object) and Kernel (one kernel of it)."""
import ctypes
import os

from ._lib import KERNEL_DESC_COOPERATIVE, KernelDesc, lib
from .args import PackedArgs, parse_signature
from .checks import blocks_and_grid, c_path, c_string, c_text, instance, integer, message_text
from .errors import BadBinary, Error, FileNotReadable, NotFound, StateError, Unsupported
from .handle import Handle
from .metadata import declared_kernels, kernel_core_type, kernel_signature
from .module_set import load_set
from .object_file import ObjectFileError, is_regular, read_object
from .ptx import looks_like_ptx
from .status import check
from .stream import Stream

_FILE_ERRORS = {"empty": BadBinary, "not-elf": BadBinary, "too-large": Unsupported,
                "not-a-file": NotFound}  # the classes of libsk's verdicts on such files


def read_for_load(path, call="Device.load"):
    """The bytes of the object at path, or the exception libsk would raise for the file."""
    try:
        return read_object(path)
    except ObjectFileError as e:
        raise _FILE_ERRORS[e.kind](str(e), call=call) from None
    except OSError as e:  # as libsk's sk_module_load_file: a file it cannot open is NOT_FOUND
        raise FileNotReadable(e, path, call=call) from None


def _is_regular(path):
    try:
        return is_regular(path)
    except OSError as e:
        raise FileNotReadable(e, path, call="Device.load") from None


#: What Device.load's `kind` may say: None (told from the source) or "ptx" (PTX text).
LOAD_KINDS = (None, "ptx")


def ptx_source(source, kind):
    """The bytes of PTX text Device.load was given, or None when `source` is an object, a path
    or a list. A str is PTX text when it reads as PTX (ptx.looks_like_ptx), else a path;
    kind="ptx" says it is text (a str or bytes), and text that does not read as PTX is refused."""
    if kind not in LOAD_KINDS:
        raise ValueError(f"Device.load kind: {kind!r} is not one of "
                         f"{', '.join(map(repr, LOAD_KINDS))}")
    if kind is None:
        return source.encode() if isinstance(source, str) and looks_like_ptx(source) else None
    if isinstance(source, str):
        text = source
    else:
        try:
            text = bytes(memoryview(source)).decode("utf-8")
        except TypeError:
            raise TypeError(f"Device.load: kind='ptx' takes PTX text (str or bytes), not "
                            f"{type(source).__name__}") from None
        except UnicodeDecodeError as e:
            raise BadBinary(f"kind='ptx' but byte {e.start} is not UTF-8 text",
                            call="Device.load") from None
    if not looks_like_ptx(text):
        raise BadBinary("kind='ptx' but the text does not begin with a .version "
                        "directive (PTX does)", call="Device.load")
    return text.encode()


class Module(Handle):
    """A kernel object loaded on a device (sk_module_load). `kernels` maps each kernel the module
    declares (SK_KERNEL metadata, as libsk read it) and defines to {"sig", "type"}."""

    def __init__(self, device, source, kind=None):
        self.device = device
        out = ctypes.c_void_p()
        text = ptx_source(source, kind)
        if text is not None:  # PTX text: libsk tells it from an object by its `.version`
            if device.is_host:  # where libsk would only say it is no ELF object
                raise BadBinary(f"PTX text loads on a CUDA device (cuda:N), not {device.spec!r}",
                                call="Device.load")
            self.path = None
            check(lib().sk_module_load(device.handle, text, len(text), ctypes.byref(out)),
                  "sk_module_load (PTX text)")
        elif isinstance(source, (list, tuple)):  # several objects and archives as one module
            self.path = None
            load_set(device, source, out, read_for_load, _is_regular)
        elif isinstance(source, (str, os.PathLike)):
            self.path = os.fspath(source)
            raw_path = c_path(source, "Device.load path")
            shown = message_text(raw_path)
            if _is_regular(raw_path):
                # libsk checks the size before reading and its plan and messages name the file.
                check(lib().sk_module_load_file(device.handle, raw_path, ctypes.byref(out)),
                      f"sk_module_load_file ({shown})")
            else:  # a pipe can be read once: read it here (bounded), hand libsk the bytes
                image = read_for_load(raw_path)
                check(lib().sk_module_load(device.handle, image, len(image), ctypes.byref(out)),
                      f"sk_module_load ({shown})")
        else:
            try:
                image = bytes(memoryview(source))
            except TypeError:
                raise TypeError(f"Device.load: needs a path (str or os.PathLike) or the bytes of "
                                f"an object, not {type(source).__name__}") from None
            self.path = None
            if not image:
                raise BadBinary("Device.load: the image is empty (0 bytes)", call="Device.load")
            check(lib().sk_module_load(device.handle, image, len(image), ctypes.byref(out)),
                  "sk_module_load")
        super().__init__(out.value, device)
        # Names that are not UTF-8 are shown with \xNN (as libsk shows them): the bytes of
        # each such name, which Module.kernel passes on when given the name shown.
        self._raw_names = {}
        self._declared = []
        for raw in declared_kernels(self.handle):
            name = c_text(raw)
            if name.encode() != raw:
                self._raw_names[name] = raw
            self._declared.append(name)
        self._kernels = None

    @property
    def kernels(self):
        """{name: {"sig", "type"}} of each kernel the module declares that Module.kernel(name)
        takes, read on first use: each is taken then (a shared library's thousands of kernels
        read every translation unit, where loading reads only their names)."""
        if self._kernels is None:
            kernels = {}
            for name in self._declared:
                try:
                    kernel = self.kernel(name)
                except Error:  # declared but not linked, or needs its launch facts: kernel(name) says
                    continue
                kernels[name] = {"sig": kernel.signature, "type": kernel.core_type}
            self._kernels = kernels
        return self._kernels

    def _destroy(self, handle):
        lib().sk_module_unload(handle)

    def kernel(self, name, signature=None, threads=None, dynamic_shared=None, cooperative=False,
               cluster=None):
        """Kernel `name`; its signature from the object's metadata, or the one given (needed
        for objects built without SK_KERNEL; it must agree with the metadata if both exist).
        `threads` (threads per block, or the block's shape as CUDA's blockDim, (x, y) or
        (x, y, z), for a kernel that reads threadIdx.y) and `dynamic_shared` (bytes of its
        `extern __shared__` arrays) are what a CUDA kernel's binary may not say
        (sk_kernel_desc); None: its own. `cooperative`: its blocks wait for each other by
        means of their own, as a kernel written for a cooperative launch may
        (SK_KERNEL_DESC_COOPERATIVE): every block runs at once on a core of its own.
        `cluster`: the thread block cluster a kernel of linked SASS is launched in, (x, y, z)
        or x, as its launch's cudaLaunchAttributeClusterDimension (sk_kernel_desc.cluster);
        None: none, or the one it was compiled with."""
        out = ctypes.c_void_p()
        name_c = c_string(name, "Module.kernel name")
        name_c = self._raw_names.get(name, name_c)
        signature_c = c_string(signature, "Module.kernel signature", optional=True)
        if not isinstance(cooperative, bool):
            raise TypeError(f"Module.kernel ({name}) cooperative: needs a bool, not {type(cooperative).__name__}")
        if threads is not None or dynamic_shared is not None or cooperative or cluster is not None:
            what = f"Module.kernel ({name})"
            count, block = (0, (0, 0, 0)) if threads is None else blocks_and_grid(threads, f"{what} threads", "block")
            in_cluster = (0, 0, 0)
            if cluster is not None:
                blocks, shape = blocks_and_grid(cluster, f"{what} cluster", "cluster")
                in_cluster = shape if shape[0] else (blocks, 1, 1)
            desc = KernelDesc(ctypes.sizeof(KernelDesc), signature_c, count,
                              0 if dynamic_shared is None else
                              integer(dynamic_shared, "u32", f"{what} dynamic_shared"),
                              (ctypes.c_uint32 * 3)(*block), KERNEL_DESC_COOPERATIVE if cooperative else 0,
                              (ctypes.c_uint32 * 3)(*in_cluster))
            check(lib().sk_module_get_kernel_desc(self.handle, name_c, ctypes.byref(desc),
                                                  ctypes.byref(out)),
                  "sk_module_get_kernel_desc")
        elif signature is None:
            check(lib().sk_module_get_kernel(self.handle, name_c, ctypes.byref(out)),
                  "sk_module_get_kernel")
        else:
            check(lib().sk_module_get_kernel_with_signature(
                self.handle, name_c, signature_c, ctypes.byref(out)),
                "sk_module_get_kernel_with_signature")
        if signature is None:
            signature = kernel_signature(out.value)
        kernel = Kernel(self, out.value, name, signature, kernel_core_type(out.value))
        kernel.threads, kernel.dynamic_shared, kernel.cooperative = threads, dynamic_shared, cooperative
        kernel.cluster = cluster
        return kernel


class Kernel:
    """One kernel of a module (owned by it: no close)."""

    #: Threads per block (or the block's shape, a tuple) and dynamic shared bytes given to
    #: Module.kernel (None: its own).
    threads = dynamic_shared = None
    #: Whether Module.kernel was told its blocks wait for each other (SK_KERNEL_DESC_COOPERATIVE).
    cooperative = False
    #: The thread block cluster given to Module.kernel (None: none given).
    cluster = None
    #: The names of the parameters the caller passes, for messages (None: by index).
    param_names = None
    #: Trailing pointer parameters libsk's signature has that the binding passes (a Triton
    #: kernel's scratch pointers): not in signature_tokens, not the caller's to give. NULL, but
    #: the first a buffer of block_dim x global_scratch bytes where global_scratch is set.
    null_tail = 0
    global_scratch = 0

    def __init__(self, module, handle, name, signature, core_type):
        self.module = module
        self._handle = handle
        self.name = name
        self.signature = signature
        self.signature_tokens = parse_signature(signature)
        self.core_type = core_type

    @property
    def handle(self):
        """The raw C handle; raises StateError once its module is closed (libsk freed it)."""
        if self.module.closed:
            raise StateError(f"kernel {self.name!r}: its Module is closed")
        return self._handle

    def __repr__(self):
        return f"<Kernel {self.name}({self.signature}) {self.core_type}>"

    def pack(self, args, refs_allowed=True, blocks=None):
        """The arguments libsk reads (PackedArgs); `blocks` the launch's block count, which
        sizes a Triton kernel's global scratch."""
        return PackedArgs(self, list(args), self.module.device, refs_allowed, blocks)

    def launch(self, block_dim, *args, stream=None):
        """Queues this kernel alone, unfused (sk_launch_kernel), on `stream` (None: the default
        stream); block_dim a block count, or a grid's shape as Scope.add takes it
        (sk_launch_kernel_grid). Objects behind pointer arguments are kept until the stream is
        synchronized."""
        block_dim, grid = blocks_and_grid(block_dim, f"Kernel.launch ({self.name}) block_dim")
        instance(stream, Stream, f"Kernel.launch ({self.name}) stream", optional=True)
        packed = self.pack(args, refs_allowed=False, blocks=block_dim)
        on = stream.handle if stream is not None else None
        if grid[0]:
            check(lib().sk_launch_kernel_grid(self.handle, (ctypes.c_uint32 * 3)(*grid), packed.pointer, on),
                  f"sk_launch_kernel_grid ({self.name})")
        else:
            check(lib().sk_launch_kernel(self.handle, block_dim, packed.pointer, on), f"sk_launch_kernel ({self.name})")
        if stream is not None and stream._capture is not None:
            stream._capture._record_kernel(self, packed)  # the super kernel keeps them
        else:
            (stream._pending if stream is not None else self.module.device._pending).append(packed)
