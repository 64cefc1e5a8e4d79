// The rewrite of an entry's parameters whose address the kernel takes (a `__grid_constant__`
// CUtensorMap, Triton's host-side tensor descriptor). Fused, such a parameter is passed as the
// generic address of its bytes, wherever the super kernel holds them: among its parameters, in
// its argument buffer, or in memory an argument read by reference points at. The kernel's own
// arithmetic on the parameter-space address is followed from each `mov` that takes it to each
// `cvta.param` that makes it generic, which then reads the address passed instead; its `ld.param`
// reads of the parameter's bytes become loads through that address.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "cuda/ptx_statement.hpp"

namespace sk::cuda {

struct ParamAddressRewrite {
  std::vector<uint32_t> by_address;  // the parameters passed by their address, in order
  std::vector<PtxEdit> edits;        // of their declarations and of the statements that use them
  std::vector<std::string> notes;    // one per such parameter, for sk_module_inspect
  std::string refusal;               // a use the rewrite cannot follow, named ("" if none)
};

// The rewrite of an entry whose parameters are `names`, declared at `decls` (the text after each
// `.param`), with the statements `body`. Nothing when it takes no parameter's address.
ParamAddressRewrite rewrite_param_addresses(const std::vector<std::string> &names,
                                            const std::vector<std::pair<size_t, size_t>> &decls,
                                            const std::vector<PtxStatement> &body);

}  // namespace sk::cuda
