/*
 * sk.h — libsk, the SuperKernel runtime: host C API.
 *
 * Kernels that are already compiled (ELF relocatable objects on the host, cubins or LTO-IR on
 * CUDA) are loaded, fused at run time into one super kernel that calls each as a sub-function
 * with the right synchronisation between them, and launched as a single task.
 *
 * A program opens a device (sk_device_open), loads kernel objects (sk_module_load_file, or
 * several objects and static libraries as one module: sk_module_load_files) and
 * looks up their kernels (sk_module_get_kernel), adds them to a scope (sk_scope_begin,
 * sk_add_kernel), builds the super kernel (sk_finalize), then launches it as often as it wants
 * (sk_launch) and waits for it (sk_stream_synchronize).
 *
 * Conventions (docs/conventions.md has them in full):
 *  - every fallible call returns sk_status; SK_OK is 0, other values are stable;
 *  - results come back through out-parameters, left untouched on failure;
 *  - on failure a per-thread message naming the culprit is kept for sk_last_error();
 *  - destroy/close/unload functions accept NULL; using a handle after its destroy call fails
 *    with SK_ERR_STATE for the common mistakes (docs/conventions.md says what stays undefined);
 *  - thread safety: distinct handles may be used from distinct threads freely; one scope must not
 *    be built from two threads at once; launches and stream calls are thread-safe.
 *
 * Each function's comment ends with the failures it adds to those every call shares (see
 * "Status and errors"), who owns what it returns, and which threads may call it.
 */
#ifndef SK_H
#define SK_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(SK_BUILDING_LIBRARY) && defined(__GNUC__)
#define SK_API __attribute__((visibility("default")))
#else
#define SK_API
#endif

/*-*********************************************************************************************
*  Version
*
*  The macros describe this header; sk_version() and sk_version_string() the library loaded at
*  run time. The macros are the one place the version is written: the build reads it from here.
*  The C ABI is stable within a major version (docs/conventions.md, "Versions").
**********************************************************************************************/

#define SK_VERSION_MAJOR 0
#define SK_VERSION_MINOR 2
#define SK_VERSION_PATCH 0
/** SK_VERSION_MAJOR*10000 + SK_VERSION_MINOR*100 + SK_VERSION_PATCH */
#define SK_VERSION_NUMBER (SK_VERSION_MAJOR * 10000 + SK_VERSION_MINOR * 100 + SK_VERSION_PATCH)

/**
 * Run-time version: SK_VERSION_MAJOR*10000 + MINOR*100 + PATCH of the loaded library.
 * - Threads: any.
 */
SK_API uint32_t sk_version(void);
/**
 * Run-time version of the loaded library as "MAJOR.MINOR.PATCH", e.g. "0.2.0".
 * - Ownership: a static string of libsk's, never freed; the same pointer on every call.
 * - Threads: any.
 */
SK_API const char *sk_version_string(void);

/*-*********************************************************************************************
*  Status and errors
*
*  Failures every call shares, not repeated under each function: a NULL where a handle or an
*  out-parameter is needed, or a pointer to a handle of another type, is SK_ERR_INVALID_ARGUMENT;
*  a handle used after its destroy call is SK_ERR_STATE; any call that allocates may fail with
*  SK_ERR_OUT_OF_MEMORY. Every failure keeps a message naming the culprit for sk_last_error().
**********************************************************************************************/

/** Status of every fallible call. Numeric values are stable. */
typedef enum sk_status {
  SK_OK = 0,
  SK_ERR_INVALID_ARGUMENT = 1, /**< NULL where a handle is needed, bad spec, bad option... */
  SK_ERR_BAD_BINARY = 2,       /**< malformed ELF object or metadata */
  SK_ERR_UNSUPPORTED = 3,      /**< well-formed but not supported (unknown relocation...) */
  SK_ERR_NOT_FOUND = 4,        /**< kernel or symbol not found */
  SK_ERR_INCOMPATIBLE = 5,     /**< inputs that cannot work together (signature, block dims...) */
  SK_ERR_OUT_OF_MEMORY = 6,
  SK_ERR_DEVICE = 7, /**< the device failed or is missing */
  SK_ERR_HANG = 8,   /**< a wait passed its deadline; the launch was aborted */
  SK_ERR_STATE = 9,  /**< call not valid in the object's current state */
  SK_ERR_KERNEL = 10 /**< an exception escaped the object's code (a kernel, a constructor) */
} sk_status;

/**
 * Message of the calling thread's last failure, naming the culprit; "" if none. Never NULL.
 * One line of valid UTF-8: in the names it quotes, a byte that is not UTF-8 is written as the
 * text \xNN, a newline, carriage return or tab as \n, \r, \t, other control characters as
 * \xNN (C1 controls, U+2028 and U+2029 as a JSON-style escape of their code point).
 * - Ownership: libsk's; valid until the same thread's next failing call (successes keep it).
 * - Threads: per thread: no thread sees another's message.
 */
SK_API const char *sk_last_error(void);
/**
 * "SK_OK", "SK_ERR_BAD_BINARY", ...; "SK_ERR_UNKNOWN" for values outside the enum.
 * - Ownership: a static string, never freed.
 * - Threads: any.
 */
SK_API const char *sk_status_name(sk_status s);

/*-*********************************************************************************************
*  Handles
*
*  Opaque, each made by one call and released by one: sk_device (sk_device_open /
*  sk_device_close), sk_module (sk_module_load / sk_module_unload), sk_kernel (owned by its
*  module, no release of its own), sk_stream (sk_stream_create / sk_stream_destroy), sk_scope
*  (sk_scope_begin / sk_finalize or sk_scope_abort), sk_superkernel (sk_finalize /
*  sk_superkernel_destroy). Closing a device and destroying a stream or a super kernel wait for
*  the work queued with it.
**********************************************************************************************/

typedef struct sk_device sk_device;
typedef struct sk_module sk_module;
typedef struct sk_kernel sk_kernel;
typedef struct sk_scope sk_scope;
typedef struct sk_superkernel sk_superkernel;
typedef struct sk_stream sk_stream;
typedef struct sk_event sk_event;

/*-*********************************************************************************************
*  Devices
*
*  A device is one backend instance: worker threads on the host's CPUs ("host") or one GPU
*  ("cuda:N"). Every other handle is made from a device, directly or not.
**********************************************************************************************/

/**
 * @options Device specs
 *
 * sk_device_open takes a spec `backend[:key=value[,key=value...]]`. The backends are `host`
 * (always built) and `cuda` (one GPU). An unknown backend, an unknown key, a key given twice, an
 * item that is not `key=value` and a value outside its range are SK_ERR_INVALID_ARGUMENT, with
 * a message naming them. Items are separated by commas, so no value holds one.
 */

