"""Device.load_triton: a kernel as `triton.compile` returns it, its PTX loaded with the launch
facts of its metadata, taking the Triton kernel's own arguments.

Duck-typed (Triton is not imported): `compiled.asm["ptx"]` is the PTX text and
`compiled.metadata` (a namedtuple, a dataclass or a dict) has `name`, `num_warps`, `shared` and,
where that Triton writes them, `target`, `global_scratch_size`, `profile_scratch_size`,
`num_ctas`, `launch_cooperative_grid` and `launch_pdl`. `compiled.src.signature` (the
`{name: type}` Triton compiled) names the arguments and types the integers; without it the PTX's
parameter types do, and the arguments are named by index (the PTX names them `<kernel>_param_<i>`).
"""
import ctypes
from collections.abc import Mapping

from .aggregates import ctype_of
from .checks import integer
from .errors import BadBinary, Error, Unsupported
from .module import Kernel, Module

#: The per-program scratch memory Triton may ask for, in the order of the pointer parameters it
#: appends to the kernel's own: one for each of these the metadata has.
SCRATCH_FIELDS = ("global_scratch_size", "profile_scratch_size")
#: The alignment of the device memory Buffer allocations have (cuMemAlloc's, at least), which
#: a kernel's global scratch may ask for at most.
GLOBAL_SCRATCH_ALIGN = 256
#: Launch features a super kernel's sub-kernel cannot have: metadata field, what it means.
REFUSED_FLAGS = (("launch_cooperative_grid", "a cooperative grid launch"),
                 ("launch_pdl", "programmatic dependent launch"))
#: Triton's scalar types that are a signature token's C type. An argument of such a type is
#: range-checked as Triton declares it (i32 where the PTX says .u32) when the sizes agree;
#: other types (i1, fp16, bf16...) are passed as the PTX parameter says.
TRITON_TOKENS = {"i8": "i8", "i16": "i16", "i32": "i32", "i64": "i64", "u8": "u8",
                 "u16": "u16", "u32": "u32", "u64": "u64", "fp32": "f32", "fp64": "f64"}
_MISSING = object()


def _get(obj, key, default=_MISSING):
    """obj[key] of a mapping, else attribute `key` (a namedtuple's, a dataclass's)."""
    if isinstance(obj, Mapping):
        return obj.get(key, default)
    return getattr(obj, key, default)


class TritonKernel(Kernel):
    """A Triton kernel loaded by Device.load_triton. `signature` and `param_names` are the
    arguments Scope.add and launch take (the Triton kernel's, constexprs compiled in; no names
    without compiled.src);
    `ptx_signature` is libsk's, with the scratch pointers the binding passes as NULL;
    `threads` is num_warps x warp size, `dynamic_shared` the metadata's `shared`; `metadata`
    is the compiled metadata; `module` the Module of its PTX."""

    def __repr__(self):
        args = ", ".join(self.param_names) if self.param_names is not None else self.signature
        return f"<TritonKernel {self.name}({args}) {self.threads} threads>"


