#include "cuda/ptx_param_address.hpp"

#include <algorithm>
#include <cstdlib>
#include <map>
#include <optional>
#include <set>

namespace sk::cuda {
namespace {

constexpr size_t kNone = SIZE_MAX;

bool is_register(std::string_view t) { return !t.empty() && t[0] == '%'; }

// A parameter-space address: a parameter's first byte plus an offset.
struct Address {
  size_t param;
  int64_t offset;
  bool operator==(const Address &o) const { return param == o.param && offset == o.offset; }
};

// What a statement does with parameter-space addresses.
struct Role {
  // Load: an ld.param of a parameter's bytes by its name; LoadVia: by a register that holds
  // its address (CUB's kernels read a struct parameter so).
  enum Kind { Other, Take, Copy, Offset, Generic, Load, LoadVia } kind = Other;
  std::string_view dst, src;  // the register written (t[1] of `op D, ...`); a register read
  size_t param = kNone;       // the parameter named (Take, Generic, Load)
  int64_t offset = 0;         // added to the address read
  size_t bracket = 0;         // Load, LoadVia: where its `[` is
};

// An integer literal at t[*k] (PTX's decimal, 0x hexadecimal or 0 octal, an optional minus and
// `U` suffix); *k then indexes the token after it.
bool integer(const std::vector<std::string_view> &t, size_t *k, int64_t *v) {
  size_t i = *k;
  const bool minus = i < t.size() && t[i] == "-";
  if (minus) ++i;
  if (i >= t.size() || t[i].empty() || t[i][0] < '0' || t[i][0] > '9') return false;
  std::string s(t[i]);
  if (s.back() == 'U') s.pop_back();
  char *end = nullptr;
  const long long x = std::strtoll(s.c_str(), &end, 0);
  if (*end) return false;
  *v = minus ? -x : x;
  *k = i + 1;
  return true;
}

// `cvt` between integer types, which keeps an address's value (cvt.u64.u32 of a 32-bit one).
bool integer_cvt(std::string_view op) {
  for (size_t at = op.find('.'); at != std::string_view::npos;) {
    const size_t next = op.find('.', at + 1);
    const std::string_view type = op.substr(at + 1, next == std::string_view::npos ? next : next - at - 1);
    if (type != "u32" && type != "s32" && type != "b32" && type != "u64" && type != "s64" && type != "b64")
      return false;
    at = next;
  }
  return true;
}

class Reader {
 public:
  explicit Reader(const std::vector<std::string> &names) : names_(names) {}

  size_t param(std::string_view w) const {
    for (size_t j = 0; j < names_.size(); ++j)
      if (names_[j] == w) return j;
    return kNone;
  }

  Role role(const PtxStatement &s) const {
    const std::vector<std::string_view> &t = s.toks;
    const std::string_view op = t.empty() ? std::string_view() : t[0];
    Role r;
    if (op.starts_with("ld.param")) {
      size_t b = 1;
      while (b < t.size() && t[b] != "[") ++b;
      const bool named = b + 1 < t.size() && (r.param = param(t[b + 1])) != kNone;
      if (named || (b + 1 < t.size() && is_register(t[b + 1]))) {
        size_t k = b + 2;
        if (k < t.size() && t[k] == "+" && (++k, !integer(t, &k, &r.offset))) return Role{};
        if (k + 1 == t.size() && t[k] == "]") {
          r.kind = named ? Role::Load : Role::LoadVia, r.bracket = b;
          if (!named) r.src = t[b + 1];
        }
      }
      return r;
    }
    if (t.size() < 4 || t[2] != ",") return r;
    r.dst = t[1];
    // `NAME` or `NAME+imm` (the parameter's address), or `%reg` / `%reg+imm`, to the end.
    auto operand = [&](size_t k) {
      if ((r.param = param(t[k])) == kNone) {
        if (!is_register(t[k])) return false;
        r.src = t[k];
      }
      ++k;
      if (k < t.size() && t[k] == "+" && (++k, !integer(t, &k, &r.offset))) return false;
      return k == t.size();
    };
    if (op.starts_with("cvta.param.")) {
      if (operand(3)) r.kind = Role::Generic;
    } else if (op.starts_with("mov.") || (op.starts_with("cvt.") && integer_cvt(op))) {
      if (t.size() == 4 && is_register(t[3]))
        r.kind = Role::Copy, r.src = t[3];
      else if (op.starts_with("mov.") && operand(3) && r.param != kNone)
        r.kind = Role::Take;
    } else if (op == "add.u32" || op == "add.s32" || op == "add.u64" || op == "add.s64" || op == "sub.u32" ||
               op == "sub.s32" || op == "sub.u64" || op == "sub.s64") {
      // A register and a constant, in either order for add.
      size_t k = 3;
      int64_t c = 0;
      if (is_register(t[3]) && t.size() > 5 && t[4] == ",") {
        k = 5;
        if (integer(t, &k, &c) && k == t.size()) r.kind = Role::Offset, r.src = t[3];
      } else if (op[0] == 'a' && integer(t, &k, &c) && k + 2 == t.size() && t[k] == "," && is_register(t[k + 1])) {
        r.kind = Role::Offset, r.src = t[k + 1];
      }
      r.offset = op[0] == 's' ? -c : c;
    }
    return r;
  }