/**
 * @options Host device keys
 *
 * `host` alone takes every default; e.g. `host:cores=4,pin=0`.
 *
 * - `cores=N` (1 to 1024; default: the CPUs this process can use): worker cores. The default
 *   counts the CPUs of the process's affinity mask (`taskset`, a container's cpuset), at most its
 *   cgroup's CPU quota rounded up (`docker --cpus`, a Kubernetes CPU limit; cgroup v2 `cpu.max`
 *   or v1 `cpu.cfs_quota_us`, the smallest over its cgroup and the ancestors it can see): cores
 *   spinning on more CPUs than the quota pays for get the whole process throttled.
 *   sk_device_cores says what a device got. Wherever these keys say "more cores than CPUs", the
 *   CPUs are counted the same way.
 * - `spin_us=N` (0 to 10000000; default 50): microseconds an idle core busy-waits before it
 *   sleeps; 0: no spin. Inside a launch cores wait 20 times longer: the core they wait for is
 *   about to arrive.
 * - `spin_max_us=N` (0 to 10000000; default 1000): how far an idle core's busy-wait may grow. A
 *   core whose spin ran out and that a launch then woke within this time of going idle spins
 *   twice that idle time next time, so that launches coming at a steady pace with host work
 *   between them (a decode loop) find it awake; an idle time past it sets the spin back to
 *   `spin_us`. At or below `spin_us`, with `spin_us=0`, or with more cores than CPUs: a fixed
 *   spin of `spin_us`. On a 1-core device (no core spins) it is how long the thread that stands
 *   in for a host thread keeps looking, every millisecond, for a launch left running, instead
 *   of being woken by every launch, once it has found host threads running the launches
 *   themselves or has been woken twice within a millisecond (not with a fixed spin, nor on one
 *   CPU).
 * - `timeout_ms=N` (1 to 86400000; default 10000): deadline of every wait inside a launch; past
 *   it the launch fails with SK_ERR_HANG and a report naming the sub-kernel, the core and the
 *   sync point. A launch in which no core progresses for as long while one is in a kernel's
 *   code fails the same way, naming the core that never came back, and loses the device:
 *   everything after fails with SK_ERR_DEVICE (docs/conventions.md, "Lost devices"). Setting
 *   it also sets the default of `core0` to `thread`, so that a synchronize reports a kernel
 *   that never returns on any core.
 * - `core0=caller|thread` (default `thread` when the spec sets `timeout_ms`, else `caller`):
 *   which thread runs core 0's share of each launch. `caller`: a host thread that waits for
 *   the device (sk_stream_synchronize, sk_device_synchronize, sk_superkernel_set_arg, a launch
 *   that finds the queue full) runs it itself, so a synchronous launch loop adds no thread and
 *   sees the completion in its own cache, and a thread of libsk's stands in for launches nobody
 *   waits for; a block on core 0 that never returns then holds the synchronizing thread for
 *   ever (only sk_stream_query, which runs no kernel, reports it). `thread`: core 0 has a
 *   thread of its own, placed as a host thread would be, and a waiting host thread only waits:
 *   sk_stream_synchronize returns SK_ERR_HANG within about `timeout_ms` for a kernel that never
 *   returns on any core, and the device is lost. The price is a hand-over at every synchronize
 *   (the waiting thread sleeps and is woken; with a core on every CPU, idle cores yield their
 *   CPU so that it gets one): 7-11 us a step on a 2-CPU machine, 1-2% of a decode-shaped step
 *   there, but a step 2-4 times as long where other processes keep the CPUs busy
 *   (docs/benchmarks.md, "Core 0 on a thread of its own"): not the default without `timeout_ms`.
 * - `stack_kb=N` (128 to 1048576; default: the RLIMIT_STACK soft limit when the device opens,
 *   65536 when that is unlimited): the stack of each core's thread in KiB, what the main thread
 *   may grow to, so that a kernel with large local arrays or deep recursion runs on a core as
 *   it runs natively (glibc gives other threads the limit at process start, and on x86-64 2 MiB
 *   when that is unlimited). A kernel that overflows it crashes the process, as on any thread. With
 *   `core0=caller` core 0's blocks run on the stack of the thread that runs them. Structs a
 *   kernel takes by value are copied onto that stack at each call: a kernel whose copies leave
 *   less than 48 KiB of a core's stack is refused when it is taken (SK_ERR_INCOMPATIBLE, naming
 *   the stack_kb it needs), and a thread whose own stack leaves less leaves core 0's blocks to
 *   libsk's core-0 thread and only waits.
 * - `symbols=process|strict` (default `process`): what kernel objects may bind their undefined
 *   symbols to. `process`: any symbol of the process, as the dynamic linker would bind it.
 *   `strict`: only sk_kernel.h's device API, the C99 `<math.h>` functions (with their `f` and
 *   `l` forms, and GNU `sincos` and `exp10`), the libc functions that touch only the memory they
 *   are given (`memcpy`, `strlen`, ...) and the helpers compilers emit calls to; the lists are
 *   in src/host/linker/symbol_policy.cpp. Any other undefined symbol fails sk_module_load with
 *   SK_ERR_UNSUPPORTED naming the symbol and the object (a weak reference to one stays unbound).
 *   Strict mode is not a sandbox: an object's own code can still do anything machine code can.
 * - `pin=0|1` (default 1): bind core c's thread to the c-th CPU the process may use, taking one
 *   hardware thread of every physical core before a second thread of any (SMT siblings share
 *   one core's execution units), and keep the cores off the CPU of the host thread that runs
 *   core 0 (cores spinning for each other on one CPU cost a context switch per step); the
 *   thread that stands in for host threads runs on the CPUs no core holds, and core 0's own
 *   thread (`core0=thread`) where the scheduler puts it. A second device open at the same
 *   time takes the CPUs the first left free. With `pin=0` or more cores than CPUs a waiting core
 *   yields its CPU while it spins (the core it waits for may be queued there); otherwise it
 *   never does.
 * - `barrier_group=N` (0, or 2 to 1024; default 0): cores per arrival group of the barrier
 *   between kernels. Each core counts on its group's counter and the last of a group counts the
 *   group on the shared one (a two-level combining tree: about N/G + G serial increments of a
 *   contended cache line per kernel instead of N). 0 picks: one central counter up to 8 cores,
 *   groups of ceil(sqrt(cores)) above; N >= cores is the central counter. Used by plain vector
 *   programs; others count centrally.
 * - `perf_map=0|1` (default 1 when the environment variable `SK_PERF_MAP` is `1`, else 0): append
 *   a `START SIZE NAME` line for every function of each object this device links to
 *   `/tmp/perf-<pid>.map`, so that `perf report` names samples in kernel code. The file must be
 *   writable when the device opens (else SK_ERR_UNSUPPORTED naming it). Debuggers need no key:
 *   every linked object is registered with GDB's JIT interface while it is loaded.
 */

/**
 * @options CUDA device keys
 *
 * `cuda` opens GPU 0 and `cuda:N` GPU N (a leading number is the ordinal); keys follow, e.g.
 * `cuda:1,timeout_ms=500` or `cuda:arch=sm_90`.
 *
 * - `device=N` (0 to 1023; default 0, or the leading number): the GPU's ordinal.
 * - `timeout_ms=N` (1 to 3600000; default 10000, or `$SK_CUDA_TIMEOUT_MS` when it is set):
 *   deadline of every in-kernel wait; a passed deadline is reported as SK_ERR_HANG by the next
 *   sk_stream_synchronize, naming the super kernel, the step, the block and the sync point. A
 *   `$SK_CUDA_TIMEOUT_MS` that is not such a number fails every `cuda` open, naming it.
 * - `arch=sm_XY` (default: the GPU's compute capability): the architecture super kernels are
 *   linked for.
 * - `stack_bytes=N` (1 to 1048576; default: none): the call stack per thread, in bytes, of super
 *   kernels (and sk_launch_kernel entries) whose need ptxas cannot bound: a sub-kernel that
 *   recurses, or calls through a function pointer the link cannot follow. Without it their
 *   sk_finalize (or sk_launch_kernel) fails with SK_ERR_INCOMPATIBLE naming the sub-kernel.
 *   Every finalize raises the context's CU_LIMIT_STACK_SIZE to what its entry needs (the linked
 *   entry's own figure, or N), never lowering it; a limit the driver cannot grant fails it with
 *   SK_ERR_DEVICE.
 *
 * The driver (`libcuda.so.1`) and nvJitLink (`libnvJitLink.so.13`) are loaded at run time, so
 * libsk builds and loads on machines without CUDA; there, and without a GPU, opening fails with
 * SK_ERR_DEVICE saying what is missing. The environment variables `SK_CUDA_DRIVER_LIBRARY` and
 * `SK_CUDA_NVJITLINK_LIBRARY` name other copies to load. Linked super kernels are cached in
 * `$XDG_CACHE_HOME/libsk` (else `~/.cache/libsk`) for later processes; `SK_CUDA_LINK_CACHE=0`
 * turns that off. `SK_CUDA_DUMP_DIR=DIR` (an existing directory) keeps what a failure on a GPU
 * needs looked at: each linked cubin as it is loaded (`PID-ID-NAME.cubin`), and, when a
 * synchronisation reports an aborted launch, the words of that super kernel's sync buffer
 * (`PID-ID-NAME.sync.txt`); files it cannot write are left out.
 */

/**
 * Opens a device from a spec such as "host", "host:cores=4,pin=0" or "cuda:0" (the keys
 * above).
 * - Errors: SK_ERR_INVALID_ARGUMENT for a bad spec, naming the backend, key or value (a
 *   backend this libsk was built without, such as `cuda` with SK_WITH_CUDA=OFF, is an unknown
 *   one, and the message lists those it has); SK_ERR_DEVICE when the backend cannot start (a
 *   host core thread that cannot be created; no CUDA driver, nvJitLink or GPU);
 *   SK_ERR_UNSUPPORTED for a GPU without cooperative launch.
 * - Ownership: *out is the caller's, to close with sk_device_close. spec is read during the
 *   call only.
 * - Threads: any. Each host device has its own worker threads; several may be open at once.
 */
SK_API sk_status sk_device_open(const char *spec, sk_device **out);
/**
 * Waits for queued work, then releases the device. Every object made from it must be gone: one
 * left behind keeps the device's cores alive until it goes, the close sets a message for
 * sk_last_error() counting such objects, and every later use of them (or of their kernels) fails
 * with SK_ERR_STATE naming the closed device, except their destroy calls, which free them.
 * NULL: nothing; a second close is ignored, with a message for sk_last_error(). A lost device
 * (see timeout_ms) waits for nothing: its stuck threads are left running, and what they may use
 * is kept, never freed.
 * - Threads: not while another thread uses the device.
 */
SK_API void sk_device_close(sk_device *dev);
/**
 * The device's cores, for choosing block dims: on the host device its worker cores (cores=N,
 * or the default: the CPUs this process can use, its affinity mask bounded by its cgroup's CPU
 * quota); on a CUDA device its multiprocessors. A sub-kernel whose block_dim is this count
 * gives every core one block.
 * - Threads: any.
 */
SK_API sk_status sk_device_cores(sk_device *dev, uint32_t *out);
/**
 * Waits until every launch queued on this device's default stream (launches given stream NULL)
 * has ended, and returns their first failure, once, as sk_stream_synchronize does. Other
 * devices are left alone: sk_stream_synchronize(NULL) waits for the default stream of every
 * open device.
 * - Errors: those of sk_stream_synchronize.
 * - Threads: any; launches may be queued from other threads meanwhile.
 */
SK_API sk_status sk_device_synchronize(sk_device *dev);

/*-*********************************************************************************************
*  Memory
*
*  Buffers for kernel arguments. On the host device any host memory works as well; these calls
*  give 64-byte aligned buffers. On a CUDA device they are device memory.
**********************************************************************************************/

/**
 * Allocates size bytes of device memory (on the host device: ordinary, 64-byte aligned host
 * memory).
 * - Errors: SK_ERR_INVALID_ARGUMENT for size 0 on the host device; SK_ERR_OUT_OF_MEMORY when the
 *   memory is not there (on the host device also above 2^46 bytes); SK_ERR_DEVICE when the GPU
 *   fails.
 * - Ownership: *out is the caller's, to free with sk_mem_free before the device is closed.
 * - Threads: any.
 */
SK_API sk_status sk_mem_alloc(sk_device *dev, size_t size, void **out);
/**
 * Frees memory from sk_mem_alloc on the same device. NULL: nothing; a pointer the device did not
 * allocate is ignored, with a message for sk_last_error(). Launches that use the memory must
 * have ended.
 * - Threads: any.
 */
SK_API void sk_mem_free(sk_device *dev, void *ptr);
/**
 * Synchronous copy; waits for work queued on the device's streams first. Either pointer may be
 * host or device memory. size 0 copies nothing.
 * - Errors: SK_ERR_INVALID_ARGUMENT if dst or src is NULL; SK_ERR_DEVICE when the GPU fails.
 * - Threads: any.
 */
SK_API sk_status sk_memcpy(sk_device *dev, void *dst, const void *src, size_t size);

/** Bytes of a TMA tensor map (a CUtensorMap). */
#define SK_TENSOR_MAP_BYTES 128
/**
 * A tiled TMA tensor map (sk_tensor_map_encode): cuTensorMapEncodeTiled's parameters, in its
 * units and order (dimensions innermost first, strides in bytes). Zero-initialise it and set
 * struct_size to its sizeof; the zero of each enumeration is the common choice.
 */
