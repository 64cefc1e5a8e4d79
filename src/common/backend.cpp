// What backends share (common/backend.hpp): the argument copy of launches.
#include "common/backend.hpp"

#include <algorithm>

#include "common/error.hpp"

namespace sk::backend {

sk_status check_object_size(size_t size, const std::string &label) {
  if (size < kMaxObjectSize) return SK_OK;
  return fail(SK_ERR_UNSUPPORTED, "%s: %zu bytes: kernel objects must be smaller than %zu bytes", label.c_str(),
              size, kMaxObjectSize);
}

std::string memory_image_label(size_t size) { return "<memory image of " + std::to_string(size) + " bytes>"; }

void Kernel::set_signature(Signature sig) {
  signature = std::move(sig);
  signature_text = signature_to_string(signature);
  arg_slots = slot_offsets(signature);
}

PlanInput Kernel::plan_input(uint32_t block_dim, const GridShape &grid) const {
  PlanInput in;
  in.name = symbol;
  in.symbol = symbol;
  in.module = module_label();
  in.signature = signature_text;
  in.core_type = kernel_kind_name(kind);
  in.kind = kind;
  in.block_dim = block_dim;
  in.grid = grid;
  in.usage = usage;
  in.usage_paths = usage_paths;
  in.plain_launch = plain_launch;
  return in;
}

sk_status Kernel::copy_args(void *const *args, const char *call, uint64_t *out, uint64_t refs) const {
  const size_t n = signature.size();
  if (n > 0 && !args)
    return fail(SK_ERR_INVALID_ARGUMENT, "%s: kernel '%s' takes %zu parameters (%s) but args is NULL", call,
                symbol.c_str(), n, signature_text.c_str());
  for (size_t i = 0; i < n; ++i) {
    const bool ref = i < 64 && (refs >> i & 1);
    if (!args[i])
      return fail(SK_ERR_INVALID_ARGUMENT, "%s: kernel '%s': args[%zu] (%s) is NULL%s", call, symbol.c_str(), i,
                  type_to_string(signature[i]).c_str(),
                  ref ? " (an argument read by reference needs an address)" : "");
    if (ref) {
      std::fill(out + arg_slots[i], out + arg_slots[i + 1], 0);
      out[arg_slots[i]] = reinterpret_cast<uintptr_t>(args[i]);
    } else {
      to_slots(signature[i], args[i], out + arg_slots[i]);
    }
  }
  return SK_OK;
}

sk_status Kernel::copy_args(void *const *args, const char *call, std::vector<uint64_t> *out, uint64_t refs) const {
  std::vector<uint64_t> slots(this->slots(), 0);
  if (sk_status st = copy_args(args, call, slots.data(), refs); st != SK_OK) return st;
  *out = std::move(slots);
  return SK_OK;
}

}  // namespace sk::backend
