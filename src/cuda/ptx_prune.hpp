// A PTX module's text cut to what one link's kernels reach. nvJitLink compiles every function
// of the text it is given; an engine's module (llama.cpp's quantized GEMVs: 294 kernels, 12 MB)
// costs its whole compile for the few kernels a super kernel calls. The cut keeps the module's
// variables and directives, the kernels taken, every function they call or name, and what
// another module may call; it removes the other functions' definitions and declarations.
#pragma once
#include <string>
#include <vector>

#include "cuda/ptx_module.hpp"

namespace sk::cuda {

// `m.text` without the functions that no kernel of `kernels` (names) reaches, nor any function
// kept always (PtxFunctionText::always); the whole text when `m.whole`.
std::string ptx_text_for(const PtxModule &m, const std::vector<std::string> &kernels);

}  // namespace sk::cuda
