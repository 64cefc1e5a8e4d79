#include "cuda/ptx_module.hpp"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <map>
#include <set>

#include "common/device_api_usage.hpp"
#include "common/error.hpp"
#include "cuda/entry_ptx.hpp"
#include "cuda/ptx_early_return.hpp"
#include "cuda/ptx_param_address.hpp"
#include "cuda/ptx_special_registers.hpp"
#include "elf/fatbin.hpp"

namespace sk::cuda {
namespace {

// ---- tokens ----------------------------------------------------------------------------------

struct Tok {
  std::string_view s;
  size_t at = 0;     // offset in the text
  size_t line = 1;   // for messages
  bool bol = false;  // first token of its line: `.loc` and `.file` end at the line's end
};

bool word_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '$' ||
         c == '%' || c == '.';
}

// A word that names a variable or a function: not a directive, register, label or number.
bool identifier(std::string_view t) { return !t.empty() && word_char(t[0]) && !std::strchr(".%$0123456789", t[0]); }

// PTX's lexical structure as far as a rewrite needs it: words (directives, opcodes with their
// type suffixes, registers, names, numbers, `.shared::cluster`), guards (`@!%p1`), strings and
// single punctuation; comments skipped.
std::vector<Tok> tokenize(std::string_view t) {
  std::vector<Tok> out;
  size_t line = 1;
  bool bol = true;
  for (size_t i = 0; i < t.size();) {
    const char c = t[i];
    if (c == '\n') {
      ++line, ++i, bol = true;
      continue;
    }
    if (c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v') {
      ++i;
      continue;
    }
    if (c == '/' && i + 1 < t.size() && t[i + 1] == '/') {
      while (i < t.size() && t[i] != '\n') ++i;
      continue;
    }
    if (c == '/' && i + 1 < t.size() && t[i + 1] == '*') {
      const size_t end = t.find("*/", i + 2);
      const size_t stop = end == std::string_view::npos ? t.size() : end + 2;
      line += (size_t)std::count(t.begin() + (long)i, t.begin() + (long)stop, '\n');
      i = stop;
      continue;
    }
    size_t j = i + 1;
    if (c == '"') {
      while (j < t.size() && t[j] != '"' && t[j] != '\n') j += t[j] == '\\' ? 2 : 1;
      j = std::min(j + 1, t.size());
    } else if (c == '@' || word_char(c)) {
      for (; j < t.size(); ++j) {
        if (word_char(t[j]) || (c == '@' && t[j] == '!')) continue;
        if (t[j] == ':' && j + 1 < t.size() && t[j + 1] == ':') {  // .shared::cluster
          ++j;
          continue;
        }
        break;
      }
    }
    out.push_back({t.substr(i, j - i), i, line, bol});
    bol = false;
    i = j;
  }
  return out;
}

// ---- edits -----------------------------------------------------------------------------------

using Edit = PtxEdit;

// The text with `edits` made; each offset `marks` points at moves to where its byte lands (an
// edit starting at a mark comes after it: a function's first token may be edited).
std::string apply(std::string_view text, std::vector<Edit> edits, std::vector<size_t *> marks = {}) {
  std::sort(edits.begin(), edits.end(), [](const Edit &a, const Edit &b) { return a.at < b.at; });
  std::sort(marks.begin(), marks.end(), [](const size_t *a, const size_t *b) { return *a < *b; });
  std::string out;
  size_t pos = 0, mark = 0;
  auto place = [&](size_t before) {  // the marks before `before`, in the unedited text since `pos`
    for (; mark < marks.size() && *marks[mark] < before; ++mark)
      *marks[mark] = out.size() + (*marks[mark] > pos ? *marks[mark] - pos : 0);
  };
  for (const Edit &e : edits) {
    if (e.at < pos) continue;  // overlapping: the first wins (never made so)
    place(e.at + 1);
    out.append(text.substr(pos, e.at - pos));
    out += e.text;
    pos = e.at + e.len;
  }
  place(SIZE_MAX);
  out.append(text.substr(pos));
  return out;
}

// ---- the parse -------------------------------------------------------------------------------

// What one function's text says, before deciding whether it is rewritten.
struct Function {
  std::string name;
  bool entry = false, visible = false, weak = false, returns = false;
  size_t line = 0;
  size_t at = 0, end = 0;  // its definition's text, from its first directive to its `}`
  Signature signature;
  std::string signature_error;  // a parameter that has no signature type
  std::vector<std::string> param_names;
  uint32_t reqntid[3] = {0, 0, 0}, maxntid[3] = {0, 0, 0}, minnctapersm = 0, maxnreg = 0;
  std::vector<Edit> header_edits;  // entry -> func, parameter types, directives out
  std::vector<std::string> header_notes;
  std::string refusal;                // a construct of its own code that cannot be fused
  std::vector<SpecialRead> specials;  // its reads of special registers that the rewrite replaces
  std::vector<Edit> exits;            // `exit` -> `ret`
  // Programmatic dependent launch: griddepcontrol.wait calls __sk_dependent_wait, the step's wait
  // for the steps it depends on (the early start PDL gives a graph node); .launch_dependents,
  // taken out: a fused block goes on to the next step once it ends this one.
  std::vector<Edit> dependent_launch;
  bool launches_dependents = false;
  // Each parameter's declaration after `.param` (text offsets [first, second)), for the rewrite
  // of a parameter whose address the kernel takes; its statements and labels (each with the
  // statement it stands before), for that rewrite and for ptx_early_return.hpp's.
  std::vector<std::pair<size_t, size_t>> param_decls;
  std::vector<PtxStatement> body;
  std::vector<std::pair<size_t, std::string_view>> labels;
  std::vector<uint32_t> scope_of{}, scope_parent{0};  // per statement; per `{ }` scope (0: the body)
  bool barrier_zero = false;  // a statement of its own names barrier 0 (or a barrier in a register)
  // A helper's cvta.param: of a parameter-space address its kernel passed it, which the
  // rewrite of that kernel's parameters would not follow.
  std::string param_to_generic;
  std::set<std::string> callees;
  std::set<std::string> words;  // names its statements use otherwise than as a call target
  bool indirect_calls = false, dynamic_shared = false;
  bool trades_registers = false;  // setmaxnreg: warp specialization's register reallocation
};

// A `::cluster` qualifier that reaches beyond the block: `.shared::cluster` addresses the block's
// own shared memory too (every launch is a cluster of one block unless it asks for more), the
// others (`multicast::cluster`, `barrier.cluster`) other blocks of a cluster.
bool names_other_ctas(std::string_view token) {
  constexpr std::string_view q = "::cluster", own = "shared";
  for (size_t at = token.find(q); at != std::string_view::npos; at = token.find(q, at + 1))
    if (at < own.size() || token.substr(at - own.size(), own.size()) != own) return true;
  return false;
}

constexpr const char *kDynamicParallelism[] = {"__cudaCDP2", "cudaLaunchDevice", "cudaGetParameterBuffer",
                                               "cudaCGGetIntrinsicHandle", "cudaCGSynchronize"};

// The callee a `call` statement names ("" for a call through a register).
std::string_view call_target(const std::vector<std::string_view> &t) {
  size_t k = 1;
  if (k < t.size() && t[k] == "(") {  // (return values),
    while (k < t.size() && t[k] != ")") ++k;
    k += 2;
  }
  return k < t.size() && t[k][0] != '%' ? t[k] : "";
}

// What a construct of a function body means for fusion, "" when nothing: the things a `.func`
// called inside a super kernel cannot do.
std::string refused_construct(std::string_view opcode, std::string_view token) {
  if (token.starts_with("%envreg") && workspace_register(token) < 0)
    return "a launch environment register (reads " + std::string(token) + ")";
  if (token.starts_with("%cluster") || token.starts_with("%nclusterid") ||
      token.starts_with("%is_explicit_cluster") || names_other_ctas(token))
    return "a thread block cluster (" + std::string(token) + ")";
  // The super kernel's launch has the shared memory of every sub-kernel and of libsk's state.
  if (token == "%dynamic_smem_size" || token == "%total_smem_size" || token == "%aggr_smem_size")
    return "the block's shared memory size (reads " + std::string(token) +
           "), which in a super kernel is the entry's, not the kernel's";
  if (opcode.starts_with("barrier.cluster") || opcode.starts_with("mapa"))
    return "a thread block cluster (" + std::string(opcode) + ")";
  // A tensor map read where it is (cvta.param of a parameter's address, cp.async.bulk.tensor)
  // is rewritten; one addressed in the parameter space itself is not.
  if (opcode.starts_with("prefetch.param.tensormap") || opcode.starts_with("cvta.to.param"))
    return "a parameter addressed in the parameter space (" + std::string(opcode) +
           "): use its generic address (cvta.param)";
  return "";
}

// The signature type of a scalar PTX parameter type; `.u64`/`.b64` is a pointer unless the
// kernel marks its pointers (`.ptr`, as Triton does), when it is an integer.
bool scalar_type(std::string_view t, bool ptr_attr, bool marks_pointers, ArgType *out, std::string *decl) {
  static const std::map<std::string_view, ArgType> narrow = {
      {".u8", ArgType::U8},   {".b8", ArgType::U8},   {".s8", ArgType::I8},    {".u16", ArgType::U16},
      {".b16", ArgType::U16}, {".f16", ArgType::U16}, {".bf16", ArgType::U16}, {".s16", ArgType::I16},
      {".u32", ArgType::U32}, {".b32", ArgType::U32}, {".s32", ArgType::I32},  {".f32", ArgType::F32},
      {".s64", ArgType::I64}, {".f64", ArgType::F64}};
  if (t == ".u64" || t == ".b64") {
    *out = ptr_attr || !marks_pointers ? ArgType::Ptr : ArgType::U64;
    *decl = ".b64";
    return true;
  }
  auto it = narrow.find(t);
  if (it == narrow.end()) return false;
  *out = it->second;
  // libsk's call sites pass every scalar in a .b32 or .b64 parameter, as nvcc passes a
  // __device__ function's; narrower parameters read their low bytes from it.
  *decl = (t == ".s64" || t == ".f64") ? ".b64" : ".b32";
  return true;
}

class Parser {
 public:
  Parser(std::string_view text, const std::string &label) : text_(text), label_(label), toks_(tokenize(text)) {}