typedef struct sk_tensor_map_desc {
  uint32_t struct_size;
  /**
   * CUtensorMapDataType: 0 u8, 1 u16, 2 u32, 3 i32, 4 u64, 5 i64, 6 f16, 7 f32, 8 f64, 9 bf16,
   * 10 f32 flushing denormals, 11 tf32, 12 tf32 flushing denormals.
   */
  uint32_t data_type;
  /** Dimensions, 1 to 5 (3 to 5 interleaved). */
  uint32_t rank;
  /** CUtensorMapSwizzle: 0 none, 1 32 B, 2 64 B, 3 128 B. */
  uint32_t swizzle;
  /** The tensor in device memory: 16-byte aligned (32 with interleave 2). */
  void *address;
  /** Elements in each dimension, innermost first: 1 to 2^32. */
  uint64_t dims[5];
  /** Bytes from one element of dimension i+1 to the next (dimension 0 is contiguous):
   *  multiples of 16 (32 with interleave 2) below 2^40. */
  uint64_t strides[4];
  /** The box one copy moves, innermost first: 1 to 256 elements each; without interleave,
   *  box[0] elements are a multiple of 16 bytes, and with a swizzle at most its span. */
  uint32_t box[5];
  /** Steps between the elements a copy moves in each dimension, 1 to 8; all 0: 1 each. */
  uint32_t element_strides[5];
  /** CUtensorMapInterleave: 0 none, 1 16 B, 2 32 B (which needs swizzle 1). */
  uint32_t interleave;
  /** CUtensorMapL2promotion: 0 none, 1 64 B, 2 128 B, 3 256 B. */
  uint32_t l2_promotion;
  /** CUtensorMapFloatOOBfill: 0 zeros, 1 NaN (floating-point data types only). */
  uint32_t oob_fill;
} sk_tensor_map_desc;
/**
 * Encodes the tensor map `desc` describes into tensor_map (SK_TENSOR_MAP_BYTES bytes, any
 * alignment), through the CUDA driver libsk loaded. It is the argument of a kernel parameter
 * that takes a CUtensorMap by value (`__grid_constant__ const CUtensorMap`, a Triton
 * TensorDescriptor's first parameter; signature `{u64[16]}@64`). The host does no tensor maps.
 * - Errors: SK_ERR_UNSUPPORTED on a device that is not a CUDA device; SK_ERR_INVALID_ARGUMENT,
 *   naming the field, for a desc outside the ranges above (or a data type it does not list),
 *   a NULL desc or tensor_map, or a struct_size under sizeof(sk_tensor_map_desc);
 *   SK_ERR_DEVICE when the driver refuses it. tensor_map is written only on success.
 * - Threads: any.
 */
SK_API sk_status sk_tensor_map_encode(sk_device *dev, const sk_tensor_map_desc *desc, void *tensor_map);

/*-*********************************************************************************************
*  Modules and kernels
*
*  A module is one loaded kernel object, or several objects and archives linked as one; its
*  kernels are the functions super kernels call.
*  Loading an object runs its code in this process, with its rights, like dlopen: load only
*  objects you would link into your program (the device spec key symbols=strict narrows what
*  they may bind to). Malformed bytes never take the process down: they fail with a status.
**********************************************************************************************/

/**
 * Loads a kernel object from memory: on the host device an ELF relocatable object as `cc -c`
 * writes it, on a CUDA device a relocatable cubin or LTO-IR (`nvcc -dc`), or what `nvcc -dc`
 * writes without -cubin (a host object, or a fatbinary with -fatbin), whose cubin for the
 * device's architecture is loaded, or PTX (a `__global__` kernel's, read from beside the cubin
 * where there is one), or a shared library's translation units' PTX; an `ar` archive of such
 * objects (nvcc -lib) is a module of several objects, as sk_module_load_files loads them. A
 * linked cubin (`nvcc -cubin`, or `nvcc -c` with SASS alone) loads too: its `__global__`
 * kernels cannot be fused, and a scope launches each as compiled, in a dispatch of its own
 * (docs/cuda.md, "Kernels of linked SASS").
 * The same bytes loaded twice on one device are linked once.
 * - Errors: SK_ERR_BAD_BINARY for bytes that are not a well-formed object (empty ones included)
 *   or malformed `.sk.kernels` metadata; SK_ERR_UNSUPPORTED for a well-formed object libsk cannot
 *   honour (another machine, thread-locals in a local- or initial-exec model when glibc has no
 *   static TLS space left for them, a relocation type it does not know, 1 GiB or more, an undefined
 *   symbol symbols=strict does not allow, a call to libsk's host API: kernels may call only the
 *   device API of sk_kernel.h); SK_ERR_INCOMPATIBLE for a CUDA fatbinary without SASS for the
 *   device's architecture; SK_ERR_NOT_FOUND for an undefined symbol that cannot be bound;
 *   SK_ERR_OUT_OF_MEMORY when memory or the process's memory mappings run out (the message
 *   names vm.max_map_count when that is the limit hit); SK_ERR_KERNEL when one of the
 *   object's static constructors throws (the ones that ran are undone).
 *   The message names the object and the culprit. On a host device the object's constructors
 *   (.init_array, .ctors) have run, on the calling thread, when it returns SK_OK.
 * - Ownership: the bytes are copied (image may be freed after the call); *out is the caller's,
 *   to release with sk_module_unload.
 * - Threads: any.
 */
SK_API sk_status sk_module_load(sk_device *dev, const void *image, size_t size, sk_module **out);
/**
 * sk_module_load on the contents of the file at path. Files that are not regular (pipes,
 * character devices, /proc files) are read as streams, up to the size limit, stopping at bytes
 * no module begins with (an ELF object, an archive, nvcc's fatbinary or LTO-IR, or text: PTX,
 * a linker script); opening a FIFO does not wait for a writer (one without a writer has nothing
 * to read).
 * - Errors: SK_ERR_NOT_FOUND when the file cannot be opened or read (or is a directory),
 *   naming the path; otherwise those of sk_module_load.
 * - Ownership: as sk_module_load; path is read during the call only.
 * - Threads: any.
 */
SK_API sk_status sk_module_load_file(sk_device *dev, const char *path, sk_module **out);
/**
 * Loads several relocatable objects and `ar` static libraries (GNU/SysV format, as `ar rcs`
 * and distributions write them) as one module, linked the way `ld a.o b.o -( libx.a liby.a -)`
 * links them: symbols resolve between the objects; every object is linked, and an archive
 * member only when a strong undefined symbol of what is linked so far is defined by it (its
 * index says; pulled members are scanned in turn, so where an archive stands in the list does
 * not matter). One global symbol per name: a strong definition beats common and weak ones, the
 * first weak one beats later ones; COMDAT groups with one signature (C++ inline functions and
 * templates) are kept from the first object and dropped from the others, whose references bind
 * to the kept ones. An input that is a linker script holding only `EXTERN(symbol ...)` commands
 * (and comments) names symbols to pull members in by, as `ld -u symbol` does, so that an archive
 * alone (a Rust staticlib) loads with a script and no object. Messages name the object inside
 * the set (an archive member as `libfoo.a(bar.o)`); asking for a function that a member no one
 * needed defines says so and how to pull it in. count 1 is sk_module_load_file. The same files
 * with the same bytes, in the same order, are linked once per device.
 * - Errors: SK_ERR_INVALID_ARGUMENT if paths is NULL, count is 0, a path is NULL, or the set
 *   holds archives only (members are linked only when an object or a script needs them);
 *   SK_ERR_BAD_BINARY for a symbol defined strongly by two objects (naming both), a malformed
 *   archive or a script with anything but EXTERN commands; SK_ERR_NOT_FOUND for a symbol a
 *   script names that nothing in the set defines;
 *   SK_ERR_UNSUPPORTED for a thin archive (its members are other files), objects of different
 *   machines, and on a CUDA device LTO-IR or a shared library among several inputs (what they
 *   define is known only to a whole link); otherwise those of sk_module_load_file, naming the
 *   file.
 * - CUDA: nvcc -dc objects, cubins, PTX and archives of them (nvcc -lib, host-code members left
 *   out) are one module as a device link resolves it: a name goes to its first strong
 *   definition, else its first weak one, a loose object's before an archive member's (two
 *   loose objects defining one strongly are SK_ERR_BAD_BINARY naming both). A kernel is taken
 *   from the object that defines it, and a super kernel links its object with the objects that
 *   define what that object's code uses, transitively, and no others: a member is linked where
 *   a kernel taken from the set needs it. sk_superkernel_explain lists them per sub-kernel
 *   (`linked_with`).
 * - Ownership: as sk_module_load; paths are read during the call only.
 * - Threads: any.
 */
SK_API sk_status sk_module_load_files(sk_device *dev, const char *const *paths, size_t count, sk_module **out);
/**
 * sk_module_load_files on objects, archives and scripts in memory: images[i] holds sizes[i]
 * bytes, named `<memory #i>` in messages. count 1 is sk_module_load.
 * - Errors: SK_ERR_INVALID_ARGUMENT if images or sizes is NULL, count is 0 or an image is NULL;
 *   SK_ERR_BAD_BINARY for an empty image; otherwise those of sk_module_load_files.
 * - Ownership: as sk_module_load (the bytes are copied).
 * - Threads: any.
 */
SK_API sk_status sk_module_load_images(sk_device *dev, const void *const *images, const size_t *sizes, size_t count,
                                       sk_module **out);
/**
 * Unloads the module: its kernel handles become invalid. Super kernels built from its kernels
 * keep the code they need and stay launchable; the linked code goes when the last one does,
 * after its destructors (.fini_array, .dtors, those C++ registered with __cxa_atexit) have run
 * on the thread that lets it go. NULL: nothing; a second unload is ignored, with a message for
 * sk_last_error().
 * - Threads: not while another thread uses the module or its kernels.
 */
