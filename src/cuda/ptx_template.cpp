#include "cuda/ptx_template.hpp"

#include <cctype>

namespace sk::cuda {
namespace {

constexpr std::string_view kNote = "//!";
constexpr std::string_view kPartHeader = "//! @part ";
constexpr int kMaxDepth = 8;  // parts calling parts; the template's deepest nesting is 2

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace((unsigned char)s.front())) s.remove_prefix(1);
  while (!s.empty() && std::isspace((unsigned char)s.back())) s.remove_suffix(1);
  return s;
}

std::vector<std::string> split_list(std::string_view s) {
  std::vector<std::string> out;
  if (trim(s).empty()) return out;
  for (size_t start = 0;;) {
    const size_t comma = s.find(',', start);
    const size_t length = comma == std::string_view::npos ? std::string_view::npos : comma - start;
    out.emplace_back(trim(s.substr(start, length)));
    if (comma == std::string_view::npos) return out;
    start = comma + 1;
  }
}

bool ident_start(char c) { return std::isalpha((unsigned char)c) || c == '_'; }
bool ident_char(char c) { return std::isalnum((unsigned char)c) || c == '_'; }

}  // namespace

PtxTemplate::PtxTemplate(std::string_view text) {
  Part *part = nullptr;
  for (size_t at = 0; at < text.size();) {
    size_t eol = text.find('\n', at);
    eol = eol == std::string_view::npos ? text.size() : eol + 1;
    const std::string_view line = text.substr(at, eol - at);
    at = eol;
    if (line.substr(0, kPartHeader.size()) == kPartHeader) {
      const std::string_view head = trim(line.substr(kPartHeader.size()));
      const size_t open = head.find('(');
      Part &p = parts_[std::string(trim(head.substr(0, open)))];
      if (open != std::string_view::npos)
        p.params = split_list(head.substr(open + 1, head.find(')', open) - open - 1));
      part = &p;
      continue;
    }
    if (line.substr(0, kNote.size()) == kNote || !part) continue;
    part->body.append(line);
  }
}

std::vector<std::string> PtxTemplate::part_names() const {
  std::vector<std::string> names;
  for (const auto &[name, part] : parts_) names.push_back(name);
  return names;
}

std::string PtxTemplate::expand(std::string_view name, const PtxValues &values) const {
  auto it = parts_.find(name);
  return it == parts_.end() ? std::string() : expand_text(it->second.body, values, 0);
}

bool PtxTemplate::placeholder(std::string_view text, size_t at, const PtxValues &values, int depth, std::string *out,
                              size_t *end) const {
  size_t p = at + 1;
  if (p >= text.size() || !ident_start(text[p])) return false;  // `@%p1`: a PTX predicate
  while (p < text.size() && ident_char(text[p])) ++p;
  const std::string_view name = text.substr(at + 1, p - at - 1);
  if (p < text.size() && text[p] == '@') {
    auto v = values.find(name);
    if (v == values.end()) return false;
    *out = v->second;
    *end = p + 1;
    return true;
  }
  if (p >= text.size() || text[p] != '(') return false;
  const size_t close = text.find(')', p);
  if (close == std::string_view::npos || close + 1 >= text.size() || text[close + 1] != '@') return false;
  auto part = parts_.find(name);
  if (part == parts_.end() || depth >= kMaxDepth) return false;
  const std::string arg_text = expand_text(text.substr(p + 1, close - p - 1), values, depth);
  const std::vector<std::string> args = split_list(arg_text);
  if (args.size() != part->second.params.size()) return false;
  PtxValues bound = values;
  for (size_t i = 0; i < args.size(); ++i) {
    auto v = values.find(args[i]);
    bound[part->second.params[i]] = v == values.end() ? args[i] : v->second;
  }
  *out = expand_text(part->second.body, bound, depth + 1);
  *end = close + 2;
  return true;
}

std::string PtxTemplate::expand_text(std::string_view text, const PtxValues &values, int depth) const {
  std::string out;
  out.reserve(text.size() + text.size() / 4);
  for (size_t at = 0; at < text.size();) {
    size_t eol = text.find('\n', at);
    const bool newline = eol != std::string_view::npos;
    eol = newline ? eol : text.size();
    const std::string_view line = text.substr(at, eol - at);
    at = newline ? eol + 1 : eol;
    std::string value;
    size_t end = 0;
    // A placeholder alone on its line stands for whole lines: none when it is empty.
    if (!line.empty() && line[0] == '@' && placeholder(line, 0, values, depth, &value, &end) && end == line.size()) {
      if (value.empty()) continue;
      out += value;
      if (out.back() != '\n' && newline) out += '\n';
      continue;
    }
    for (size_t i = 0; i < line.size();) {
      if (line[i] == '@' && placeholder(line, i, values, depth, &value, &end)) {
        if (!value.empty() && value.back() == '\n') value.pop_back();
        out += value;
        i = end;
      } else {
        out += line[i++];
      }
    }
    if (newline) out += '\n';
  }
  return out;
}

}  // namespace sk::cuda
