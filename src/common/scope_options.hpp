// Scope options in the vendor frameworks' syntax "key=value:key=value" (docs/semantics.md,
// "Scope options"). Unknown, repeated or badly-valued keys fail naming the key.
#pragma once
#include <sk.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <regex>
#include <string>
#include <utility>
#include <vector>

namespace sk {

// Comma-separated kernel names; each entry matches a name exactly or as a whole-name regex.
class NameList {
 public:
  bool empty() const { return entries_.empty(); }
  bool matches(const std::string &name) const;
  const std::string &text() const { return text_; }
  static sk_status parse(const std::string &key, const std::string &value, NameList *out);

 private:
  struct Entry {
    std::string text;
    std::shared_ptr<std::regex> pattern;  // null when the text is not a valid regex
  };
  std::vector<Entry> entries_;
  std::string text_;
};

struct ScopeOptions {
  bool feed_sync_all = false;
  bool stream_fusion = false;
  bool strict_scope_abort = false;  // strict-scope-check=abort
  NameList dcci_before_kernel_start, dcci_after_kernel_end, dcci_disable_on_kernel;
  NameList block_local;  // kernels block-local to the one before them (SK_KERNEL_FLAG_BLOCK_LOCAL)
  std::optional<uint32_t> debug_aic_num, debug_aiv_num;
  bool debug_sync_all = false;
  bool debug_dcci_all = false;
  bool early_start = true;
  bool profiling = false;
  // max-registers: the CUDA link's -maxrregcount in place of the one libsk picks (0: none).
  std::optional<uint32_t> max_registers;
  // whole-program: a CUDA super kernel of PTX sub-kernels alone is also compiled as one program
  // by the driver's JIT at finalize (cuda/ptx_join.hpp), and runs so where that compiles.
  bool whole_program = true;
  // Every key as given, in order (explain reports them, tuning keys included).
  std::vector<std::pair<std::string, std::string>> given;
};

sk_status parse_scope_options(const char *text, ScopeOptions *out);

}  // namespace sk