  sk_status run();

  std::string_view text_;
  const std::string &label_;
  std::vector<Tok> toks_;
  std::string version, target;
  size_t version_tok = SIZE_MAX, header_end = 0;
  std::vector<Function> functions;
  std::set<std::string> declared;             // function declarations and definitions
  std::set<std::string> extern_shared;        // `.extern .shared` arrays (dynamic shared memory)
  std::vector<PtxFunctionText> declarations;  // of functions, where they stand
  // Static `.shared` variables (not `.extern`), of the module or of a function.
  struct SharedVar {
    uint64_t bytes = 0;
    uint32_t align = 1;
    size_t at = 0, end = 0;    // its declaration, `;` included
    std::vector<size_t> refs;  // where a statement names it
    bool movable = true;       // into the shared overlay: named by statements only, declared once
  };
  std::map<std::string, SharedVar, std::less<>> shared_vars;
  std::set<std::string> module_words;  // names the module-scope variables' initializers use
  bool section_labels = false;         // a `.section` addresses a label (-G debug info)

 private:
  sk_status bad(size_t i, const std::string &what) const {
    const size_t line = i < toks_.size() ? toks_[i].line : (toks_.empty() ? 1 : toks_.back().line);
    return fail(SK_ERR_BAD_BINARY, "%s: line %zu: %s", label_.c_str(), line, what.c_str());
  }
  const std::string_view tok(size_t i) const { return i < toks_.size() ? toks_[i].s : std::string_view(); }
  size_t line_end(size_t i) const {
    for (++i; i < toks_.size() && !toks_[i].bol;) ++i;
    return i;
  }
  sk_status matching(size_t open, size_t *close) const;
  void shared_variable(size_t begin, size_t end, size_t decl_begin, bool movable);
  sk_status function(size_t begin, size_t body, size_t close);
  sk_status params(Function &f, size_t open, size_t close);
  void directives(Function &f, size_t begin, size_t body);
  void statement(Function &f, size_t begin, size_t end);
};

sk_status Parser::matching(size_t open, size_t *close) const {
  int depth = 0;
  for (size_t i = open; i < toks_.size(); ++i) {
    const std::string_view s = toks_[i].s;
    if (s == "{" || s == "(" || s == "[") ++depth;
    if ((s == "}" || s == ")" || s == "]") && --depth == 0) {
      *close = i;
      return SK_OK;
    }
  }
  return bad(open, "'" + std::string(tok(open)) + "' is never closed");
}

sk_status Parser::run() {
  for (size_t i = 0; i < toks_.size();) {
    const std::string_view s = tok(i);
    if (s == ".version") {
      version = std::string(tok(i + 1));
      version_tok = i + 1;
      header_end = std::max(header_end, toks_[std::min(i + 1, toks_.size() - 1)].at + tok(i + 1).size());
      i += 2;
      continue;
    }
    if (s == ".target" || s == ".address_size") {
      if (s == ".target") target = std::string(tok(i + 1));
      size_t j = i + 2;
      while (tok(j) == ",") j += 2;
      header_end = std::max(header_end, toks_[std::min(j - 1, toks_.size() - 1)].at + tok(j - 1).size());
      i = j;
      continue;
    }
    if (s == ".file" || s == ".loc") {
      i = line_end(i);
      continue;
    }
    if (s == ".section") {
      size_t open = i + 1;
      while (open < toks_.size() && tok(open) != "{") ++open;
      size_t close = 0;
      if (sk_status st = matching(open, &close); st != SK_OK) return st;
      for (size_t k = open; k < close; ++k)  // `.b64 $L__func_begin0`: a use; `$L__info_string0:` defines
        section_labels |= tok(k)[0] == '$' && tok(k + 1) != ":";
      i = close + 1;
      continue;
    }
    // A declaration, a variable or a function: up to `;`, or a function's body.
    bool func = false, init = false;
    int depth = 0;
    size_t j = i;
    for (; j < toks_.size(); ++j) {
      const std::string_view t = tok(j);
      if ((t == ".entry" || t == ".func") && depth == 0) func = true;
      if (t == "=") init = true;
      if (t == "{" && depth == 0 && func && !init) break;
      if (t == "(" || t == "[" || t == "{") ++depth;
      if (t == ")" || t == "]" || t == "}") --depth;
      if (t == ";" && depth == 0) break;
    }
    if (j >= toks_.size()) return bad(i, "'" + std::string(s) + "' does not end");
    if (tok(j) == "{") {
      size_t close = 0;
      if (sk_status st = matching(j, &close); st != SK_OK) return st;
      if (sk_status st = function(i, j, close); st != SK_OK) return st;
      i = close + 1;
      continue;
    }
    bool shared = false, ext = false;
    for (size_t k = i; k < j; ++k) {
      shared |= tok(k) == ".shared";
      ext |= tok(k) == ".extern";
    }
    if (func) {  // a declaration: the name is the word before the parameter list
      for (size_t k = i; k < j; ++k)
        if (tok(k) == "(" && k > i && word_char(tok(k - 1)[0]) && tok(k - 1)[0] != '.') {
          declared.insert(std::string(tok(k - 1)));
          PtxFunctionText d;
          d.name = std::string(tok(k - 1));
          d.at = toks_[i].at;
          d.len = toks_[j].at + 1 - d.at;
          declarations.push_back(std::move(d));
          break;
        }
      i = j + 1;
      continue;
    }
    bool initializer = false;  // a variable's initializer may hold a function's address
    for (size_t k = i; k < j; ++k) {
      initializer |= tok(k) == "=";
      if (initializer && identifier(tok(k))) module_words.insert(std::string(tok(k)));
    }
    if (shared && !ext) {
      bool own = true;  // another module may name a visible or weak variable
      for (size_t k = i; k < j; ++k) own &= tok(k) != ".visible" && tok(k) != ".weak";
      shared_variable(i, j, i, own);
    }
    if (shared && ext) {
      for (size_t k = j; k > i; --k)
        if (tok(k - 1) != "]" && tok(k - 1) != "[" && word_char(tok(k - 1)[0]) && tok(k - 1)[0] != '.') {
          extern_shared.insert(std::string(tok(k - 1)));
          break;
        }
    }
    i = j + 1;
  }
  if (version.empty()) return bad(0, "no .version directive: not PTX");
  if (target.empty()) return bad(0, "no .target directive");
  return SK_OK;
}

// `.shared [.align A] [.vN] .type name[N]...` (tokens [begin, end), `;` at end; the declaration
// from `decl_begin`): its bytes, alignment and where it is declared.
void Parser::shared_variable(size_t begin, size_t end, size_t decl_begin, bool movable) {
  static const std::map<std::string_view, uint32_t> sizes = {
      {".b8", 1},  {".u8", 1},   {".s8", 1},    {".b16", 2}, {".u16", 2}, {".s16", 2},
      {".f16", 2}, {".bf16", 2}, {".f16x2", 4}, {".b32", 4}, {".u32", 4}, {".s32", 4},
      {".f32", 4}, {".b64", 8},  {".u64", 8},   {".s64", 8}, {".f64", 8}, {".b128", 16}};
  uint64_t bytes = 0, count = 1;
  uint32_t align = 0, vector = 1;
  std::string name;
  for (size_t k = begin; k < end; ++k) {
    const std::string_view t = tok(k);
    if (t == ".align")
      align = (uint32_t)std::strtoul(std::string(tok(++k)).c_str(), nullptr, 10);
    else if (t == ".v2" || t == ".v4")
      vector = t == ".v2" ? 2 : 4;
    else if (auto it = sizes.find(t); it != sizes.end())
      bytes = it->second;
    else if (t == "[" && !name.empty())
      count *= std::strtoull(std::string(tok(k + 1)).c_str(), nullptr, 10);
    else if (name.empty() && bytes && word_char(t[0]) && t[0] != '.' && t[0] != '%')
      name = std::string(t);
  }
  if (name.empty() || !bytes) return;
  const auto [it, fresh] = shared_vars.try_emplace(name);
  SharedVar &v = it->second;
  if (!fresh) {  // a function's variable of another's name: neither moves
    v.movable = false;
    return;
  }
  v.bytes = bytes * vector * count;
  v.align = align ? align : (uint32_t)std::min<uint64_t>(bytes * vector, 16);
  v.at = toks_[decl_begin].at;
  v.end = end < toks_.size() ? toks_[end].at + 1 : v.at;
  v.movable = movable && end < toks_.size() && tok(end) == ";";
}

sk_status Parser::params(Function &f, size_t open, size_t close) {
  bool marks = false;
  for (size_t k = open; k < close; ++k) marks |= tok(k) == ".ptr";
  for (size_t k = open + 1; k < close;) {
    size_t end = k;
    while (end < close && tok(end) != ",") ++end;
    // .param TYPE... NAME [ '[' N ']' ]
    if (tok(k) != ".param") return bad(k, "a parameter of '" + f.name + "' does not start with .param");
    size_t name = k + 1;
    uint32_t align = 0;
    bool ptr = false;
    std::string type;
    for (; name < end && tok(name)[0] == '.'; ++name) {
      const std::string_view a = tok(name);
      if (a == ".ptr")
        ptr = true;
      else if (a == ".align")
        align = (uint32_t)std::strtoul(std::string(tok(++name)).c_str(), nullptr, 10);
      else if (a != ".global" && a != ".const" && a != ".shared" && a != ".local")
        type = std::string(a);
    }
    if (name >= end) return bad(k, "a parameter of '" + f.name + "' has no name");
    f.param_names.emplace_back(tok(name));
    f.param_decls.emplace_back(toks_[k + 1].at, toks_[end - 1].at + tok(end - 1).size());
    const std::string pname(tok(name));
    if (tok(name + 1) == "[") {  // a byte array: an aggregate passed by value
      const unsigned long bytes = std::strtoul(std::string(tok(name + 2)).c_str(), nullptr, 10);
      const uint32_t a = align ? align : 1;
      if (bytes == 0 || bytes % a || (a & (a - 1)) || a > kMaxAggregateAlign) {
        f.signature_error = "parameter '" + pname + "' (" + std::to_string(bytes) + " bytes, aligned " +
                            std::to_string(a) + ") has no signature type";
      } else {
        const uint32_t piece = std::min<uint32_t>(a, 8);
        const std::string member = piece == 1 ? "u8" : piece == 2 ? "u16" : piece == 4 ? "u32" : "u64";
        Signature one;
        const std::string spelled =
            "{" + member + "[" + std::to_string(bytes / piece) + "]}" + (a > piece ? "@" + std::to_string(a) : "");
        if (parse_signature(spelled, "parameter '" + pname + "'", &one) != SK_OK || one[0].align != a) {
          f.signature_error = "parameter '" + pname + "' (" + std::to_string(bytes) + " bytes, aligned " +
                              std::to_string(a) + ") has no signature type";
        } else {
          f.signature.push_back(one[0]);
        }
      }
    } else {
      ArgType t{};
      std::string decl;
      if (!scalar_type(type, ptr, marks, &t, &decl)) {
        f.signature_error = "parameter '" + pname + "' has PTX type '" + type + "', which no signature type holds";
      } else {
        f.signature.emplace_back(t);
        if (f.entry) {  // `.param .u64 .ptr .global .align 1 x` -> `.param .b64 x`
          const size_t from = toks_[k + 1].at, to = toks_[name].at;
          f.header_edits.push_back({from, to - from, decl + " "});
        }
      }
    }
    k = end + 1;
  }
  return SK_OK;
}

// Entry directives between the parameter list and the body: launch facts, taken out.
void Parser::directives(Function &f, size_t begin, size_t body) {
  auto dims = [&](size_t k, uint32_t *d) {
    for (int n = 0; n < 3 && k < body; ++n) {
      d[n] = (uint32_t)std::strtoul(std::string(tok(k)).c_str(), nullptr, 10);
      if (tok(k + 1) != ",") break;
      k += 2;
    }
  };
  for (size_t k = begin; k < body; ++k) {
    const std::string_view d = tok(k);
    if (d == ".reqntid") dims(k + 1, f.reqntid);
    if (d == ".maxntid") dims(k + 1, f.maxntid);
    if (d == ".minnctapersm") f.minnctapersm = (uint32_t)std::strtoul(std::string(tok(k + 1)).c_str(), nullptr, 10);
    if (d == ".maxnreg") f.maxnreg = (uint32_t)std::strtoul(std::string(tok(k + 1)).c_str(), nullptr, 10);
    if (d == ".explicitcluster" || d == ".reqnctapercluster" || d == ".maxclusterrank" || d == ".blocksareclusters")
      f.refusal = "a thread block cluster (" + std::string(d) + ")";
  }
  for (size_t i : {0, 1, 2})
    if (f.reqntid[i] == 0 && (f.reqntid[0] || f.reqntid[1] || f.reqntid[2])) f.reqntid[i] = 1;
  for (size_t i : {0, 1, 2})
    if (f.maxntid[i] == 0 && (f.maxntid[0] || f.maxntid[1] || f.maxntid[2])) f.maxntid[i] = 1;
  if (f.entry && begin < body) {
    const size_t from = toks_[begin].at, to = toks_[body].at;
    f.header_edits.push_back({from, to - from, "\n"});
    f.header_notes.push_back("entry directives '" +
                             std::string(text_.substr(from, toks_[body - 1].at + toks_[body - 1].s.size() - from)) +
                             "' taken as launch facts");
  }
}

void Parser::statement(Function &f, size_t begin, size_t end) {
  size_t op = begin;
  std::string guard;
  if (tok(op)[0] == '@') guard = std::string(tok(op++));
  if (op >= end) return;
  const std::string_view opcode = tok(op);
  if (opcode == ".shared") {  // a function's own variable: the function names it
    shared_variable(op, end, begin, guard.empty());
    for (size_t k = op + 1; k < end; ++k)
      if (identifier(tok(k))) f.words.insert(std::string(tok(k)));
    return;
  }
  {
    PtxStatement s{toks_[begin].at, toks_[end].at + 1 - toks_[begin].at, op > begin ? tok(begin) : "", {}};
    for (size_t k = op; k < end; ++k) s.toks.push_back(tok(k));
    const BarrierZero z = barrier_zero(s);
    f.barrier_zero |= z == BarrierZero::Sync || z == BarrierZero::Reduce || z == BarrierZero::Unknown;
    f.body.push_back(std::move(s));
  }
  if (!f.entry && opcode.starts_with("cvta.param") && f.param_to_generic.empty())
    f.param_to_generic = std::string(opcode);
  for (size_t k = op; k < end; ++k) {
    const std::string_view t = tok(k);
    if (f.refusal.empty()) f.refusal = refused_construct(k == op ? opcode : "", t);
    if (extern_shared.count(std::string(t))) f.dynamic_shared = true;
    if (k > op && !opcode.starts_with("call") && identifier(t)) {
      f.words.insert(std::string(t));
      if (const auto v = shared_vars.find(t); v != shared_vars.end()) v->second.refs.push_back(toks_[k].at);
    }
  }
  if (f.refusal.empty() && opcode.starts_with("bar")) {
    const std::string id(barrier_named(f.body.back().toks));
    if (!id.empty() && id[0] >= '0' && id[0] <= '9' && std::strtoul(id.c_str(), nullptr, 0) == kBlockBarrier)
      f.refusal = "barrier " + id + " (" + std::string(opcode) +
                  "), which the super kernel's own block barriers use: warps that left the sub-kernel would "
                  "count at it";
  }
  f.trades_registers |= opcode.starts_with("setmaxnreg");
  if (opcode == "griddepcontrol.wait") {
    f.dependent_launch.push_back(
        {toks_[op].at, opcode.size(), std::string("call ") + kDependentWaitFunction + ", ()"});
    f.callees.insert(kDependentWaitFunction);
    return;
  }
  if (opcode.starts_with("griddepcontrol.")) {
    f.launches_dependents = true;
    f.dependent_launch.push_back({toks_[begin].at, toks_[end].at + 1 - toks_[begin].at, ""});
    return;
  }
  if (opcode == "exit") {
    if (f.entry)
      f.exits.push_back({toks_[op].at, opcode.size(), "ret"});
    else if (f.refusal.empty())
      f.refusal = "'" + f.name + "' ends its thread with exit";
    return;
  }
  if (opcode.starts_with("call")) {
    const std::string callee(call_target(f.body.back().toks));
    if (callee.empty()) {
      f.indirect_calls = true;
    } else {
      f.callees.insert(callee);
      for (const char *p : kDynamicParallelism)
        if (callee.starts_with(p) && f.refusal.empty()) f.refusal = "dynamic parallelism (calls " + callee + ")";
    }
    return;
  }
  if (opcode.starts_with("mov.") && end == op + 4 && tok(op + 2) == ",") {
    const std::string_view src = tok(op + 3);
    if (special_register(src)) {
      // The rewrite reads the grid through libsk's device API, or its grid function.
      if (const std::string_view fn = grid_api(src); !fn.empty()) f.callees.insert(std::string(fn));
      if (grid_beyond_x(src)) f.callees.insert(kGridFunction);
      if (workspace_register(src) >= 0) f.callees.insert(kWorkspaceFunction);
      const size_t from = toks_[begin].at;
      f.specials.push_back({from, toks_[end].at + 1 - from, guard, std::string(tok(op + 1)), std::string(src)});
      return;
    }
  }
  for (size_t k = op; k < end; ++k) {
    const std::string_view t = tok(k);
    if ((t.starts_with("%ctaid") || t.starts_with("%nctaid") || t.starts_with("%tid") || t.starts_with("%ntid") ||
         workspace_register(t) >= 0) &&
        f.refusal.empty() && !(t == "%tid.x" || t == "%ntid.x"))
      f.refusal = "reads " + std::string(t) + " other than by a scalar mov";
  }
}

sk_status Parser::function(size_t begin, size_t body, size_t close) {
  Function f;
  f.line = toks_[begin].line;
  f.at = toks_[begin].at;
  f.end = toks_[close].at + 1;
  size_t k = begin;
  for (; k < body && tok(k) != ".entry" && tok(k) != ".func"; ++k) {
    f.visible |= tok(k) == ".visible";
    f.weak |= tok(k) == ".weak";
  }
  f.entry = tok(k) == ".entry";
  const size_t kind = k++;
  if (tok(k) == "(") {  // a .func's return values
    f.returns = true;
    if (sk_status st = matching(k, &k); st != SK_OK) return st;
    ++k;
  }
  f.name = std::string(tok(k));
  if (f.name.empty() || f.name[0] == '.' || f.name == "(") return bad(kind, "a function without a name");
  declared.insert(f.name);
  size_t after = k + 1;
  if (tok(after) == "(") {
    size_t pclose = 0;
    if (sk_status st = matching(after, &pclose); st != SK_OK) return st;
    if (sk_status st = params(f, after, pclose); st != SK_OK) return st;
    after = pclose + 1;
  }
  // Between the parameters and the body only directives (and their numbers) stand.
  for (size_t d = after; d < body; ++d) {
    const std::string_view t = tok(d);
    if (t[0] != '.' && t[0] != ',' && t[0] != ';' && t[0] != '"' && !(t[0] >= '0' && t[0] <= '9'))
      return bad(d, "'" + std::string(t) + "' between the parameters of '" + f.name + "' and its body");
  }
  if (f.entry) f.header_edits.push_back({toks_[kind].at, 6, f.visible ? ".func" : ".visible .func"});
  directives(f, after, body);
  // The body: statements end at `;`; `{` `}` alone open and close scopes; labels end at `:`.
  std::vector<uint32_t> open{0};
  for (size_t i = body + 1; i < close;) {
    const std::string_view s = tok(i);
    if (s == "{") {
      open.push_back((uint32_t)f.scope_parent.size());
      f.scope_parent.push_back(open[open.size() - 2]);
      ++i;
      continue;
    }
    if (s == "}") {
      if (open.size() > 1) open.pop_back();
      ++i;
      continue;
    }
    if (s == ".loc" || s == ".file") {
      i = std::min(line_end(i), close);
      continue;
    }
    if (tok(i + 1) == ":" && s[0] != '@') {
      f.labels.push_back({f.body.size(), s});
      i += 2;
      continue;
    }
    int depth = 0;
    size_t j = i;
    for (; j < close; ++j) {
      const std::string_view t = tok(j);
      if (t == "(" || t == "[" || t == "{") ++depth;
      if (t == ")" || t == "]" || t == "}") --depth;
      if (t == ";" && depth <= 0) break;
    }
    if (j >= close) return bad(i, "a statement of '" + f.name + "' does not end with ';'");
    statement(f, i, j);
    f.scope_of.resize(f.body.size(), open.back());
    i = j + 1;
  }
  functions.push_back(std::move(f));
  return SK_OK;
}

// ---- the rewrite -----------------------------------------------------------------------------

// The rewrite of the parameters an entry takes the address of (ptx_param_address.hpp) into
// its edits and notes; the refusal, if one of them is used otherwise.
std::string pass_by_address(const Function &f, PtxKernel *k, std::vector<Edit> *edits,
                            std::vector<std::string> *notes) {
  ParamAddressRewrite r = rewrite_param_addresses(f.param_names, f.param_decls, f.body);
  if (!r.refusal.empty()) return r.refusal;
  for (uint32_t j : r.by_address) {  // its declaration replaces the scalar one's
    const size_t from = f.param_decls[j].first;
    edits->erase(std::remove_if(edits->begin(), edits->end(), [from](const Edit &e) { return e.at == from; }),
                 edits->end());
  }
  edits->insert(edits->end(), r.edits.begin(), r.edits.end());
  notes->insert(notes->end(), r.notes.begin(), r.notes.end());
  k->by_address = std::move(r.by_address);
  return "";
}

// An entry whose threads may return while others of the block go on to barrier 0
// (ptx_early_return.hpp): its returns branch to the wait of a returned thread, and every barrier
// 0 that it and the functions it reaches name runs in two phases. The refusal, if a barrier is
// in a form the rewrite does not pair, or may lie where it cannot see.
std::string keep_step_after_return(const Function &f, const std::vector<const Function *> &reached,
                                   const std::set<std::string_view> &barrier_functions, std::vector<Edit> *edits,
                                   std::vector<std::string> *notes, bool *leaves) {
  std::vector<bool> barrier;
  for (const PtxStatement &s : f.body) {
    const bool call = s.toks[0].starts_with("call");
    const std::string_view callee = call ? call_target(s.toks) : "";
    const BarrierZero z = barrier_zero(s);
    barrier.push_back(z == BarrierZero::Sync || z == BarrierZero::Reduce || z == BarrierZero::Unknown ||
                      (call && (callee.empty() || barrier_functions.count(callee))));
  }
  if (!returns_before_barrier({&f.body, &f.labels, &f.scope_of, &f.scope_parent}, f.param_names, barrier)) return "";
  const std::string early = "returns early before a __syncthreads() its other threads reach, and ";
  for (const Function *g : reached) {
    if (g->indirect_calls) return early + "'" + g->name + "' calls through a pointer, whose barriers it cannot pair";
    for (const std::string &c : g->callees)
      if (!library_function(c) &&
          std::none_of(reached.begin(), reached.end(), [&](const Function *r) { return r->name == c; }))
        return early + "calls '" + c + "', defined in another module, whose barriers it cannot pair";
    for (const PtxStatement &s : g->body) {
      const BarrierZero z = barrier_zero(s);
      if (z == BarrierZero::Counted || z == BarrierZero::Unknown) {
        std::string text;
        for (std::string_view t : s.toks) text += (text.empty() || t == "," ? "" : " ") + std::string(t);
        return early + "'" + (s.guard.empty() ? "" : std::string(s.guard) + " ") + text + "'" +
               (g->name == f.name ? "" : " in '" + g->name + "'") +
               " may share barrier 0 with the returned threads' wait, which it cannot pair (a thread count, "
               "a guard, an id in a register)";
      }
      if (z == BarrierZero::Sync || z == BarrierZero::Reduce) edits->push_back({s.at, s.len, two_phase_barrier(s)});
    }
  }
  for (const PtxStatement &s : f.body)
    if (s.toks[0].starts_with("ret") || s.toks[0] == "exit")
      edits->push_back({s.guard.empty() ? s.at : s.at + (size_t)(s.toks[0].data() - s.guard.data()),
                        s.toks[0].size(), std::string("bra ") + kLeaveLabel});
  edits->push_back({f.end - 1, 0, leave_block()});
  notes->push_back(
      "a thread may return before a __syncthreads() its block's other threads reach: its returns wait "
      "in " +
      std::string(kLeaveFunction) +
      " until the block's last thread has returned, and its barriers 0 run in two phases");
  *leaves = true;
  return "";
}

bool newer(const std::string &a, const std::string &b) {  // "9.4" > "9.0"
  unsigned am = 0, an = 0, bm = 0, bn = 0;
  std::sscanf(a.c_str(), "%u.%u", &am, &an);
  std::sscanf(b.c_str(), "%u.%u", &bm, &bn);
  return am != bm ? am > bm : an > bn;
}

}  // namespace

