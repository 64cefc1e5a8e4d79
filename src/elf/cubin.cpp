#include "elf/cubin.hpp"

#include <elf.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <deque>
#include <map>
#include <optional>

#include "common/error.hpp"
#include "elf/cubin_sass.hpp"
#include "elf/elf_object.hpp"

namespace sk::elf {
namespace {

// .nv.info attribute records: a format byte, an attribute byte, then either a 2-byte value
// (EIFMT_HVAL; EIFMT_BVAL's byte and EIFMT_NVAL's nothing are padded to 2 bytes too, as the
// records of `nvcc -G` cubins show) or a 2-byte size and that many bytes (EIFMT_SVAL).
constexpr uint8_t kFormatNone = 0x01, kFormatByte = 0x02, kFormatHalf = 0x03, kFormatSized = 0x04;
constexpr uint8_t kAttrExterns = 0x0f, kAttrFrameSize = 0x11, kAttrCbankParamSize = 0x19, kAttrMinStackSize = 0x12,
                  kAttrMaxStackSize = 0x23, kAttrRegCount = 0x2f, kAttrNumBarriers = 0x4c, kAttrMaxRegCount = 0x1b,
                  kAttrMaxThreads = 0x05, kAttrReqntid = 0x10, kAttrKparamInfo = 0x17,
                  kAttrCoopGroupInstrOffsets = 0x28, kAttrKparamInfoV2 = 0x45, kAttrCtaPerCluster = 0x3d,
                  kAttrExplicitCluster = 0x3e;
// EIATTR_KPARAM_INFO's last word: the parameter's size in bytes in its top 14 bits. The record
// nvcc writes for a kernel of more than 4 KiB of parameters (0x45) has the size itself there.
constexpr uint32_t kKparamSizeShift = 18;
constexpr char kMetaPrefix[] = "sk_kernel_meta_";
// Where CUDA 13 puts the static __shared__ variables of a relocatable cubin: a NOBITS
// section in which a variable's st_value is its alignment (it has no offset before the link).
constexpr char kDebugShared[] = ".nv_debug.shared";

bool is_shared_section(const std::string &name) { return name == kDebugShared || name.rfind(".nv.shared.", 0) == 0; }

bool power_of_two(uint64_t v) { return v && (v & (v - 1)) == 0; }

// `bytes` of shared variables so far, then `var` at its alignment (saturating: the sizes come
// from the file).
uint32_t append_shared(uint32_t bytes, const CubinSharedVar &var) {
  const uint64_t end = ((uint64_t)bytes + var.align - 1) / var.align * var.align + var.size;
  return end > UINT32_MAX ? UINT32_MAX : (uint32_t)end;
}

uint32_t read_u32(const uint8_t *p) {
  uint32_t v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

}  // namespace

const CubinFunction *Cubin::find(std::string_view name) const {
  for (const CubinFunction &f : functions)
    if (f.name == name) return &f;
  return nullptr;
}

CubinReach Cubin::reach(std::string_view name) const {
  CubinReach r;
  std::map<std::string_view, size_t> index;
  for (size_t i = 0; i < functions.size(); ++i) index.emplace(functions[i].name, i);
  struct Visit {
    long parent = -2;  // -2: not reached, -1: the root
    ReachHow how = ReachHow::Call;
  };
  std::vector<Visit> v(functions.size());
  std::deque<size_t> queue;
  std::vector<size_t> order;
  std::map<std::string, std::pair<size_t, ReachHow>> externs;  // name -> (first function reaching it, how)
  auto visit = [&](size_t f, long parent, ReachHow how) {
    if (v[f].parent != -2) return;
    v[f] = {parent, how};
    queue.push_back(f);
  };
  auto reach_name = [&](const std::string &callee, size_t from, ReachHow how) {
    if (auto it = index.find(callee); it != index.end())
      visit(it->second, static_cast<long>(from), how);
    else if (externs.emplace(callee, std::make_pair(from, how)).second)
      r.externs.push_back(callee);
  };
  const auto root = index.find(name);
  if (root != index.end()) visit(root->second, -1, ReachHow::Call);
  bool expanded = false;
  for (;;) {
    long pointer = -1;  // the first function reached that calls through a pointer
    while (!queue.empty()) {
      const size_t f = queue.front();
      queue.pop_front();
      order.push_back(f);
      for (const std::string &e : functions[f].externs) reach_name(e, f, ReachHow::Call);
      for (const std::string &c : functions[f].callees) reach_name(c, f, ReachHow::Call);
    }
    for (size_t f : order)
      if (functions[f].indirect_calls && pointer < 0) pointer = static_cast<long>(f);
    // Only what the direct calls do not reach is reached through a pointer.
    if (expanded || pointer < 0) break;
    expanded = true;
    for (const std::string &t : pointer_targets) reach_name(t, static_cast<size_t>(pointer), ReachHow::IndirectCall);
  }
  if (root == index.end()) r.functions.emplace_back(name);
  for (size_t f : order) {
    r.functions.push_back(functions[f].name);
    r.dynamic_shared |= functions[f].dynamic_shared;
  }
  std::vector<bool> var_seen(shared_vars.size());
  for (size_t f : order)
    for (uint32_t var : functions[f].shared_vars)
      if (var < shared_vars.size() && !var_seen[var]) {
        var_seen[var] = true;
        r.shared_vars.push_back(var);
        r.shared_bytes = append_shared(r.shared_bytes, shared_vars[var]);
      }
  // How each extern is reached: the chain of functions from `name` to its caller.
  for (const auto &[callee, from] : externs) {
    std::vector<ReachStep> steps{{functions[from.first].name, callee, from.second}};
    for (size_t f = from.first; v[f].parent >= 0; f = static_cast<size_t>(v[f].parent))
      steps.push_back({functions[v[f].parent].name, functions[f].name, v[f].how});
    std::reverse(steps.begin(), steps.end());
    r.paths[callee] = std::move(steps);
  }
  return r;
}

bool looks_like_cubin(const void *bytes, size_t size) {
  const auto *b = static_cast<const uint8_t *>(bytes);
  if (size < sizeof(Elf64_Ehdr) || std::memcmp(b, ELFMAG, SELFMAG) != 0 || b[EI_CLASS] != ELFCLASS64) return false;
  uint16_t machine;
  std::memcpy(&machine, b + offsetof(Elf64_Ehdr, e_machine), sizeof machine);
  return machine == kMachineCuda;
}

sk_status parse_cubin(const void *bytes, size_t size, std::string_view label_view, Cubin *out) {
  const std::string label(label_view);
  const auto *image = static_cast<const uint8_t *>(bytes);
  if (size < sizeof(Elf64_Ehdr) || std::memcmp(image, ELFMAG, SELFMAG) != 0)
    return fail(SK_ERR_BAD_BINARY, "%s: not a cubin (no ELF magic, %zu bytes)", label.c_str(), size);
  if (image[EI_CLASS] != ELFCLASS64 || image[EI_DATA] != ELFDATA2LSB)
    return fail(SK_ERR_UNSUPPORTED, "%s: not a 64-bit little-endian ELF object", label.c_str());
  Elf64_Ehdr eh;
  std::memcpy(&eh, image, sizeof eh);
  if (eh.e_machine != kMachineCuda)
    return fail(SK_ERR_UNSUPPORTED, "%s: ELF machine %u is not a CUDA binary (EM_CUDA, 190)", label.c_str(),
                eh.e_machine);
  if (eh.e_type != ET_REL && eh.e_type != ET_EXEC)
    return fail(SK_ERR_UNSUPPORTED, "%s: e_type %u is neither a relocatable (nvcc -dc -cubin) nor a linked cubin",
                label.c_str(), eh.e_type);
  Object o;
  if (sk_status st = parse_object(bytes, size, label, &o, kCubinParseOptions); st != SK_OK) return st;
  const std::vector<Section> &sections = o.sections;
  const std::vector<Symbol> &symbols = o.symbols;
  if (symbols.empty()) return fail(SK_ERR_BAD_BINARY, "%s: no symbol table", label.c_str());

  Cubin result;
  result.label = label;
  result.type = o.type;
  result.sm = (eh.e_flags >> 8) & 0xff;
  std::map<uint32_t, size_t> function_of_symbol;  // symbol index -> functions[]
  for (size_t s = 1; s < symbols.size(); ++s) {
    const Symbol &sym = symbols[s];
    if (sym.type != STT_FUNC) {
      const bool data = sym.type == STT_OBJECT || sym.type == kSttCudaObject;
      if (data && sym.shndx == SHN_UNDEF && sym.bind == STB_GLOBAL)
        result.undefined_variables.push_back(sym.name);
      else if (data && sym.shndx != SHN_UNDEF && sym.bind != STB_LOCAL)
        result.variables.push_back({sym.name, sym.bind == STB_WEAK});
      continue;
    }
    if (sym.shndx == SHN_UNDEF) {
      result.undefined.push_back(sym.name);
      continue;
    }
    if (sym.shndx >= sections.size())
      return fail(SK_ERR_BAD_BINARY, "%s: function '%s' has section index %u of %zu", label.c_str(),
                  sym.name.c_str(), sym.shndx, sections.size());
    CubinFunction f;
    f.name = sym.name;
    f.code_bytes = (uint32_t)sym.size;
    f.registers = sections[sym.shndx].info >> 24;  // cubins keep the count in sh_info's top byte
    // STO_CUDA_ENTRY (0x10) in st_other marks kernels.
    f.entry = (sym.other & 0x10) != 0;
    f.local = sym.bind == STB_LOCAL;
    f.weak = sym.bind == STB_WEAK;
    if (const int shared = o.find_section(".nv.shared." + f.name); shared >= 0)
      f.shared_bytes = (uint32_t)sections[shared].size;
    function_of_symbol[(uint32_t)s] = result.functions.size();
    result.functions.push_back(std::move(f));
  }

  // Static shared variables, and which function's code references each (its .rela.text.<f>).
  std::map<uint32_t, size_t> shared_of_symbol;  // symbol index -> result.shared_vars[]
  for (size_t s = 1; s < symbols.size(); ++s) {
    const Symbol &sym = symbols[s];
    if (sym.shndx == SHN_UNDEF || sym.shndx >= sections.size() || sym.type == STT_SECTION || sym.size == 0 ||
        !is_shared_section(sections[sym.shndx].name))
      continue;
    // In .nv_debug.shared st_value is the variable's alignment; in .nv.shared.<f>, an offset
    // in a section whose alignment covers the variable.
    const bool debug_shared = sections[sym.shndx].name == kDebugShared;
    const uint64_t align = debug_shared ? sym.value : sections[sym.shndx].align;
    if (!power_of_two(align) || align > kMaxSharedVarBytes)
      return fail(SK_ERR_BAD_BINARY,
                  "%s: shared variable '%s' (symbol %zu): alignment %llu (%s) is not a power of two of at most %llu",
                  label.c_str(), sym.name.c_str(), s, (unsigned long long)align,
                  debug_shared ? "st_value" : "sh_addralign", (unsigned long long)kMaxSharedVarBytes);
    if (sym.size > kMaxSharedVarBytes)
      return fail(SK_ERR_BAD_BINARY, "%s: shared variable '%s' (symbol %zu): st_size %llu is larger than %llu",
                  label.c_str(), sym.name.c_str(), s, (unsigned long long)sym.size,
                  (unsigned long long)kMaxSharedVarBytes);
    shared_of_symbol[(uint32_t)s] = result.shared_vars.size();
    result.shared_vars.push_back({sym.name, (uint32_t)sym.size, (uint32_t)align, (uint32_t)s,
                                  debug_shared && sym.bind == STB_LOCAL && eh.e_type == ET_REL && eh.e_phnum == 0});
  }
  for (const RelocationSection &rs : o.relocation_sections) {
    const bool explicit_addends = sections[rs.index].type == SHT_RELA;
    for (const Relocation &rel : rs.relocations) {
      const Symbol &target = symbols[rel.symbol];
      if (auto it = shared_of_symbol.find(rel.symbol); it != shared_of_symbol.end()) {
        // An addend in the instruction's bits cannot take the variable's offset.
        if (!explicit_addends) result.shared_vars[it->second].overlay = false;
      } else if (target.type == STT_SECTION && target.shndx < sections.size() &&
                 sections[target.shndx].name == kDebugShared) {
        // "The section + addend" names no variable before the link: keep them all in place.
        for (CubinSharedVar &v : result.shared_vars) v.overlay = false;
      }
    }
    CubinFunction *owner = nullptr;
    for (const auto &[sym, index] : function_of_symbol)
      if (symbols[sym].shndx == rs.target) owner = &result.functions[index];
    if (!owner) continue;
    for (const Relocation &rel : rs.relocations) {
      const Symbol &target = symbols[rel.symbol];
      if (auto it = shared_of_symbol.find(rel.symbol); it != shared_of_symbol.end()) {
        bool seen = false;
        for (uint32_t v : owner->shared_vars) seen |= v == it->second;
        if (!seen) owner->shared_vars.push_back((uint32_t)it->second);
      } else if (target.shndx == SHN_UNDEF && target.type != STT_FUNC && (target.other & kStoCudaShared)) {
        owner->dynamic_shared = true;
      }
    }
  }
  for (CubinFunction &f : result.functions)
    if (f.shared_bytes == 0)
      for (uint32_t v : f.shared_vars) f.shared_bytes = append_shared(f.shared_bytes, result.shared_vars[v]);

  // The call graph: { caller, callee } pairs in parts that a { 0, marker } pair opens: -1 the
  // direct calls; -2 the functions whose address is taken and -3 those that call through a
  // pointer, each with a prototype number; -4 { a function, a function whose address it takes }.
  bool address_taken_known = false;
  for (const Section &sec : sections) {
    if (sec.type != kShtCudaCallgraph || !sec.data) continue;
    int32_t part = kCallgraphCalls;
    for (size_t off = 0; off + 8 <= sec.size; off += 8) {
      const uint32_t caller = read_u32(sec.data + off), callee = read_u32(sec.data + off + 4);
      if (caller == 0 && static_cast<int32_t>(callee) < 0) {
        part = static_cast<int32_t>(callee);
        address_taken_known |= part == kCallgraphAddressTaken;
        continue;
      }
      auto it = function_of_symbol.find(caller);
      if (it == function_of_symbol.end()) continue;
      CubinFunction &f = result.functions[it->second];
      if (part == kCallgraphAddressTaken) result.pointer_targets.push_back(f.name);
      if (part == kCallgraphIndirect) f.indirect_calls = true;
      if (part != kCallgraphCalls && part != kCallgraphTakes) continue;
      if (callee == 0 || callee >= symbols.size() || symbols[callee].type != STT_FUNC) continue;
      (part == kCallgraphCalls ? f.callees : result.pointer_targets).push_back(symbols[callee].name);
    }
  }
  if (!address_taken_known)
    for (const CubinFunction &f : result.functions) result.pointer_targets.push_back(f.name);

  // .nv.info (per module, attributes keyed by symbol) and .nv.info.<function>.
  for (const Section &sec : sections) {
    if (sec.name != ".nv.info" && sec.name.rfind(".nv.info.", 0) != 0) continue;
    if (!sec.data) continue;
    CubinFunction *owner = nullptr;
    if (sec.name != ".nv.info")  // .nv.info.<function>; its sh_info is the .text section's index
      for (CubinFunction &f : result.functions)
        if (sec.name.compare(9, std::string::npos, f.name) == 0) owner = &f;
    const uint8_t *p = sec.data, *end = sec.data + sec.size;
    while (end - p >= 2) {
      const uint8_t format = p[0], attr = p[1];
      p += 2;
      const uint8_t *value = p;
      size_t length = 0;
      if (format == kFormatNone || format == kFormatByte || format == kFormatHalf)
        length = 2;
      else if (format == kFormatSized) {
        if (end - p < 2) break;
        length = (size_t)p[0] | ((size_t)p[1] << 8);
        value = p + 2;
        p += 2;
      } else {
        return fail(SK_ERR_BAD_BINARY, "%s: %s: unknown attribute format 0x%02x at offset %zu", label.c_str(),
                    sec.name.c_str(), format, (size_t)(p - 2 - sec.data));
      }
      if ((size_t)(end - p) < length)
        return fail(SK_ERR_BAD_BINARY, "%s: %s: attribute 0x%02x runs past the section", label.c_str(),
                    sec.name.c_str(), attr);
      p += length;
      if (format == kFormatSized && sec.name == ".nv.info" && length == 8) {
        // Module-level: { symbol index, value }.
        auto it = function_of_symbol.find(read_u32(value));
        if (it == function_of_symbol.end()) continue;
        CubinFunction &f = result.functions[it->second];
        const uint32_t v = read_u32(value + 4);
        if (attr == kAttrRegCount)
          f.registers = v;
        else if (attr == kAttrFrameSize)
          f.frame_size = v;
        else if (attr == kAttrMinStackSize || attr == kAttrMaxStackSize)
          f.stack_size = std::max(f.stack_size, v);
      } else if (owner && attr == kAttrExterns && format == kFormatSized) {
        for (size_t k = 0; k + 4 <= length; k += 4) {
          const uint32_t s = read_u32(value + k);
          if (s < symbols.size()) owner->externs.push_back(symbols[s].name);
        }
      } else if (owner && attr == kAttrCbankParamSize && format == kFormatHalf) {
        owner->param_bytes = (uint32_t)value[0] | ((uint32_t)value[1] << 8);
      } else if (owner && attr == kAttrNumBarriers && format == kFormatByte) {
        owner->barriers = value[0];
      } else if (owner && attr == kAttrMaxRegCount && format == kFormatHalf) {
        owner->max_registers = (uint32_t)value[0] | ((uint32_t)value[1] << 8);
      } else if (owner && attr == kAttrCoopGroupInstrOffsets) {
        owner->cooperative_groups = true;
      } else if (owner && (attr == kAttrKparamInfo || attr == kAttrKparamInfoV2) && format == kFormatSized &&
                 length == 12) {
        // { index, ordinal (u16), offset (u16), flags or size }
        CubinParam param;
        param.ordinal = (uint32_t)value[4] | ((uint32_t)value[5] << 8);
        param.offset = (uint32_t)value[6] | ((uint32_t)value[7] << 8);
        param.size = attr == kAttrKparamInfo ? read_u32(value + 8) >> kKparamSizeShift : read_u32(value + 8);
        owner->params.push_back(param);
      } else if (owner && attr == kAttrExplicitCluster) {
        owner->explicit_cluster = true;
      } else if (owner && (attr == kAttrMaxThreads || attr == kAttrReqntid || attr == kAttrCtaPerCluster) &&
                 format == kFormatSized && length == 12) {
        uint32_t *xyz = attr == kAttrMaxThreads ? owner->max_threads
                        : attr == kAttrReqntid  ? owner->reqntid
                                                : owner->cluster_dims;
        for (int d = 0; d < 3; ++d) xyz[d] = read_u32(value + 4 * d);
      }
    }
  }

  // sk_kernel.h's metadata variables.
  for (size_t s = 1; s < symbols.size(); ++s) {
    const Symbol &sym = symbols[s];
    if (sym.name.rfind(kMetaPrefix, 0) != 0 || sym.shndx == SHN_UNDEF || sym.shndx >= sections.size()) continue;
    const Section &sec = sections[sym.shndx];
    // In a relocatable object st_value is the offset in its section; in a linked one, the
    // section's address plus the offset.
    const uint64_t offset = o.type == ET_REL ? sym.value : sym.value - sec.addr;
    if (!sec.data || offset > sec.size || sym.size > sec.size - offset || sym.size == 0)
      return fail(SK_ERR_BAD_BINARY, "%s: metadata variable '%s' lies outside its section %s", label.c_str(),
                  sym.name.c_str(), sec.name.c_str());
    const char *text = reinterpret_cast<const char *>(sec.data + offset);
    result.metadata_records.emplace_back(text, strnlen(text, sym.size));
  }
  // Cooperative groups' block and cluster syncs record EIATTR_COOP_GROUP_INSTR_OFFSETS as the
  // grid's does: the code a kernel reaches tells them apart (a debug build calls the sync, the
  // trap and the workspace's read as functions of their own). Only a kernel that reaches
  // cooperative groups has its code read, each function's once.
  if (std::any_of(result.functions.begin(), result.functions.end(),
                  [](const CubinFunction &f) { return f.cooperative_groups; })) {
    std::vector<std::pair<const uint8_t *, size_t>> code(result.functions.size());
    for (const auto &[s, i] : function_of_symbol) {
      const Symbol &sym = symbols[s];
      const Section &text = sections[sym.shndx];
      const uint64_t at = o.type == ET_REL ? sym.value : sym.value - text.addr;
      if (text.data && at <= text.size)
        code[i] = {text.data + at, (size_t)std::min<uint64_t>(sym.size, text.size - at)};
    }
    std::map<std::string_view, size_t> index;
    for (size_t i = 0; i < result.functions.size(); ++i) index.emplace(result.functions[i].name, i);
    std::vector<std::optional<SassFacts>> facts(result.functions.size());
    for (CubinFunction &f : result.functions) {
      if (!f.entry) continue;
      // Most kernels call nothing: their own code alone.
      const std::vector<std::string> reached =
          f.callees.empty() && !f.indirect_calls ? std::vector<std::string>{f.name} : result.reach(f.name).functions;
      std::vector<size_t> functions;
      for (const std::string &r : reached)
        if (auto it = index.find(r); it != index.end()) functions.push_back(it->second);
      if (std::none_of(functions.begin(), functions.end(),
                       [&](size_t i) { return result.functions[i].cooperative_groups; }))
        continue;
      SassFacts all;
      for (size_t i : functions) {
        if (!facts[i]) facts[i] = read_sass(code[i].first, code[i].second, result.sm);
        all.traps = all.traps || facts[i]->traps;
        all.reads_grid_workspace = all.reads_grid_workspace || facts[i]->reads_grid_workspace;
      }
      f.grid_sync = all.syncs_grid();
    }
  }
  // ptxas writes a kernel's parameters last one first.
  for (CubinFunction &f : result.functions)
    std::sort(f.params.begin(), f.params.end(),
              [](const CubinParam &a, const CubinParam &b) { return a.ordinal < b.ordinal; });
  *out = std::move(result);
  return SK_OK;
}

}  // namespace sk::elf
