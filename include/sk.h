/*
 * sk.h — libsk, the SuperKernel runtime: host C API.
 *
 * Kernels that are already compiled (ELF relocatable objects) are loaded, fused at run time
 * into one super kernel that calls each as a sub-function with the right synchronisation
 * between them, and launched as a single task.
 *
 * Conventions (see docs/conventions.md):
 *  - every fallible call returns sk_status; SK_OK is 0, other values are stable;
 *  - results come back through out-parameters, left untouched on failure;
 *  - on failure a per-thread message naming the culprit is kept for sk_last_error();
 *  - destroy/close/unload functions accept NULL; using a handle after its destroy call fails
 *    with SK_ERR_STATE for the common mistakes (docs/conventions.md says what stays undefined);
 *  - thread safety: distinct handles may be used from distinct threads freely; one scope must not
 *    be built from two threads at once; launches and stream calls are thread-safe.
 */
#ifndef SK_H
#define SK_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define SK_VERSION_MAJOR 0
#define SK_VERSION_MINOR 1
#define SK_VERSION_PATCH 0
/** SK_VERSION_MAJOR*10000 + SK_VERSION_MINOR*100 + SK_VERSION_PATCH */
#define SK_VERSION_NUMBER (SK_VERSION_MAJOR * 10000 + SK_VERSION_MINOR * 100 + SK_VERSION_PATCH)

#if defined(SK_BUILDING_LIBRARY) && defined(__GNUC__)
#define SK_API __attribute__((visibility("default")))
#else
#define SK_API
#endif

/** Status of every fallible call. Numeric values are stable. */
typedef enum sk_status {
  SK_OK = 0,
  SK_ERR_INVALID_ARGUMENT = 1, /**< NULL where a handle is needed, bad spec, bad option... */
  SK_ERR_BAD_BINARY = 2,       /**< malformed ELF object or metadata */
  SK_ERR_UNSUPPORTED = 3,      /**< well-formed but not supported (TLS, unknown relocation...) */
  SK_ERR_NOT_FOUND = 4,        /**< kernel or symbol not found */
  SK_ERR_INCOMPATIBLE = 5,     /**< inputs that cannot work together (signature, block dims...) */
  SK_ERR_OUT_OF_MEMORY = 6,
  SK_ERR_DEVICE = 7,           /**< the device failed or is missing */
  SK_ERR_HANG = 8,             /**< a wait passed its deadline; the launch was aborted */
  SK_ERR_STATE = 9             /**< call not valid in the object's current state */
} sk_status;

typedef struct sk_device sk_device;
typedef struct sk_module sk_module;
typedef struct sk_kernel sk_kernel;
typedef struct sk_scope sk_scope;
typedef struct sk_superkernel sk_superkernel;
typedef struct sk_stream sk_stream;

/**
 * Per-kernel options of sk_add_kernel. Set struct_size to sizeof(sk_kernel_options) (the
 * SK_KERNEL_OPTIONS_INIT macro does): later versions append fields and read only what the
 * caller's struct_size covers.
 */
typedef struct sk_kernel_options {
  uint32_t struct_size;
  /** Name of this sub-kernel for option lists and explain; NULL: the kernel's symbol name. */
  const char *name;
  /**
   * Core type: "vector", "cube", "mix_1_1" or "mix_1_2" (sk_kernel.h's SK_CORE_* strings);
   * NULL: the type its metadata records (vector for kernels without metadata). A mixed kernel's
   * block_dim counts groups (one cube core and one or two vector cores each).
   */
  const char *core_type;
  /** SK_KERNEL_FLAG_* bits. */
  uint32_t flags;
  /**
   * Stream of this sub-kernel inside the scope (scope option stream-fusion=1): kernels of one
   * stream run in order; kernels of different streams may overlap, ordered only by the events
   * of sk_scope_record_event / sk_scope_wait_event. 0 without stream fusion.
   */
  uint32_t stream;
} sk_kernel_options;

