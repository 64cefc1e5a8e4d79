// What the PTX readers and rewrites share: an edit of a module's text, and a statement of a
// function's body as cuda/ptx_parse.cpp reads it.
#pragma once
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace sk::cuda {

// A replacement of the text's bytes [at, at + len).
struct PtxEdit {
  size_t at, len;
  std::string text;
};

// One statement of an entry's body: its text range, its guard ("@%p1", or ""), and its tokens
// from the opcode up to, not including, the `;` (views into the text).
struct PtxStatement {
  size_t at, len;
  std::string_view guard;
  std::vector<std::string_view> toks;
};

// The block's extent that a kernel narrower than its super kernel's block reads as its own
// thread count (PtxFunctionText::block_dims).
constexpr std::string_view kBlockDimX = "%ntid.x";

}  // namespace sk::cuda