def load_triton(device, compiled):
    """The TritonKernel of `compiled` (what triton.compile returns) on CUDA device `device`."""
    call = "Device.load_triton"
    meta = _get(compiled, "metadata")
    if meta is _MISSING:
        raise TypeError(f"{call}: needs what triton.compile returns (with .asm and .metadata), "
                        f"not {type(compiled).__name__}")
    name = _get(meta, "name")
    if not isinstance(name, str) or not name:
        raise TypeError(f"{call}: metadata name: needs the kernel's name (a str), not {name!r}")
    what = f"{call} ({name})"

    def refuse(field, why):
        raise Unsupported(f"Triton kernel {name!r}: metadata {field}: {why}", call=call)

    target = _get(meta, "target", None)
    warp_size = _get(meta, "warp_size", 32)
    if target is not None:
        backend = _get(target, "backend", None)
        if backend != "cuda":
            refuse("target", f"backend {backend!r} is not 'cuda' (libsk loads NVIDIA PTX)")
        warp_size = _get(target, "warp_size", warp_size)
    warp_size = integer(warp_size, "u32", f"{what} metadata warp_size")
    num_warps = integer(_get(meta, "num_warps", None), "u32", f"{what} metadata num_warps")
    if not num_warps or not warp_size:
        raise ValueError(f"{what}: metadata num_warps {num_warps} x warp_size {warp_size} is no "
                         "thread")
    shared = integer(_get(meta, "shared", None), "u32", f"{what} metadata shared")
    global_scratch = integer(_get(meta, "global_scratch_size", 0), "u64", f"{what} metadata global_scratch_size")
    scratch_align = integer(_get(meta, "global_scratch_align", 1), "u64", f"{what} metadata global_scratch_align")
    if global_scratch and scratch_align > GLOBAL_SCRATCH_ALIGN:
        refuse("global_scratch_align", f"{scratch_align}-byte alignment of the global scratch, more than the "
                                       f"{GLOBAL_SCRATCH_ALIGN} of the device memory the binding allocates")
    profile = integer(_get(meta, "profile_scratch_size", 0), "u64", f"{what} metadata profile_scratch_size")
    if profile:
        refuse("profile_scratch_size", f"{profile} bytes of per-program profiling scratch (Proton): the binding "
                                       "gives none")
    num_ctas = integer(_get(meta, "num_ctas", 1), "u32", f"{what} metadata num_ctas")
    if num_ctas > 1:
        refuse("num_ctas", f"{num_ctas} CTAs per program is a thread block cluster, which a super "
                           "kernel's sub-kernel cannot run")
    for field, feature in REFUSED_FLAGS:
        if _get(meta, field, False):
            refuse(field, f"{feature}, which a super kernel's sub-kernel cannot use")
    if device.is_host:
        raise Unsupported(f"Triton kernel {name!r}: device {device.spec!r} is not a CUDA device "
                          "(Triton's PTX loads on cuda:N)", call=call)
    asm = _get(compiled, "asm", None)
    try:
        ptx = asm["ptx"]
    except (KeyError, TypeError, IndexError):
        raise TypeError(f"{what}: compiled.asm has no 'ptx' (compile for a CUDA target)") from None
    if isinstance(ptx, (bytes, bytearray)):
        ptx = bytes(ptx).decode("utf-8", errors="replace")
    if not isinstance(ptx, str):
        raise TypeError(f"{what}: compiled.asm['ptx'] needs PTX text, not {type(ptx).__name__}")

    try:
        module = Module(device, ptx, kind="ptx")
    except Error as e:
        e.call = f"{what}: {e.call}" if e.call else what
        raise
    try:
        kernel = module.kernel(name, threads=num_warps * warp_size, dynamic_shared=shared)
        tokens = kernel.signature_tokens
        tail = sum(_get(meta, field, _MISSING) is not _MISSING for field in SCRATCH_FIELDS)
        if len(tokens) < tail or any(t != "ptr" for t in tokens[len(tokens) - tail:]):
            raise BadBinary(f"Triton kernel {name!r}: its PTX parameters ({kernel.signature}) do "
                            f"not end with the {tail} scratch pointers its metadata implies",
                            call=call)
        tokens = tokens[:len(tokens) - tail]
        names, tokens = _arguments(compiled, tokens)
    except Error as e:
        module.close()
        if e.call != call:
            e.call = f"{what}: {e.call}" if e.call else what
        raise
    except BaseException:
        module.close()
        raise
    triton = TritonKernel(module, kernel._handle, name, ",".join(tokens), kernel.core_type)
    triton.ptx_signature = kernel.signature
    triton.param_names, triton.null_tail = names, tail
    triton.global_scratch = global_scratch if tail else 0
    triton.threads, triton.dynamic_shared = num_warps * warp_size, shared
    triton.metadata = meta
    return triton


def _arguments(compiled, ptx_tokens):
    """(names, signature tokens) of the arguments the caller passes: Triton's own where
    compiled.src.signature has as many runtime arguments as the PTX, else no names (messages
    number the arguments) and the PTX's types."""
    signature = _get(_get(compiled, "src", None), "signature", None)
    if isinstance(signature, Mapping):
        runtime = [(n, t) for n, t in signature.items() if t != "constexpr"]
        if len(runtime) == len(ptx_tokens) and all(isinstance(t, str) for _, t in runtime):
            tokens = []
            for (_, kind), token in zip(runtime, ptx_tokens):
                mine = TRITON_TOKENS.get(kind)
                same = mine and ctypes.sizeof(ctype_of(mine)) == ctypes.sizeof(ctype_of(token))
                tokens.append(mine if same else token)
            return [str(n) for n, _ in runtime], tokens
    return None, list(ptx_tokens)