SK_API void sk_module_unload(sk_module *mod);
/**
 * Kernel by symbol name, with its signature from the object's `.sk.kernels` metadata
 * (written by sk_kernel.h's SK_KERNEL macro).
 * - Errors: SK_ERR_NOT_FOUND if the symbol or its metadata is missing; SK_ERR_INCOMPATIBLE on
 *   the host if the structs it takes by value do not fit a core's stack (device key stack_kb).
 * - Ownership: the kernel is owned by the module: no call releases it. It is valid until
 *   sk_module_unload, and super kernels that use it keep what they need beyond that.
 * - Threads: any.
 */
SK_API sk_status sk_module_get_kernel(sk_module *mod, const char *name, sk_kernel **out);
/**
 * Kernel by symbol name with a signature given by the host: a comma-separated list over
 * ptr, i8, u8, i16, u16, i32, u32, i64, u64, f32, f64 ("" for none), and aggregates passed by
 * value: a C struct parameter is its members in braces, `{f32,f32}` for `struct {float x, y;}`,
 * nested (`{{f32,f32},i32}`), a member array as `T[N]` (`{i32[5]}`), at most 32768 bytes and 8
 * levels deep; `@N` after one is C's alignas(N), a power of two up to 256 (`{u64[16]}@64`, a
 * CUtensorMap). An aggregate is laid out as C lays out that struct (each member at its natural
 * alignment) and passed as the platform's C ABI passes it (SysV x86-64, AAPCS64, the PTX ABI);
 * its argument value is the struct's bytes. Listing the members as parameters instead
 * (`f32,f32`) describes another function: it is called with wrong values.
 * - Errors: SK_ERR_INVALID_ARGUMENT for a signature that does not parse; SK_ERR_NOT_FOUND if no
 *   function of that name is defined; SK_ERR_INCOMPATIBLE if the object's metadata for the
 *   kernel gives another signature, or on the host if its structs by value do not fit a core's
 *   stack (device key stack_kb).
 * - Ownership: as sk_module_get_kernel.
 * - Threads: any.
 */
SK_API sk_status sk_module_get_kernel_with_signature(sk_module *mod, const char *name, const char *signature,
                                                     sk_kernel **out);
/**
 * What the caller says of a kernel when taking it (sk_module_get_kernel_desc): what a GPU
 * kernel's binary may not say itself. Zero-initialise it and set struct_size to its sizeof.
 */
typedef struct sk_kernel_desc {
  uint32_t struct_size;
  /** Its signature, as sk_module_get_kernel_with_signature takes it; NULL: the kernel's own. */
  const char *signature;
  /**
   * Threads per block of a CUDA kernel (1 to 1024); 0: its own (a PTX kernel's `.reqntid`, its
   * SK_KERNEL_CUDA record, or its `.maxntid`). A `__global__` kernel whose PTX says none needs
   * it. Checked against what the kernel says (.reqntid exactly, .maxntid at most). Every
   * sub-kernel of a CUDA super kernel runs the same threads per block.
   */
  uint32_t threads;
  /**
   * Bytes of its `extern __shared__` (PTX `.extern .shared`) arrays, dynamic shared memory;
   * 0: its own record (SK_KERNEL_CUDA_SHARED). A Triton kernel's is its metadata's `shared`.
   */
  uint32_t dynamic_shared;
  /**
   * The shape of a CUDA kernel's block, x, y, z (threads their product), as its launch gave
   * blockDim; zeros: one dimension, or its PTX's `.reqntid`. A `__global__` kernel that reads
   * threadIdx.y/z or blockDim.y/z (PTX %tid.y, %ntid.y) and whose PTX does not give the shape
   * needs it: each thread's index is then rebuilt from it. Checked against threads and what the
   * kernel says (.reqntid exactly, .maxntid at most).
   */
  uint32_t block[3];
  /** SK_KERNEL_DESC_* bits; 0: none. */
  uint32_t flags;
  /**
   * The thread block cluster of a CUDA kernel launched as compiled (linked SASS), x, y, z, as
   * its launch gave cudaLaunchAttributeClusterDimension; zeros: none, or the one its cubin was
   * compiled with (__cluster_dims__). At most 8 blocks; each extent divides the grid's. A fused
   * kernel runs in no cluster: one given is refused.
   */
  uint32_t cluster[3];
} sk_kernel_desc;
/**
 * sk_kernel_desc.flags: its blocks wait for each other by means of their own, a grid barrier
 * of atomics that needs every block running at once (what a cooperative launch guarantees:
 * Triton's `launch_cooperative_grid`, PyTorch Inductor's cooperative reductions, a kernel
 * launched with cudaLaunchCooperativeKernel that does not use cooperative groups). Each of its
 * blocks then gets a core of its own, never multiplexed, as a kernel that calls sk_sync_all
 * does; a block_dim above the cores is refused with SK_ERR_INCOMPATIBLE naming the kernel
 * (sk_finalize, sk_launch_kernel). Without it such a kernel may hang when its blocks outnumber
 * the cores. Cooperative groups' grid sync in a PTX kernel is found without it.
 */
#define SK_KERNEL_DESC_COOPERATIVE 0x1u
/**
 * Kernel by symbol name, with what desc says of it (NULL: as sk_module_get_kernel). Host
 * kernels take a signature and flags only: threads, dynamic_shared or block fail with
 * SK_ERR_INVALID_ARGUMENT.
 * - Errors: those of sk_module_get_kernel_with_signature; SK_ERR_INVALID_ARGUMENT for a
 *   struct_size too small, threads above 1024, dynamic_shared above 227 KiB, a block with
 *   an extent of 0 or whose threads are not threads (when given) or above 1024, or a flag
 *   that is not an SK_KERNEL_DESC_* bit;
 *   SK_ERR_INCOMPATIBLE, naming the kernel and the directive, for threads or a block the
 *   kernel's PTX forbids, or a PTX kernel that needs threads, dynamic_shared or block and has
 *   none; for a cluster given to a kernel that is fused, or that its cubin's
 *   `__cluster_dims__` contradicts, or none to one compiled for a cluster its launch gives
 *   (`.explicitcluster`); SK_ERR_INVALID_ARGUMENT for a cluster with some extents 0, or of
 *   more than 8 blocks.
 * - Ownership: as sk_module_get_kernel. A module hands out one kernel per name, signature and
 *   launch facts.
 * - Threads: any.
 */
SK_API sk_status sk_module_get_kernel_desc(sk_module *mod, const char *name, const sk_kernel_desc *desc,
                                           sk_kernel **out);
/**
 * What a device of `spec` would read from a module image, without opening one (no GPU
 * needed), as one JSON object: for `cuda:arch=sm_XY` the module's kind (cubin, PTX, LTO-IR,
 * or what a fatbinary or host object holds for that architecture), a PTX module's version,
 * target and the architecture it links for, and each kernel it declares (a PTX module: each
 * `.entry` and visible function) with its signature, threads per block, dynamic shared bytes
 * and where each came from, the device API it reaches, a PTX kernel's directives and every
 * rewrite loading made, or, for a kernel sk_module_get_kernel would refuse, its error; where
 * it would be refused only for launch facts its binary does not say, also `needs` (the
 * sk_kernel_desc fields to give: "threads", "block", "dynamic_shared", "cluster") and its facts
 * with stand-ins for them (`threads_from`, `dynamic_shared_from`, `cluster_from`: "stand-in");
 * a kernel of linked SASS that runs in a cluster has `cluster` and `cluster_from`. An `ar`
 * archive of nvcc objects is `"kind": "archive"`, its members of device code in `objects` (so
 * are the units of a shared library compiled -rdc), each kernel's `module` its member and
 * `linked_with` the members it links (as sk_module_load_files links them).
 * For `host` (its keys are checked, and change nothing read), an ELF object read by
 * sk_module_load's parsers but not linked, so none of its code runs:
 * `{"module", "kind": "object", "machine", "kernels": [...]}`, each kernel its `.sk.kernels`
 * record (SK_KERNEL) in section order, `{"name", "signature" (as sk_kernel_signature gives
 * it), "core_type", "defined" (whether the object defines its function), "device_api" (the
 * functions its code may reach, as the planner reads them), "error" (only where
 * sk_module_get_kernel would refuse its signature)}`; an `ar` archive is `{"module", "kind":
 * "archive", "members": [...]}`, each member `{"name", "bytes"}` with an object's `module`
 * (`ARCHIVE(MEMBER)`), `machine` and `kernels`.
 * `sk inspect` prints it. Buffer protocol as sk_superkernel_explain's.
 * - Errors: those of sk_module_load for the image (a malformed `.sk.kernels` record:
 *   SK_ERR_BAD_BINARY naming the object, or archive member, and the record);
 *   SK_ERR_INVALID_ARGUMENT for a spec that does not parse or a cuda spec without arch.
 * - Threads: any.
 */
SK_API sk_status sk_module_inspect(const char *spec, const void *image, size_t size, char *buf, size_t cap,
                                   size_t *needed);
/**
 * How many kernels the module declares: the `.sk.kernels` records (SK_KERNEL) of a host module,
 * of every object linked into it, or the `sk_kernel_meta_*` strings (SK_KERNEL_CUDA) of a CUDA
 * module, and a CUDA module's `__global__` kernels of PTX (a shared library's: the `.entry`
 * names its translation units declare, read without reading their PTX). A declared kernel
 * whose function the module lacks, or that cannot be taken, fails sk_module_get_kernel.
 * - Errors: SK_ERR_INVALID_ARGUMENT if out is NULL.
 * - Threads: any.
 */
SK_API sk_status sk_module_kernel_count(sk_module *mod, size_t *out);
/**
 * Name of the module's declared kernel `index` (below sk_module_kernel_count, in the order of
 * its metadata). Same buffer protocol as sk_superkernel_explain: writes the name and its
 * terminating NUL to buf; *needed (if not NULL) receives that size; a size query (buf NULL,
 * cap 0, needed not NULL) returns SK_OK.
 * - Errors: SK_ERR_INVALID_ARGUMENT for an index not below the count, a cap too small (with
 *   *needed set) or buf NULL with a cap.
 * - Ownership: buf is the caller's.
 * - Threads: any.
 */
