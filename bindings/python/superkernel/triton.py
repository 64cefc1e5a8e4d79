"""Device.load_triton: a kernel as `triton.compile` returns it, its PTX loaded with the launch
facts of its metadata, taking the Triton kernel's own arguments.

Duck-typed (Triton is not imported): `compiled.asm["ptx"]` is the PTX text and
`compiled.metadata` (a namedtuple, a dataclass or a dict) has `name`, `num_warps`, `shared` and,
where that Triton writes them, `target`, `global_scratch_size`, `profile_scratch_size`,
`num_ctas`, `launch_cooperative_grid`, `launch_pdl` and `tensordesc_meta`. `compiled.src.signature`
(the `{name: type}` Triton compiled) names the arguments and types the integers, and a tensor
descriptor argument then takes a TensorDescriptor (base, shape, strides, block_shape, padding,
round_f32_to_tf32), whose tensor map libsk encodes as Triton's launcher does; without it the
PTX's parameters are the arguments (a descriptor's tensor map bytes, then its shape and strides),
typed by the PTX and named by index (the PTX names them `<kernel>_param_<i>`).
"""
import ctypes
from collections.abc import Mapping

from .aggregates import ctype_of
from .args import PackedArgs
from .checks import integer
from .errors import BadBinary, Error, Unsupported
from .module import Kernel, Module
from .refs import Ref
from .tensor_map import block_shape, descriptor_rank, triton_descriptor

#: The per-program scratch memory Triton may ask for, in the order of the pointer parameters it
#: appends to the kernel's own: one for each of these the metadata has.
SCRATCH_FIELDS = ("global_scratch_size", "profile_scratch_size")
#: The alignment of the device memory Buffer allocations have (cuMemAlloc's, at least), which
#: a kernel's global scratch may ask for at most.
GLOBAL_SCRATCH_ALIGN = 256
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
    is the compiled metadata; `module` the Module of its PTX. `descriptors` maps the index of
    each tensor descriptor argument to its type and tensordesc_meta entry: `signature` then has
    its PTX parameters (tensor map, shape, strides), which SuperKernel.set_arg indexes, and
    `ptx_param_names` names them."""

    descriptors = {}
    ptx_param_names = None

    def __repr__(self):
        args = ", ".join(self.param_names) if self.param_names is not None else self.signature
        return f"<TritonKernel {self.name}({args}) {self.threads} threads>"

    def pack(self, args, refs_allowed=True, blocks=None):
        """As Kernel.pack, each TensorDescriptor argument passed as its tensor map, shape and
        strides."""
        if not self.descriptors:
            return super().pack(args, refs_allowed, blocks)
        args, device = list(args), self.module.device
        if len(args) != len(self.param_names):
            raise TypeError(f"kernel {self.name!r} ({', '.join(self.param_names)}) takes "
                            f"{len(self.param_names)} arguments, {len(args)} given")
        values, bases = [], {}
        for i, value in enumerate(args):
            if i not in self.descriptors:
                values.append(value)
                continue
            kind, meta = self.descriptors[i]
            what = f"kernel {self.name!r} argument {i} {self.param_names[i]!r} ({kind})"
            if isinstance(value, Ref):
                raise TypeError(f"{what}: a tensor descriptor is encoded at the call: pass it, not a Ref")
            expanded, base = triton_descriptor(device, value, kind, meta, what)
            if base is not None:
                bases[len(values)] = base  # the tensor map's argument holds the tensor
            values += expanded
        packed = PackedArgs(self, values, device, refs_allowed, blocks, names=self.ptx_param_names)
        packed.keepalive.update(bases)
        return packed


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
    # launch_cooperative_grid: the kernel's blocks wait for each other (a grid barrier of its
    # own), SK_KERNEL_DESC_COOPERATIVE. launch_pdl asks nothing: fused, its gdc_wait is where its
    # step waits.
    cooperative = bool(_get(meta, "launch_cooperative_grid", False))
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
        kernel = module.kernel(name, threads=num_warps * warp_size, dynamic_shared=shared, cooperative=cooperative)
        tokens = kernel.signature_tokens
        tail = sum(_get(meta, field, _MISSING) is not _MISSING for field in SCRATCH_FIELDS)
        if len(tokens) < tail or any(t != "ptr" for t in tokens[len(tokens) - tail:]):
            raise BadBinary(f"Triton kernel {name!r}: its PTX parameters ({kernel.signature}) do "
                            f"not end with the {tail} scratch pointers its metadata implies",
                            call=call)
        tokens = tokens[:len(tokens) - tail]
        names, tokens, descriptors, ptx_names = _arguments(compiled, tokens, _get(meta, "tensordesc_meta", None))
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
    triton.descriptors, triton.ptx_param_names = descriptors, ptx_names
    triton.global_scratch = global_scratch if tail else 0
    triton.threads, triton.dynamic_shared, triton.cooperative = num_warps * warp_size, shared, cooperative
    triton.metadata = meta
    return triton


def _arguments(compiled, ptx_tokens, descriptor_meta):
    """(names, signature tokens, descriptors, PTX parameter names) of the arguments: Triton's
    own where compiled.src.signature has the runtime arguments of the PTX (a tensor descriptor
    with a tensordesc_meta entry is its tensor map, shape and strides there), else no names
    (messages number the arguments) and the PTX's parameters and types."""
    signature = _get(_get(compiled, "src", None), "signature", None)
    if isinstance(signature, Mapping):
        runtime = [(n, t) for n, t in signature.items() if t != "constexpr"]
        metas = list(descriptor_meta) if isinstance(descriptor_meta, (list, tuple)) else []
        if all(isinstance(t, str) for _, t in runtime):
            expanded, descriptors = [], {}
            for i, (name, kind) in enumerate(runtime):
                if block_shape(kind) is None or len(descriptors) == len(metas):
                    expanded.append((str(name), kind))
                    continue
                descriptors[i] = (kind, metas[len(descriptors)])
                rank = descriptor_rank(kind)
                expanded += [(str(name), None)] + [(f"{name}.shape[{d}]", None) for d in range(rank)] + \
                    [(f"{name}.strides[{d}]", None) for d in range(rank)]
            if len(expanded) == len(ptx_tokens) and len(descriptors) == len(metas):
                tokens = []
                for (_, kind), token in zip(expanded, ptx_tokens):
                    mine = TRITON_TOKENS.get(kind)
                    same = mine and ctypes.sizeof(ctype_of(mine)) == ctypes.sizeof(ctype_of(token))
                    tokens.append(mine if same else token)
                names = [str(n) for n, _ in runtime]
                return names, tokens, descriptors, ([n for n, _ in expanded] if descriptors else names)
    return None, list(ptx_tokens), {}, None
