#include "cuda/ptx_parse.hpp"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <set>

#include "common/error.hpp"
#include "cuda/entry_ptx.hpp"
#include "cuda/ptx_early_return.hpp"

namespace sk::cuda::ptx_parse {
namespace {

bool word_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '$' ||
         c == '%' || c == '.';
}

// A word that names a variable or a function: not a directive, register, label or number.
bool identifier(std::string_view t) { return !t.empty() && word_char(t[0]) && !std::strchr(".%$0123456789", t[0]); }

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

}  // namespace

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
    // Line information: the directive stands for its line, which no reader looks into.
    if (out.back().s == ".loc" || out.back().s == ".file")
      while (i < t.size() && t[i] != '\n') ++i;
  }
  return out;
}

std::string apply(std::string_view text, std::vector<Edit> edits, std::vector<size_t *> marks) {
  std::sort(edits.begin(), edits.end(),
            [](const Edit &a, const Edit &b) { return a.at != b.at ? a.at < b.at : a.len < b.len; });
  std::sort(marks.begin(), marks.end(), [](const size_t *a, const size_t *b) { return *a < *b; });
  std::string out;
  size_t pos = 0, mark = 0;
  auto place = [&](size_t before) {  // the marks before `before`, in the unedited text since `pos`
    for (; mark < marks.size() && *marks[mark] < before; ++mark)
      *marks[mark] = out.size() + (*marks[mark] > pos ? *marks[mark] - pos : 0);
  };
  for (const Edit &e : edits) {
    if (e.at < pos || e.at + e.len > text.size()) continue;  // overlapping: the first wins (a piece cut)
    place(e.at + 1);
    out.append(text.substr(pos, e.at - pos));
    out += e.text;
    pos = e.at + e.len;
  }
  place(SIZE_MAX);
  out.append(text.substr(pos));
  return out;
}

size_t closing(const std::vector<Tok> &toks, size_t open) {
  std::string expected;  // the closers of the brackets open, innermost last
  for (size_t i = open; i < toks.size(); ++i) {
    const std::string_view s = toks[i].s;
    if (s == "{" || s == "(" || s == "[") expected += s == "{" ? '}' : s == "(" ? ')' : ']';
    if (s == "}" || s == ")" || s == "]") {
      if (expected.empty() || s[0] != expected.back()) return toks.size();  // `{ ]`: never closed
      expected.pop_back();
      if (expected.empty()) return i;
    }
  }
  return toks.size();
}

size_t line_end(const std::vector<Tok> &toks, size_t i) {
  for (++i; i < toks.size() && !toks[i].bol;) ++i;
  return i;
}

size_t statement_end(const std::vector<Tok> &toks, size_t i, bool *function) {
  bool init = false;
  int depth = 0;
  *function = false;
  for (; i < toks.size(); ++i) {
    const std::string_view t = toks[i].s;
    if ((t == ".entry" || t == ".func") && depth == 0) *function = true;
    if (t == "=") init = true;
    if (t == "{" && depth == 0 && *function && !init) return i;
    if (t == "(" || t == "[" || t == "{") ++depth;
    if (t == ")" || t == "]" || t == "}") --depth;
    if (t == ";" && depth == 0) return i;
  }
  return i;
}

std::string_view call_target(const std::vector<std::string_view> &t) {
  size_t k = 1;
  if (k < t.size() && t[k] == "(") {  // (return values),
    while (k < t.size() && t[k] != ")") ++k;
    k += 2;
  }
  return k < t.size() && t[k][0] != '%' ? t[k] : "";
}

sk_status Parser::bad(size_t i, const std::string &what) const {
  const size_t line = i < toks_.size() ? toks_[i].line : (toks_.empty() ? 1 : toks_.back().line);
  return fail(SK_ERR_BAD_BINARY, "%s: line %zu: %s", label_.c_str(), line, what.c_str());
}

sk_status Parser::matching(size_t open, size_t *close) const {
  *close = closing(toks_, open);
  if (*close < toks_.size()) return SK_OK;
  return bad(open, "'" + std::string(tok(open)) + "' is never closed");
}

sk_status Parser::run() {
  std::set<std::string_view> header;  // the module's header directives, each once before the rest
  bool body = false;
  for (size_t i = 0; i < toks_.size();) {
    const std::string_view s = tok(i);
    // A link declares past the header (header_end): one that comes again, or after what it
    // heads (two modules' texts one after the other), has no one end.
    if ((s == ".version" || s == ".target" || s == ".address_size") && (body || !header.insert(s).second))
      return bad(i, "'" + std::string(s) + "' " + (body ? "after a declaration" : "a second time") +
                        ": a module's .version, .target and .address_size head it, once each");
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
    body = true;
    bool func = false;
    const size_t j = statement_end(toks_, i, &func);
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
    bool space = false, linked = false, weak = false;  // .global/.const; visible, weak or common
    std::string_view name;
    for (size_t k = i; k < j && tok(k) != "=" && tok(k) != "["; ++k) {
      space |= tok(k) == ".global" || tok(k) == ".const";
      linked |= tok(k) == ".visible" || tok(k) == ".weak" || tok(k) == ".common";
      weak |= tok(k) == ".weak" || tok(k) == ".common";
      if (identifier(tok(k))) name = tok(k);
    }
    if (space && !name.empty() && ext)
      extern_vars.emplace_back(name);
    else if (space && !name.empty() && linked)
      linked_vars.emplace_back(std::string(name), weak);
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
    f.block_dim_operand |= t == "%ntid.x";
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
  if (f.name.empty() || f.name[0] == '.' || !word_char(f.name[0])) return bad(kind, "a function without a name");
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
  // A weak entry (an -rdc template kernel) stays weak: one linkage directive per function.
  if (f.entry) f.header_edits.push_back({toks_[kind].at, 6, f.visible || f.weak ? ".func" : ".visible .func"});
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

}  // namespace sk::cuda::ptx_parse