SK_API sk_status sk_module_kernel_name(sk_module *mod, size_t index, char *buf, size_t cap, size_t *needed);
/**
 * The kernel's signature as libsk reads its arguments: the comma-separated tokens of
 * sk_module_get_kernel_with_signature, without spaces ("" for none). Same buffer protocol as
 * sk_module_kernel_name.
 * - Errors: SK_ERR_INVALID_ARGUMENT for a cap too small (with *needed set) or buf NULL with a
 *   cap.
 * - Ownership: buf is the caller's.
 * - Threads: any.
 */
SK_API sk_status sk_kernel_signature(sk_kernel *kernel, char *buf, size_t cap, size_t *needed);
/**
 * The kernel's core type from its metadata: "vector", "cube", "mix_1_1" or "mix_1_2" (sk_kernel.h's
 * SK_CORE_* strings); "vector" for a kernel without metadata. Same buffer protocol as
 * sk_module_kernel_name.
 * - Errors: as sk_kernel_signature.
 * - Ownership: buf is the caller's.
 * - Threads: any.
 */
SK_API sk_status sk_kernel_core_type(sk_kernel *kernel, char *buf, size_t cap, size_t *needed);

/*-*********************************************************************************************
*  Streams
*
*  A stream is an in-order queue of launches. Every device has a default stream, named by NULL
*  wherever a stream is taken; more are made with sk_stream_create.
**********************************************************************************************/

/**
 * In-order queue of launches.
 * - Ownership: *out is the caller's, to destroy with sk_stream_destroy before the device is
 *   closed.
 * - Threads: any; a stream may be launched on from several threads (in the order the calls
 *   happen).
 */
SK_API sk_status sk_stream_create(sk_device *dev, sk_stream **out);
/**
 * A stream over the application's CUDA stream `cu_stream` (a CUstream / cudaStream_t of the
 * device's primary context, which cudart uses): libsk's launches on it are queued there, in
 * order with the application's own work, and a launch made while the application captures the
 * stream (cuStreamBeginCapture / cudaStreamBeginCapture) goes into its graph: each replay runs
 * the super kernel once more (docs/cuda.md, "CUDA graphs").
 * - Errors: SK_ERR_UNSUPPORTED for a device that is not a CUDA device; SK_ERR_INVALID_ARGUMENT
 *   for a NULL cu_stream (the legacy stream) or out; SK_ERR_DEVICE for a handle the driver
 *   refuses.
 * - Ownership: *out is the caller's, to destroy with sk_stream_destroy before the device is
 *   closed; cu_stream stays the application's, which keeps it alive until then (sk_stream_destroy
 *   waits for it, unless it is being captured, and does not destroy it).
 * - Threads: as sk_stream_create's.
 */
SK_API sk_status sk_stream_create_cuda(sk_device *dev, void *cu_stream, sk_stream **out);
/**
 * Waits until every launch queued on the stream (NULL: the default stream of every open device;
 * sk_device_synchronize waits for one device's) has ended.
 * Returns the first failure of those launches, once: SK_ERR_HANG for a wait past the device's
 * deadline, SK_ERR_INVALID_ARGUMENT for a device-API call a kernel made that cannot be honoured
 * (a cross-core flag id out of range), SK_ERR_KERNEL for a C++ exception that escaped a kernel
 * (the launch stopped; the device stays usable), SK_ERR_DEVICE when the GPU fails; the message
 * names the kernel and the core. A kernel that never came back is SK_ERR_HANG too, and loses the
 * device (see timeout_ms): later calls return SK_ERR_DEVICE. The calling thread runs core 0's
 * share of the launches: a block there that never returns holds it (sk_stream_query does not).
 * - Errors: also SK_ERR_STATE in a forked child for a stream of a device opened before the fork,
 *   and for a CUDA stream being captured into a graph (waiting would end the capture).
 * - Threads: any, also while other threads queue launches on the stream.
 */
SK_API sk_status sk_stream_synchronize(sk_stream *stream);
/**
 * Whether every launch queued on `stream` (NULL: dev's default stream) has ended, without
 * waiting: *done is 1 then, and the first failure of those launches is returned once, as
 * sk_stream_synchronize returns it; 0 while some still run. It runs no kernel on the calling
 * thread (sk_stream_synchronize runs core 0's share of the launches it waits for there), so a
 * caller that polls it is never held by a kernel that does not return, and each call looks for
 * one: a launch past the device's deadline makes it return SK_ERR_HANG. On a CUDA device it
 * waits, as sk_stream_synchronize does.
 * - Errors: those of sk_stream_synchronize; SK_ERR_INCOMPATIBLE for a stream of another device.
 * - Threads: any, also while other threads queue launches on the stream.
 */
SK_API sk_status sk_stream_query(sk_device *dev, sk_stream *stream, int *done);
/**
 * Waits for the stream's work, then destroys it. A failure of that work is not returned:
 * synchronize first to see it. NULL: nothing; a second destroy is ignored, with a message.
 * - Threads: not while another thread uses the stream.
 */
SK_API void sk_stream_destroy(sk_stream *stream);

/*-*********************************************************************************************
*  Scopes
*
*  A scope collects kernels, in order, with their block dims and argument values; sk_finalize
*  plans them and builds the super kernel. Scope options, given to sk_scope_begin, choose how.
**********************************************************************************************/

