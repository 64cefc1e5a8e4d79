// Reads a PTX module's text into what its rewrite needs (ptx_module.cpp decides the rewrite):
// tokens; each function's definition, its parameters, directives, statements and labels, the
// functions it calls and the names it uses, its reads of special registers, the constructs a
// function called inside a super kernel cannot have; the module's declarations and its static
// `.shared` variables with every place a statement names them. An edit list applied to the
// text gives the rewritten module.
#pragma once
#include <cstddef>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <sk.h>

#include "common/signature.hpp"
#include "cuda/ptx_module.hpp"
#include "cuda/ptx_special_registers.hpp"
#include "cuda/ptx_statement.hpp"

namespace sk::cuda::ptx_parse {

struct Tok {
  std::string_view s;
  size_t at = 0;     // offset in the text
  size_t line = 1;   // for messages
  bool bol = false;  // first token of its line: `.loc` and `.file` end at the line's end
};

// PTX's lexical structure as far as a rewrite needs it: words (directives, opcodes with their
// type suffixes, registers, names, numbers, `.shared::cluster`), guards (`@!%p1`), strings and
// single punctuation; comments skipped, and the rest of a `.loc` or `.file` directive's line
// (line information, which no rewrite reads: a stray bracket there is no bracket).
std::vector<Tok> tokenize(std::string_view t);

using Edit = PtxEdit;

// The text with `edits` made, in order of place (an insertion before a replacement at the same
// place; an edit inside one before it, a piece cut, goes with that one); each offset `marks`
// points at moves to where its byte lands (an edit starting at a mark comes after it: a
// function's first token may be edited).
std::string apply(std::string_view text, std::vector<PtxEdit> edits, std::vector<size_t *> marks = {});

// The bracket that closes the one at token `open` (`{`, `(` or `[`), or toks.size() where a
// bracket inside is closed by another kind (`{ ]`) or none closes it.
size_t closing(const std::vector<Tok> &toks, size_t open);
// The first token of the line after token `i`'s, or toks.size(): `.loc` and `.file` end there.
size_t line_end(const std::vector<Tok> &toks, size_t i);

// Where the module-scope statement from token `i` (a declaration, a variable or a function)
// ends: its `;`, or the `{` of a function's body (`*function` says whether it names `.entry` or
// `.func`); toks.size() when it does not end.
size_t statement_end(const std::vector<Tok> &toks, size_t i, bool *function);

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
  bool trades_registers = false;   // setmaxnreg: warp specialization's register reallocation
  bool block_dim_operand = false;  // %ntid.x as an operand of another statement than a mov
};

// The callee a `call` statement names ("" for a call through a register).
std::string_view call_target(const std::vector<std::string_view> &t);

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
  // Module-scope `.global` and `.const` variables other modules may name: those it defines
  // visible, weak or common (weak: the latter two), and those it declares `.extern`.
  std::vector<std::pair<std::string, bool>> linked_vars;
  std::vector<std::string> extern_vars;
  bool section_labels = false;  // a `.section` addresses a label (-G debug info)

 private:
  sk_status bad(size_t i, const std::string &what) const;  // SK_ERR_BAD_BINARY at token i's line
  const std::string_view tok(size_t i) const { return i < toks_.size() ? toks_[i].s : std::string_view(); }
  size_t line_end(size_t i) const { return ptx_parse::line_end(toks_, i); }
  sk_status matching(size_t open, size_t *close) const;
  void shared_variable(size_t begin, size_t end, size_t decl_begin, bool movable);
  sk_status function(size_t begin, size_t body, size_t close);
  sk_status params(Function &f, size_t open, size_t close);
  void directives(Function &f, size_t begin, size_t body);
  void statement(Function &f, size_t begin, size_t end);
};

}  // namespace sk::cuda::ptx_parse
