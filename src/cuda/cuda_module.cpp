#include "cuda/cuda_module.hpp"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <string_view>
#include <unordered_set>

#include "common/error.hpp"
#include "cuda/module_set.hpp"
#include "cuda/plain_launch.hpp"
#include "elf/fatbin.hpp"

namespace sk::cuda {
namespace {

// A numeric field ("threads=N", "shared=N") of a CUDA-mode record, 0 when absent
// (parse_kernel_metadata skips fields it does not know, so the record stays readable by every
// reader).
sk_status record_number(const std::string &record, const std::string &label, const std::string &kernel,
                        const std::string &field, unsigned long low, unsigned long high, uint32_t *out) {
  *out = 0;
  const std::string key = ";" + field + "=";
  size_t t = record.find(key);
  if (t == std::string::npos) return SK_OK;
  t += key.size();
  const std::string value = record.substr(t, record.find(';', t) - t);
  char *end = nullptr;
  unsigned long v = std::strtoul(value.c_str(), &end, 10);
  if (value.empty() || *end || v < low || v > high)
    return fail(SK_ERR_BAD_BINARY, "%s: kernel '%s': metadata %s=%s is not in [%lu, %lu]", label.c_str(),
                kernel.c_str(), field.c_str(), value.c_str(), low, high);
  *out = (uint32_t)v;
  return SK_OK;
}

std::string record_kernel(const std::string &record) {
  size_t k = record.find(";kernel=");
  if (k == std::string::npos) return "";
  size_t end = record.find(';', k + 8);
  return record.substr(k + 8, end == std::string::npos ? std::string::npos : end - k - 8);
}

}  // namespace

std::string some_names(const std::vector<std::string> &names) {
  std::string out;
  for (size_t i = 0; i < names.size() && i < 8; ++i) out += (i ? ", " : "") + names[i];
  if (names.size() > 8) out += ", ... " + std::to_string(names.size()) + " in all";
  return out;
}

std::vector<std::string> ptx_metadata_records(const std::string &ptx) {
  std::vector<std::string> records;
  const std::string marker = " sk_kernel_meta_";
  for (size_t at = ptx.find(marker); at != std::string::npos; at = ptx.find(marker, at + 1)) {
    const size_t open = ptx.find('{', at), close = ptx.find('}', at), eol = ptx.find('\n', at);
    if (open == std::string::npos || close == std::string::npos || (eol != std::string::npos && open > eol))
      continue;
    std::string text;
    for (size_t p = open + 1; p < close;) {
      char *end = nullptr;
      const unsigned long v = std::strtoul(ptx.c_str() + p, &end, 10);
      if (end == ptx.c_str() + p) break;
      if (v == 0) break;  // the terminating NUL
      text.push_back((char)v);
      p = (size_t)(end - ptx.c_str());
      while (p < close && (ptx[p] == ',' || ptx[p] == ' ')) ++p;
    }
    if (text.rfind("sk1;", 0) == 0) records.push_back(std::move(text));
  }
  return records;
}

namespace {
// Reads the `sk_kernel_meta_*` records of a cubin or of PTX into the module.
sk_status take_records(const std::vector<std::string> &records, CudaModule *m) {
  if (sk_status st = parse_kernel_metadata(records, m->label, &m->metadata); st != SK_OK) return st;
  for (const std::string &rec : records) {
    const std::string kernel = record_kernel(rec);
    uint32_t threads = 0, shared = 0;
    if (sk_status st = record_number(rec, m->label, kernel, "threads", 1, 1024, &threads); st != SK_OK) return st;
    if (sk_status st = record_number(rec, m->label, kernel, "shared", 0, kMaxDynamicShared, &shared); st != SK_OK)
      return st;
    if (threads) m->threads[kernel] = threads;
    if (shared) m->dynamic_shared[kernel] = shared;
  }
  return SK_OK;
}

// A PTX module: rewritten for nvJitLink (cuda/ptx_module.hpp), its kernels declared from their
// parameters where no sk_kernel.h record declares them.
sk_status load_ptx_module(const uint8_t *text, size_t size, CudaModule *m, const std::string &arch) {
  m->kind = InputKind::Ptx;
  std::string max_version;
  if (std::shared_ptr<const NvJitLink> linker; NvJitLink::get(&linker) == SK_OK)
    max_version = ptx_isa_of_nvjitlink(linker->version());
  auto ptx = std::make_shared<PtxModule>();
  const std::string_view view(reinterpret_cast<const char *>(text), size);
  if (sk_status st = read_ptx_module(view, m->label, arch, max_version, ptx.get()); st != SK_OK) return st;
  if (sk_status st = take_records(ptx_metadata_records(std::string(view)), m); st != SK_OK) return st;
  for (const PtxKernel &k : ptx->kernels) {
    if (!k.entry) continue;
    bool recorded = false;
    for (const KernelMetadata &meta : m->metadata) recorded |= meta.name == k.name;
    if (!recorded) m->metadata.push_back({k.name, signature_to_string(k.signature), "vector"});
  }
  m->cubin = ptx->graph;
  // NUL-terminated: nvJitLink reads PTX as a C string, whatever size it is given.
  m->bytes.assign(ptx->text.c_str(), ptx->text.c_str() + ptx->text.size() + 1);
  m->ptx = std::move(ptx);
  return SK_OK;
}

// The names a PTX text declares `.entry` (a cheap scan: what a unit is asked for before it is
// read; a name the scan takes wrongly is one the read module then does not define).
std::vector<std::string> entry_names_in(std::string_view text) {
  std::vector<std::string> names;
  for (size_t at = text.find(".entry"); at != std::string_view::npos; at = text.find(".entry", at + 6)) {
    if (at > 0 && !std::isspace((unsigned char)text[at - 1])) continue;
    size_t b = at + 6, e = 0;
    if (b >= text.size() || !std::isspace((unsigned char)text[b])) continue;
    while (b < text.size() && std::isspace((unsigned char)text[b])) ++b;
    for (e = b; e < text.size() && (std::isalnum((unsigned char)text[e]) || text[e] == '_' || text[e] == '$');) ++e;
    if (e > b) names.emplace_back(text.substr(b, e - b));
  }
  return names;
}

// The __global__ kernels of an LTO-IR module, from the PTX its IR links to alone: the link
// keeps every `.entry` (it drops the __device__ functions nothing in the IR calls, which is why
// sk_kernel.h's sub-kernels stay IR), so they fuse as the PTX kernels of nvcc -ptx do. Read at
// load, its kernels listed with the module's; a text the reader refuses is noted.
void read_global_kernels(const std::string &ptx, const std::string &arch, CudaModule *m) {
  PtxUnit unit;
  unit.entries = entry_names_in(ptx);
  if (unit.entries.empty()) return;
  unit.label = m->label + " (the PTX of its LTO-IR)";
  unit.text.assign(ptx.begin(), ptx.end());
  unit.arch = arch;
  m->ptx_units.push_back(std::move(unit));
  const std::shared_ptr<const CudaModule> read = m->ptx_unit(0);
  if (!read) {
    m->global_kernels_note = last_error();
    m->ptx_units.clear();
    return;
  }
  for (const PtxKernel &k : read->ptx->kernels)
    if (k.entry) m->metadata.push_back({k.name, signature_to_string(k.signature), "vector"});
}

// A shared library or executable (nvcc -shared, a program): every translation unit's kernels
// are linked SASS, which cannot be called, and its PTX, where the build kept some, can: each
// unit's is read when a kernel of it is first taken (from the first unit that declares it). A
// unit without PTX the device runs gives its linked cubin's kernels, launched as compiled.
sk_status load_linked_file(const uint8_t *b, size_t size, const std::string &label, const std::string &arch,
                           CudaModule *m) {
  m->given.assign(b, b + size);  // the units' entries point into it
  std::vector<elf::FatbinEntry> entries, sass;
  uint32_t units = 0;
  if (sk_status st =
          elf::linked_code_entries(m->given.data(), m->given.size(), label, arch, &entries, &sass, &units);
      st != SK_OK)
    return st;
  m->library = true;
  // Units compiled -rdc may use what other units define, as the device link resolved it: every
  // unit is read now, and the units are one set, each kernel linked with the units it needs.
  // Their device link's SASS holds the same kernels again.
  const bool rdc =
      std::any_of(entries.begin(), entries.end(), [](const elf::FatbinEntry &e) { return e.relocatable; });
  if (rdc) sass.clear();
  for (const elf::FatbinEntry &e : sass) {
    SassUnit unit;
    unit.label = label + " (" + e.describe() + ", translation unit " + std::to_string(e.container + 1) + " of " +
                 std::to_string(units) + ")";
    std::vector<uint8_t> code;
    elf::Cubin cubin;
    if (sk_status st = elf::fatbin_entry_bytes(e, unit.label, &code); st != SK_OK) return st;
    if (sk_status st = elf::parse_cubin(code.data(), code.size(), unit.label, &cubin); st != SK_OK) return st;
    for (const elf::CubinFunction &f : cubin.functions)
      if (f.entry) unit.entries.push_back(f.name);
    unit.stored = e;
    unit.arch = arch;
    if (!unit.entries.empty()) m->sass_units.push_back(std::move(unit));  // else device code of the link alone
  }
  m->label = label + " (the PTX of " + std::to_string(entries.size()) + " of its " + std::to_string(units) +
             " translation units" +
             (m->sass_units.empty() ? "" : ", the SASS of " + std::to_string(m->sass_units.size())) + ")";
  for (const elf::FatbinEntry &e : entries) {
    PtxUnit unit;
    unit.label = label + " (" + e.describe() + ", translation unit " + std::to_string(e.container + 1) + " of " +
                 std::to_string(units) + ")";
    std::vector<uint8_t> text;
    if (sk_status st = elf::fatbin_entry_bytes(e, unit.label, &text); st != SK_OK) return st;
    unit.entries = entry_names_in(std::string_view(reinterpret_cast<const char *>(text.data()), text.size()));
    unit.stored = e;
    unit.arch = arch;
    if (rdc) unit.text = std::move(text);  // read below from this, not decompressed again
    m->ptx_units.push_back(std::move(unit));
  }
  if (!rdc) return SK_OK;
  // A unit the reader refuses is left out, its kernels refused with the reader's message.
  std::vector<SetObject> read;
  std::map<std::string, std::string> unreadable;
  for (size_t i = 0; i < m->ptx_units.size(); ++i) {
    if (std::shared_ptr<const CudaModule> unit = m->ptx_unit(i)) {
      read.push_back({std::move(unit), m->ptx_units[i].label, true});
      continue;
    }
    for (const std::string &k : m->ptx_units[i].entries) unreadable.emplace(k, last_error());
  }
  for (PtxUnit &unit : m->ptx_units) std::vector<uint8_t>().swap(unit.text);  // each read module has its own
  std::shared_ptr<ModuleSet> set;
  if (sk_status st = resolve_module_set(read, "sk_module_load", &set); st != SK_OK) return st;
  set->unreadable = std::move(unreadable);
  m->set = std::move(set);
  m->metadata = m->set->kernels;
  return SK_OK;
}

}  // namespace

sk_status load_cuda_module(const void *image, size_t size, const std::string &label,
                           std::shared_ptr<const CudaModule> *out, const std::string &arch) {
  auto m = std::make_shared<CudaModule>();
  m->label = label;
  const auto *b = static_cast<const uint8_t *>(image);
  if (looks_like_ptx(image, size)) {
    if (sk_status st = load_ptx_module(b, size, m.get(), arch); st != SK_OK) return st;
    m->given.assign(b, b + size);
    *out = std::move(m);
    return SK_OK;
  }
  if (elf::looks_like_linked_host_elf(image, size)) {
    if (sk_status st = load_linked_file(b, size, label, arch, m.get()); st != SK_OK) return st;
    *out = std::move(m);
    return SK_OK;
  }
  // What nvcc writes by default (a host object whose __nv_relfatbin holds the cubins), nvcc
  // -dc -fatbin, and nvcc -c (.nv_fatbin): the cubin for the device's architecture, then read
  // as if given alone; else its PTX. A linked cubin cannot be fused: its PTX, if any, can. Nor
  // can a relocatable cubin's __global__ kernels be called: the PTX that -arch=sm_90 puts beside
  // it (code=[sm_90,compute_90]) is read instead, its device functions and all.
  std::vector<uint8_t> extracted;
  elf::Cubin parsed;  // the extracted cubin, where it was read to look for __global__ kernels
  bool cubin_read = false;
  if (elf::looks_like_fatbin(image, size) || elf::looks_like_host_elf(image, size)) {
    std::string what;
    bool ptx = false;
    if (sk_status st = elf::extract_fatbin_code(image, size, label, arch, true, &extracted, &what, &ptx);
        st != SK_OK)
      return st;
    const bool cubin = !ptx && elf::looks_like_cubin(extracted.data(), extracted.size()) && extracted.size() > 16;
    const bool linked = cubin && extracted[16] != 1 /* ET_REL */;
    cubin_read = cubin && !linked &&
                 elf::parse_cubin(extracted.data(), extracted.size(), label + " (" + what + ")", &parsed) == SK_OK;
    const bool entries = cubin_read && std::any_of(parsed.functions.begin(), parsed.functions.end(),
                                                   [](const elf::CubinFunction &f) { return f.entry; });
    std::vector<uint8_t> sass;
    const std::string sass_what = what;
    if (linked || entries) {
      std::vector<uint8_t> code;
      std::string ptx_what;
      bool is_ptx = false;
      if (elf::extract_fatbin_code(image, size, label, arch, false, &code, &ptx_what, &is_ptx) == SK_OK) {
        sass = std::move(extracted);
        extracted = std::move(code);
        what = ptx_what;
        ptx = true;
      }
    }
    m->given.assign(b, b + size);
    m->label = label + " (" + what + ")";
    if (ptx) {
      const sk_status st = load_ptx_module(extracted.data(), extracted.size(), m.get(), arch);
      // Whole-program PTX beside a linked cubin keeps only its __global__ kernels: with none,
      // the linked cubin's refusal says what to do.
      if (st == SK_OK && (!linked || !m->ptx->kernels.empty())) {
        *out = std::move(m);
        return SK_OK;
      }
      if (st != SK_OK && !entries) return st;
      if (linked) return load_cuda_module(sass.data(), sass.size(), label + " (" + sass_what + ")", out, arch);
      // PTX the reader refuses: the cubin's device functions are still there, its
      // __global__ kernels' refusal says why not their PTX.
      const std::string note = last_error();
      m = std::make_shared<CudaModule>();
      m->given.assign(b, b + size);
      m->label = label + " (" + sass_what + ")";
      m->global_kernels_note = note;
      extracted = std::move(sass);
    }
    image = extracted.data();
    size = extracted.size();
    b = extracted.data();
  }
  if (size >= 4 && std::memcmp(b, elf::magic_bytes(elf::kLtoIrMagic).b, 4) == 0) {
    m->kind = InputKind::LtoIr;
    std::shared_ptr<const NvJitLink> linker;
    std::string ptx;
    if (NvJitLink::get(&linker) == SK_OK &&
        linker->lto_to_ptx({InputKind::LtoIr, image, size, m->label}, arch, &ptx) == SK_OK) {
      if (sk_status st = take_records(ptx_metadata_records(ptx), m.get()); st != SK_OK) return st;
      read_global_kernels(ptx, arch, m.get());
    } else {
      m->metadata_note = last_error();
    }
  } else if (size >= 4 && std::memcmp(b, "\177ELF", 4) == 0) {
    m->kind = InputKind::Cubin;
    if (cubin_read)
      m->cubin = std::move(parsed);
    else if (sk_status st = elf::parse_cubin(image, size, m->label, &m->cubin); st != SK_OK)
      return st;
    if (m->cubin.type != 1 /* ET_REL */) {
      // Linked: its __global__ kernels are launched as compiled (plain_launch.hpp).
      for (const elf::CubinFunction &f : m->cubin.functions) {
        Signature sig;
        if (f.entry)
          m->metadata.push_back(
              {f.name,
               plain_signature(f, nullptr, f.name, "sk_module_load", &sig) == SK_OK ? signature_to_string(sig) : "",
               "vector"});
      }
      if (m->metadata.empty())
        return fail(SK_ERR_UNSUPPORTED,
                    "%s: a linked cubin without __global__ kernels: its device functions cannot be called; build "
                    "them relocatable: nvcc -dc (or -rdc=true), e.g. nvcc -dc -cubin, or CMake's "
                    "CUDA_SEPARABLE_COMPILATION",
                    m->label.c_str());
    } else if (sk_status st = take_records(m->cubin.metadata_records, m.get()); st != SK_OK) {
      return st;
    }
  } else {
    return fail(SK_ERR_BAD_BINARY,
                "%s: neither a cubin (ELF), LTO-IR nor PTX (%zu bytes); build CUDA kernels with nvcc -dc -cubin, "
                "nvcc -dc -dlto -ltoir or nvcc -ptx",
                m->label.c_str(), size);
  }
  if (!extracted.empty())
    m->bytes = std::move(extracted);
  else
    m->bytes.assign(b, b + size);
  *out = std::move(m);
  return SK_OK;
}

sk_status CudaModuleCache::load(const void *image, size_t size, const std::string &label, const std::string &arch,
                                std::shared_ptr<const CudaModule> *out) {
  const std::pair<uint64_t, uint64_t> h = content_hash(image, size);
  const ContentKey key{h.first, h.second};
  std::lock_guard<std::mutex> lock(mutex_);
  std::shared_ptr<const CudaModule> m = modules_.find(
      key, image, size, [](const CudaModule &c) -> const auto & { return c.given.empty() ? c.bytes : c.given; });
  if (m) {
    *out = std::move(m);
    return SK_OK;
  }
  if (sk_status st = load_cuda_module(image, size, label, &m, arch); st != SK_OK) return st;
  modules_.insert(key, m);
  *out = std::move(m);
  return SK_OK;
}

// Each unit is read once: a failure is remembered, so that each kernel of a unit that cannot be
// read is refused with its message, not by decompressing and reading the unit again.
template <class Read>
std::shared_ptr<const CudaModule> CudaModule::read_once(std::vector<ReadUnit> &units, size_t count, size_t i,
                                                        Read read) const {
  std::lock_guard<std::mutex> lock(units_mutex_);
  units.resize(count);
  ReadUnit &u = units[i];
  if (u.module) return u.module;
  if (!u.error.empty()) {
    fail(SK_ERR_BAD_BINARY, "%s", u.error.c_str());
    return nullptr;
  }
  if (read(&u.module) != SK_OK) {
    u.module.reset();
    u.error = last_error();
  }
  return u.module;
}

std::shared_ptr<const CudaModule> CudaModule::ptx_unit(size_t i) const {
  return read_once(read_ptx_, ptx_units.size(), i, [&p = ptx_units[i]](std::shared_ptr<const CudaModule> *out) {
    std::vector<uint8_t> stored;
    auto part = std::make_shared<CudaModule>();
    part->label = p.label;
    sk_status st = p.text.empty() ? elf::fatbin_entry_bytes(p.stored, p.label, &stored) : SK_OK;
    const std::vector<uint8_t> &text = p.text.empty() ? stored : p.text;
    if (st == SK_OK) st = load_ptx_module(text.data(), text.size(), part.get(), p.arch);
    if (st == SK_OK) *out = std::move(part);
    return st;
  });
}

std::shared_ptr<const CudaModule> CudaModule::sass_unit(size_t i) const {
  return read_once(read_sass_, sass_units.size(), i, [&u = sass_units[i]](std::shared_ptr<const CudaModule> *out) {
    std::vector<uint8_t> code;
    sk_status st = elf::fatbin_entry_bytes(u.stored, u.label, &code);
    return st == SK_OK ? load_cuda_module(code.data(), code.size(), u.label, out, u.arch) : st;
  });
}

std::shared_ptr<const CudaModule> CudaModule::ptx_unit_if_read(size_t i) const {
  std::lock_guard<std::mutex> lock(units_mutex_);
  return i < read_ptx_.size() ? read_ptx_[i].module : nullptr;
}

const std::vector<CudaModule::UnitRef> &CudaModule::units_declaring(std::string_view name) const {
  std::call_once(units_by_name_once_, [this] {
    auto add = [this](const std::vector<std::string> &entries, UnitRef unit) {
      for (const std::string &n : entries)
        if (std::vector<UnitRef> &at = units_by_name_[n];
            at.empty() || at.back().sass != unit.sass || at.back().index != unit.index)
          at.push_back(unit);
    };
    for (uint32_t i = 0; i < ptx_units.size(); ++i) add(ptx_units[i].entries, {false, i});
    for (uint32_t i = 0; i < sass_units.size(); ++i) add(sass_units[i].entries, {true, i});
  });
  static const std::vector<UnitRef> none;
  const auto it = units_by_name_.find(name);
  return it == units_by_name_.end() ? none : it->second;
}

const std::vector<KernelMetadata> &CudaModule::declared_kernels() const {
  if (!library || set) return metadata;
  // The names each unit declares, scanned at load: no unit is read for them (a library may hold
  // thousands of kernels in units of megabytes each); a kernel's signature is its taking's.
  std::call_once(declared_once_, [this] {
    std::unordered_set<std::string_view> seen;
    for (const PtxUnit &unit : ptx_units)
      for (const std::string &name : unit.entries)
        if (seen.insert(name).second) declared_.push_back({name, "", "vector"});
    for (const SassUnit &unit : sass_units)
      for (const std::string &name : unit.entries)
        if (seen.insert(name).second) declared_.push_back({name, "", "vector"});
  });
  return declared_;
}

}  // namespace sk::cuda