/**
 * The kernel's tiling data is produced on the device ("tiling sink"): it gets a whole-cache
 * flush before and after it, and no per-access flush.
 */
#define SK_KERNEL_FLAG_TILING_SINK 0x1u

#define SK_KERNEL_OPTIONS_INIT {sizeof(sk_kernel_options), NULL, NULL, 0, 0}

/** Message of the calling thread's last failure, naming the culprit; "" if none. Never NULL. */
SK_API const char *sk_last_error(void);
/** "SK_OK", "SK_ERR_BAD_BINARY", ...; "SK_ERR_UNKNOWN" for values outside the enum. */
SK_API const char *sk_status_name(sk_status s);
/** Run-time version: SK_VERSION_MAJOR*10000 + MINOR*100 + PATCH of the loaded library. */
SK_API uint32_t sk_version(void);

/**
 * Opens a device. spec is "backend[:key=value[,key=value...]]".
 * Host backend keys: cores=N (worker cores, default: the CPUs this process can use, see
 * sk_device_cores), spin_us=N (busy-wait before a waiting core sleeps, default 50; 0: no spin),
 * spin_max_us=N (what an idle core's busy-wait grows to while launches keep coming soon after its
 * spin ran out, default 1000; at most spin_us: fixed), timeout_ms=N (deadline of every wait,
 * default 10000), symbols=process|strict (what kernel objects may bind to; see README, default
 * process), pin=0|1 (bind each core's thread to its own CPU, one hardware thread of every physical
 * core before a second thread of any, and CPUs no other open device holds before shared ones;
 * default 1), barrier_group=N (cores per arrival group of the barrier between kernels, a two-level
 * combining tree; 0, the default: one central counter up to 8 cores, groups of ceil(sqrt(cores))
 * above; N >= cores: central).
 * CUDA backend: "cuda" or "cuda:N" (GPU N), then keys timeout_ms=N (deadline of every in-kernel
 * wait, default 10000) and arch=sm_XY (link target; default: the GPU's). The driver and nvJitLink
 * are loaded at run time: without them (or without a GPU) it fails with SK_ERR_DEVICE saying
 * what is missing.
 * Unknown backends and keys fail with SK_ERR_INVALID_ARGUMENT naming them.
 */
SK_API sk_status sk_device_open(const char *spec, sk_device **out);
/** Waits for queued work, then releases the device. Every object made from it must be gone. */
SK_API void sk_device_close(sk_device *dev);
/**
 * The device's cores, for choosing block dims: on the host device its worker cores (cores=N,
 * or the default: the CPUs this process can use, its affinity mask bounded by its cgroup's CPU
 * quota); on a CUDA device its multiprocessors. A sub-kernel whose block_dim is this count
 * gives every core one block.
 */
SK_API sk_status sk_device_cores(sk_device *dev, uint32_t *out);
/**
 * Waits until every launch queued on this device's default stream (launches given stream NULL)
 * has ended, and returns their first failure, once, as sk_stream_synchronize does. Other
 * devices are left alone: sk_stream_synchronize(NULL) waits for the default stream of every
 * open device.
 */
SK_API sk_status sk_device_synchronize(sk_device *dev);

/** Device memory (on the host device: ordinary, 64-byte aligned host memory). */
SK_API sk_status sk_mem_alloc(sk_device *dev, size_t size, void **out);
SK_API void sk_mem_free(sk_device *dev, void *ptr);
/** Synchronous copy; waits for work queued on the device's streams first. */
SK_API sk_status sk_memcpy(sk_device *dev, void *dst, const void *src, size_t size);

/**
 * Loads a kernel object (an ELF relocatable object as `cc -c` writes it) from memory. The bytes
 * are copied; the same bytes loaded twice on one device are linked once. Objects of 1 GiB or
 * more are refused (SK_ERR_UNSUPPORTED). Loading an object runs its code, like dlopen: see the
 * README's trust model and the device spec key symbols=strict.
 */
