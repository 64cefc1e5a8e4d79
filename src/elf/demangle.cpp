#include "elf/demangle.hpp"

#include <cxxabi.h>

#include <cctype>
#include <cstdint>
#include <cstdlib>
#include <memory>

namespace sk::elf {
namespace {

// Rust's v0 mangling (RFC 2603): a recursive-descent reader of <path>, <type>, <const> and
// their back references, printing them as rustc-demangle does (crate hashes left out). Any
// malformed input sets `ok` to false; the depth bound keeps back references from looping.
class V0 {
 public:
  explicit V0(std::string_view s) : s_(s) {}
  std::string run() {
    if (pos_ < s_.size() && is_digit(s_[pos_]))  // the encoding version
      while (pos_ < s_.size() && is_digit(s_[pos_])) ++pos_;
    path(false);
    // An instantiating crate, vendor suffixes (".llvm.123"): not part of the name.
    return ok_ ? out_ : std::string();
  }

 private:
  static bool is_digit(char c) { return c >= '0' && c <= '9'; }
  static bool is_lower(char c) { return c >= 'a' && c <= 'z'; }
  static bool is_upper(char c) { return c >= 'A' && c <= 'Z'; }

  char peek() const { return pos_ < s_.size() ? s_[pos_] : '\0'; }
  bool eat(char c) {
    if (peek() != c) return false;
    ++pos_;
    return true;
  }
  char next() {
    if (pos_ >= s_.size()) {
      ok_ = false;
      return '\0';
    }
    return s_[pos_++];
  }
  uint64_t base62() {
    if (eat('_')) return 0;
    uint64_t v = 0;
    for (char c = next(); ok_ && c != '_'; c = next()) {
      int d = is_digit(c) ? c - '0' : is_lower(c) ? c - 'a' + 10 : is_upper(c) ? c - 'A' + 36 : -1;
      if (d < 0 || v > (UINT64_MAX - 62) / 62) return ok_ = false, 0;
      v = v * 62 + static_cast<uint64_t>(d);
    }
    return v + 1;
  }
  uint64_t opt_tagged(char tag) { return eat(tag) ? base62() + 1 : 0; }
  uint64_t decimal() {  // "0" | <nonzero-digit> {<digit>}
    if (!is_digit(peek())) return ok_ = false, 0;
    if (eat('0')) return 0;
    uint64_t v = 0;
    while (is_digit(peek())) {
      if (v > 100000000) return ok_ = false, 0;
      v = v * 10 + static_cast<uint64_t>(next() - '0');
    }
    return v;
  }
  // [s<dis>] [u] <len> [_] <bytes>; punycode is shown as stored.
  std::string identifier(uint64_t *disambiguator = nullptr) {
    const uint64_t dis = opt_tagged('s');
    if (disambiguator) *disambiguator = dis;
    const bool puny = eat('u');
    const uint64_t n = decimal();
    eat('_');
    if (!ok_ || n > s_.size() - pos_) return ok_ = false, std::string();
    std::string id(s_.substr(pos_, n));
    pos_ += n;
    return puny ? "punycode{" + id + "}" : id;
  }
  bool enter() { return ++depth_ < 200 || (ok_ = false); }
  // B<position>: what was read at that earlier position (of the tag at `here`), read again.
  template <typename F>
  void backref(size_t here, F parse) {
    const uint64_t at = base62();
    if (!ok_ || at >= here || !enter()) return void(ok_ = false);
    const size_t saved = pos_;
    pos_ = at;
    parse();
    pos_ = saved;
    --depth_;
  }

