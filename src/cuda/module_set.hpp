// Several CUDA objects as one module, as a device link takes them: sk_module_load_files of nvcc
// -dc objects, cubins and PTX (a project built with CMake's CUDA_SEPARABLE_COMPILATION, whose
// kernels call `__device__` functions and name `__device__` variables of other files), and `ar`
// archives of such objects (nvcc -lib, a static CUDA library), each member an object.
//
// Each object is a module of its own (CudaModuleCache: the same bytes are one module, however
// loaded). The names they define for one another (functions, `__device__` and `__constant__`
// variables) resolve as a device link resolves them: to the first strong definition, else the
// first weak one, in input order, a loose object's before an archive member's (a linker pulls a
// member only for what is still undefined). Two objects given loose that define one name
// strongly are refused, as nvlink refuses them; archive members are not (the first counts). An object needs the objects that define what it uses and
// does not define, and what it defines weak where another defines it strong; its links are
// those, transitively. A kernel is taken from the object whose definition of it a link keeps,
// and a super kernel links that object and its links, no other object of the set: an archive's
// members come in by need, as ld pulls them.
#pragma once
#include <sk.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "common/backend.hpp"
#include "cuda/cuda_kernel.hpp"

namespace sk::cuda {

struct ModuleSet {
  std::vector<std::shared_ptr<const CudaModule>> objects;  // in input order, each once
  // Per object, the others a link of its code takes with it, each after what it needs (a cycle of
  // needs aside): a PTX program declares a variable before it names it.
  std::vector<std::vector<size_t>> links;
  std::map<std::string, size_t, std::less<>> definer;  // per global name, the object whose definition counts
  std::vector<KernelMetadata> kernels;                 // the objects' kernels, in order, each name once
  // A linked file's kernels whose unit the PTX reader refuses (left out of `objects`): why.
  std::map<std::string, std::string> unreadable;
};

// An object of a set: its module, the name messages give it, and whether an archive (or a
// linked file) holds it, where a name defined again is no conflict.
struct SetObject {
  std::shared_ptr<const CudaModule> module;
  std::string label;
  bool member = false;
};

// How the names of `objects` resolve (above), `call` naming the caller in a refusal.
sk_status resolve_module_set(const std::vector<SetObject> &objects, const char *call,
                             std::shared_ptr<ModuleSet> *out);

// True where the images are a module of several objects: more than one, or an `ar` archive.
bool is_module_set(const std::vector<backend::ModuleImage> &images);

// Loads `images` (objects and archives) for `arch` as one module (its `set`, its kernels the
// objects' in `metadata`). An archive member that is host code (an object without a fatbinary)
// is left out; any other member or object that does not load fails the load, naming it. A
// shared library or LTO-IR among them is SK_ERR_UNSUPPORTED (what it defines is not known
// before a whole link); two loose objects that define one name strongly SK_ERR_BAD_BINARY
// naming both.
sk_status load_module_set(const std::vector<backend::ModuleImage> &images, const std::string &arch,
                          CudaModuleCache &cache, const char *call, std::shared_ptr<const CudaModule> *out);

// Kernel `name` of a module of several objects: make_cuda_kernel of the object that defines
// it, with that object's links (SK_ERR_NOT_FOUND naming the module and some of its kernels).
sk_status make_set_kernel(const CudaModule &module, const char *name, const backend::KernelRequest &request,
                          const char *call, std::shared_ptr<CudaKernel> *out);

}  // namespace sk::cuda
