// A linked super kernel (or single-kernel entry) loaded on a device, with what its launches
// need: the sync buffer (arrival counters and the launch epoch, which the device advances;
// reset only after a sync reported a hang) and its hang report, the argument slots (host copy, and a device buffer when they exceed the parameter space), the
// grid, and an event that orders its launches across streams (they share the counters).
#pragma once
#include <sk.h>

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "cuda/cuda_device.hpp"
#include "cuda/superkernel_build.hpp"

namespace sk::cuda {

// Shared memory per block a function may use without opting in (every sm_70+ GPU).
constexpr uint32_t kDefaultSharedLimit = 48 * 1024;

// What one thread and one block of the linked entry use, as its cubin says (the .nv.info
// attributes of the entry and the size of .nv.shared.<entry>): sk_superkernel_explain's
// "cuda_entry".
struct EntryResources {
  std::string entry;                   // the entry's symbol
  uint32_t sm = 0;                     // SASS architecture (90: sm_90)
  uint32_t registers = 0;              // per thread
  uint32_t local_bytes = 0;            // per-thread local memory frame (EIATTR_FRAME_SIZE)
  uint32_t stack_bytes = 0;            // per-thread call stack its launches get (BuiltImage::stack_bytes)
  uint32_t static_shared = 0;          // per block
  uint32_t dynamic_shared = 0;         // per block, passed by each launch
  StepLoopCode step_loop;              // the synchronisation in its step loop
  ArgSource args = ArgSource::Params;  // where its argument slots are
  uint32_t register_cap = 0;           // BuiltImage::register_cap, or program_register_cap
  // It runs as one program the driver's JIT compiled (BuiltImage::program_ptx): registers and
  // local_bytes are then the driver's figures, `linked_registers` the linked cubin's.
  bool whole_program = false;
  uint32_t linked_registers = 0;
  std::string why_linked;  // BuiltImage::why_linked, or why the JIT's program is not used
};

class LinkedProgram {
 public:
  // Loads `image` on `device`; computes the co-resident block limit (occupancy x SMs). `id`
  // names it in hang reports (CudaDevice::register_name).
  static sk_status load(const std::shared_ptr<CudaDevice> &device, const BuiltImage &image, const std::string &name,
                        size_t steps, uint64_t id, std::unique_ptr<LinkedProgram> *out);
  ~LinkedProgram();

  // Blocks that can be resident at once: the most a cooperative launch may start.
  uint32_t max_coresident() const { return max_coresident_; }
  uint32_t occupancy_per_sm() const { return occupancy_; }
  uint32_t threads() const { return threads_; }                  // per block: the widest sub-kernel's
  const std::vector<uint32_t> &table() const { return table_; }  // the step table it writes
  uint32_t registers() const { return registers_; }
  const EntryResources &resources() const { return resources_; }
  size_t slot_count() const { return slots_.size(); }  // the argument slots of its steps

  // Replaces the step table (the image's, of the plan it was linked for) by one of the same
  // size: a re-plan's placement of the same steps. Before the first launch, which writes it.
  sk_status set_table(std::vector<uint32_t> table);
  // Sets the argument slots and the grid; `cooperative`: launched with
  // CU_LAUNCH_ATTRIBUTE_COOPERATIVE (all blocks co-resident: needed by any in-kernel wait).
  sk_status configure(std::vector<uint64_t> slots, uint32_t grid, bool cooperative);
  // Queues one launch on `stream` that runs the entry's steps up to `runs` times, stopping
  // after a run that left the u32 at device address `stop` nonzero (0: no early stop); on a
  // stream being captured into a CUDA graph (cuStreamBeginCapture), captures the kernel launch
  // alone (see launch_captured).
  sk_status launch(CUstream stream, const char *call, uint32_t runs = 1, CUdeviceptr stop = 0);
  // Rebinds `count` slots from `first` for later launches (waits for queued launches in
  // buffer mode, whose buffer the next launch then writes on its own stream; once a launch was
  // captured, the buffer is written at once, for the graph's replays to read).
  sk_status set_slots(size_t first, const uint64_t *values, size_t count);
  // Copies `count` slots from `first` (in range) into `out`: the values later launches get.
  void read_slots(size_t first, size_t count, uint64_t *out);
  // Waits for every launch queued so far.
  sk_status wait(const char *call);

 private:
  LinkedProgram() = default;
  // What the next launch reads that the host writes (the sync buffer's zeros, the changed
  // argument slots), queued on `stream`.
  sk_status write_state(CUstream stream, const char *call);
  // The launch on a stream being captured: waits for earlier launches, writes the state on
  // libsk's own stream and waits for it, then captures the kernel launch.
  sk_status launch_captured(CUstream stream, const char *call, uint32_t runs, CUdeviceptr stop);
  sk_status launch_kernel(CUstream stream, const char *call, uint32_t runs, CUdeviceptr stop);
  // Compiles image.program_ptx with the driver's JIT and runs that in place of the linked
  // cubin where it compiles, its static shared memory is the linked entry's (the dynamic
  // shared base, which the entry's padding aligned, must not move), it runs the block's threads
  // and as many blocks fit on an SM; else says why not (EntryResources::why_linked).
  void load_program(const BuiltImage &image, const char *call);
  // What `fn` gets as the entry of this program's launches (threads_, dynamic_shared_): its
  // opt-in to dynamic shared memory past 48 KiB, its most threads per block and registers, and
  // the blocks of it that fit on an SM (0 where it runs fewer threads than a block has).
  struct Fit {
    int max_threads = 0, registers = 0, blocks = 0;
  };
  sk_status measure(CUfunction fn, const BuiltImage &image, const char *call, Fit *out) const;
  std::shared_ptr<CudaDevice> device_;
  std::string name_;
  CUmodule module_ = nullptr;
  CUfunction function_ = nullptr;
  // The sync buffer, then this super kernel's hang report (report_), zeroed together, then the
  // step table (table_offset_): one allocation.
  CUdeviceptr sync_ = 0, report_ = 0, args_buffer_ = 0;
  uint64_t id_ = 0;
  size_t args_buffer_bytes_ = 0, sync_bytes_ = 0, table_offset_ = 0;
  CUevent last_ = nullptr;
  CUstream last_stream_ = nullptr;
  bool launched_ = false;
  ArgSource source_ = ArgSource::Params;
  uint32_t threads_ = 0, grid_ = 1, max_coresident_ = 0, occupancy_ = 0, registers_ = 0;
  uint32_t dynamic_shared_ = 0;  // bytes each launch passes
  EntryResources resources_;
  bool cooperative_ = true;
  bool captured_ = false;  // a launch went into a CUDA graph
  // What the next launch writes first, on its own stream (a legacy-stream write would not be
  // ordered before a launch on a non-blocking stream): the sync buffer's zeros (once) and
  // the argument slots [dirty_begin_, dirty_end_) in buffer mode, and the step table (once).
  bool sync_zeroed_ = false, table_written_ = false;
  std::vector<uint32_t> table_;
  size_t dirty_begin_ = 0, dirty_end_ = 0;
  std::vector<uint64_t> slots_;
  std::mutex mutex_;
};

}  // namespace sk::cuda