/**
 * @options Scope options
 *
 * sk_scope_begin takes options in the vendor syntax `key=value:key=value` (NULL or "" for the
 * defaults). An item that is not `key=value`, an unknown key, a key given twice (an alias
 * counts as its key) and a value the key does not take are SK_ERR_INVALID_ARGUMENT naming the
 * key; items are separated by colons, so no value holds one. Every key given is shown in
 * sk_superkernel_explain.
 *
 * - `feed-sync-all=0|1` (default 0): idle cores take part in whole-core syncs. Accepted and
 *   reported; libsk's sk_sync_all is scoped to the kernel's own blocks.
 * - `stream-fusion=0|1` (default 0): kernels of several scope streams
 *   (sk_kernel_options.stream) in one super kernel. Each waits only for the previous kernel of
 *   its stream and for the events (sk_scope_record_event / sk_scope_wait_event) before it, so
 *   independent chains share the cores and overlap. Kernels that may run at the same time are
 *   placed on distinct cores where the device has them (the super kernel widens up to the
 *   device's cores for them), and sk_kernel_options.first_core / core_count pin a kernel
 *   where the caller knows better; explain shows each step's `first_unit` and `placement`.
 *   Without it a kernel on another stream than 0 is an error naming it.
 * - `strict-scope-check=bypass|abort` (default `bypass`): what to do with a kernel with hard
 *   cross-core sync on another core count than the kernels around it. `bypass` splits the scope
 *   before it (and before the next kernel that would change its count) into dispatches that one
 *   sk_launch runs in order; `abort` fails sk_finalize with SK_ERR_INCOMPATIBLE. Explain lists
 *   every dispatch and the reason of each split.
 * - `dcci-before-kernel-start=LIST` (default: no kernel): a whole-cache flush before these
 *   kernels (on each of their cores), and no per-access flush in their `sk_gm_*` accessors.
 * - `dcci-after-kernel-end=LIST` (alias `dcci-after-kernel-start`; default: no kernel): a
 *   whole-cache flush after these kernels, and no per-access flush.
 * - `dcci-disable-on-kernel=LIST` (default: no kernel): no cache maintenance for these kernels:
 *   no per-access flush, no flush around them (it wins over the two lists above). A kernel added
 *   with SK_KERNEL_FLAG_TILING_SINK in sk_kernel_options.flags always gets flushes before and
 *   after and no per-access flush, whatever the lists say.
 * - `debug-aic-num=N`, `debug-aiv-num=N` (0 to 65536; default: what the kernels need): force the
 *   super kernel's cube and vector core counts, in the ratios 1:0, 0:1, 1:1 or 1:2 its layout
 *   allows. Counts above what the kernels and the device allow are kept there, and explain says
 *   so; counts that do not fit the layout fail sk_finalize with SK_ERR_INCOMPATIBLE.
 * - `debug-sync-all=0|1` (default 0): a full barrier after every kernel (no overlap).
 * - `debug-dcci-all=0|1` (default 0): a whole-cache flush before and after every kernel, the
 *   disabled ones too (per-access flushes unchanged).
 * - `early-start=0|1` (default 1): honour the task-overlap calls (sk_set_next_task_start,
 *   sk_wait_pre_task_end) and, on CUDA, a PTX kernel's griddepcontrol.wait (programmatic
 *   dependent launch); with 0 every kernel waits at its start for the previous one's end.
 * - `profiling=0|1` (default 0): record, per core and per kernel, when the core reached the
 *   kernel, when its code started and ended, and its time in runtime waits ("Profiled launches"
 *   below).
 * - `block-local=LIST` (default: no kernel): these kernels are block-local to the kernel before
 *   them, as if added with SK_KERNEL_FLAG_BLOCK_LOCAL (the way to say so for the launches of a
 *   stream capture, which carry no options), with the same checks.
 * - `max-registers=N` (0, or 16 to 255; default: libsk's choice): CUDA only, the registers per
 *   thread the whole super kernel, sub-kernels included, is linked to use at most
 *   (-maxrregcount), 0 for no cap at all. libsk caps a link of cubins at the largest
 *   sub-kernel's count (at least 32); a PTX sub-kernel is compiled in the link, where its count
 *   is first known, so there libsk caps its own code alone at the largest count the link finds
 *   (the entry's .maxnreg); an LTO-IR sub-kernel's link has no cap. Fewer registers let more
 *   blocks run per SM and may spill; explain's `cuda_entry` gives `registers`, `stack_bytes`
 *   and `register_cap`. A super kernel compiled as one program (`whole-program`) is capped
 *   the same way as a whole, by its entry's .maxnreg.
 * - `whole-program=0|1` (default 1): CUDA only. A super kernel whose sub-kernels are all PTX
 *   (Triton's, nvcc's PTX of `__global__` kernels) is also joined into one PTX program with its
 *   entry and compiled by the driver's JIT at finalize, which inlines the sub-kernels instead of
 *   calling them (a link compiles each module on its own), so the entry takes about the
 *   registers the kernels take alone; it runs in place of the linked cubin where it compiles
 *   and fits as many blocks per SM. 0 keeps the linked cubin. Explain's `cuda_entry` says
 *   `compiled` (`whole program` or `linked`) and, linked, `why_linked`.
 * - `split-mode`, `preload-code`, `func-align` (any non-empty value; default: none): vendor
 *   tuning knobs, accepted and reported; no libsk device has them.
 *
 * A LIST is comma-separated kernel names (sk_kernel_options.name, or the symbol) or regular
 * expressions (ECMAScript) matched against the whole name, e.g. `.*` for all. Patterns are
 * matched in linear time; bounded repetition (`{n,m}`), a backslash before a digit
 * (back-references and `\0`) and empty entries are refused, and entries longer than 256 bytes
 * match as exact names only.
 *
 * What each device acts on: the host device on every key but `feed-sync-all`, `max-registers`,
 * `whole-program` and the vendor tuning keys. Explain shows the effect: `segments` (each dispatch's layout and
 * why the scope was split, from `strict-scope-check` and `debug-aic-num` / `debug-aiv-num`) and each step's
 * `cache` object (`per_access_flush`, `flush_before`, `flush_after` and the `rules` that
 * decided them). A CUDA device builds its entry from the same plan (`early-start`,
 * `debug-sync-all`, `stream-fusion`, `block-local` and the cache keys shape it); it accepts
 * `profiling=1` but
 * does not profile.
 */

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
  /**
   * Pins the sub-kernel's blocks to cores first_core .. first_core + core_count - 1 of its type
   * (groups, for a mixed kernel): block b runs on core first_core + b % core_count, so blocks
   * beyond core_count are multiplexed. 0 and 0: the planner places it (with stream fusion,
   * beside the kernels of other streams that may run at the same time; else from core 0). A
   * pin beyond the super kernel's cores widens a vector-only or cube-only super kernel up to
   * the device's cores. sk_add_kernel fails with SK_ERR_INVALID_ARGUMENT for core_count 0 with
   * first_core set; sk_finalize with SK_ERR_INCOMPATIBLE, naming the kernel and the field, for
   * a pin beyond the device's cores (or a mixed, hard-sync or debug-aic-num / debug-aiv-num
   * super kernel's, which cannot widen), a kernel that synchronises (sk_sync_all, cross-core
   * flags) on fewer cores than its block_dim, or a hard-sync kernel with first_core not 0.
   */
  uint32_t first_core;
  uint32_t core_count;
  /**
   * Arguments read by reference: bit i (i < 64) makes parameter i's value be read from the
   * address args[i] each time the sub-kernel is called (every launch, every block) instead of
   * copied by sk_add_kernel. An engine keeps what changes from launch to launch (a decode
   * step's token position) in memory and writes it there between launches: no
   * sk_superkernel_set_arg, no step index to keep. The address must stay valid while the
   * super kernel lives and hold a value of the parameter's type (an aggregate's bytes as C
   * lays them out). It is read as the kernel reads its other inputs: write it before queuing
   * the launch, or from an earlier sub-kernel of the same launch or run (each run of
   * sk_launch_repeat reads it again), never while a launch that reads it runs. On a CUDA device
   * the GPU reads it: memory it can read (sk_mem_alloc, or device, managed or page-locked
   * memory of the driver), written with sk_memcpy. sk_superkernel_set_arg of such a parameter
   * sets the address; a captured sk_launch records the address. sk_add_kernel fails with
   * SK_ERR_INVALID_ARGUMENT for a bit past the kernel's parameters, naming it; sk_finalize on a
   * CUDA device for an address the GPU cannot read, naming the kernel and the parameter.
   */
  uint64_t arg_refs;
  /**
   * The grid's shape, for a kernel that numbers its blocks in two or three dimensions (PTX that
   * reads %ctaid.y/z or %nctaid.y/z: Triton's tl.program_id(1), a __global__ kernel's
   * blockIdx.y): grid[0] x grid[1] x grid[2] blocks, x varying fastest, as a CUDA grid numbers
   * them; their product is block_dim. {0, 0, 0}: one dimension, block_dim blocks. Such a kernel
   * reads (blockIdx.x, blockIdx.y, blockIdx.z) = (b % grid[0], b / grid[0] % grid[1],
   * b / (grid[0] * grid[1])) for its block b. sk_add_kernel fails with SK_ERR_INVALID_ARGUMENT,
   * naming the kernel and the field, for a shape with a zero in it or whose product is not
   * block_dim, and for a kernel that reads a grid dimension beyond x without a shape (give
   * {block_dim, 1, 1} for a one-dimensional grid). The host's kernels number their blocks with
   * sk_block_idx() alone: a shape changes nothing there.
   */
  uint32_t grid[3];
} sk_kernel_options;

/**
 * The kernel's tiling data is produced on the device ("tiling sink"): it gets a whole-cache
 * flush before and after it, and no per-access flush.
 */
#define SK_KERNEL_FLAG_TILING_SINK 0x1u
/**
 * Block-local edge: this kernel (B) needs no barrier over all cores after the kernel before it
 * (A: the previous kernel of the scope, or of B's stream with stream fusion), because B's block
 * i touches (reads or writes) only memory that A's block i wrote or that no other block of A
 * touches: no read-after-write and no write-after-read across blocks (element-wise ops, norms by
 * row, epilogues). B's block i then starts once A's block i has ended, on the same core (on a
 * CUDA device the same block of the grid, after the block barrier every step has), without
 * waiting for A's other blocks; B is still after everything A waited for, and a kernel after B
 * without the flag waits for every block of both. A kernel that waits for A through an event
 * keeps waiting for all of A.
 * - Checked at sk_finalize, SK_ERR_INCOMPATIBLE naming both kernels and what differs: equal
 *   block_dim; the same core type, vector or cube (a mixed kernel's group spans several cores);
 *   the same placement (an unpinned B runs on A's cores; a pinned B must be pinned as A runs);
 *   the same dispatch (no split between them); no sk_scope_wait_event between them. A kernel that
 *   synchronises (sk_sync_all, cross-core flags) may be block-local; its blocks must then not be
 *   multiplexed on A's cores either.
 * - The first kernel of a scope, or of its stream, waits for nothing: the flag changes nothing
 *   there. debug-sync-all=1 keeps the barrier. Task overlap across the edge has nothing to
 *   overlap: B does not wait, A's sk_set_next_task_start lets nothing start, and the kernel after
 *   B waits for B at its start (its sk_wait_pre_task_end waits for nothing more).
 * - Scope option block-local=LIST says the same for kernels by name (a capture's launches).
 * - Explain shows each step's `edge` ("barrier" or "block-local"); `sk explain` marks it.
 */
#define SK_KERNEL_FLAG_BLOCK_LOCAL 0x2u

#define SK_KERNEL_OPTIONS_INIT                                        \
  {                                                                   \
    sizeof(sk_kernel_options), NULL, NULL, 0, 0, 0, 0, 0, { 0, 0, 0 } \
  }

/**
 * Starts a scope: the kernels added to it become one super kernel. options uses the vendor
 * syntax "key=value:key=value" (NULL or "" for defaults; the keys are the scope options above).
 * name (NULL or "": "superkernel") names the super kernel in explain, traces and messages.
 * - Errors: SK_ERR_INVALID_ARGUMENT for bad options, naming the key and the value.
 * - Ownership: *out is the caller's until sk_finalize consumes it or sk_scope_abort drops it.
 *   name and options are copied.
 * - Threads: any; the scope is then built by one thread at a time.
 */
SK_API sk_status sk_scope_begin(sk_device *dev, const char *name, const char *options, sk_scope **out);
/**
 * Adds a kernel running on block_dim blocks, 1 <= block_dim <= 2^24. args[i] points to the
 * value of parameter i (as in cuLaunchKernel; for an aggregate, to its bytes as C lays out the
 * struct), or with opts->arg_refs to where it is read at each call; args may be NULL for
 * kernels without parameters. opts may be NULL (the defaults of sk_kernel_options).
 * - Errors: SK_ERR_INVALID_ARGUMENT for block_dim out of range, args or an args[i] NULL where
 *   the signature has a parameter, opts->struct_size under 4, unknown opts->flags bits, an
 *   unknown opts->core_type, opts->stream above 63 or, without stream-fusion=1, other than 0;
 *   SK_ERR_INCOMPATIBLE for a kernel loaded on another device than the scope's; SK_ERR_STATE for
 *   a kernel whose module was unloaded.
 * - Ownership: the argument values and opts' strings are copied (pointer arguments as
 *   pointers: the memory they point to must live until the launches that use it have ended).
 * - Threads: one thread at a time per scope.
 */
SK_API sk_status sk_add_kernel(sk_scope *scope, sk_kernel *kernel, uint32_t block_dim, void *const *args,
                               const sk_kernel_options *opts);
/**
 * Stream fusion (scope option stream-fusion=1): records event `event` on scope stream `stream`,
 * after the kernels added to that stream so far. Each event id is recorded once per scope.
 * - Errors: SK_ERR_INVALID_ARGUMENT without stream-fusion=1, for a stream above 63, or for an
 *   event recorded before.
 * - Threads: one thread at a time per scope.
 */
SK_API sk_status sk_scope_record_event(sk_scope *scope, uint32_t stream, uint32_t event);
/**
 * Stream fusion: kernels added to `stream` after this call wait until every kernel before the
 * recording of `event` (recorded earlier in this scope) has ended.
 * - Errors: SK_ERR_INVALID_ARGUMENT without stream-fusion=1, for a stream above 63, or for an
 *   event not recorded yet.
 * - Threads: one thread at a time per scope.
 */