const PtxKernel *PtxModule::find(std::string_view name) const {
  for (const PtxKernel &k : kernels)
    if (k.name == name) return &k;
  return nullptr;
}

bool looks_like_ptx(const void *bytes, size_t size) {
  const std::string_view t(static_cast<const char *>(bytes), size);
  const size_t nul = t.find('\0');
  if (nul != std::string_view::npos && t.find_first_not_of('\0', nul) != std::string_view::npos) return false;
  for (const Tok &k : tokenize(t.substr(0, std::min<size_t>(nul, 4096)))) return k.s == ".version";
  return false;
}

std::string ptx_isa_of_nvjitlink(const std::string &v) {
  unsigned major = 0, minor = 0;
  if (std::sscanf(v.c_str(), "%u.%u", &major, &minor) != 2 || major < 12) return "";
  // CUDA 12.x compiles PTX ISA 8.x (12.6 stayed at 8.5, 12.8 and 12.9 are 8.7 and 8.8);
  // CUDA 13.x compiles 9.x.
  if (major == 12) {
    static const unsigned isa12[] = {0, 1, 2, 3, 4, 5, 5, 6, 7, 8};
    return "8." + std::to_string(isa12[std::min(minor, 9u)]);
  }
  return std::to_string(major - 4) + "." + std::to_string(minor);
}

