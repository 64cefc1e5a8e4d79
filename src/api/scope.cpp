// sk_scope_begin, sk_add_kernel, sk_finalize, sk_scope_abort.
#include <algorithm>
#include <cstring>

#include "api/handles.hpp"
#include "api/struct_size.hpp"

using sk::fail;

namespace {
// sk_kernel_options.flags bits this version knows; others are refused, not silently ignored.
constexpr uint32_t kKnownKernelFlags = SK_KERNEL_FLAG_TILING_SINK | SK_KERNEL_FLAG_BLOCK_LOCAL;

// Every bit of opts->arg_refs names a parameter the kernel has.
sk_status check_arg_refs(const sk::backend::Kernel &k, const std::string &name, uint64_t refs) {
  const size_t n = k.signature.size();
  if (n >= 64 || (refs >> n) == 0) return SK_OK;
  const int bit = static_cast<int>(n) + __builtin_ctzll(refs >> n);
  return fail(
      SK_ERR_INVALID_ARGUMENT,
      "sk_add_kernel: kernel '%s': opts->arg_refs 0x%llx has bit %d, but the kernel takes %zu parameters (%s)",
      name.c_str(), static_cast<unsigned long long>(refs), bit, n,
      k.signature_text.empty() ? "none" : k.signature_text.c_str());
}

}  // namespace

namespace sk::api {

sk_status finalize_scope(sk_scope *scope, sk_superkernel **out) {
  const size_t count = scope->launches.size();
  std::vector<sk::PlanInput> inputs;
  std::vector<std::shared_ptr<sk::backend::Kernel>> kernels;
  std::vector<std::vector<uint64_t>> args;
  inputs.reserve(count);
  kernels.reserve(count);
  args.reserve(count);
  for (ScopeLaunch &l : scope->launches) {
    sk::PlanInput in = l.kernel->plan_input(l.block_dim);
    in.name = std::move(l.name);
    in.core_type = sk::kernel_kind_name(l.kind);
    in.kind = l.kind;
    in.stream = l.stream;
    in.first_core = l.first_core;
    in.core_count = l.core_count;
    in.after = std::move(l.after);
    in.flags = l.flags;
    in.arg_refs = l.arg_refs;
    in.grid = l.grid;
    inputs.push_back(std::move(in));
    kernels.push_back(l.kernel);
    args.push_back(std::move(l.args));
  }
  std::unique_ptr<sk::backend::SuperKernel> built;
  if (sk_status st = scope->device->finalize(scope->name, scope->options, std::move(inputs), std::move(kernels),
                                             std::move(args), &built);
      st != SK_OK)
    return st;
  auto sk = std::make_unique<sk_superkernel>();
  sk->backend = std::move(built);
  sk->owner.attach(scope->owner.life(), sk::api::ChildKind::SuperKernel);
  *out = sk.release();
  return SK_OK;
}

}  // namespace sk::api