SK_API sk_status sk_scope_wait_event(sk_scope *scope, uint32_t stream, uint32_t event);
/**
 * Builds the super kernel. Consumes the scope, whether it succeeds or not.
 * - Errors: SK_ERR_STATE for a scope without kernels; SK_ERR_INCOMPATIBLE for kernels that
 *   cannot be planned together (a kernel that syncs its cores on more blocks than the device
 *   has cores, strict-scope-check=abort, core counts that do not fit the layout); on a CUDA
 *   device also SK_ERR_INCOMPATIBLE for a sub-kernel of fewer threads per block than the
 *   widest that cannot run on the block's first ones (a cubin's, part of a warp), more
 *   blocks that sync than are co-resident, a failed link, more shared memory per block than
 *   the GPU allows (the message names the sub-kernels and the bytes the GPU reserves in every
 *   block) or a call stack ptxas cannot bound without the `stack_bytes` device key,
 *   SK_ERR_UNSUPPORTED for a mixed
 *   kernel, SK_ERR_NOT_FOUND for a symbol the link cannot resolve and SK_ERR_DEVICE when the
 *   GPU fails.
 * - Ownership: *out is the caller's, to destroy with sk_superkernel_destroy before the device
 *   is closed. It keeps the kernels' code alive (their modules may be unloaded).
 * - Threads: one thread at a time per scope.
 */
SK_API sk_status sk_finalize(sk_scope *scope, sk_superkernel **out);
/**
 * Drops a scope that will not be finalized. NULL: nothing; a second abort is ignored, with a
 * message for sk_last_error().
 * - Threads: not while another thread builds the scope.
 */
SK_API void sk_scope_abort(sk_scope *scope);

/*-*********************************************************************************************
*  Launches
*
*  Launches are asynchronous: they queue work on a stream and return; the work runs in order
*  per stream, and to its end whether or not a host thread waits for it. Failures inside a
*  launch are returned by the next sk_stream_synchronize of its stream.
**********************************************************************************************/

/**
 * Queues one run of the super kernel on a stream (NULL: the default stream). Asynchronous.
 * - Errors: SK_ERR_INCOMPATIBLE for a stream of another device; SK_ERR_STATE in a forked child
 *   for a device opened before the fork; SK_ERR_DEVICE when the GPU refuses the launch.
 * - Threads: any.
 */
SK_API sk_status sk_launch(sk_superkernel *sk, sk_stream *stream);
/** The most runs one sk_launch_repeat may ask for. */
#define SK_LAUNCH_REPEAT_MAX 4194304u
/**
 * Queues up to n runs of the super kernel back to back (a decode loop of n steps without a host
 * round trip), stopping early after the run in which a kernel left *stop_flag nonzero (an
 * end-of-sequence token). stop_flag NULL: all n runs. The flag is read once after each run but
 * the last, when every write of that run is visible (as between two sk_launch calls); libsk never
 * writes it, so a flag already set at the launch stops the loop after its first run. Each run is
 * a launch of its own for ordering, sk_superkernel_set_arg and the reports (a failure names the
 * run); a failure ends the loop and is returned by the next sk_stream_synchronize, as for
 * sk_launch. With profiling=1, sk_superkernel_profile gives the last run's records.
 * On the host device the n runs are one task (each core passes a barrier between two runs, and
 * the last core to arrive reads the flag for all of them); the flag is host memory, like all of
 * that device's memory, and a host thread may also set it (with an atomic store) to end the loop.
 * On a CUDA device the n runs are one kernel launch (its blocks pass a grid barrier between two
 * runs, whose last block to arrive reads the flag for all of them); the flag is memory the GPU
 * can read: sk_mem_alloc, or device, managed or page-locked memory of the CUDA driver. A hang
 * report there names the step, block and sync point, not the run.
 * - Errors: SK_ERR_INVALID_ARGUMENT for n 0 or above SK_LAUNCH_REPEAT_MAX, a stop_flag not
 *   aligned to 4 bytes, or on a CUDA device a stop_flag the GPU cannot read; SK_ERR_STATE on a
 *   stream being captured (sk_stream_begin_capture), whose capture it invalidates; otherwise as
 *   sk_launch.
 * - Ownership: *stop_flag is the caller's; it must stay valid until the launch has ended.
 * - Threads: any.
 */
SK_API sk_status sk_launch_repeat(sk_superkernel *sk, uint32_t n, const uint32_t *stop_flag, sk_stream *stream);
/**
 * Queues one kernel on its own, unfused (the baseline a super kernel replaces). Asynchronous;
 * the argument values are copied.
 * - Errors: SK_ERR_INVALID_ARGUMENT for block_dim outside [1, 2^24] or args missing as in
 *   sk_add_kernel; SK_ERR_INCOMPATIBLE for a stream of another device or a kernel that cannot
 *   run on block_dim blocks; SK_ERR_STATE for a kernel whose module was unloaded, or in a forked
 *   child.
 * - Ownership: the launch keeps the kernel's code alive until it has run.
 * - Threads: any.
 */
SK_API sk_status sk_launch_kernel(sk_kernel *kernel, uint32_t block_dim, void *const *args, sk_stream *stream);
/**
 * sk_launch_kernel of grid[0] x grid[1] x grid[2] blocks (grid: three extents), numbered as
 * sk_kernel_options.grid says: the unfused launch of a kernel that numbers its blocks in more
 * than one dimension (which sk_launch_kernel refuses with SK_ERR_INVALID_ARGUMENT, naming it).
 * - Errors: as sk_launch_kernel; SK_ERR_INVALID_ARGUMENT for grid NULL, an extent of 0, or more
 *   than 2^24 blocks in all.
 * - Ownership, threads: as sk_launch_kernel.
 */
SK_API sk_status sk_launch_kernel_grid(sk_kernel *kernel, const uint32_t *grid, void *const *args,
                                       sk_stream *stream);
/**
 * Rebinds argument `index` of sub-kernel `step` (0-based, in sk_add_kernel order) for launches
 * queued after this call. Launches of this super kernel already queued complete first with the
 * old value (the call waits for them). For an argument read by reference
 * (sk_kernel_options.arg_refs), `value` is the address to read it from instead, as args[i]
 * was; an engine that keeps the value there needs no rebinding at all.
 * - Errors: SK_ERR_INVALID_ARGUMENT for a step or an index that does not exist, or value NULL;
 *   on a CUDA device also for an address of an argument read by reference that the GPU cannot
 *   read.
 * - Ownership: the value is copied (an argument read by reference: the address is kept).
 * - Threads: any; order it against other threads' launches of this super kernel to know which
 *   value they get.
 */
SK_API sk_status sk_superkernel_set_arg(sk_superkernel *sk, uint32_t step, uint32_t index, const void *value);
/**
 * The plan as JSON (steps, kernel names, block dims, cores, sync points, device-API use). On
 * the host device its "execution" object says how the executor runs it: "barrier" ("central",
 * or "tree" with "barrier_group_cores" and "barrier_groups"), "step_loop" ("chain", the
 * leanest, or "general"), "completes_at" ("last release" or "core reports"), "core0" and
 * "core_stack_kib" (the device keys core0 and stack_kb as the device resolved them) and "calls"
 * (how many kernels it calls "direct", by "register map" and through "libffi", the slowest). On a
 * CUDA device its "cuda_entry" object gives the linked entry's resources as its cubin says:
 * "registers" and "local_bytes" / "stack_bytes" per thread, "static_shared_bytes" and
 * "dynamic_shared_bytes" per block, the driver's "blocks_per_sm", where the steps' arguments
 * are ("arguments": "parameters", or "buffer" when their "argument_bytes" exceed the driver's
 * parameter space), and "step_loop": the synchronisation instructions of the entry's step
 * loop ("block_barriers", "releases", "acquires", "full_fences", "polls", "table_loads"), each
 * counted once in its code, and how many steps end at one block barrier ("one_barrier_steps":
 * nothing waits for their arrival, and their wait, if any, is done at their start).
 * Its integer "schema_version" names the layout; sk_explain.schema.json (a JSON Schema, draft
 * 2020-12, installed beside this header) describes every key of that version. The JSON is valid
 * UTF-8 whatever bytes names hold: a byte that is not UTF-8 is the four characters \xNN (their
 * backslash escaped in the JSON text), as in sk_last_error().
 * Writes the JSON and its terminating NUL to buf; *needed (if not NULL) receives that size.
 * A size query (buf NULL, cap 0, needed not NULL) returns SK_OK.
 * - Errors: SK_ERR_INVALID_ARGUMENT for a cap too small (with *needed set; a buf that is not NULL
 *   with cap 0 is one) or buf NULL with a cap.
 * - Ownership: buf is the caller's.
 * - Threads: any.
 */
SK_API sk_status sk_superkernel_explain(sk_superkernel *sk, char *buf, size_t cap, size_t *needed);
/**
 * Waits for its queued launches, then destroys it. NULL: nothing; a second destroy is ignored,
 * with a message for sk_last_error().
 * - Threads: not while another thread uses the super kernel.
 */
SK_API void sk_superkernel_destroy(sk_superkernel *sk);

/*-*********************************************************************************************
*  Events
*
*  An event marks a point in a stream's order, as a CUDA event does: sk_event_record places it
*  after the launches queued on a stream so far, sk_stream_wait_event makes a stream's later
*  launches start after them. During a capture they are how the captured streams are ordered
*  (see "Capture").
**********************************************************************************************/

/**
 * An event of the device, not yet recorded.
 * - Ownership: *out is the caller's, to destroy with sk_event_destroy before the device is
 *   closed.
 * - Threads: any.
 */
SK_API sk_status sk_event_create(sk_device *dev, sk_event **out);
/**
 * Destroys the event; waits already made on it stay. NULL: nothing; a second destroy is ignored,
 * with a message for sk_last_error().
 * - Threads: not while another thread uses the event.
 */
SK_API void sk_event_destroy(sk_event *event);
/**
 * Records the event on `stream` (NULL: the default stream) after the launches queued on it so
 * far; a later record replaces the earlier one for later waits. On a capturing stream it is
 * recorded in the capture instead.
 * - Errors: SK_ERR_INCOMPATIBLE for a stream of another device; SK_ERR_STATE on a stream whose
 *   capture was invalidated; SK_ERR_DEVICE when the GPU refuses it.
 * - Threads: any.
 */
