#include "cuda/nvjitlink.hpp"

#include <cstdlib>
#include <mutex>

#include "common/error.hpp"

namespace sk::cuda {

using nvJitLinkHandle = struct nvJitLink_st *;
using nvJitLinkResult = int;

struct NvJitLinkApi {
  DynamicLibrary library;
  nvJitLinkResult (*create)(nvJitLinkHandle *, uint32_t, const char **);
  nvJitLinkResult (*destroy)(nvJitLinkHandle *);
  nvJitLinkResult (*add_data)(nvJitLinkHandle, int, const void *, size_t, const char *);
  nvJitLinkResult (*complete)(nvJitLinkHandle);
  nvJitLinkResult (*cubin_size)(nvJitLinkHandle, size_t *);
  nvJitLinkResult (*cubin)(nvJitLinkHandle, void *);
  nvJitLinkResult (*error_log_size)(nvJitLinkHandle, size_t *);
  nvJitLinkResult (*error_log)(nvJitLinkHandle, char *);
  nvJitLinkResult (*ptx_size)(nvJitLinkHandle, size_t *);
  nvJitLinkResult (*ptx)(nvJitLinkHandle, char *);
  nvJitLinkResult (*version)(unsigned *, unsigned *);
};

namespace {

constexpr nvJitLinkResult kSuccess = 0;
constexpr nvJitLinkResult kErrorInvalidInput = 3;
constexpr nvJitLinkResult kErrorUnrecognizedInput = 8;
constexpr nvJitLinkResult kErrorIncorrectInputType = 12;
constexpr nvJitLinkResult kErrorUnrecognizedArch = 16;
constexpr nvJitLinkResult kErrorUnsupportedArch = 17;

const char *result_name(nvJitLinkResult r) {
  static const char *const names[] = {"NVJITLINK_SUCCESS",
                                      "NVJITLINK_ERROR_UNRECOGNIZED_OPTION",
                                      "NVJITLINK_ERROR_MISSING_ARCH",
                                      "NVJITLINK_ERROR_INVALID_INPUT",
                                      "NVJITLINK_ERROR_PTX_COMPILE",
                                      "NVJITLINK_ERROR_NVVM_COMPILE",
                                      "NVJITLINK_ERROR_INTERNAL",
                                      "NVJITLINK_ERROR_THREADPOOL",
                                      "NVJITLINK_ERROR_UNRECOGNIZED_INPUT",
                                      "NVJITLINK_ERROR_FINALIZE",
                                      "NVJITLINK_ERROR_NULL_INPUT",
                                      "NVJITLINK_ERROR_INCOMPATIBLE_OPTIONS",
                                      "NVJITLINK_ERROR_INCORRECT_INPUT_TYPE",
                                      "NVJITLINK_ERROR_ARCH_MISMATCH",
                                      "NVJITLINK_ERROR_OUTDATED_LIBRARY",
                                      "NVJITLINK_ERROR_MISSING_FATBIN",
                                      "NVJITLINK_ERROR_UNRECOGNIZED_ARCH",
                                      "NVJITLINK_ERROR_UNSUPPORTED_ARCH",
                                      "NVJITLINK_ERROR_LTO_NOT_ENABLED"};
  return r >= 0 && r < (int)(sizeof names / sizeof names[0]) ? names[r] : "NVJITLINK_ERROR_UNKNOWN";
}

// The header maps nvJitLinkCreate to __nvJitLinkCreate_13_0 (the ABI of that release); the
// plain names are kept for older callers. Prefer the versioned symbol of the ABI we speak.
template <class F>
bool bind(const DynamicLibrary &lib, F *slot, const char *name, std::string *missing) {
  std::string versioned = std::string("__") + name + "_13_0";
  void *p = lib.find(versioned.c_str());
  if (!p) p = lib.find(name);
  *slot = reinterpret_cast<F>(p);
  if (!p) {
    if (!missing->empty()) *missing += ", ";
    *missing += versioned;
  }
  return p != nullptr;
}

// Owns a link handle for the length of one link.
struct Handle {
  const NvJitLinkApi *api;
  nvJitLinkHandle h = nullptr;
  ~Handle() {
    if (h) api->destroy(&h);
  }
};

// The log as one line (every libsk message is one): its lines joined with "; ", without the
// "ERROR <n>: finish" trailer that only repeats the result code the message names.
std::string error_log(const NvJitLinkApi &api, nvJitLinkHandle h) {
  size_t size = 0;
  if (api.error_log_size(h, &size) != kSuccess || size == 0) return "";
  std::string log(size, '\0');
  if (api.error_log(h, log.data()) != kSuccess) return "";
  log.resize(log.find('\0') == std::string::npos ? log.size() : log.find('\0'));
  std::string joined;
  size_t start = 0;
  while (start <= log.size()) {
    size_t end = log.find_first_of("\r\n", start);
    if (end == std::string::npos) end = log.size();
    std::string line = log.substr(start, end - start);
    start = end + 1;
    while (!line.empty() && (line.back() == ' ' || line.back() == '\t')) line.pop_back();
    if (line.empty() || (line.rfind("ERROR ", 0) == 0 && line.find(": finish") != std::string::npos)) continue;
    if (!joined.empty()) joined += "; ";
    joined += line;
  }
  return joined;
}

// The first symbol name a log line of the form "...undefined reference to 'name'..." carries.
std::string undefined_symbol(const std::string &log) {
  for (const char *marker :
       {"Undefined reference to '", "undefined reference to '", "Unresolved extern function '"}) {
    size_t at = log.find(marker);
    if (at == std::string::npos) continue;
    at += std::char_traits<char>::length(marker);
    size_t end = log.find('\'', at);
    if (end != std::string::npos) return log.substr(at, end - at);
  }
  return "";
}

}  // namespace

NvJitLink::NvJitLink() : api_(std::make_unique<NvJitLinkApi>()) {}
NvJitLink::~NvJitLink() = default;

sk_status NvJitLink::load(const std::string &library, std::shared_ptr<const NvJitLink> *out) {
  std::shared_ptr<NvJitLink> link(new NvJitLink());
  NvJitLinkApi &a = *link->api_;
  if (sk_status st = a.library.open(library,
                                    "nvJitLink, which links CUDA super kernels; install the "
                                    "CUDA 13 toolkit or its nvjitlink package");
      st != SK_OK)
    return st;
  std::string missing;
  bind(a.library, &a.create, "nvJitLinkCreate", &missing);
  bind(a.library, &a.destroy, "nvJitLinkDestroy", &missing);
  bind(a.library, &a.add_data, "nvJitLinkAddData", &missing);
  bind(a.library, &a.complete, "nvJitLinkComplete", &missing);
  bind(a.library, &a.cubin_size, "nvJitLinkGetLinkedCubinSize", &missing);
  bind(a.library, &a.cubin, "nvJitLinkGetLinkedCubin", &missing);
  bind(a.library, &a.error_log_size, "nvJitLinkGetErrorLogSize", &missing);
  bind(a.library, &a.error_log, "nvJitLinkGetErrorLog", &missing);
  bind(a.library, &a.ptx_size, "nvJitLinkGetLinkedPtxSize", &missing);
  bind(a.library, &a.ptx, "nvJitLinkGetLinkedPtx", &missing);
  a.version = reinterpret_cast<nvJitLinkResult (*)(unsigned *, unsigned *)>(a.library.find("nvJitLinkVersion"));
  if (!missing.empty())
    return fail(SK_ERR_DEVICE, "%s does not export %s (libsk speaks the nvJitLink 13.0 ABI)", library.c_str(),
                missing.c_str());
  *out = std::move(link);
  return SK_OK;
}

sk_status NvJitLink::get(std::shared_ptr<const NvJitLink> *out) {
  static std::mutex mutex;
  // Never unloaded: nvJitLink keeps threads and state for the process's life, and a library
  // unmapped at exit would leave sanitizer reports without its name.
  static auto *loaded = new std::shared_ptr<const NvJitLink>();
  std::lock_guard<std::mutex> lock(mutex);
  if (!*loaded) {
    const char *env = std::getenv("SK_CUDA_NVJITLINK_LIBRARY");
    if (sk_status st = load(env && *env ? env : "libnvJitLink.so.13", loaded); st != SK_OK) return st;
  }
  *out = *loaded;
  return SK_OK;
}

sk_status NvJitLink::lto_to_ptx(const LinkInput &input, const std::string &arch, std::string *ptx) const {
  const NvJitLinkApi &a = *api_;
  const std::string arch_option = "-arch=" + arch;
  const char *options[] = {arch_option.c_str(), "-lto", "-ptx"};
  Handle h{&a};
  nvJitLinkResult r = a.create(&h.h, 3, options);
  if (r == kSuccess) r = a.add_data(h.h, (int)input.kind, input.data, input.size, input.label.c_str());
  if (r == kSuccess) r = a.complete(h.h);
  size_t size = 0;
  if (r == kSuccess) r = a.ptx_size(h.h, &size);
  std::string text(size, '\0');
  if (r == kSuccess && size) r = a.ptx(h.h, text.data());
  if (r != kSuccess) {
    const std::string log = h.h ? error_log(a, h.h) : "";
    return fail(SK_ERR_BAD_BINARY, "%s: nvJitLink cannot read the LTO-IR for %s: %s%s%s", input.label.c_str(),
                arch.c_str(), result_name(r), log.empty() ? "" : ": ", log.c_str());
  }
  while (!text.empty() && text.back() == '\0') text.pop_back();
  *ptx = std::move(text);
  return SK_OK;
}

std::string NvJitLink::version() const {
  unsigned major = 0, minor = 0;
  if (!api_->version || api_->version(&major, &minor) != kSuccess) return "unknown";
  return std::to_string(major) + "." + std::to_string(minor);
}

std::string NvJitLink::library_path() const { return api_->library.path(); }

std::vector<std::string> NvJitLink::link_options(const std::vector<LinkInput> &inputs, const std::string &arch,
                                                 uint32_t max_registers) {
  std::vector<std::string> options{"-arch=" + arch};
  if (max_registers) options.push_back("-maxrregcount=" + std::to_string(max_registers));
  for (const LinkInput &in : inputs)
    if (in.kind == InputKind::LtoIr) {
      options.push_back("-lto");
      break;
    }
  return options;
}

sk_status NvJitLink::link(const std::vector<LinkInput> &inputs, const std::string &arch, const std::string &what,
                          std::vector<uint8_t> *cubin, uint32_t max_registers) const {
  const NvJitLinkApi &a = *api_;
  const std::vector<std::string> option_strings = link_options(inputs, arch, max_registers);
  std::vector<const char *> options;
  std::string spelled;
  for (const std::string &o : option_strings) {
    options.push_back(o.c_str());
    spelled += (spelled.empty() ? "" : " ") + o;
  }
  Handle h{&a};
  if (nvJitLinkResult r = a.create(&h.h, (uint32_t)options.size(), options.data()); r != kSuccess)
    return fail(r == kErrorUnrecognizedArch || r == kErrorUnsupportedArch ? SK_ERR_UNSUPPORTED : SK_ERR_DEVICE,
                "%s: nvJitLinkCreate(%s) failed: %s", what.c_str(), spelled.c_str(), result_name(r));
  for (const LinkInput &in : inputs) {
    nvJitLinkResult r = a.add_data(h.h, (int)in.kind, in.data, in.size, in.label.c_str());
    if (r != kSuccess) {
      const std::string log = error_log(a, h.h);
      const bool bad = r == kErrorInvalidInput || r == kErrorUnrecognizedInput || r == kErrorIncorrectInputType;
      return fail(bad ? SK_ERR_BAD_BINARY : SK_ERR_INCOMPATIBLE, "%s: nvJitLink refused input %s: %s%s%s",
                  what.c_str(), in.label.c_str(), result_name(r), log.empty() ? "" : ": ", log.c_str());
    }
  }
  if (nvJitLinkResult r = a.complete(h.h); r != kSuccess) {
    const std::string log = error_log(a, h.h);
    const std::string symbol = undefined_symbol(log);
    if (!symbol.empty())
      return fail(SK_ERR_NOT_FOUND,
                  "%s: linking for %s failed: undefined symbol '%s' (nvJitLink: %s); an object that defines it "
                  "is linked where it is loaded in one module with the kernel's (sk_module_load_files)",
                  what.c_str(), arch.c_str(), symbol.c_str(), log.c_str());
    return fail(SK_ERR_INCOMPATIBLE, "%s: linking for %s failed: %s%s%s", what.c_str(), arch.c_str(), result_name(r),
                log.empty() ? "" : ": ", log.c_str());
  }
  size_t size = 0;
  if (nvJitLinkResult r = a.cubin_size(h.h, &size); r != kSuccess || size == 0)
    return fail(SK_ERR_DEVICE, "%s: nvJitLinkGetLinkedCubinSize failed: %s", what.c_str(), result_name(r));
  std::vector<uint8_t> bytes(size);
  if (nvJitLinkResult r = a.cubin(h.h, bytes.data()); r != kSuccess)
    return fail(SK_ERR_DEVICE, "%s: nvJitLinkGetLinkedCubin failed: %s", what.c_str(), result_name(r));
  *cubin = std::move(bytes);
  return SK_OK;
}

}  // namespace sk::cuda
