// PTX text with named placeholders, in parts: the syntax is described at the top of
// cuda/superkernel.ptx, the template entry_ptx.cpp fills in. PTX has no symbolic constants
// or macros, so the values libsk defines (offsets, bits, counts) are written in here.
#pragma once
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace sk::cuda {

// Placeholder name -> the text it stands for.
using PtxValues = std::map<std::string, std::string, std::less<>>;

class PtxTemplate {
 public:
  explicit PtxTemplate(std::string_view text);

  // Part `name` with `values`. A placeholder that nothing defines stays as it is (which
  // ptxas then refuses); so does a call of a part that does not exist.
  std::string expand(std::string_view name, const PtxValues &values) const;
  std::vector<std::string> part_names() const;

 private:
  struct Part {
    std::vector<std::string> params;
    std::string body;
  };
  std::string expand_text(std::string_view text, const PtxValues &values, int depth) const;
  // The placeholder at text[at] ('@'): its expansion and the index past it, or false.
  bool placeholder(std::string_view text, size_t at, const PtxValues &values, int depth, std::string *out,
                   size_t *end) const;
  std::map<std::string, Part, std::less<>> parts_;
};

}  // namespace sk::cuda
