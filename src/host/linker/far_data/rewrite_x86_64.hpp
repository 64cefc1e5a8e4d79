// x86-64's far-data rewriter (host/linker/far_data/far_data.hpp): a RIP-relative instruction becomes a jump to a
// stub that runs it on [scratch] after `movabs scratch, target`; `lea reg, [rip+x]` becomes
// `mov reg, x`. Decoding and re-encoding use Zydis. Built for x86-64 targets only.
#pragma once
#include "host/linker/far_data/far_data.hpp"

namespace sk::host::x86_64 {

extern const FarDataRewriter kFarDataRewriter;

}  // namespace sk::host::x86_64
