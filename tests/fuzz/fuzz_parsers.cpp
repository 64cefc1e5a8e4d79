// libFuzzer target: the text parsers. The first byte picks one: scope options (and matching
// their name lists), device specs (and their integer values), kernel signatures (which must
// round-trip), .sk.kernels metadata records (NUL-separated, as in the section), PTX text (read
// and rewritten as the CUDA backend loads it).
#include <sk.h>

#include <cstdint>
#include <cstdlib>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "common/device_spec.hpp"
#include "common/kernel_metadata.hpp"
#include "common/scope_options.hpp"
#include "common/signature.hpp"
#ifdef SK_HAVE_CUDA
#include "cuda/ptx_join.hpp"
#include "cuda/ptx_module.hpp"
#include "cuda/ptx_prune.hpp"
#include "elf/shared_overlay_layout.hpp"
#endif

namespace {

void scope_options(const std::string &text) {
  sk::ScopeOptions o;
  if (sk::parse_scope_options(text.c_str(), &o) != SK_OK) return;
  for (const sk::NameList *list : {&o.dcci_before_kernel_start, &o.dcci_after_kernel_end, &o.dcci_disable_on_kernel})
    for (const char *name : {"capi_fill", "rmsnorm_0", ""}) (void)list->matches(name);
}

void device_spec(const std::string &text) {
  sk::DeviceSpec spec;
  if (sk::parse_device_spec(text.c_str(), &spec) != SK_OK) return;
  for (const auto &[key, value] : spec.keys) {
    uint64_t v = 0;
    (void)sk::parse_spec_uint(key, value, 1, 1024, &v);
  }
}

void signature(const std::string &text) {
  sk::Signature sig, again;
  if (sk::parse_signature(text, "fuzz", &sig) != SK_OK) return;
  // What parses prints back to a text that parses to the same list.
  const std::string printed = sk::signature_to_string(sig);
  if (sk::parse_signature(printed, "fuzz", &again) != SK_OK || again != sig) std::abort();
}

void metadata(const std::string &text) {
  std::vector<std::string> records;
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t nul = text.find('\0', pos);
    std::string rec = text.substr(pos, nul == std::string::npos ? std::string::npos : nul - pos);
    if (!rec.empty()) records.push_back(rec);  // as the linker hands them over
    if (nul == std::string::npos) break;
    pos = nul + 1;
  }
  std::vector<sk::KernelMetadata> out;
  if (sk::parse_kernel_metadata(records, "fuzz", &out) != SK_OK) return;
  for (const sk::KernelMetadata &m : out) {
    sk::Signature sig;
    (void)sk::parse_signature(m.signature, m.name, &sig);
  }
}

void ptx(const std::string &text) {
#ifdef SK_HAVE_CUDA
  if (!sk::cuda::looks_like_ptx(text.data(), text.size())) return;
  sk::cuda::PtxModule m;
  if (sk::cuda::read_ptx_module(text, "fuzz", "sm_90", "9.0", &m) != SK_OK) return;
  // What reads is rewritten into text that reads again.
  sk::cuda::PtxModule again;
  if (sk::cuda::read_ptx_module(m.text, "fuzz", "sm_90", "9.0", &again) != SK_OK) std::abort();
  // A link's cut of it, for its first kernel, reads again and keeps that kernel.
  if (m.kernels.empty()) return;
  sk::cuda::PtxModule cut;
  const std::string &first = m.kernels[0].name;
  if (sk::cuda::read_ptx_module(sk::cuda::ptx_text_for(m, {first}), "fuzz", "sm_90", "9.0", &cut) != SK_OK ||
      !cut.find(first))
    std::abort();
  // So does the cut of a link of it and its rewritten text, each keeping what the other calls.
  const std::vector<std::set<std::string>> called = sk::cuda::called_across({&m, &again}, {{first}, {}});
  if (sk::cuda::read_ptx_module(sk::cuda::ptx_text_for(m, {first}, nullptr, {}, &called[0]), "fuzz", "sm_90", "9.0",
                                &cut) != SK_OK ||
      !cut.find(first))
    std::abort();
  // And so does the cut with its static shared variables moved into a shared overlay.
  const sk::elf::SharedOverlayLayout layout = sk::elf::layout_shared_overlay({&m.graph}, {{0, first}}, false);
  const sk::cuda::PtxOverlay place{"__sk_shared_overlay", layout.bytes, layout.align, &layout.offsets[0]};
  sk::cuda::PtxModule moved;
  const std::string moved_text = sk::cuda::ptx_text_for(m, {first}, &place);
  if (sk::cuda::read_ptx_module(moved_text, "fuzz", "sm_90", "9.0", &moved) != SK_OK || !moved.find(first))
    std::abort();
  // Each kernel that can run on fewer threads than its block, cut for a block of 64 where it runs
  // 32 and 64 (its copy counting 32 beside it), reads again with both.
  for (const sk::cuda::PtxKernel &k : m.kernels) {
    if (!k.refusal.empty() || !k.narrow_refusal.empty()) continue;
    sk::cuda::PtxModule narrow;
    if (sk::cuda::read_ptx_module(sk::cuda::ptx_text_for(m, {k.name}, nullptr, {{k.name, 32}}), "fuzz", "sm_90",
                                  "9.0", &narrow) != SK_OK ||
        !narrow.find(k.name) || !narrow.find(sk::cuda::narrow_call_name(m, k.name, 32, 64)))
      std::abort();
  }
  // One program of that cut, alone or twice (its visible names then defined twice, its own
  // renamed in the second), reads again where the join takes it.
  for (size_t copies : {1, 2}) {
    const std::vector<sk::cuda::PtxPart> parts(copies, sk::cuda::PtxPart{moved_text, "fuzz"});
    std::string program, why;
    if (!sk::cuda::join_ptx(parts, "sm_90", &program, &why)) continue;
    sk::cuda::PtxModule whole;
    if (sk::cuda::read_ptx_module(program, "fuzz", "sm_90", "9.0", &whole) != SK_OK) std::abort();
  }
#else
  (void)text;
#endif
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size == 0) return 0;
  const std::string text(reinterpret_cast<const char *>(data) + 1, size - 1);
  // Options and specs arrive as C strings: cut at the first NUL, as the API would see them.
  const std::string c_text = text.substr(0, text.find('\0'));
  switch (data[0] % 8) {  // ASCII '0'..'4' pick the five
    case 0: scope_options(c_text); break;
    case 1: device_spec(c_text); break;
    case 2: signature(text); break;
    case 3: metadata(text); break;
    default: ptx(text); break;
  }
  return 0;
}