SK_API sk_status sk_event_record(sk_event *event, sk_stream *stream);
/**
 * Launches queued on `stream` (NULL: the default stream) after this call start after those
 * queued before the event's last record; it does not block the caller. An event never recorded
 * is no wait. A host device runs the launches of all its streams in the order they are queued,
 * so there a wait holds already; a CUDA device makes it cuStreamWaitEvent. An event recorded in
 * an open capture joins `stream` to that capture (see "Capture").
 * - Errors: SK_ERR_INCOMPATIBLE for a stream of another device; SK_ERR_STATE as "Capture"
 *   describes, and for an event last recorded in a capture that has ended; SK_ERR_DEVICE when
 *   the GPU refuses it.
 * - Threads: any.
 */
SK_API sk_status sk_stream_wait_event(sk_stream *stream, sk_event *event);

/*-*********************************************************************************************
*  Capture
*
*  Stream capture, as CUDA's: between sk_stream_begin_capture and sk_stream_end_capture the
*  launches on a stream are recorded instead of run, and the recording becomes a super kernel.
*  sk_launch_kernel records a step as sk_add_kernel would add it (its symbol as name, the
*  kernel's core type, its arguments copied); sk_launch of a super kernel records its steps
*  inline, each with its options (name, core type, flags, stream, core pin) and its current
*  argument values; the super kernel is the one the same sk_add_kernel calls on a scope with the
*  capture's options would have built. Other streams and threads run normally meanwhile.
*
*  Several streams: a stream that waits (sk_stream_wait_event) on an event recorded on a
*  capturing stream joins that capture, as in CUDA; each joined stream is a scope stream
*  (stream-fusion=1 is needed: joining fails otherwise) and the events become
*  sk_scope_record_event / sk_scope_wait_event. Before end-capture the origin stream must have
*  waited on an event recorded on each joined stream after its last launch (joined it back).
*
*  What cannot be captured fails with SK_ERR_STATE naming the call and invalidates the capture,
*  which then records nothing more, and end-capture builds nothing: sk_stream_synchronize and
*  sk_stream_query of a capturing stream, sk_device_synchronize and sk_memcpy on its device, a
*  launch of a kernel or super kernel of another device on it, sk_launch_repeat on it (a stop
*  flag's runs are known only on the device), sk_superkernel_set_arg of a super kernel the
*  capture recorded, a wait on an event of another capture (or none) and the destruction of a
*  joined stream. A launch that fails its own checks (block_dim, arguments, a kernel that
*  synchronises its blocks on more than the device can run at once) fails at the call as outside
*  a capture, is not recorded and leaves the capture valid. Destroying the origin stream drops
*  its capture.
**********************************************************************************************/

/**
 * Starts capturing `stream` into a super kernel named `name` (NULL or "": "superkernel"), with
 * scope options `options` (the syntax and keys of sk_scope_begin). Capture needs a stream made
 * by sk_stream_create: the default stream is shared by every user of the device.
 * - Errors: SK_ERR_INVALID_ARGUMENT for stream NULL or bad options (naming the key);
 *   SK_ERR_STATE for a stream already capturing (or joined to a capture).
 * - Ownership: name and options are copied.
 * - Threads: any; launches another thread makes on the stream meanwhile are captured too.
 */
SK_API sk_status sk_stream_begin_capture(sk_stream *stream, const char *name, const char *options);
/**
 * Ends the capture begun on `stream` and builds the super kernel (as sk_finalize builds a
 * scope). The capture ends whether it succeeds or not; its streams run launches again.
 * - Errors: SK_ERR_INVALID_ARGUMENT if out is NULL (the capture stays open); SK_ERR_STATE for a
 *   stream that is not capturing or only joined to a capture (end it on its origin stream), a
 *   capture that was invalidated (the message names the call), a joined stream not joined back
 *   (naming it), or nothing recorded; otherwise those of sk_finalize.
 * - Ownership: *out is the caller's, as sk_finalize's.
 * - Threads: any.
 */
SK_API sk_status sk_stream_end_capture(sk_stream *stream, sk_superkernel **out);
/**
 * Ends the capture begun on `stream`, like sk_stream_end_capture, and instead of building a
 * super kernel rebinds `sk`'s argument values to those captured, in place (as
 * sk_superkernel_set_arg does: launches already queued complete first with the old values; the
 * call waits for them). The capture must match `sk` step for step: the same kernels, names,
 * block dims, core types, flags, core pins, scope streams and events, and the same scope
 * options (the keys as given, in order). The capture ends whether it succeeds or not. CUDA's
 * cudaGraphExecUpdate is the model.
 * - Errors: SK_ERR_INCOMPATIBLE when the capture does not match, naming the first difference
 *   ("step 3: kernel 'b' where 'a' was captured", "14 steps captured, 13 in 'decode'"), or for a
 *   stream of another device (the capture stays open then): `sk` is unchanged; SK_ERR_STATE as
 *   sk_stream_end_capture, and as sk_superkernel_set_arg when another open capture recorded
 *   `sk`.
 * - Threads: any; order it against other threads' launches of `sk`, as sk_superkernel_set_arg.
 */
SK_API sk_status sk_superkernel_update_from_capture(sk_superkernel *sk, sk_stream *stream);

/*-*********************************************************************************************
*  Profiling
*
*  What the cores of a super kernel built with the scope option profiling=1 did in its last
*  completed launch, as records or as a Chrome trace.
**********************************************************************************************/

/**
 * @options Profiled launches
 *
 * A super kernel built with `profiling=1` records, on every launch, one sk_profile_record per
 * (kernel, core that ran it): `ready_ns` (the core reached the kernel and began waiting for the
 * previous one), `start_ns` and `end_ns` (its code ran), `sync_wait_ns` (time in runtime waits
 * while it ran: sk_sync_all, sk_wait_pre_task_end, cross-core flags), in CLOCK_MONOTONIC
 * nanoseconds. After sk_stream_synchronize, sk_superkernel_profile returns the last completed
 * launch (a launch that ended in SK_ERR_HANG does not replace it), and
 * sk_superkernel_write_trace writes it as Chrome trace-event JSON: open it in Perfetto
 * (ui.perfetto.dev) or chrome://tracing to see one track per core, one slice per kernel (with
 * its step, blocks and waits) and a `wait` slice where a core waited for the previous kernel.
 * Without `profiling=1` launches record nothing and pay one predictable branch per hook. Only
 * the host device profiles.
 */

/**
 * One core's run of one sub-kernel in a profiled launch (scope option profiling=1). Times are
 * CLOCK_MONOTONIC nanoseconds. Later versions append fields; struct_size says how much of the
 * record the caller's sk.h has (see sk_superkernel_profile).
 */
typedef struct sk_profile_record {
  uint32_t struct_size; /**< see sk_superkernel_profile: the caller sets it in records[0] */
  uint32_t step;        /**< sub-kernel index, in sk_add_kernel order */
  uint32_t core;        /**< core of the super kernel that ran it */
  uint32_t core_type;   /**< 0: vector core, 1: cube core */
  uint32_t blocks;      /**< blocks of the sub-kernel this core ran */
  uint64_t ready_ns;    /**< the core reached the sub-kernel and began waiting for its inputs */
  uint64_t start_ns;    /**< the sub-kernel's code started on this core */
  uint64_t end_ns;      /**< it returned on this core */
  /** time inside runtime waits between start and end (sk_sync_all, cross-core flags, the wait
   *  of sk_wait_pre_task_end); the wait before start is start_ns - ready_ns */
  uint64_t sync_wait_ns;
} sk_profile_record;

/**
 * Profile of the last completed launch of a super kernel built with profiling=1: one record
 * per (sub-kernel, core that ran it), ordered by step then core. Call it after
 * sk_stream_synchronize; a launch that ended in SK_ERR_HANG does not replace the profile.
 * Same buffer protocol as sk_superkernel_explain, counted in records: a size query (records
 * NULL, cap 0, count not NULL) returns SK_OK and sets *count; records not NULL with cap 0 is a
 * cap too small.
 *
 * Before the call set records[0].struct_size to sizeof(sk_profile_record): libsk reads it from
 * the first record only and takes it as the size of every record of the array (its stride). It
 * writes, in each record, the fields that size covers and that it knows, and sets struct_size
 * to the same value; bytes of a larger record past what libsk knows are left as they were.
 * - Errors: SK_ERR_INVALID_ARGUMENT for a records[0].struct_size under the first version's
 *   record (every field above), not a multiple of 8 or over 4096 (an uninitialised one, most
 *   likely), for records NULL with a cap, or for a cap too small (with *count set);
 *   SK_ERR_STATE if profiling is off or no launch has completed; SK_ERR_UNSUPPORTED on devices
 *   that do not profile (CUDA devices).
 * - Ownership: records is the caller's.
 * - Threads: any, also while launches of the same super kernel run.
 */
SK_API sk_status sk_superkernel_profile(sk_superkernel *sk, sk_profile_record *records, size_t cap, size_t *count);
/**
 * Writes the last completed launch's profile to `path` (created or replaced) as Chrome
 * trace-event JSON, loadable in Perfetto and chrome://tracing: one process per super kernel,
 * one track per core, one complete slice per sub-kernel named after it (args: step, blocks,
 * core type, waits) and a "wait" slice where the core waited for the previous sub-kernel; times
 * in microseconds from the launch's first ready time. Its "otherData" says which libsk wrote it
 * ("libsk_version", "trace_format_version"). Names are escaped as in sk_superkernel_explain.
 * - Errors: SK_ERR_STATE and SK_ERR_UNSUPPORTED as sk_superkernel_profile;
 *   SK_ERR_INVALID_ARGUMENT if path is NULL or empty or cannot be written (the message names it).
 * - Ownership: path is read during the call only.
 * - Threads: any, also while launches of the same super kernel run.
 */
SK_API sk_status sk_superkernel_write_trace(sk_superkernel *sk, const char *path);

#ifdef __cplusplus
}
#endif

#endif /* SK_H */
