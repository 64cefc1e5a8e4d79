#include "cuda/ptx_join.hpp"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <map>
#include <set>

#include "cuda/ptx_parse.hpp"

namespace sk::cuda {
namespace {

using ptx_parse::closing;
using ptx_parse::line_end;
using ptx_parse::Tok;

// A name a module gives a function or variable: not a directive, register, number or string.
bool name_token(std::string_view t) {
  if (t.empty()) return false;
  const char c = t[0];
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == '$';
}

enum class What { Header, Debug, FuncDef, FuncDecl, Var };

// A module-scope statement: tokens [begin, end], `;` or the body's `}` last.
struct Item {
  What what;
  size_t begin = 0, end = 0, body = 0;  // body: a definition's `{`
  std::string name;
  bool visible = false, weak = false, ext = false, shared = false;
};

struct Part {
  std::vector<Tok> toks;
  std::vector<Item> items;
  std::string version;
};

// The function a declaration or definition names: the word after `.func`/`.entry` and its
// return parameters.
std::string function_name(const std::vector<Tok> &toks, size_t begin, size_t end) {
  for (size_t k = begin; k < end; ++k)
    if (toks[k].s == ".func" || toks[k].s == ".entry") {
      size_t n = k + 1;
      if (n < end && toks[n].s == "(") n = closing(toks, n) + 1;
      return n < end && name_token(toks[n].s) ? std::string(toks[n].s) : "";
    }
  return "";
}

// The variable a declaration names: its first name before an initializer.
std::string variable_name(const std::vector<Tok> &toks, size_t begin, size_t end) {
  for (size_t k = begin; k < end && toks[k].s != "="; ++k)
    if (name_token(toks[k].s)) return std::string(toks[k].s);
  return "";
}

// Reads a part's module-scope statements, or says what it cannot read.
bool read_part(const PtxPart &in, Part *p, std::string *why) {
  p->toks = ptx_parse::tokenize(in.text);
  const std::vector<Tok> &t = p->toks;
  auto s = [&t](size_t i) { return i < t.size() ? t[i].s : std::string_view(); };
  for (size_t i = 0; i < t.size();) {
    Item it;
    it.begin = i;
    if (s(i) == ".version" || s(i) == ".address_size") {
      if (s(i) == ".version") p->version = std::string(s(i + 1));
      it.what = What::Header;
      it.end = i + 1;
    } else if (s(i) == ".target") {
      it.what = What::Header;
      it.end = i + 1;
      if (s(i + 2) == ",") {
        *why = in.label + " targets '" + std::string(s(i + 1)) + ", " + std::string(s(i + 3)) +
               "' (a whole program has one target, an architecture)";
        return false;
      }
    } else if (s(i) == ".file" || s(i) == ".loc") {
      it.what = What::Debug;
      it.end = line_end(t, i) - 1;
    } else if (s(i) == ".section") {
      size_t open = i + 1;
      while (open < t.size() && s(open) != "{") ++open;
      it.what = What::Debug;
      it.name = std::string(s(i + 1));
      it.end = closing(t, open);
    } else {
      bool func = false;
      const size_t j = ptx_parse::statement_end(t, i, &func);
      it.end = j < t.size() && s(j) == "{" ? closing(t, j) : j;
      it.body = j;
      it.what = s(j) == "{" ? What::FuncDef : func ? What::FuncDecl : What::Var;
      it.name = func ? function_name(t, i, j) : variable_name(t, i, j);
      for (size_t k = i; k < j && s(k) != ".func" && s(k) != ".entry" && s(k) != "="; ++k) {
        it.visible |= s(k) == ".visible";
        it.weak |= s(k) == ".weak";
        it.ext |= s(k) == ".extern";
        it.shared |= s(k) == ".shared";
      }
      if (it.name.empty()) {
        *why = in.label + ": line " + std::to_string(t[i].line) + ": a statement that names nothing";
        return false;
      }
    }
    if (it.end >= t.size()) {
      *why = in.label + ": line " + std::to_string(t[i].line) + ": '" + std::string(s(i)) + "' does not end";
      return false;
    }
    i = it.end + 1;
    p->items.push_back(std::move(it));
  }
  return true;
}

// `.version` a is newer than b ("9.0" than "8.7").
bool newer_version(const std::string &a, const std::string &b) {
  const unsigned long am = std::strtoul(a.c_str(), nullptr, 10), bm = std::strtoul(b.c_str(), nullptr, 10);
  const size_t ad = a.find('.'), bd = b.find('.');
  const unsigned long an = ad == std::string::npos ? 0 : std::strtoul(a.c_str() + ad + 1, nullptr, 10);
  const unsigned long bn = bd == std::string::npos ? 0 : std::strtoul(b.c_str() + bd + 1, nullptr, 10);
  return am != bm ? am > bm : an > bn;
}

// The words of a line-information directive's line (`.file`, `.loc`), its comment aside:
// numbers, names, quoted strings and commas.
std::vector<std::string_view> line_words(std::string_view line) {
  std::vector<std::string_view> words;
  for (size_t i = 0; i < line.size();) {
    const char c = line[i];
    if (c == ' ' || c == '\t' || c == '\r') {
      ++i;
      continue;
    }
    if (line.compare(i, 2, "//") == 0) break;
    size_t j = i + 1;
    if (c == '"') {
      while (j < line.size() && line[j] != '"') j += line[j] == '\\' ? 2 : 1;
      j = std::min(j + 1, line.size());
    } else if (c != ',') {
      while (j < line.size() && !std::strchr(" \t\r,\"", line[j]) && line.compare(j, 2, "//") != 0) ++j;
    }
    words.push_back(line.substr(i, j - i));
    i = j;
  }
  return words;
}

// The line from `at` to its end.
std::string_view line_text(std::string_view text, size_t at) {
  const size_t nl = text.find('\n', at);
  return text.substr(at, (nl == std::string_view::npos ? text.size() : nl) - at);
}

bool number(std::string_view w) {
  return !w.empty() && w.size() < 10 && w.find_first_not_of("0123456789") == std::string_view::npos;
}

// The value of a word that is a number.
unsigned value_of(std::string_view w) { return (unsigned)std::strtoul(std::string(w).c_str(), nullptr, 10); }

// `.file N "path"[, ...]`, as words.
bool file_line(const std::vector<std::string_view> &w) {
  return w.size() >= 3 && w[0] == ".file" && number(w[1]) && w[2].size() >= 2 && w[2][0] == '"' &&
         w[2].back() == '"';
}

// A `.loc` line with the program's file numbers (`files`: the module's to the program's) and
// its function_name label as the program names it (`labels`, in the debug strings the program
// keeps); "" where it does not read as `.loc F L C[, function_name S, inlined_at F L C]` or names
// a file the module does not.
std::string program_loc(std::string_view line, const std::map<unsigned, unsigned> &files,
                        const std::map<std::string_view, std::string> &labels) {
  const std::vector<std::string_view> w = line_words(line);
  auto file = [&](std::string_view n) -> std::string {
    const auto f = number(n) ? files.find(value_of(n)) : files.end();
    return f == files.end() ? "" : std::to_string(f->second);
  };
  if (w.size() < 4 || w[0] != ".loc" || !number(w[2]) || !number(w[3])) return "";
  const std::string at = file(w[1]);
  if (at.empty()) return "";
  std::string out = ".loc " + at + " " + std::string(w[2]) + " " + std::string(w[3]);
  if (w.size() == 12 && w[4] == "," && w[5] == "function_name" && w[7] == "," && w[8] == "inlined_at" &&
      number(w[10]) && number(w[11]) && !file(w[9]).empty()) {
    const std::string_view label = w[6].substr(0, w[6].find('+')), offset = w[6].substr(label.size());
    const auto l = labels.find(label);
    out += ", function_name " + (l == labels.end() ? std::string(label) : l->second) + std::string(offset) +
           ", inlined_at " + file(w[9]) + " " + std::string(w[10]) + " " + std::string(w[11]);
  }
  return out;
}

// A definition, which a declaration elsewhere may name (an `.extern` variable is none).
bool defines(const Item &it) { return it.what == What::FuncDef || (it.what == What::Var && !it.ext); }

// The definition of a visible or weak name the program keeps, as a link keeps one: the
// visible one, else the first weak one (nvcc -rdc writes every template function weak, in each
// module that instantiates it).
struct Kept {
  size_t part;
  bool weak;
  const char *linkage() const { return weak ? ".weak" : ".visible"; }
};

}  // namespace

bool join_ptx(const std::vector<PtxPart> &in, const std::string &target, std::string *out, std::string *why) {
  std::vector<Part> parts(in.size());
  for (size_t p = 0; p < in.size(); ++p)
    if (!read_part(in[p], &parts[p], why)) return false;

  // Where each name is defined (the part of a visible or weak definition, which others may
  // reference), and every part that names it at module scope.
  std::map<std::string, Kept> exported;
  std::map<std::string, std::set<size_t>> named_in;
  std::set<std::string> words;
  for (size_t p = 0; p < parts.size(); ++p) {
    for (const Tok &t : parts[p].toks)
      if (name_token(t.s)) words.insert(std::string(t.s));
    for (const Item &it : parts[p].items) {
      if (it.name.empty()) continue;
      named_in[it.name].insert(p);
      if (!defines(it) || !(it.visible || it.weak)) continue;
      auto [at, fresh] = exported.emplace(it.name, Kept{p, it.weak});
      if (fresh || at->second.part == p || it.weak) continue;
      if (!at->second.weak) {
        *why = "'" + it.name + "' is defined by " + in[at->second.part].label + " and by " + in[p].label;
        return false;
      }
      at->second = Kept{p, false};
    }
  }

  // Line information: each module's `.file` numbers become the program's, one per path, and a
  // label of its debug strings (`.loc`'s function_name) is renamed where an earlier part has it.
  std::map<std::string, unsigned> file_numbers;  // the path as written: the program's number
  std::vector<std::map<unsigned, unsigned>> files(parts.size());
  std::map<std::string, size_t> string_labels;  // the first part whose debug strings define it
  for (size_t p = 0; p < parts.size(); ++p)
    for (const Item &it : parts[p].items) {
      const std::vector<Tok> &t = parts[p].toks;
      if (it.what == What::Debug && t[it.begin].s == ".file") {
        const std::vector<std::string_view> w = line_words(line_text(in[p].text, t[it.begin].at));
        if (file_line(w)) {
          const auto [at, fresh] = file_numbers.emplace(std::string(w[2]), (unsigned)file_numbers.size() + 1);
          files[p].emplace(value_of(w[1]), at->second);
        }
      } else if (it.what == What::Debug && it.name == ".debug_str") {
        for (size_t k = it.begin; k < it.end; ++k)
          if (t[k + 1].s == ":") string_labels.emplace(std::string(t[k].s), p);
      }
    }
  std::set<unsigned> files_declared;

  std::string version = parts.empty() ? "" : parts[0].version;
  for (const Part &p : parts)
    if (newer_version(p.version, version)) version = p.version;
  *out = ".version " + version + "\n.target " + target + "\n.address_size 64\n";

  std::set<std::string> declared_once;  // undefined functions, `.extern .shared` arrays
  for (size_t p = 0; p < parts.size(); ++p) {
    const Part &part = parts[p];
    const std::vector<Tok> &t = part.toks;
    std::vector<ptx_parse::Edit> edits;
    auto drop = [&](const Item &it) {
      edits.push_back({t[it.begin].at, t[it.end].at + t[it.end].s.size() - t[it.begin].at, ""});
    };
    // An internal name another part also uses gets this part's suffix, as does a label of its
    // debug strings an earlier part defines.
    std::map<std::string_view, std::string> renamed;
    auto rename = [&](std::string_view name) {
      std::string fresh = std::string(name) + "_sk" + std::to_string(p);
      while (words.count(fresh)) fresh += "_";
      words.insert(fresh);
      renamed.emplace(name, fresh);
    };
    for (const Item &it : part.items)
      if (p > 0 && defines(it) && !it.visible && !it.weak && named_in[it.name].size() > 1) rename(it.name);
    for (const Item &it : part.items)
      if (it.what == What::Debug && it.name == ".debug_str")
        for (size_t k = it.begin; k < it.end; ++k)
          if (t[k + 1].s == ":" && string_labels.at(std::string(t[k].s)) != p) rename(t[k].s);
    // A `.loc` or `.file` directive's line, which the tokenizer reads as the directive alone: in
    // the program's numbers, or left out where it does not read as line information.
    auto line_of = [&](size_t k) {
      const std::string_view line = line_text(in[p].text, t[k].at);
      ptx_parse::Edit e{t[k].at, line.size(), ""};
      if (t[k].s == ".loc") {
        e.text = program_loc(line, files[p], renamed);
      } else if (const std::vector<std::string_view> w = line_words(line); file_line(w)) {
        // Declared once: by the first module line that gave the path its number.
        const unsigned n = file_numbers.at(std::string(w[2]));
        const auto f = files[p].find(value_of(w[1]));
        if (f->second == n && files_declared.insert(n).second)
          e.text = ".file " + std::to_string(n) + " " + std::string(w[2]);
      }
      return e;
    };
    // A declaration's linkage (`.extern`, `.visible`, `.weak`) becomes that of the definition
    // the program keeps, which a later part holds.
    auto link_as = [&](const Item &it, const Kept &kept) {
      bool first = true;
      for (size_t k = it.begin; k <= it.end && t[k].s != ".func"; ++k)
        if (t[k].s == ".extern" || t[k].s == ".visible" || t[k].s == ".weak") {
          edits.push_back({t[k].at, t[k].s.size(), first ? kept.linkage() : ""});
          first = false;
        }
    };
    for (const Item &it : part.items) {
      if (it.what == What::Header || it.what == What::Debug) {
        if (t[it.begin].s == ".loc" || t[it.begin].s == ".file")
          edits.push_back(line_of(it.begin));
        else if (it.name != ".debug_str")  // the labels `.loc` names; the others address code
          drop(it);
        continue;
      }
      const auto def = exported.find(it.name);
      if (defines(it) && def != exported.end() && def->second.part != p) {
        // Another part's definition is kept: this one goes, or becomes the declaration of a
        // function that part defines after it.
        if (def->second.part < p) {
          drop(it);
        } else if (it.what == What::FuncDef) {
          link_as(it, def->second);
          const size_t head_end = t[it.body - 1].at + t[it.body - 1].s.size();
          edits.push_back({head_end, t[it.end].at + 1 - head_end, ";"});
        } else {
          *why = in[p].label + " defines '" + it.name + "' weak, and " + in[def->second.part].label +
                 " after it (a variable)";
          return false;
        }
        continue;
      }
      if (it.what == What::FuncDef) {  // its line information in the program's file numbers
        for (size_t k = it.begin; k <= it.end; ++k)
          if (t[k].bol && t[k].s == ".loc") edits.push_back(line_of(k));
        continue;
      }
      const bool declaration = it.what == What::FuncDecl || it.ext;
      if (!declaration || renamed.count(it.name)) continue;
      const bool own = def != exported.end() && def->second.part == p;
      if (def == exported.end() || own) {
        // Not defined by another part: libsk's or the driver's (vprintf), or dynamic shared memory.
        bool defined_here = own;
        for (const Item &d : part.items) defined_here |= defines(d) && d.name == it.name;
        if (!defined_here && (it.shared || it.what == What::FuncDecl) && !declared_once.insert(it.name).second)
          drop(it);
        continue;
      }
      if (def->second.part < p) {
        drop(it);
        continue;
      }
      // Defined by a later part: a forward declaration of a function, as that part defines it.
      if (it.what != What::FuncDecl) {
        *why = in[p].label + " declares '" + it.name + "', which " + in[def->second.part].label +
               " defines after it (a variable)";
        return false;
      }
      link_as(it, def->second);
    }
    for (const Tok &tok : t)
      if (auto r = renamed.find(tok.s); r != renamed.end()) edits.push_back({tok.at, tok.s.size(), r->second});
    std::string label = in[p].label;
    for (char &c : label)
      if (c == '\n' || c == '\r') c = ' ';
    *out += "\n// " + label + "\n" + ptx_parse::apply(in[p].text, std::move(edits));
  }
  return true;
}

}  // namespace sk::cuda
