/*
 * sk.hpp — libsk for C++17 and later: RAII handles and exceptions over the C API of sk.h.
 *
 * Header-only: every member is an inline call of the sk.h function it names, so a program links
 * against libsk.so.0 as a C program does and this header adds no ABI of its own. What each call
 * does, its thread safety and the lifetimes of the objects are sk.h's (docs/conventions.md);
 * this header adds ownership and error reporting:
 *  - a failing call throws sk::Error, carrying the sk_status and the sk_last_error() message
 *    read at the throw point;
 *  - the owning classes (Device, Module, Stream, Scope, SuperKernel, Buffer) are move-only; the
 *    destructor calls the C destroy function; a moved-from object is empty (get() is NULL) and
 *    destroying it does nothing; no destructor throws;
 *  - get() gives the C handle for calls this header does not wrap, release() gives up ownership.
 * A call on an empty object passes NULL to the C function, which fails with
 * SK_ERR_INVALID_ARGUMENT (thrown). The classes hold nothing but their handles and add no
 * locks: moving, assigning or destroying one object while another thread uses it is a data
 * race, as for any C++ object.
 *
 *   sk::Device dev("host");
 *   sk::Module mod = dev.load_file("saxpy.o");
 *   sk::Kernel saxpy = mod.kernel("saxpy");
 *   sk::Scope scope = dev.scope("quickstart");
 *   for (int i = 0; i < 3; ++i) scope.add(saxpy, 4, sk::args(&a, &x, &y, &n));
 *   sk::SuperKernel fused = scope.finalize();
 *   fused.launch();
 *   dev.synchronize();
 */
#ifndef SK_HPP
#define SK_HPP

#include "sk.h"

#if __cplusplus < 201703L
#error "sk.hpp needs C++17 or later; sk.h is the C API for older compilers"
#endif