 private:
  const std::vector<std::string> &names_;
};

// Integer arithmetic a computed parameter address may pass through: its result (a predicate for
// setp) is computed from the registers it reads.
bool arithmetic(std::string_view op) {
  const std::string_view base = op.substr(0, op.find('.'));
  for (std::string_view a :
       {"add", "sub", "mad", "mul", "and", "or", "xor", "shl", "shr", "selp", "min", "max", "mov", "cvt", "setp"})
    if (base == a) return true;
  return false;
}

// The registers an instruction `op D, S...` reads: those after its first comma.
std::vector<std::string_view> registers_read(const std::vector<std::string_view> &t) {
  std::vector<std::string_view> regs;
  size_t k = 1;
  while (k < t.size() && t[k] != ",") ++k;
  for (++k; k < t.size(); ++k)
    if (is_register(t[k])) regs.push_back(t[k]);
  return regs;
}

// The width of an instruction's (first: a cvt's destination) type, 0 if it names none.
int type_bits(std::string_view op) {
  for (size_t at = op.find('.'); at != std::string_view::npos; at = op.find('.', at + 1)) {
    const std::string_view type = op.substr(at + 1, op.find('.', at + 1) - at - 1);
    if (type.size() >= 2 && (type[0] == 'u' || type[0] == 's' || type[0] == 'b' || type[0] == 'f') &&
        type.find_first_not_of("0123456789", 1) == std::string_view::npos)
      return std::atoi(std::string(type.substr(1)).c_str());
  }
  return 0;
}

// An address operand's displacement: PTX writes a negative one `[%r+-4]`.
std::string displacement(int64_t v) { return v ? "+" + std::to_string(v) : ""; }

}  // namespace

ParamAddressRewrite rewrite_param_addresses(const std::vector<std::string> &names,
                                            const std::vector<std::pair<size_t, size_t>> &decls,
                                            const std::vector<PtxStatement> &body) {
  ParamAddressRewrite out;
  const Reader reader(names);
  std::vector<Role> roles;
  for (const PtxStatement &s : body) roles.push_back(reader.role(s));

  // A parameter's address is taken when a mov or cvta.param names it, or any statement other
  // than an ld.param of its bytes (which the rewrite could not follow).
  std::vector<bool> taken(names.size());
  std::vector<size_t> unknown_use(names.size(), kNone);
  for (size_t i = 0; i < body.size(); ++i)
    for (size_t k = 1; k < body[i].toks.size(); ++k) {
      const size_t p = reader.param(body[i].toks[k]);
      if (p == kNone) continue;
      const Role &r = roles[i];
      if (r.param == p && (r.kind == Role::Take || r.kind == Role::Generic))
        taken[p] = true;
      else if (r.param != p || r.kind != Role::Load)
        unknown_use[p] = std::min(unknown_use[p], i);
    }
  for (size_t p = 0; p < names.size(); ++p)
    if (unknown_use[p] != kNone) taken[p] = true;
  for (size_t p = 0; p < names.size(); ++p)
    if (taken[p]) out.by_address.push_back((uint32_t)p);
  if (out.by_address.empty()) return out;

  auto refuse = [&](const std::string &why) {
    out.refusal = why;
    out.edits.clear();
    out.notes.clear();
    out.by_address.clear();
    return out;
  };
  for (uint32_t p : out.by_address)
    if (unknown_use[p] != kNone)
      return refuse("uses parameter '" + names[p] + "', whose address it takes, in a way libsk cannot rewrite (" +
                    std::string(body[unknown_use[p]].toks[0]) + ")");

  // The registers that hold a parameter-space address: `held` where it is one known parameter
  // and offset (followed through copies and constant offsets), `computed` where the kernel
  // computes it at run time (64-bit arithmetic with another register, as a struct parameter's
  // array is indexed, or one register given several). A computed register holds the generic
  // address instead; a held one read by such arithmetic becomes computed, so that it holds it too.
  std::map<std::string_view, Address> held;
  std::map<std::string_view, size_t> computed;  // -> the parameter it addresses
  auto origin = [&](std::string_view reg) {
    if (const auto h = held.find(reg); h != held.end()) return h->second.param;
    if (const auto c = computed.find(reg); c != computed.end()) return c->second;
    return kNone;
  };
  // The precise value a Take, Copy or Offset gives, when what it reads is held.
  auto value = [&](const Role &r) -> std::optional<Address> {
    if (r.kind == Role::Take) return Address{r.param, r.offset};
    if (r.kind != Role::Copy && r.kind != Role::Offset) return std::nullopt;
    const auto it = held.find(r.src);
    if (it == held.end()) return std::nullopt;
    return Address{it->second.param, it->second.offset + r.offset};
  };
  for (bool changed = true; changed;) {
    changed = false;
    auto compute = [&](std::string_view reg, size_t param) {
      if (computed.emplace(reg, param).second) held.erase(reg), changed = true;
    };
    for (size_t i = 0; i < body.size(); ++i) {
      const Role &r = roles[i];
      if (r.kind == Role::Take || r.kind == Role::Copy || r.kind == Role::Offset) {
        if (computed.count(r.dst)) continue;
        if (r.kind != Role::Take && computed.count(r.src)) {
          compute(r.dst, computed[r.src]);
        } else if (const std::optional<Address> v = value(r)) {
          const auto [it, added] = held.emplace(r.dst, *v);
          changed |= added;
          if (!(it->second == *v)) compute(r.dst, v->param);
        }
      } else if (r.kind == Role::Other && arithmetic(body[i].toks[0])) {
        const std::vector<std::string_view> sources = registers_read(body[i].toks);
        size_t param = kNone;
        for (std::string_view reg : sources)
          if (const size_t p = origin(reg); p != kNone) {
            if (param == kNone) param = p;
            compute(reg, p);
          }
        if (param != kNone && is_register(r.dst) && !body[i].toks[0].starts_with("setp.")) compute(r.dst, param);
      }
    }
  }
  auto tracked = [&](std::string_view reg) { return origin(reg) != kNone; };

  // Computed addresses in 32-bit registers (Triton selects between two parameters' addresses:
  // `mov.b32 %r45, P2; mov.b32 %r46, P1; selp.b32 %r47, %r46, %r45, %p2; ld.param.b64 %rd, [%r47]`)
  // are widened: each such register gets a 64-bit twin (`%sk_w` and its name), which the statements
  // that move, offset, select or read through it use instead, so that it holds the generic
  // address. Only those shapes: anything else computing from such a register is refused.
  std::map<std::string_view, std::string> widened;
  for (size_t i = 0; i < body.size(); ++i)
    if (is_register(roles[i].dst) && computed.count(roles[i].dst) && type_bits(body[i].toks[0]) == 32 &&
        (roles[i].kind != Role::Other || arithmetic(body[i].toks[0])))
      widened.emplace(roles[i].dst, "%sk_w" + std::string(roles[i].dst.substr(1)));
  auto wide = [&](std::string_view reg) { return widened.count(reg) > 0; };
  // Whether statement i, which names a widened register, is one the widening rewrites.
  auto widens = [&](size_t i) {
    const Role &r = roles[i];
    const std::vector<std::string_view> &t = body[i].toks;
    const std::string_view op = t[0];
    switch (r.kind) {
      case Role::Take: return wide(r.dst) && type_bits(op) == 32;
      case Role::Copy:
        return (wide(r.src) && (wide(r.dst) || (computed.count(r.dst) && type_bits(op) == 64))) ||
               (held.count(r.src) && wide(r.dst));
      case Role::Offset: return (wide(r.src) || held.count(r.src)) && wide(r.dst);
      case Role::LoadVia: return wide(r.src);
      default:
        return op.starts_with("selp.") && type_bits(op) == 32 && t.size() == 8 && wide(t[1]) && wide(t[3]) &&
               wide(t[5]);
    }
  };
  bool widening = !widened.empty();
  for (size_t i = 0; i < body.size() && widening; ++i)
    for (size_t k = 1; k < body[i].toks.size() && widening; ++k)
      if (wide(body[i].toks[k]) && !widens(i)) widening = false;

  // A parameter read through a register is read where that register's address points, which
  // must be one the rewrite follows.
  const std::string &first = names[out.by_address[0]];
  for (size_t i = 0; i < body.size(); ++i) {
    const PtxStatement &s = body[i];
    if (!s.toks[0].starts_with("ld.param") && !s.toks[0].starts_with("st.param")) continue;
    if (roles[i].kind == Role::LoadVia && tracked(roles[i].src)) continue;
    for (size_t k = 1; k + 1 < s.toks.size(); ++k)
      if (s.toks[k] == "[" && is_register(s.toks[k + 1]))
        return refuse("reads its parameters through a register address (" + std::string(s.toks[0]) + " [" +
                      std::string(s.toks[k + 1]) +
                      "]) that holds no parameter's address libsk can follow, and takes "
                      "the address of parameter '" +
                      first + "'");
  }

  // Every statement that names such a register must be one the rewrite follows, and a computed
  // address is computed in 64 bits (a generic address does not fit in fewer).
  for (size_t i = 0; i < body.size(); ++i) {
    const Role &r = roles[i];
    const std::string_view op = body[i].toks[0];
    const bool computes = r.kind != Role::Other || arithmetic(op);
    const std::optional<Address> v = value(r);
    for (size_t k = 1; k < body[i].toks.size(); ++k) {
      const std::string_view reg = body[i].toks[k];
      const size_t p = origin(reg);
      if (p == kNone) continue;
      const bool defines = k == 1 && r.dst == reg && computes && (computed.count(reg) || (v && *v == held[reg]));
      const bool reads = r.src == reg && (r.kind == Role::Copy || r.kind == Role::Offset ||
                                          r.kind == Role::Generic || r.kind == Role::LoadVia);
      // Arithmetic reads it into a register it computes (or a predicate), not into a vector's halves.
      const bool computes_from =
          r.kind == Role::Other && computes && k > 1 && (op.starts_with("setp.") || computed.count(r.dst));
      if (!defines && !reads && !computes_from)
        return refuse("uses the address of parameter '" + names[p] + "' (in " + std::string(reg) +
                      ") in a way libsk cannot rewrite (" + std::string(op) + ")");
      if (defines && computed.count(reg) && type_bits(op) != 64 && !(widening && wide(reg)))
        return refuse("computes the address of parameter '" + names[p] + "' in " + std::string(reg) +
                      " at run time, in fewer than 64 bits (" + std::string(op) + ")");
    }
    if (r.kind == Role::Generic) {
      if (op != "cvta.param.u64")
        return refuse("takes a 32-bit generic address of a parameter (" + std::string(op) + ")");
      if (r.param == kNone && !tracked(r.src))
        return refuse("makes " + std::string(r.src) + " a generic address (" + std::string(op) +
                      "), but no parameter's address libsk can follow reaches it");
    }
  }

  // The rewrite: what took or moved a held address goes; each cvta.param reads the generic
  // address passed instead, each ld.param of the bytes loads through it. A computed register is
  // given the generic address where it takes one from a parameter or a held register, and its
  // arithmetic stays; what reads through it reads the generic address it holds.
  auto generic = [&](const std::string &g, std::string_view dst, Address a) {
    const std::string d(dst);
    std::string text = g + "ld.param.b64 " + d + ", [" + names[a.param] + "];";
    if (a.offset) text += " " + g + "add.s64 " + d + ", " + d + ", " + std::to_string(a.offset) + ";";
    return text;
  };
  std::set<std::string_view> declared;  // widened registers, declared where first named
  for (size_t i = 0; i < body.size(); ++i) {
    const Role &r = roles[i];
    const PtxStatement &s = body[i];
    const std::string g = s.guard.empty() ? "" : std::string(s.guard) + " ";
    const bool from_computed = computed.count(r.src) > 0;
    if (widening && std::any_of(s.toks.begin() + 1, s.toks.end(), wide)) {
      std::string text;
      for (size_t k = 1; k < s.toks.size(); ++k)
        if (wide(s.toks[k]) && declared.insert(s.toks[k]).second) text += ".reg .b64 " + widened[s.toks[k]] + "; ";
      auto w = [&](std::string_view reg) { return wide(reg) ? widened[reg] : std::string(reg); };
      if (r.kind == Role::Take || ((r.kind == Role::Copy || r.kind == Role::Offset) && held.count(r.src))) {
        text += generic(g, w(r.dst), *value(r));  // a known address: the generic one, offset
      } else if (r.kind == Role::Copy) {
        text += g + "mov.b64 " + w(r.dst) + ", " + w(r.src) + ";";
      } else if (r.kind == Role::Offset) {
        text += g + "add.s64 " + w(r.dst) + ", " + w(r.src) + ", " + std::to_string(r.offset) + ";";
      } else if (r.kind == Role::LoadVia) {
        const std::string_view into(s.toks[1].data(), (size_t)(s.toks[r.bracket].data() - s.toks[1].data()));
        text += g + "ld" + std::string(s.toks[0].substr(8)) + " " + std::string(into) + "[" + w(r.src) +
                displacement(r.offset) + "];";
      } else {  // selp
        text += g + "selp.b64 " + w(s.toks[1]) + ", " + w(s.toks[3]) + ", " + w(s.toks[5]) + ", " +
                std::string(s.toks[7]) + ";";
      }
      out.edits.push_back({s.at, s.len, text});
      continue;
    }
    if (r.kind == Role::Take || r.kind == Role::Copy || r.kind == Role::Offset) {
      if (!tracked(r.dst) || (r.kind != Role::Take && !tracked(r.src))) continue;
      if (held.count(r.dst))
        out.edits.push_back({s.at, s.len, ""});
      else if (!from_computed)
        out.edits.push_back({s.at, s.len, generic(g, r.dst, *value(r))});
    } else if (r.kind == Role::Generic) {
      if (from_computed) {
        const std::string d(r.dst), src(r.src);
        out.edits.push_back({s.at, s.len,
                             r.offset ? g + "add.s64 " + d + ", " + src + ", " + std::to_string(r.offset) + ";"
                                      : g + "mov.b64 " + d + ", " + src + ";"});
        continue;
      }
      Address a{r.param, r.offset};
      if (r.param == kNone) a = Address{held[r.src].param, held[r.src].offset + r.offset};
      out.edits.push_back({s.at, s.len, generic(g, r.dst, a)});
    } else if ((r.kind == Role::Load && taken[r.param]) || r.kind == Role::LoadVia) {
      const std::string_view into(s.toks[1].data(), (size_t)(s.toks[r.bracket].data() - s.toks[1].data()));
      const std::string load = "ld" + std::string(s.toks[0].substr(8)) + " " + std::string(into);
      if (from_computed) {
        out.edits.push_back({s.at, s.len, g + load + "[" + std::string(r.src) + displacement(r.offset) + "];"});
        continue;
      }
      Address a{r.param, r.offset};
      if (r.kind == Role::LoadVia) a = Address{held[r.src].param, held[r.src].offset + r.offset};
      out.edits.push_back({s.at, s.len,
                           "{ .reg .b64 %sk_pq; ld.param.b64 %sk_pq, [" + names[a.param] + "]; " + g + load +
                               "[%sk_pq" + displacement(a.offset) + "]; }"});
    }
  }
  for (uint32_t p : out.by_address) {
    out.edits.push_back({decls[p].first, decls[p].second - decls[p].first, ".b64 " + names[p]});
    const bool indexed = std::any_of(computed.begin(), computed.end(), [&](const auto &c) { return c.second == p; });
    out.notes.push_back("parameter '" + names[p] +
                        "' passed as the address of its bytes, wherever the super kernel holds them (its address "
                        "is taken: " +
                        (indexed ? "the kernel computes addresses in it at run time, read through the generic one)"
                                 : "a grid constant)"));
  }
  return out;
}

}  // namespace sk::cuda