SK_API sk_status sk_module_load(sk_device *dev, const void *image, size_t size, sk_module **out);
SK_API sk_status sk_module_load_file(sk_device *dev, const char *path, sk_module **out);
/**
 * Unloads the module: its kernel handles become invalid. Super kernels built from its kernels
 * keep the code they need and stay launchable; the linked code goes when the last one does.
 */
SK_API void sk_module_unload(sk_module *mod);
/**
 * Kernel by symbol name, with its signature from the object's `.sk.kernels` metadata
 * (written by sk_kernel.h's SK_KERNEL macro). SK_ERR_NOT_FOUND if the symbol or its metadata
 * is missing. The kernel is owned by the module.
 */
SK_API sk_status sk_module_get_kernel(sk_module *mod, const char *name, sk_kernel **out);
/**
 * Kernel by symbol name with a signature given by the host: a comma-separated list over
 * ptr, i8, u8, i16, u16, i32, u32, i64, u64, f32, f64 ("" for none). If the object carries
 * metadata for the kernel the two must agree (SK_ERR_INCOMPATIBLE otherwise).
 */
SK_API sk_status sk_module_get_kernel_with_signature(sk_module *mod, const char *name,
                                                     const char *signature, sk_kernel **out);

/** In-order queue of launches. */
SK_API sk_status sk_stream_create(sk_device *dev, sk_stream **out);
/**
 * Waits until every launch queued on the stream (NULL: the default stream of every open device;
 * sk_device_synchronize waits for one device's) has ended.
 * Returns the first failure of those launches, once: SK_ERR_HANG for a wait past the device's
 * deadline, SK_ERR_INVALID_ARGUMENT for a device-API call a kernel made that cannot be honoured
 * (a cross-core flag id out of range); the message names the kernel and the core.
 */
SK_API sk_status sk_stream_synchronize(sk_stream *stream);
/** Waits for the stream's work, then destroys it. */
SK_API void sk_stream_destroy(sk_stream *stream);

/**
 * Starts a scope: the kernels added to it become one super kernel. options uses the vendor
 * syntax "key=value:key=value" (NULL or "" for defaults); see README for the keys.
 */
SK_API sk_status sk_scope_begin(sk_device *dev, const char *name, const char *options,
                                sk_scope **out);
/**
 * Adds a kernel running on block_dim blocks, 1 <= block_dim <= 2^24 (SK_ERR_INVALID_ARGUMENT
 * otherwise). args[i] points to the value of parameter i (as in cuLaunchKernel); the values are
 * copied. args may be NULL for kernels without parameters.
 */
SK_API sk_status sk_add_kernel(sk_scope *scope, sk_kernel *kernel, uint32_t block_dim,
                               void *const *args, const sk_kernel_options *opts);
/**
 * Stream fusion (scope option stream-fusion=1): records event `event` on scope stream `stream`,
 * after the kernels added to that stream so far. Each event id is recorded once per scope.
 */
SK_API sk_status sk_scope_record_event(sk_scope *scope, uint32_t stream, uint32_t event);
/**
 * Stream fusion: kernels added to `stream` after this call wait until every kernel before the
 * recording of `event` (recorded earlier in this scope) has ended.
 */
SK_API sk_status sk_scope_wait_event(sk_scope *scope, uint32_t stream, uint32_t event);
/** Builds the super kernel. Consumes the scope, whether it succeeds or not. */
SK_API sk_status sk_finalize(sk_scope *scope, sk_superkernel **out);
/** Drops a scope that will not be finalized. */
SK_API void sk_scope_abort(sk_scope *scope);

/** Queues one run of the super kernel on a stream (NULL: the default stream). Asynchronous. */
SK_API sk_status sk_launch(sk_superkernel *sk, sk_stream *stream);
/** Queues one kernel on its own, unfused (the baseline a super kernel replaces). Asynchronous;
 *  the argument values are copied. */
SK_API sk_status sk_launch_kernel(sk_kernel *kernel, uint32_t block_dim, void *const *args,
                                  sk_stream *stream);
