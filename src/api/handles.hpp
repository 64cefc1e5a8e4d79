// What the public handles are. Children hold the device (shared_ptr), so closing a device
// while objects made from it live never leaves them dangling.
#pragma once
#include <sk.h>

#include <atomic>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "core/plan.hpp"
#include "core/scope_options.hpp"
#include "core/signature.hpp"
#include "host/host_device.hpp"
#include "host/kernel_call.hpp"
#include "host/program.hpp"

struct sk_device {
  std::shared_ptr<sk::host::HostDevice> impl;
  std::string spec;
};

// What a kernel is, shared by its handle and every scope or super kernel that uses it, so that
// unloading the module leaves built super kernels intact.
struct KernelImpl {
  std::shared_ptr<sk::host::HostDevice> device;
  std::shared_ptr<sk::host::LinkedModule> module;
  std::string symbol;
  std::string core_type;
  sk::Signature signature;
  std::string signature_text;
  uint32_t usage = 0;  // DeviceApiBit set, from the undefined symbols its code references
  void *fn = nullptr;
  std::unique_ptr<sk::host::CallInterface> call;
};

struct sk_kernel {
  std::shared_ptr<KernelImpl> impl;
};

struct sk_module {
  std::shared_ptr<sk::host::HostDevice> device;
  std::shared_ptr<sk::host::LinkedModule> linked;
  std::map<std::string, std::unique_ptr<sk_kernel>> kernels;  // by "symbol|signature"
};

struct sk_stream {
  std::shared_ptr<sk::host::HostDevice> device;
  sk::host::StreamState state;
};

struct ScopeEntry {
  std::shared_ptr<KernelImpl> kernel;
  std::string name;
  uint32_t block_dim = 1;
  std::vector<uint64_t> args;  // one 8-byte slot per parameter
};

struct sk_scope {
  std::shared_ptr<sk::host::HostDevice> device;
  std::string name;
  sk::ScopeOptions options;
  std::vector<ScopeEntry> entries;
};

struct sk_superkernel {
  std::shared_ptr<sk::host::HostDevice> device;
  std::vector<std::shared_ptr<KernelImpl>> kernels;  // keep code and call interfaces alive
  sk::Plan plan;
  std::string explain;
  std::unique_ptr<sk::host::Program> program;
};

namespace sk::api {

// Runs an entry point's body, turning C++ exceptions (allocation failures) into statuses:
// nothing crosses the C ABI.
template <class F>
sk_status guarded(const char *call, F &&body) {
  try {
    return body();
  } catch (const std::bad_alloc &) {
    return fail(SK_ERR_OUT_OF_MEMORY, "%s: out of memory", call);
  } catch (const std::exception &e) {
    return fail(SK_ERR_DEVICE, "%s: internal error: %s", call, e.what());
  }
}

// Copies the values args[i] points to into 8-byte slots, by the signature's sizes.
sk_status copy_args(const KernelImpl &k, void *const *args, const char *call,
                    std::vector<uint64_t> *out);

// Fills `program` with one step per plan step (call targets, argument pointers, sync flags).
void lower_plan(const sk::Plan &plan, const std::vector<std::shared_ptr<KernelImpl>> &kernels,
                const std::vector<std::vector<uint64_t>> &args, sk::host::Program *program);

}  // namespace sk::api