#include <array>
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace sk {

/** A failed libsk call: its status and the message naming the culprit (sk_last_error()). */
class Error : public std::runtime_error {
 public:
  Error(sk_status status, const std::string &message)
      : std::runtime_error(std::string(sk_status_name(status)) + (message.empty() ? "" : ": ") + message),
        status_(status),
        message_(message) {}
  /** The status the C call returned. */
  sk_status status() const noexcept { return status_; }
  /** sk_last_error() at the throw point; what() is the status name, ": ", then this. */
  const std::string &message() const noexcept { return message_; }

 private:
  sk_status status_;
  std::string message_;
};

namespace detail {
/** Throws sk::Error for a failed status, with the calling thread's last-error message. */
inline void check(sk_status status) {
  if (status != SK_OK) throw Error(status, sk_last_error());
}

/** What every handle class shares: one C handle, destroyed with it, moved out as NULL. */
template <class Handle, void (*Destroy)(Handle *)>
class Owner {
 public:
  Owner() noexcept = default;
  explicit Owner(Handle *h) noexcept : h_(h) {}
  Owner(Owner &&other) noexcept : h_(other.release()) {}
  Owner &operator=(Owner &&other) noexcept {
    if (this != &other) reset(other.release());
    return *this;
  }
  Owner(const Owner &) = delete;
  Owner &operator=(const Owner &) = delete;
  ~Owner() { reset(); }

  /** The C handle (NULL when empty), still owned by this object. */
  Handle *get() const noexcept { return h_; }
  /** Gives up ownership: the caller destroys the returned handle; this object is empty. */
  Handle *release() noexcept { return std::exchange(h_, nullptr); }
  /** Destroys the owned handle, if any, and owns `h` instead. */
  void reset(Handle *h = nullptr) noexcept {
    if (Handle *old = std::exchange(h_, h)) Destroy(old);
  }
  explicit operator bool() const noexcept { return h_ != nullptr; }

 private:
  Handle *h_ = nullptr;
};
}  // namespace detail

/** sk_version(): the loaded library's version, encoded as SK_VERSION_NUMBER is. */
inline std::uint32_t version() noexcept { return sk_version(); }
/** sk_version_string(): the loaded library's version as "MAJOR.MINOR.PATCH". */
inline const char *version_string() noexcept { return sk_version_string(); }
/** sk_status_name(): "SK_OK", "SK_ERR_BAD_BINARY", ... */
inline const char *status_name(sk_status status) noexcept { return sk_status_name(status); }
/** sk_stream_synchronize(NULL): waits for the default stream of every open device. */
inline void synchronize_all() { detail::check(sk_stream_synchronize(nullptr)); }

/**
 * Pointers to argument values, as sk_add_kernel and sk_launch_kernel take them (args[i] points
 * to the value of parameter i): `scope.add(kernel, 4, sk::args(&x, &y, &n))`. It converts to
 * their `void *const *`; they copy the values, so a pack needs to live for its call only.
 */
template <std::size_t N>
class Args {
 public:
  explicit Args(const std::array<void *, N> &pointers) noexcept : pointers_(pointers) {}
  void *const *data() const noexcept { return N == 0 ? nullptr : pointers_.data(); }
  operator void * const *() const noexcept { return data(); }

 private:
  std::array<void *, N> pointers_;
};

/** sk::args(&a, &b, ...): one pointer per kernel parameter, to a value of its type. */
template <class... T>
Args<sizeof...(T)> args(const T *...values) noexcept {
  // libsk only reads the values; its `void *const *` is why the const goes.
  return Args<sizeof...(T)>(
      std::array<void *, sizeof...(T)>{{const_cast<void *>(static_cast<const void *>(values))...}});
}

/** sk_kernel_options as C++ values; an empty string means NULL (the default). */
struct KernelOptions {
  std::string name;           /**< sub-kernel name in scope options and explain; default: symbol */
  std::string core_type;      /**< "vector", "cube", "mix_1_1", "mix_1_2"; default: metadata's */
  std::uint32_t flags = 0;    /**< SK_KERNEL_FLAG_* bits */
  std::uint32_t stream = 0;   /**< stream inside the scope (scope option stream-fusion=1) */
  std::uint64_t arg_refs = 0; /**< bit i: argument i read by reference, at every call */

  /** The C struct; its strings point into this object. */
  sk_kernel_options c_options() const noexcept {
    sk_kernel_options o{};  // fields a later sk.h appends stay zero, as its INIT macro leaves them
    o.struct_size = sizeof(sk_kernel_options);
    o.name = name.empty() ? nullptr : name.c_str();
    o.core_type = core_type.empty() ? nullptr : core_type.c_str();
    o.flags = flags;
    o.stream = stream;
    o.arg_refs = arg_refs;
    return o;
  }
};

/**
 * An in-order queue of launches (sk_stream_create / sk_stream_destroy, which waits for its
 * work). Made by Device::stream(). Launching on it and synchronizing it are thread-safe.
 */
class Stream : public detail::Owner<sk_stream, sk_stream_destroy> {
 public:
  Stream() noexcept = default;
  /** Owns a C handle. */
  explicit Stream(sk_stream *stream) noexcept : Owner(stream) {}
  /** sk_stream_synchronize: waits for its launches; throws the first failure among them. */
  void synchronize() const { detail::check(sk_stream_synchronize(get())); }
};

/**
 * A kernel of a loaded module (sk_kernel): a view, not owned, copyable. It belongs to its Module
 * and may be used while the Module lives (after, calls throw SK_ERR_STATE); super kernels built
 * from it keep its code. Launches are thread-safe.
 */
class Kernel {
 public:
  Kernel() noexcept = default;
  explicit Kernel(sk_kernel *kernel) noexcept : k_(kernel) {}
  sk_kernel *get() const noexcept { return k_; }
  explicit operator bool() const noexcept { return k_ != nullptr; }

  /** sk_launch_kernel on the device's default stream: one unfused launch. Asynchronous. */
  void launch(std::uint32_t block_dim, void *const *args = nullptr) const {
    detail::check(sk_launch_kernel(k_, block_dim, args, nullptr));
  }
  /** sk_launch_kernel on `stream`. Asynchronous; the argument values are copied. */
  void launch(std::uint32_t block_dim, void *const *args, const Stream &stream) const {
    detail::check(sk_launch_kernel(k_, block_dim, args, stream.get()));
  }

 private:
  sk_kernel *k_ = nullptr;
};

/**
 * A loaded kernel object (sk_module_load / sk_module_unload). Made by Device::load or
 * Device::load_file. Unloading it invalidates its Kernels, not the super kernels built from them.
 */
class Module : public detail::Owner<sk_module, sk_module_unload> {
 public:
  Module() noexcept = default;
  /** Owns a C handle. */
  explicit Module(sk_module *mod) noexcept : Owner(mod) {}

  /** sk_module_get_kernel: by symbol, signature from the object's metadata (SK_ERR_NOT_FOUND). */
  Kernel kernel(const std::string &name) const {
    sk_kernel *k = nullptr;
    detail::check(sk_module_get_kernel(get(), name.c_str(), &k));
    return Kernel(k);
  }
  /** sk_module_get_kernel_with_signature: "ptr,u32,f32"-style signature given by the host. */
  Kernel kernel(const std::string &name, const std::string &signature) const {
    sk_kernel *k = nullptr;
    detail::check(sk_module_get_kernel_with_signature(get(), name.c_str(), signature.c_str(), &k));
    return Kernel(k);
  }
};

/**
 * A fused kernel (sk_finalize / sk_superkernel_destroy, which waits for its queued launches).
 * Made by Scope::finalize. Launches and set_arg are thread-safe.
 */
class SuperKernel : public detail::Owner<sk_superkernel, sk_superkernel_destroy> {
 public:
  SuperKernel() noexcept = default;
  /** Owns a C handle. */
  explicit SuperKernel(sk_superkernel *sk) noexcept : Owner(sk) {}

  /** sk_launch on the device's default stream. Asynchronous. */
  void launch() const { detail::check(sk_launch(get(), nullptr)); }
  /** sk_launch on `stream`. Asynchronous. */
  void launch(const Stream &stream) const { detail::check(sk_launch(get(), stream.get())); }
  /**
   * sk_launch_repeat on the device's default stream: up to n runs back to back, ending after the
   * run that left *stop_flag nonzero (nullptr: all n). Asynchronous.
   */
  void launch_repeat(std::uint32_t n, const std::uint32_t *stop_flag = nullptr) const {
    detail::check(sk_launch_repeat(get(), n, stop_flag, nullptr));
  }
  /** sk_launch_repeat on `stream`. Asynchronous. */
  void launch_repeat(std::uint32_t n, const std::uint32_t *stop_flag, const Stream &stream) const {
    detail::check(sk_launch_repeat(get(), n, stop_flag, stream.get()));
  }
  /**
   * sk_superkernel_set_arg: argument `index` of sub-kernel `step` takes the value `value`
   * points to, for the launches queued after (the call waits for those already queued).
   */
  void set_arg(std::uint32_t step, std::uint32_t index, const void *value) const {
    detail::check(sk_superkernel_set_arg(get(), step, index, value));
  }
  /** sk_superkernel_explain: the plan as JSON. */
  std::string explain() const {
    std::size_t needed = 0;
    detail::check(sk_superkernel_explain(get(), nullptr, 0, &needed));
    std::string text(needed, '\0');
    detail::check(sk_superkernel_explain(get(), &text[0], text.size(), nullptr));
    text.resize(needed == 0 ? 0 : needed - 1);  // the terminating NUL is std::string's own
    return text;
  }
  /**
   * sk_superkernel_profile: the last completed launch's records (scope option profiling=1),
   * by step then core.
   */
  std::vector<sk_profile_record> profile() const {
    std::size_t count = 0;
    detail::check(sk_superkernel_profile(get(), nullptr, 0, &count));
    for (;;) {
      std::vector<sk_profile_record> records(count);
      if (!records.empty()) records[0].struct_size = sizeof(sk_profile_record);  // the stride
      sk_status st = sk_superkernel_profile(get(), records.data(), records.size(), &count);
      if (st == SK_OK) {
        records.resize(count);
        return records;
      }
      // A launch that completed between the two calls can have more records: ask again.
      if (st != SK_ERR_INVALID_ARGUMENT || count <= records.size()) detail::check(st);
    }
  }
  /** sk_superkernel_write_trace: the last completed launch's profile as Chrome trace JSON. */
  void write_trace(const std::string &path) const { detail::check(sk_superkernel_write_trace(get(), path.c_str())); }
};

/**
 * A scope being built (sk_scope_begin; its destructor calls sk_scope_abort). Made by
 * Device::scope. finalize() consumes it, whether it succeeds or not. One scope must not be
 * built from two threads at once.
 */
class Scope : public detail::Owner<sk_scope, sk_scope_abort> {
 public:
  Scope() noexcept = default;
  /** Owns a C handle. */
  explicit Scope(sk_scope *scope) noexcept : Owner(scope) {}

  /**
   * sk_add_kernel: `kernel` on `block_dim` blocks; args[i] points to the value of parameter i
   * (sk::args(&a, &b, ...) makes the array); the values are copied.
   */
  Scope &add(const Kernel &kernel, std::uint32_t block_dim, void *const *args = nullptr,
             const KernelOptions &options = KernelOptions()) {
    const sk_kernel_options o = options.c_options();
    detail::check(sk_add_kernel(get(), kernel.get(), block_dim, args, &o));
    return *this;
  }
  /** sk_scope_record_event (stream fusion). */
  Scope &record_event(std::uint32_t stream, std::uint32_t event) {
    detail::check(sk_scope_record_event(get(), stream, event));
    return *this;
  }
  /** sk_scope_wait_event (stream fusion). */
  Scope &wait_event(std::uint32_t stream, std::uint32_t event) {
    detail::check(sk_scope_wait_event(get(), stream, event));
    return *this;
  }
  /** sk_finalize: the super kernel. This scope is empty afterwards, whether it succeeds or not. */
  SuperKernel finalize() {
    sk_superkernel *out = nullptr;
    detail::check(sk_finalize(release(), &out));
    return SuperKernel(out);
  }
  /** sk_scope_abort: drops the scope now (the destructor does it too). */
  void abort() noexcept { reset(); }
};

/**
 * Device memory (sk_mem_alloc / sk_mem_free; on the host device plain host memory, 64-byte
 * aligned). Made by Device::alloc. Holds the device's C handle without owning it: free it
 * (destroy the Buffer) before its Device closes; a Buffer destroyed after is ignored by
 * sk_mem_free, and its memory goes with the device's last object.
 */
class Buffer {
 public:
  Buffer() noexcept = default;
  /** Owns `ptr`, `size` bytes allocated by sk_mem_alloc on `dev`. */
  Buffer(sk_device *dev, void *ptr, std::size_t size) noexcept : dev_(dev), ptr_(ptr), size_(size) {}
  Buffer(Buffer &&other) noexcept
      : dev_(std::exchange(other.dev_, nullptr)),
        ptr_(std::exchange(other.ptr_, nullptr)),
        size_(std::exchange(other.size_, 0)) {}
  Buffer &operator=(Buffer &&other) noexcept {
    if (this != &other) {
      reset();
      dev_ = std::exchange(other.dev_, nullptr);
      ptr_ = std::exchange(other.ptr_, nullptr);
      size_ = std::exchange(other.size_, 0);
    }
    return *this;
  }
  Buffer(const Buffer &) = delete;
  Buffer &operator=(const Buffer &) = delete;
  ~Buffer() { reset(); }

  /** The memory (NULL when empty), still owned by this object. */
  void *get() const noexcept { return ptr_; }
  /** The memory as T * (for kernel arguments and, on the host device, host access). */
  template <class T>
  T *as() const noexcept {
    return static_cast<T *>(ptr_);
  }
  std::size_t size() const noexcept { return size_; }
  sk_device *device() const noexcept { return dev_; }
  /** Gives up ownership: the caller frees the memory with sk_mem_free; this object is empty. */
  void *release() noexcept {
    size_ = 0;
    return std::exchange(ptr_, nullptr);
  }
  /** sk_mem_free now (the destructor does it too). */
  void reset() noexcept {
    if (void *p = release()) sk_mem_free(dev_, p);
  }
  explicit operator bool() const noexcept { return ptr_ != nullptr; }

 private:
  sk_device *dev_ = nullptr;
  void *ptr_ = nullptr;
  std::size_t size_ = 0;
};

/**
 * An open device (sk_device_open / sk_device_close, which waits for its queued work). What is
 * made from it keeps what it needs of the device alive, so closing it first leaves nothing
 * dangling; declaring the Device before its objects makes it go last. Launches, stream calls and
 * synchronize are thread-safe.
 */
class Device : public detail::Owner<sk_device, sk_device_close> {
 public:
  Device() noexcept = default;
  /** Owns a C handle. */
  explicit Device(sk_device *dev) noexcept : Owner(dev) {}
  /** sk_device_open: spec is "backend[:key=value,...]", e.g. "host:cores=4" (keys: sk.h). */
  explicit Device(const std::string &spec) {
    sk_device *dev = nullptr;
    detail::check(sk_device_open(spec.c_str(), &dev));
    reset(dev);
  }
  /** sk_device_cores: worker cores (host) or multiprocessors (CUDA). */
  std::uint32_t cores() const {
    std::uint32_t n = 0;
    detail::check(sk_device_cores(get(), &n));
    return n;
  }
  /** sk_device_synchronize: waits for the default stream; throws its launches' first failure. */
  void synchronize() const { detail::check(sk_device_synchronize(get())); }
  /** sk_memcpy: synchronous, after the work queued on the device's streams. */
  void memcpy(void *dst, const void *src, std::size_t size) const {
    detail::check(sk_memcpy(get(), dst, src, size));
  }
  /** sk_mem_alloc. */
  Buffer alloc(std::size_t size) const {
    void *p = nullptr;
    detail::check(sk_mem_alloc(get(), size, &p));
    return Buffer(get(), p, size);
  }
  /** sk_module_load: a kernel object from memory (the bytes are copied). */
  Module load(const void *image, std::size_t size) const {
    sk_module *mod = nullptr;
    detail::check(sk_module_load(get(), image, size, &mod));
    return Module(mod);
  }
  /** sk_module_load_file. */
  Module load_file(const std::string &path) const {
    sk_module *mod = nullptr;
    detail::check(sk_module_load_file(get(), path.c_str(), &mod));
    return Module(mod);
  }
  /** sk_module_load_files: objects and `ar` archives linked as one module. */
  Module load_files(const std::vector<std::string> &paths) const {
    std::vector<const char *> raw;
    for (const std::string &p : paths) raw.push_back(p.c_str());
    sk_module *mod = nullptr;
    detail::check(sk_module_load_files(get(), raw.data(), raw.size(), &mod));
    return Module(mod);
  }
  /** sk_stream_create. */
  Stream stream() const {
    sk_stream *s = nullptr;
    detail::check(sk_stream_create(get(), &s));
    return Stream(s);
  }
  /** sk_scope_begin: options are "key=value:key=value" ("" for the defaults; keys: sk.h). */
  Scope scope(const std::string &name, const std::string &options = std::string()) const {
    sk_scope *s = nullptr;
    detail::check(sk_scope_begin(get(), name.c_str(), options.c_str(), &s));
    return Scope(s);
  }
};

}  // namespace sk

#endif /* SK_HPP */