extern "C" {

SK_API sk_status sk_scope_begin(sk_device *dev, const char *name, const char *options, sk_scope **out) {
  if (sk_status st = sk::api::check(dev, "sk_scope_begin")) return st;
  if (!out) return fail(SK_ERR_INVALID_ARGUMENT, "sk_scope_begin: out is NULL");
  return sk::api::guarded("sk_scope_begin", [&]() -> sk_status {
    auto scope = std::make_unique<sk_scope>();
    scope->owner.attach(dev->life, sk::api::ChildKind::Scope);
    scope->device = dev->backend;
    scope->name = name && *name ? name : "superkernel";
    if (sk_status st = sk::parse_scope_options(options, &scope->options); st != SK_OK) {
      sk::prefix_error("sk_scope_begin '" + scope->name + "'");
      return st;
    }
    *out = scope.release();
    return SK_OK;
  });
}

SK_API sk_status sk_add_kernel(sk_scope *scope, sk_kernel *kernel, uint32_t block_dim, void *const *args,
                               const sk_kernel_options *opts) {
  if (sk_status st = sk::api::check(scope, "sk_add_kernel")) return st;
  if (sk_status st = sk::api::check(kernel, "sk_add_kernel")) return st;
  const sk::backend::Kernel &k = *kernel->backend;
  if (k.device() != scope->device.get())
    return fail(SK_ERR_INCOMPATIBLE, "sk_add_kernel: kernel '%s' was loaded on another device than scope '%s'",
                k.symbol.c_str(), scope->name.c_str());
  if (sk_status st = sk::api::check_block_dim("sk_add_kernel", k, block_dim); st != SK_OK) return st;
  if (opts && opts->struct_size < sizeof(uint32_t))
    return fail(SK_ERR_INVALID_ARGUMENT, "sk_add_kernel: kernel '%s': opts->struct_size is %u", k.symbol.c_str(),
                opts->struct_size);
  return sk::api::guarded("sk_add_kernel", [&]() -> sk_status {
    ScopeLaunch e;
    e.kernel = kernel->backend;
    e.block_dim = block_dim;
    // Read only the fields the caller's struct_size covers (older callers pass smaller structs).
    const bool has_name = SK_STRUCT_COVERS(opts, sk_kernel_options, name);
    e.name = has_name && opts->name && *opts->name ? opts->name : k.symbol;
    if (SK_STRUCT_COVERS(opts, sk_kernel_options, flags)) {
      if (const uint32_t unknown = opts->flags & ~kKnownKernelFlags)
        return fail(SK_ERR_INVALID_ARGUMENT, "sk_add_kernel: kernel '%s': opts->flags 0x%x has unknown bits 0x%x",
                    e.name.c_str(), opts->flags, unknown);
      e.flags = opts->flags;
    }
    e.kind = k.kind;
    if (SK_STRUCT_COVERS(opts, sk_kernel_options, core_type) && opts->core_type &&
        !sk::parse_kernel_kind(opts->core_type, &e.kind))
      return fail(SK_ERR_INVALID_ARGUMENT,
                  "sk_add_kernel: kernel '%s': opts->core_type '%.100s' is not vector, cube, mix_1_1 or mix_1_2",
                  e.name.c_str(), opts->core_type);
    if (SK_STRUCT_COVERS(opts, sk_kernel_options, stream)) e.stream = opts->stream;
    if (SK_STRUCT_COVERS(opts, sk_kernel_options, core_count)) {
      if (opts->core_count == 0 && opts->first_core != 0)
        return fail(SK_ERR_INVALID_ARGUMENT,
                    "sk_add_kernel: kernel '%s': opts->first_core is %u but opts->core_count is 0 (pin a core range "
                    "with core_count >= 1, or leave both 0 for the planner)",
                    e.name.c_str(), opts->first_core);
      e.first_core = opts->first_core;
      e.core_count = opts->core_count;
    }
    if (SK_STRUCT_COVERS(opts, sk_kernel_options, arg_refs)) {
      if (sk_status st = check_arg_refs(k, e.name, opts->arg_refs); st != SK_OK) return st;
      e.arg_refs = opts->arg_refs;
    }
    const uint32_t *grid = SK_STRUCT_COVERS(opts, sk_kernel_options, grid) ? opts->grid : nullptr;
    if (sk_status st =
            sk::api::check_grid("sk_add_kernel", k, e.name, block_dim, grid, "opts->grid",
                                "give its grid's shape, opts->grid ({block_dim, 1, 1} for one dimension)");
        st != SK_OK)
      return st;
    if (grid) std::copy(grid, grid + 3, e.grid.begin());
    if (sk_status st = k.copy_args(args, "sk_add_kernel", &e.args, e.arg_refs); st != SK_OK) return st;
    return sk::api::add_launch(scope, std::move(e), "sk_add_kernel");
  });
}

SK_API sk_status sk_finalize(sk_scope *scope, sk_superkernel **out) {
  // A stale scope is not consumed again; a scope of a closed device is consumed and refused.
  if (sk_status st = sk::api::check_destroy(scope, "sk_finalize")) return st;
  std::unique_ptr<sk_scope> owned(scope);  // consumed whatever happens
  if (sk_status st = sk::api::check(scope, "sk_finalize")) return st;
  if (!out) return fail(SK_ERR_INVALID_ARGUMENT, "sk_finalize: out is NULL (the scope is consumed)");
  return sk::api::guarded("sk_finalize", [&] { return sk::api::finalize_scope(scope, out); });
}

SK_API void sk_scope_abort(sk_scope *scope) {
  if (scope && sk::api::check_destroy(scope, "sk_scope_abort") != SK_OK) return;  // already consumed: ignored
  delete scope;
}

}  // extern "C"