  void path(bool in_type) {
    if (!ok_ || !enter()) return;
    const size_t here = pos_;
    switch (next()) {
      case 'C': out_ += identifier(); break;
      case 'M':
        opt_tagged('s'), skip_path();
        out_ += '<', type(), out_ += '>';
        break;
      case 'X':
        opt_tagged('s'), skip_path();
        out_ += '<', type(), out_ += " as ", path(true), out_ += '>';
        break;
      case 'Y': out_ += '<', type(), out_ += " as ", path(true), out_ += '>'; break;
      case 'N': {
        const char ns = next();
        path(in_type);
        uint64_t dis = 0;
        const std::string id = identifier(&dis);
        if (is_upper(ns)) {
          out_ += "::{";
          out_ += ns == 'C' ? "closure" : ns == 'S' ? "shim" : std::string(1, ns);
          if (!id.empty()) out_ += ":" + id;
          out_ += "#" + std::to_string(dis) + "}";
        } else if (!id.empty()) {
          out_ += "::" + id;
        }
        break;
      }
      case 'I':
        path(in_type);
        out_ += in_type ? "<" : "::<";
        for (bool first = true; ok_ && !eat('E'); first = false) {
          if (!first) out_ += ", ";
          generic_arg();
        }
        out_ += '>';
        break;
      case 'B': backref(here, [&] { path(in_type); }); break;
      default: ok_ = false;
    }
    --depth_;
  }
  // An impl's own path is not printed (rustc-demangle shows only the type).
  void skip_path() {
    const std::string saved = out_;
    path(false);
    out_ = saved;
  }
  void generic_arg() {
    if (eat('L')) {
      base62();
      out_ += "'_";
    } else if (eat('K')) {
      constant();
    } else {
      type();
    }
  }
  void type() {
    if (!ok_ || !enter()) return;
    static const char *const kBasic[26] = {
        "i8",   "bool", "char", "f64",   "str",   "f32", nullptr, "u8", "isize", "usize", nullptr, "i32", "u32",
        "i128", "u128", "_",    nullptr, nullptr, "i16", "u16",   "()", "...",   nullptr, "i64",   "u64", "!"};
    const char c = peek();
    if (is_lower(c) && kBasic[c - 'a']) {
      ++pos_;
      out_ += kBasic[c - 'a'];
    } else {
      const size_t here = pos_;
      switch (next()) {
        case 'A': out_ += '[', type(), out_ += "; ", constant(), out_ += ']'; break;
        case 'S': out_ += '[', type(), out_ += ']'; break;
        case 'T': {
          out_ += '(';
          size_t n = 0;
          for (; ok_ && !eat('E'); ++n) {
            if (n) out_ += ", ";
            type();
          }
          out_ += n == 1 ? ",)" : ")";
          break;
        }
        case 'R':
        case 'Q':
          out_ += c == 'R' ? "&" : "&mut ";
          if (eat('L')) base62();
          type();
          break;
        case 'P': out_ += "*const ", type(); break;
        case 'O': out_ += "*mut ", type(); break;
        case 'F': fn_sig(); break;
        case 'D': {
          opt_tagged('G');
          out_ += "dyn ";
          for (bool first = true; ok_ && !eat('E'); first = false) {
            if (!first) out_ += " + ";
            path(true);
            while (ok_ && eat('p')) out_ += "<" + identifier() + " = ", type(), out_ += '>';
          }
          if (eat('L')) base62();
          break;
        }
        case 'B': backref(here, [&] { type(); }); break;
        default: --pos_; path(true);
      }
    }
    --depth_;
  }
  void fn_sig() {
    opt_tagged('G');
    if (eat('U')) out_ += "unsafe ";
    if (eat('K')) {
      if (eat('C'))
        out_ += "extern \"C\" ";
      else
        out_ += "extern \"" + identifier() + "\" ";
    }
    out_ += "fn(";
    for (bool first = true; ok_ && !eat('E'); first = false) {
      if (!first) out_ += ", ";
      type();
    }
    out_ += ')';
    const size_t before = out_.size();
    out_ += " -> ";
    type();
    if (out_.compare(before, std::string::npos, " -> ()") == 0) out_.resize(before);
  }
  void constant() {
    if (!ok_ || !enter()) return;
    const size_t here = pos_;
    if (eat('p')) {
      out_ += '_';
    } else if (eat('B')) {
      backref(here, [&] { constant(); });
    } else {
      const char t = next();
      const bool negative = eat('n');
      uint64_t v = 0;
      for (char c = next(); ok_ && c != '_'; c = next()) {
        const int d = is_digit(c) ? c - '0' : (c >= 'a' && c <= 'f') ? c - 'a' + 10 : -1;
        if (d < 0 || v >> 60) return void(ok_ = false);
        v = v * 16 + static_cast<uint64_t>(d);
      }
      if (t == 'b')
        out_ += v ? "true" : "false";
      else if (t == 'c' && v < 128 && v >= 32)
        out_ += "'" + std::string(1, static_cast<char>(v)) + "'";
      else
        out_ += (negative ? "-" : "") + std::to_string(v);
    }
    --depth_;
  }

