#include "common/scope_options.hpp"

#include <cstdlib>
#include <cstring>

#include "common/error.hpp"

namespace sk {
namespace {

// Name-list patterns come from users (and fuzzers): the regex engine must not be made to run
// for minutes or overflow the stack. libstdc++'s default executor backtracks (exponential on
// "a****" against a short name); its __polynomial executor is a linear
// NFA simulation. Entries longer than kMaxPattern are matched as exact names only (the
// compiler recurses per nesting level), and bounded repetition ({n,m}) is refused: it unrolls
// into n copies of its operand. Back-references (\1) are refused too: the linear executor has
// none, and libstdc++ 12 reads their number into a long without an overflow check (UB on
// "\7777777777777777777777"). Any backslash before a digit is refused,
// escaped or not: telling an escaped backslash from an escape means scanning as libstdc++
// does, and its escapes take different lengths ("\c\" is one control escape, so in
// "\c\\9" the 9 starts a back-reference).
constexpr size_t kMaxPattern = 256;
#if defined(__GLIBCXX__)
constexpr auto kRegexFlags = std::regex::ECMAScript | std::regex_constants::__polynomial;
#else
constexpr auto kRegexFlags = std::regex::ECMAScript;
#endif

// Why `pattern` may not be compiled, or nullptr.
const char *unsafe_pattern(const std::string &pattern) {
  for (size_t i = 0; i < pattern.size(); ++i) {
    if (pattern[i] == '{') return "bounded repetition ({n,m})";
    if (pattern[i] == '\\' && i + 1 < pattern.size() && pattern[i + 1] >= '0' && pattern[i + 1] <= '9')
      return "a backslash before a digit (a back-reference or \\0)";
  }
  return nullptr;
}

// What ptxas takes for -maxrregcount (a smaller cap is raised to the ABI's minimum).
constexpr uint32_t kMinRegisterCap = 16, kMaxRegisterCap = 255;

sk_status parse_bool(const std::string &key, const std::string &value, bool *out) {
  if (value == "0" || value == "1") {
    *out = value == "1";
    return SK_OK;
  }
  return fail(SK_ERR_INVALID_ARGUMENT, "scope option '%s': value '%s' is not 0 or 1", key.c_str(), value.c_str());
}

sk_status parse_count(const std::string &key, const std::string &value, std::optional<uint32_t> *out) {
  char *end = nullptr;
  unsigned long v = std::strtoul(value.c_str(), &end, 10);
  if (value.empty() || *end != '\0' || value[0] == '-' || v > 65536)
    return fail(SK_ERR_INVALID_ARGUMENT, "scope option '%s': value '%s' is not an integer in [0, 65536]",
                key.c_str(), value.c_str());
  *out = static_cast<uint32_t>(v);
  return SK_OK;
}

sk_status apply(ScopeOptions &o, const std::string &key, const std::string &value) {
  if (key == "feed-sync-all") return parse_bool(key, value, &o.feed_sync_all);
  if (key == "stream-fusion") return parse_bool(key, value, &o.stream_fusion);
  if (key == "strict-scope-check") {
    if (value != "bypass" && value != "abort")
      return fail(SK_ERR_INVALID_ARGUMENT, "scope option 'strict-scope-check': value '%s' is not bypass or abort",
                  value.c_str());
    o.strict_scope_abort = value == "abort";
    return SK_OK;
  }
  if (key == "dcci-before-kernel-start") return NameList::parse(key, value, &o.dcci_before_kernel_start);
  if (key == "dcci-after-kernel-end" || key == "dcci-after-kernel-start")
    return NameList::parse(key, value, &o.dcci_after_kernel_end);
  if (key == "dcci-disable-on-kernel") return NameList::parse(key, value, &o.dcci_disable_on_kernel);
  if (key == "block-local") return NameList::parse(key, value, &o.block_local);
  if (key == "debug-aic-num") return parse_count(key, value, &o.debug_aic_num);
  if (key == "debug-aiv-num") return parse_count(key, value, &o.debug_aiv_num);
  if (key == "debug-sync-all") return parse_bool(key, value, &o.debug_sync_all);
  if (key == "debug-dcci-all") return parse_bool(key, value, &o.debug_dcci_all);
  if (key == "early-start") return parse_bool(key, value, &o.early_start);
  if (key == "profiling") return parse_bool(key, value, &o.profiling);
  if (key == "max-registers") {
    if (sk_status st = parse_count(key, value, &o.max_registers); st != SK_OK) return st;
    if (*o.max_registers == 0 || (*o.max_registers >= kMinRegisterCap && *o.max_registers <= kMaxRegisterCap))
      return SK_OK;
    return fail(SK_ERR_INVALID_ARGUMENT, "scope option 'max-registers': value '%s' is not 0 or in [%u, %u]",
                value.c_str(), kMinRegisterCap, kMaxRegisterCap);
  }
  if (key == "whole-program") return parse_bool(key, value, &o.whole_program);
  if (key == "split-mode" || key == "preload-code" || key == "func-align") {
    // Vendor tuning knobs: accepted and reported; the host device has no such knob.
    if (value.empty()) return fail(SK_ERR_INVALID_ARGUMENT, "scope option '%s': empty value", key.c_str());
    return SK_OK;
  }
  return fail(SK_ERR_INVALID_ARGUMENT, "unknown scope option '%s'", key.c_str());
}

}  // namespace

bool NameList::matches(const std::string &name) const {
  for (const Entry &e : entries_) {
    if (e.text == name) return true;
    if (e.pattern && std::regex_match(name, *e.pattern)) return true;
  }
  return false;
}

sk_status NameList::parse(const std::string &key, const std::string &value, NameList *out) {
  NameList list;
  list.text_ = value;
  size_t pos = 0;
  while (pos <= value.size()) {
    size_t comma = value.find(',', pos);
    std::string item = value.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
    if (item.empty())
      return fail(SK_ERR_INVALID_ARGUMENT, "scope option '%s': empty name in list \"%s\"", key.c_str(),
                  value.c_str());
    Entry e{item, nullptr};
    if (item.size() <= kMaxPattern) {
      if (const char *why = unsafe_pattern(item))
        return fail(SK_ERR_INVALID_ARGUMENT, "scope option '%s': pattern '%s': %s is not supported in name lists",
                    key.c_str(), item.c_str(), why);
      // Regex errors are reported as ours; no exception leaves this function.
      try {
        e.pattern = std::make_shared<std::regex>(item, kRegexFlags);
      } catch (const std::regex_error &err) {
        return fail(SK_ERR_INVALID_ARGUMENT,
                    "scope option '%s': pattern '%.300s' is not a valid regular expression (%s)", key.c_str(),
                    item.c_str(), err.what());
      }
    }
    list.entries_.push_back(std::move(e));
    if (comma == std::string::npos) break;
    pos = comma + 1;
  }
  *out = std::move(list);
  return SK_OK;
}

sk_status parse_scope_options(const char *text, ScopeOptions *out) {
  ScopeOptions o;
  std::string s = text ? text : "";
  size_t pos = 0;
  while (!s.empty() && pos <= s.size()) {
    size_t colon = s.find(':', pos);
    std::string item = s.substr(pos, colon == std::string::npos ? std::string::npos : colon - pos);
    size_t eq = item.find('=');
    if (eq == std::string::npos || eq == 0)
      return fail(SK_ERR_INVALID_ARGUMENT, "scope options \"%s\": '%s' is not of the form key=value", s.c_str(),
                  item.c_str());
    std::string key = item.substr(0, eq), value = item.substr(eq + 1);
    std::string canonical = key == "dcci-after-kernel-start" ? "dcci-after-kernel-end" : key;
    for (const auto &kv : o.given) {
      std::string other = kv.first == "dcci-after-kernel-start" ? "dcci-after-kernel-end" : kv.first;
      if (other == canonical) return fail(SK_ERR_INVALID_ARGUMENT, "scope option '%s' given twice", key.c_str());
    }
    if (sk_status st = apply(o, key, value); st != SK_OK) return st;
    o.given.emplace_back(key, value);
    if (colon == std::string::npos) break;
    pos = colon + 1;
  }
  *out = std::move(o);
  return SK_OK;
}

}  // namespace sk