sk_status read_ptx_module(std::string_view text, const std::string &label, const std::string &arch,
                          const std::string &max_version, PtxModule *out) {
  while (!text.empty() && text.back() == '\0') text.remove_suffix(1);
  Parser p(text, label);
  if (sk_status st = p.run(); st != SK_OK) return st;
  PtxModule m;
  m.version = p.version;
  m.target = p.target;
  // The target: PTX for the device's architecture or an older one; `sm_90a` features need the
  // link to be for sm_90a.
  bool specific = false;
  const unsigned device = elf::arch_number(arch, &specific);
  char *end = nullptr;
  const unsigned sm = m.target.starts_with("sm_") ? (unsigned)std::strtoul(m.target.c_str() + 3, &end, 10) : 0;
  if (!sm)
    return fail(SK_ERR_BAD_BINARY, "%s: .target %s is not an sm_XY architecture", label.c_str(), m.target.c_str());
  const std::string suffix = end ? end : "";
  if (sm > device || (!suffix.empty() && sm != device))
    return fail(SK_ERR_INCOMPATIBLE, "%s: the PTX is for %s (.target), which a %s device cannot run%s",
                label.c_str(), m.target.c_str(), arch.c_str(),
                suffix.empty() ? "" : ": its architecture-specific features are that GPU's only");
  m.link_arch = suffix.empty() ? arch : arch + suffix;
  std::vector<Edit> edits;
  if (!max_version.empty() && newer(m.version, max_version)) {
    edits.push_back({p.toks_[p.version_tok].at, p.version.size(), max_version});
    m.rewrites.push_back(".version " + m.version + " lowered to " + max_version +
                         ", the newest the installed nvJitLink compiles");
  }

  // The call graph, in the cubin reader's form: a call through a pointer may reach any
  // function whose name the code uses otherwise than in a call.
  m.graph.label = label;
  m.graph.type = 1;  // relocatable: compiled and linked with the others
  std::set<std::string> defined, named;
  for (const Function &f : p.functions) {
    defined.insert(f.name);
    named.insert(f.words.begin(), f.words.end());
  }
  for (const Function &f : p.functions) {
    elf::CubinFunction g;
    g.name = f.name;
    g.local = !f.visible && !f.entry;
    g.weak = f.weak;
    g.indirect_calls = f.indirect_calls;
    g.dynamic_shared = f.dynamic_shared;
    for (const std::string &c : f.callees) {
      g.callees.push_back(c);
      if (!defined.count(c)) {
        g.externs.push_back(c);
        if (!library_function(c)) m.calls_outside = true;
      }
    }
    m.graph.functions.push_back(std::move(g));
    if (named.count(f.name)) m.graph.pointer_targets.push_back(f.name);
  }

  // Its static shared variables, and which each function names, as a cubin's: the overlay lays
  // them out for the kernels' call trees. Debug sections may address a variable by name.
  std::map<std::string_view, uint32_t> var_index;
  for (const auto &[name, v] : p.shared_vars) {
    var_index[name] = (uint32_t)m.graph.shared_vars.size();
    elf::CubinSharedVar g;
    g.name = name;
    g.size = (uint32_t)std::min<uint64_t>(v.bytes, UINT32_MAX);
    g.align = v.align;
    g.overlay = v.movable && !p.section_labels && !p.module_words.count(name);
    m.graph.shared_vars.push_back(std::move(g));
  }
  for (size_t i = 0; i < p.functions.size(); ++i)
    for (const std::string &w : p.functions[i].words)
      if (const auto it = var_index.find(w); it != var_index.end())
        m.graph.functions[i].shared_vars.push_back(it->second);

  // Each function by name, and what each kernel (an entry, or a visible function that returns
  // nothing) reaches, walked once.
  std::map<std::string_view, const Function *> by_name;
  std::map<std::string_view, elf::CubinReach> reach_of;
  for (const Function &f : p.functions) {
    by_name[f.name] = &f;
    if ((f.entry || f.visible) && !f.returns) reach_of[f.name] = m.graph.reach(f.name);
  }

  // The functions that reach barrier 0, themselves or through a call (a call through a pointer
  // may reach one).
  std::set<std::string_view> barrier_functions;
  for (bool changed = true; changed;) {
    changed = false;
    for (const Function &f : p.functions) {
      if (barrier_functions.count(f.name)) continue;
      bool reaches = f.barrier_zero || f.indirect_calls;
      for (const std::string &c : f.callees) reaches |= barrier_functions.count(c) > 0;
      if (reaches) changed = barrier_functions.insert(f.name).second;
    }
  }

  // The functions a kernel reaches that reads a grid register beyond x: each reads every grid
  // register from __sk_grid (x too: the x index is the block's modulo the grid's x extent).
  auto beyond_x = [&](std::string_view name) {
    const auto it = by_name.find(name);
    return it != by_name.end() && std::any_of(it->second->specials.begin(), it->second->specials.end(),
                                              [](const SpecialRead &s) { return grid_beyond_x(s.reg); });
  };
  std::set<std::string> grid_nd, grid_nd_kernels;
  for (const Function &f : p.functions) {
    if ((!f.entry && !f.visible) || f.returns) continue;
    const elf::CubinReach &reach = reach_of[f.name];
    if (std::any_of(reach.functions.begin(), reach.functions.end(),
                    [&](const std::string &r) { return beyond_x(r); })) {
      grid_nd_kernels.insert(f.name);
      grid_nd.insert(reach.functions.begin(), reach.functions.end());
    }
  }

  // The kernels whose block shape the caller gives (sk_kernel_desc.block): an entry without
  // .reqntid that reads a thread register beyond x, or any under a multi-dimensional .maxntid,
  // in itself or a helper. Every thread register read by such a kernel or a helper it reaches,
  // and by any helper a kernel with .reqntid reaches that reads one beyond x, comes from
  // __sk_thread, which reads the shape the call site stores.
  auto reads_thread = [&](std::string_view name, bool beyond_x_only) {
    const auto it = by_name.find(name);
    return it != by_name.end() &&
           std::any_of(it->second->specials.begin(), it->second->specials.end(), [&](const SpecialRead &s) {
             return thread_register(s.reg) >= 0 && (!beyond_x_only || s.reg.back() != 'x');
           });
  };
  std::set<std::string> block_nd, block_shape_kernels;
  for (const Function &f : p.functions) {
    if (!f.entry) continue;
    const elf::CubinReach &reach = reach_of[f.name];
    const bool flat_max = !f.maxntid[0] || f.maxntid[1] * f.maxntid[2] <= 1;
    if (!std::any_of(reach.functions.begin(), reach.functions.end(), [&](const std::string &r) {
          const auto it = by_name.find(r);
          if (it == by_name.end() || (it->second->visible && !it->second->entry)) return false;
          return !f.reqntid[0] ? reads_thread(r, flat_max) : r != f.name && reads_thread(r, true);
        }))
      continue;
    if (!f.reqntid[0]) block_shape_kernels.insert(f.name);
    for (const std::string &h : reach.functions)
      if (h != f.name || !f.reqntid[0]) block_nd.insert(h);
  }

  std::set<std::string> api_needed;
  auto api_of = [&](const Function &f, const SpecialRead &s) -> std::string {
    if (workspace_register(s.reg) >= 0) return kWorkspaceFunction;
    if (grid_register(s.reg) >= 0 && grid_nd.count(f.name)) return kGridFunction;
    if (thread_register(s.reg) >= 0 && block_nd.count(f.name)) return kThreadFunction;
    return std::string(grid_api(s.reg));
  };
  // A helper's (a function no other module can call) block index and grid size are its
  // kernel's: read like the kernel's own, as a one-dimensional block's.
  for (const Function &f : p.functions) {
    if (!f.entry) {
      edits.insert(edits.end(), f.dependent_launch.begin(), f.dependent_launch.end());
      if (f.callees.count(kDependentWaitFunction)) api_needed.insert(kDependentWaitFunction);
    }
    if (f.entry || f.visible) continue;
    const uint32_t flat[3] = {0, 1, 1};
    for (const SpecialRead &s : f.specials) {
      const std::string with = special_read(s, flat, grid_nd.count(f.name), block_nd.count(f.name));
      if (with.empty()) continue;
      edits.push_back({s.at, s.len, with});
      if (const std::string fn = api_of(f, s); !fn.empty()) api_needed.insert(fn);
    }
  }
  for (const Function &f : p.functions) {
    if ((!f.entry && !f.visible) || f.returns) continue;  // a helper, never a sub-kernel
    PtxKernel k;
    k.name = f.name;
    k.entry = f.entry;
    std::copy(f.reqntid, f.reqntid + 3, k.reqntid);
    std::copy(f.maxntid, f.maxntid + 3, k.maxntid);
    k.min_blocks_per_sm = f.minnctapersm;
    k.max_registers = f.maxnreg;
    k.signature = f.signature;
    const uint32_t *block = f.reqntid[0] ? f.reqntid : f.maxntid;
    const bool flat = !block[0] || block[1] * block[2] <= 1;
    const elf::CubinReach &reach = reach_of[f.name];
    // The functions it reaches that this module defines (a call outside it links elsewhere).
    std::vector<const Function *> reached;
    for (const std::string &r : reach.functions)
      if (const auto it = by_name.find(r); it != by_name.end()) reached.push_back(it->second);
    // Its static shared memory: each variable a function it reaches names, once.
    std::set<std::string> vars;
    for (const Function *g : reached)
      for (const std::string &w : g->words)
        if (p.shared_vars.count(w)) vars.insert(w);
    for (const std::string &v : vars) {
      const Parser::SharedVar &var = p.shared_vars.at(v);
      k.static_shared = (k.static_shared + var.align - 1) / var.align * var.align + var.bytes;
    }
    k.multi_dimensional_grid = grid_nd_kernels.count(f.name);
    k.launches_dependents =
        std::any_of(reached.begin(), reached.end(), [](const Function *g) { return g->launches_dependents; });
    k.block_shape_needed = block_shape_kernels.count(f.name);
    // Refused when any function it reaches does what a called function cannot.
    for (const Function *gp : reached) {
      const Function &g = *gp;
      if (block_nd.count(g.name) && !(g.visible && !g.entry) && reads_thread(g.name, false))
        k.reads_block_shape = true;
      if (!k.refusal.empty()) continue;
      std::string why = g.refusal;
      if (why.empty() && (g.entry || !g.visible))
        why = special_refusal(g.specials, (g.name == f.name && f.reqntid[0]) || block_nd.count(g.name));
      if (why.empty() && g.name != f.name && !flat && !g.visible && !block_nd.count(g.name))
        for (const SpecialRead &s : g.specials)
          if (s.reg.starts_with("%tid") || s.reg.starts_with("%ntid"))
            why = "reads " + s.reg + " of a multi-dimensional block";
      if (!why.empty()) k.refusal = g.name == f.name ? why : why + ", in '" + g.name + "', which it calls";
    }
    if (k.refusal.empty()) k.refusal = f.signature_error;  // the construct first, if both
    if (k.entry && k.refusal.empty()) {
      std::vector<Edit> mine = f.header_edits;
      std::vector<std::string> notes{".entry made a .func; parameters declared as a callee's"};
      if (!f.visible) notes[0] += "; made .visible";
      notes.insert(notes.end(), f.header_notes.begin(), f.header_notes.end());
      std::set<std::string> seen, api;
      const uint32_t one_d[3] = {block[0], 1, 1};
      for (const SpecialRead &s : f.specials) {
        if (!flat && !f.reqntid[0] && !k.block_shape_needed && thread_register(s.reg) >= 0) {
          k.refusal = "a " + std::to_string(block[0]) + "x" + std::to_string(block[1]) + "x" +
                      std::to_string(block[2]) + " block (.maxntid) without .reqntid: its shape is not known";
          break;
        }
        const std::string with =
            special_read(s, flat ? one_d : block, grid_nd.count(f.name), block_nd.count(f.name));
        if (with.empty()) continue;
        mine.push_back({s.at, s.len, with});
        const std::string fn = api_of(f, s);
        if (!fn.empty()) api.insert(fn);
        if (seen.insert(s.reg).second)
          notes.push_back(s.reg +
                          (fn.empty()                 ? std::string(" rebuilt from the block's thread index")
                           : fn == kWorkspaceFunction ? " read as the address of the step's grid word (" + fn +
                                                            "): cg::this_grid().sync() waits for the step's blocks"
                           : fn == kGridFunction   ? " read from the step's grid shape (" + fn + ")"
                           : fn == kThreadFunction ? " read from the block's shape its caller gives (" + fn + ")"
                                                   : " read as " + fn + "()"));
      }
      if (k.refusal.empty()) k.refusal = pass_by_address(f, &k, &mine, &notes);
      for (const Function *g : reached)
        if (k.refusal.empty() && !k.by_address.empty() && !g->entry && !g->param_to_generic.empty())
          k.refusal = "takes the address of a parameter and '" + g->name +
                      "', which it calls, makes a parameter address generic (" + g->param_to_generic + ")";
      bool leaves = false;
      if (k.refusal.empty() && barrier_functions.count(f.name))
        k.refusal = keep_step_after_return(f, reached, barrier_functions, &mine, &notes, &leaves);
      if (leaves) api.insert(kLeaveFunction);
      if (!f.exits.empty() && !leaves) notes.push_back("exit made ret");
      // ptxas keeps no setmaxnreg in relocatable code (C7504), which is what a link compiles.
      if (std::any_of(reached.begin(), reached.end(), [](const Function *g) { return g->trades_registers; }))
        notes.push_back(
            "setmaxnreg (warp specialization) has no effect in a link, which compiles each module as relocatable "
            "code: every warp keeps the registers of the launch, as the kernel's own relocatable compile does; "
            "maybe slower than alone");
      if (std::any_of(reached.begin(), reached.end(),
                      [](const Function *g) { return g->callees.count(kDependentWaitFunction); })) {
        notes.push_back(std::string("griddepcontrol.wait (programmatic dependent launch) calls ") +
                        kDependentWaitFunction +
                        ": the thread waits there for the steps this one depends on, and what comes before it "
                        "runs while they end (the step's early start)");
        if (f.callees.count(kDependentWaitFunction)) api.insert(kDependentWaitFunction);
      }
      if (k.launches_dependents)
        notes.push_back(
            "griddepcontrol.launch_dependents taken out: a step after it that waits at griddepcontrol.wait may "
            "start early");
      if (k.refusal.empty()) {  // else it stays an .entry, as written
        edits.insert(edits.end(), mine.begin(), mine.end());
        if (!leaves) edits.insert(edits.end(), f.exits.begin(), f.exits.end());
        edits.insert(edits.end(), f.dependent_launch.begin(), f.dependent_launch.end());
        api_needed.insert(api.begin(), api.end());
        k.rewrites = std::move(notes);
      }
    }
    m.kernels.push_back(std::move(k));
  }
  // libsk's device API, declared where the rewrite calls it and the text does not.
  std::string decls;
  for (const std::string &fn : api_needed)
    if (!p.declared.count(fn))
      decls += "\n" + (fn == kLeaveFunction ? leave_declaration() : special_function_declaration(fn));
  if (!decls.empty()) edits.push_back({p.header_end, 0, decls + "\n"});

  // Where each function's definition and declarations stand in the rewritten text, and the
  // module's functions each definition uses, for a link to keep what its kernels reach.
  m.functions = std::move(p.declarations);
  for (const Function &f : p.functions) {
    PtxFunctionText t;
    t.name = f.name;
    t.at = f.at;
    t.len = f.end - f.at;
    t.definition = true;
    t.always = (!f.entry && (f.visible || f.weak)) || p.module_words.count(f.name);
    for (const std::string &c : f.callees)
      if (defined.count(c)) t.uses.push_back(c);
    for (const std::string &w : f.words)
      if (defined.count(w) && !f.callees.count(w)) t.uses.push_back(w);
    m.functions.push_back(std::move(t));
  }
  std::vector<size_t> ends, var_ends;
  for (const PtxFunctionText &t : m.functions) ends.push_back(t.at + t.len);
  for (const auto &[name, v] : p.shared_vars) {
    m.shared_text.push_back({v.at, 0, v.refs});
    var_ends.push_back(v.end);
  }
  std::vector<size_t *> marks{&m.declarations_at};
  m.declarations_at = p.header_end;
  for (size_t i = 0; i < m.functions.size(); ++i) marks.insert(marks.end(), {&m.functions[i].at, &ends[i]});
  for (size_t i = 0; i < m.shared_text.size(); ++i) {
    marks.insert(marks.end(), {&m.shared_text[i].at, &var_ends[i]});
    for (size_t &r : m.shared_text[i].refs) marks.push_back(&r);
  }
  m.whole = p.section_labels;
  m.text = apply(text, std::move(edits), std::move(marks));
  for (size_t i = 0; i < m.functions.size(); ++i) m.functions[i].len = ends[i] - m.functions[i].at;
  // A variable stays where it is unless the rewritten text still names it at every place.
  for (size_t i = 0; i < m.shared_text.size(); ++i) {
    PtxSharedText &t = m.shared_text[i];
    elf::CubinSharedVar &v = m.graph.shared_vars[i];
    t.len = var_ends[i] - t.at;
    for (size_t r : t.refs)
      v.overlay = v.overlay && r + v.name.size() <= m.text.size() && m.text.compare(r, v.name.size(), v.name) == 0;
  }
  *out = std::move(m);
  return SK_OK;
}

}  // namespace sk::cuda