  std::string_view s_;
  size_t pos_ = 0, depth_ = 0;
  bool ok_ = true;
  std::string out_;
};

std::string cxa_demangle(const std::string &name) {
  int status = 0;
  std::unique_ptr<char, void (*)(void *)> d(abi::__cxa_demangle(name.c_str(), nullptr, nullptr, &status), std::free);
  return status == 0 && d ? std::string(d.get()) : std::string();
}

// rustc's legacy mangling: an Itanium nested name whose last part is "h" and a 16-digit hash,
// with `$..$` escapes and ".." for "::".
std::string rust_legacy(const std::string &itanium) {
  const size_t hash = itanium.rfind("::h");
  if (hash == std::string::npos || itanium.size() - hash != 19) return "";
  for (size_t i = hash + 3; i < itanium.size(); ++i)
    if (!std::isxdigit(static_cast<unsigned char>(itanium[i]))) return "";
  static const struct {
    const char *from, *to;
  } kEscapes[] = {{"$SP$", "@"},  {"$BP$", "*"},  {"$RF$", "&"},  {"$LT$", "<"},  {"$GT$", ">"},  {"$LP$", "("},
                  {"$RP$", ")"},  {"$C$", ","},   {"$u7e$", "~"}, {"$u20$", " "}, {"$u27$", "'"}, {"$u5b$", "["},
                  {"$u5d$", "]"}, {"$u7b$", "{"}, {"$u7d$", "}"}, {"$u3b$", ";"}, {"$u2b$", "+"}, {"$u22$", "\""}};
  std::string in = itanium.substr(0, hash), out;
  for (size_t i = 0; i < in.size();) {
    // An element that begins with an escape was given a leading '_': not part of the name.
    if (in.compare(i, 2, "_$") == 0 && (i == 0 || in.compare(i - 2, 2, "::") == 0)) ++i;
    bool replaced = false;
    if (in[i] == '$')
      for (const auto &e : kEscapes)
        if (in.compare(i, std::char_traits<char>::length(e.from), e.from) == 0) {
          out += e.to, i += std::char_traits<char>::length(e.from), replaced = true;
          break;
        }
    if (replaced) continue;
    if (in.compare(i, 2, "..") == 0 && (i + 2 >= in.size() || in[i + 2] != '.')) {
      out += "::", i += 2;
      continue;
    }
    out += in[i++];
  }
  return out;
}

}  // namespace

std::string demangle(std::string_view name) {
  if (name.substr(0, 2) == "_R") return V0(name.substr(2)).run();
  if (name.substr(0, 2) != "_Z") return "";
  const std::string itanium = cxa_demangle(std::string(name));
  if (name.substr(0, 3) == "_ZN") {
    const std::string rust = rust_legacy(itanium);
    if (!rust.empty()) return rust;
  }
  return itanium;
}

std::string quoted_symbol(std::string_view name) {
  const std::string d = demangle(name);
  std::string q = "'" + std::string(name) + "'";
  return d.empty() || d == name ? q : q + " (" + d + ")";
}

}  // namespace sk::elf