/**
 * Rebinds argument `index` of sub-kernel `step` (0-based, in sk_add_kernel order) for launches
 * queued after this call. Launches of this super kernel already queued complete first with the
 * old value (the call waits for them).
 */
SK_API sk_status sk_superkernel_set_arg(sk_superkernel *sk, uint32_t step, uint32_t index,
                                        const void *value);
/**
 * The plan as JSON (steps, kernel names, block dims, cores, sync points, device-API use). On
 * the host device its "execution" object says how the executor runs it: "barrier" ("central",
 * or "tree" with "barrier_group_cores" and "barrier_groups"), "step_loop" ("chain", the
 * leanest, or "general"), "completes_at" ("last release" or "core reports") and "calls" (how
 * many kernels it calls "direct", by "register map" and through "libffi", the slowest).
 * Writes the JSON and its terminating NUL to buf; *needed (if not NULL) receives that size.
 * A size query (buf NULL, cap 0, needed not NULL) returns SK_OK. Otherwise a cap too small is
 * SK_ERR_INVALID_ARGUMENT (with *needed set).
 */
SK_API sk_status sk_superkernel_explain(sk_superkernel *sk, char *buf, size_t cap,
                                        size_t *needed);
/**
 * One core's run of one sub-kernel in a profiled launch (scope option profiling=1). Times are
 * CLOCK_MONOTONIC nanoseconds.
 */
typedef struct sk_profile_record {
  uint32_t step;     /**< sub-kernel index, in sk_add_kernel order */
  uint32_t core;     /**< core of the super kernel that ran it */
  uint32_t core_type;/**< 0: vector core, 1: cube core */
  uint32_t blocks;   /**< blocks of the sub-kernel this core ran */
  uint64_t ready_ns; /**< the core reached the sub-kernel and began waiting for its inputs */
  uint64_t start_ns; /**< the sub-kernel's code started on this core */
  uint64_t end_ns;   /**< it returned on this core */
  /** time inside runtime waits between start and end (sk_sync_all, cross-core flags, the wait
   *  of sk_wait_pre_task_end); the wait before start is start_ns - ready_ns */
  uint64_t sync_wait_ns;
} sk_profile_record;

/**
 * Profile of the last completed launch of a super kernel built with profiling=1: one record
 * per (sub-kernel, core that ran it), ordered by step then core. Call it after
 * sk_stream_synchronize; a launch that ended in SK_ERR_HANG does not replace the profile.
 * Same buffer protocol as sk_superkernel_explain, counted in records: a size query (records
 * NULL, cap 0, count not NULL) returns SK_OK; otherwise a cap too small is
 * SK_ERR_INVALID_ARGUMENT (with *count set). SK_ERR_STATE if profiling is off or no launch has
 * completed; SK_ERR_UNSUPPORTED on devices that do not profile (the CUDA backend, for now).
 * Thread-safe with launches of the same super kernel.
 */
SK_API sk_status sk_superkernel_profile(sk_superkernel *sk, sk_profile_record *records,
                                        size_t cap, size_t *count);
/**
 * Writes the last completed launch's profile to `path` (created or replaced) as Chrome
 * trace-event JSON, loadable in Perfetto and chrome://tracing: one process per super kernel,
 * one track per core, one complete slice per sub-kernel named after it (args: step, blocks,
 * core type, waits) and a "wait" slice where the core waited for the previous sub-kernel; times
 * in microseconds from the launch's first ready time. SK_ERR_STATE as sk_superkernel_profile;
 * SK_ERR_INVALID_ARGUMENT if path is NULL or empty or cannot be written (the message names it).
 */
SK_API sk_status sk_superkernel_write_trace(sk_superkernel *sk, const char *path);
/** Waits for its queued launches, then destroys it. */
SK_API void sk_superkernel_destroy(sk_superkernel *sk);

#ifdef __cplusplus
}
#endif

#endif /* SK_H */
