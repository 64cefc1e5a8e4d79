#include "cuda/linked_program.hpp"

#include <algorithm>
#include <cstring>

#include "common/error.hpp"
#include "cuda/diagnostic_dump.hpp"

namespace sk::cuda {

sk_status LinkedProgram::load(const std::shared_ptr<CudaDevice> &device, const BuiltImage &image,
                              const std::string &name, size_t steps, uint64_t id,
                              std::unique_ptr<LinkedProgram> *out) {
  std::unique_ptr<LinkedProgram> p(new LinkedProgram());
  p->device_ = device;
  p->name_ = name;
  p->threads_ = image.threads;
  p->dynamic_shared_ = image.dynamic_shared;
  p->source_ = image.args;
  const elf::CubinFunction *fn = image.info.find(image.entry);
  if (!fn)
    return fail(SK_ERR_DEVICE, "super kernel '%s': the linked cubin has no entry '%s'", name.c_str(),
                image.entry.c_str());
  p->resources_ = {image.entry,       image.info.sm,       fn->registers,        fn->frame_size,
                   image.stack_bytes, image.static_shared, image.dynamic_shared, step_loop_code(image.ptx),
                   image.args,        image.register_cap};
  p->resources_.why_linked = image.why_linked;
  const DriverApi &a = device->api();
  const char *call = "sk_finalize";
  ContextScope ctx(*device, call);
  if (ctx.status() != SK_OK) return ctx.status();
  // An application may finalize while its thread captures a stream in global mode: these
  // calls (a load, allocations, a limit) are not part of its graph, and must not end it.
  RelaxedCapture relaxed(a);
  dump_image(id, name, ".cubin", image.cubin->data(), image.cubin->size());
  if (!image.program_ptx.empty()) dump_image(id, name, ".ptx", image.program_ptx.data(), image.program_ptx.size());
  if (sk_status st = device->reserve_stack(image.stack_bytes, call, name); st != SK_OK) return st;
  if (sk_status st = device->check(a.cuModuleLoadData(&p->module_, image.cubin->data()), call,
                                   ("cuModuleLoadData of super kernel '" + name + "'").c_str());
      st != SK_OK)
    return st;
  if (sk_status st = device->check(a.cuModuleGetFunction(&p->function_, p->module_, image.entry.c_str()), call,
                                   ("cuModuleGetFunction '" + image.entry + "'").c_str());
      st != SK_OK)
    return st;
  Fit fit;
  if (sk_status st = p->measure(p->function_, image, call, &fit); st != SK_OK) return st;
  p->registers_ = (uint32_t)fit.registers;
  if (fit.max_threads > 0 && (uint32_t)fit.max_threads < image.threads)
    return fail(SK_ERR_INCOMPATIBLE,
                "super kernel '%s': %u threads per block, but with %d registers per thread %s runs at most %d",
                name.c_str(), image.threads, fit.registers, device->name().c_str(), fit.max_threads);
  p->occupancy_ = (uint32_t)fit.blocks;
  p->max_coresident_ = (uint32_t)fit.blocks * device->multiprocessors();
  if (p->max_coresident_ == 0)
    return fail(SK_ERR_INCOMPATIBLE,
                "super kernel '%s': not one block of %u threads fits on an SM of %s (%d registers)", name.c_str(),
                image.threads, device->name().c_str(), fit.registers);
  if (!image.program_ptx.empty()) p->load_program(image, call);
  const SyncLayout layout = sync_layout(steps);
  p->sync_bytes_ = layout.bytes;
  p->table_offset_ = layout.table;
  p->table_ = image.table;
  const size_t bytes = layout.table + 4 * p->table_.size();
  if (sk_status st = device->check(a.cuMemAlloc(&p->sync_, bytes), call, "cuMemAlloc (sync buffer and step table)");
      st != SK_OK)
    return st;
  p->report_ = p->sync_ + layout.report;
  p->id_ = id;
  device->add_report(id, p->sync_, steps);
  if (sk_status st = device->check(a.cuEventCreate(&p->last_, CU_EVENT_DISABLE_TIMING), call, "cuEventCreate");
      st != SK_OK)
    return st;
  *out = std::move(p);
  return SK_OK;
}

sk_status LinkedProgram::measure(CUfunction fn, const BuiltImage &image, const char *call, Fit *out) const {
  const DriverApi &a = device_->api();
  // Past 48 KiB of static plus dynamic shared memory a launch needs the function's opt-in.
  if (image.static_shared + image.dynamic_shared > kDefaultSharedLimit) {
    const std::string what = "cuFuncSetAttribute (" + std::to_string(image.dynamic_shared) +
                             " bytes of dynamic shared memory, " + std::to_string(image.static_shared) + " static)";
    const int dynamic = (int)image.dynamic_shared;
    if (sk_status st = device_->check(
            a.cuFuncSetAttribute(fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, dynamic), call, what.c_str());
        st != SK_OK)
      return st;
  }
  a.cuFuncGetAttribute(&out->max_threads, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, fn);
  a.cuFuncGetAttribute(&out->registers, CU_FUNC_ATTRIBUTE_NUM_REGS, fn);
  if (out->max_threads > 0 && (uint32_t)out->max_threads < threads_) return SK_OK;  // no block: 0 per SM
  return device_->check(
      a.cuOccupancyMaxActiveBlocksPerMultiprocessor(&out->blocks, fn, (int)threads_, dynamic_shared_), call,
      "cuOccupancyMaxActiveBlocksPerMultiprocessor");
}

void LinkedProgram::load_program(const BuiltImage &image, const char *call) {
  const DriverApi &a = device_->api();
  char log[2048] = "";
  // Line tables from the modules' `.loc`s, as Triton's own compile (ptxas -lineinfo) makes them.
  int options[] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES, CU_JIT_GENERATE_LINE_INFO};
  void *values[] = {log, reinterpret_cast<void *>(uintptr_t{sizeof log - 1}),
                    reinterpret_cast<void *>(uintptr_t{1})};
  CUmodule module = nullptr;
  const CUresult r = a.cuModuleLoadDataEx(&module, image.program_ptx.c_str(), 3, options, values);
  if (r != CUDA_SUCCESS) {
    std::string first(log, strnlen(log, sizeof log));
    first = first.substr(0, first.find('\n'));
    resources_.why_linked = "the driver's JIT did not compile it as one program (" + a.describe(r) +
                            (first.empty() ? ")" : "): " + first);
    return;
  }
  // The one program must be launchable as the linked entry is, with as many blocks per SM.
  CUfunction fn = nullptr;
  int shared = -1, linked_shared = -1, local = 0;
  Fit fit;
  std::string why;
  if (a.cuModuleGetFunction(&fn, module, image.entry.c_str()) != CUDA_SUCCESS) {
    why = "the driver's JIT compiled it as one program without the entry '" + image.entry + "'";
  } else if (measure(fn, image, call, &fit) != SK_OK) {
    why = std::string("compiled as one program, it did not say how it fits: ") + last_error();
  } else {
    a.cuFuncGetAttribute(&shared, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, fn);
    a.cuFuncGetAttribute(&linked_shared, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, function_);
    a.cuFuncGetAttribute(&local, CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES, fn);
    const std::string as_one = "compiled as one program (" + std::to_string(fit.registers) + " registers), ";
    if (shared != linked_shared)
      why = as_one + "its static shared memory is " + std::to_string(shared) +
            " bytes where the linked entry's is " + std::to_string(linked_shared) +
            " (the dynamic shared base would move)";
    else if (fit.max_threads > 0 && (uint32_t)fit.max_threads < threads_)
      why = as_one + "it runs at most " + std::to_string(fit.max_threads) + " threads per block";
    else if ((uint32_t)fit.blocks < occupancy_)
      why = as_one + std::to_string(fit.blocks) + " blocks fit on an SM where " + std::to_string(occupancy_) +
            " of the linked entry (" + std::to_string(resources_.registers) + " registers) do";
  }
  if (!why.empty()) {
    a.cuModuleUnload(module);
    resources_.why_linked = why;
    return;
  }
  a.cuModuleUnload(module_);
  module_ = module;
  function_ = fn;
  resources_.whole_program = true;
  resources_.linked_registers = resources_.registers;
  resources_.registers = registers_ = (uint32_t)fit.registers;
  resources_.local_bytes = (uint32_t)local;
  resources_.register_cap = image.program_register_cap;
  resources_.why_linked.clear();
  occupancy_ = (uint32_t)fit.blocks;
  max_coresident_ = occupancy_ * device_->multiprocessors();
}

LinkedProgram::~LinkedProgram() {
  if (!device_) return;
  const DriverApi &a = device_->api();
  if (report_) device_->remove_report(id_);  // an unread hang goes with it
  ContextScope ctx(*device_, "sk_superkernel_destroy", true);
  if (last_) {
    a.cuEventSynchronize(last_);
    a.cuEventDestroy(last_);
  }
  if (sync_) a.cuMemFree(sync_);
  if (args_buffer_) a.cuMemFree(args_buffer_);
  if (module_) a.cuModuleUnload(module_);
}

sk_status LinkedProgram::set_table(std::vector<uint32_t> table) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (table.size() != table_.size() || table_written_)
    return fail(SK_ERR_STATE, "super kernel '%s': the step table (%zu words) cannot be replaced by %zu words%s",
                name_.c_str(), table_.size(), table.size(), table_written_ ? " after a launch" : "");
  table_ = std::move(table);
  return SK_OK;
}

sk_status LinkedProgram::configure(std::vector<uint64_t> slots, uint32_t grid, bool cooperative) {
  std::lock_guard<std::mutex> lock(mutex_);
  const DriverApi &a = device_->api();
  if (slots.empty()) slots.push_back(0);  // the parameter array is never empty
  if (source_ == ArgSource::Buffer) {
    const size_t bytes = slots.size() * 8;
    if (bytes > args_buffer_bytes_) {
      if (args_buffer_) a.cuMemFree(args_buffer_);
      args_buffer_ = 0;
      args_buffer_bytes_ = 0;
      if (sk_status st = device_->check(a.cuMemAlloc(&args_buffer_, bytes), "sk_finalize", "cuMemAlloc (arguments)");
          st != SK_OK)
        return st;
      args_buffer_bytes_ = bytes;
    }
    dirty_begin_ = 0;
    dirty_end_ = slots.size();
  }
  slots_ = std::move(slots);
  grid_ = grid;
  cooperative_ = cooperative;
  return SK_OK;
}

sk_status LinkedProgram::launch(CUstream stream, const char *call, uint32_t runs, CUdeviceptr stop) {
  const DriverApi &a = device_->api();
  ContextScope ctx(*device_, call);
  if (ctx.status() != SK_OK) return ctx.status();
  std::lock_guard<std::mutex> lock(mutex_);
  int capture = 0;
  if (sk_status st = device_->check(a.cuStreamIsCapturing(stream, &capture), call, "cuStreamIsCapturing");
      st != SK_OK)
    return st;
  const bool captured = capture != CU_STREAM_CAPTURE_STATUS_NONE;
  // A sync reported a hang of an earlier launch: the counters that launch left (its aborted
  // waits may have left a barrier short) and the report start again from zero.
  if (device_->launching(id_, stream)) sync_zeroed_ = false;
  // Into a graph goes the kernel launch alone: what it reads is written now, outside the
  // capture, and a replay then reads the epoch and the argument buffer the device holds.
  if (captured) return launch_captured(stream, call, runs, stop);
  // Launches share the counters: one on another stream than the last must come after it.
  if (launched_ && stream != last_stream_)
    if (sk_status st = device_->check(a.cuStreamWaitEvent(stream, last_, 0), call, "cuStreamWaitEvent"); st != SK_OK)
      return st;
  if (sk_status st = write_state(stream, call); st != SK_OK) return st;
  if (sk_status st = launch_kernel(stream, call, runs, stop); st != SK_OK) return st;
  launched_ = true;
  last_stream_ = stream;
  return device_->check(a.cuEventRecord(last_, stream), call, "cuEventRecord");
}

sk_status LinkedProgram::write_state(CUstream stream, const char *call) {
  const DriverApi &a = device_->api();
  if (sync_zeroed_ && table_written_ && dirty_end_ <= dirty_begin_) return SK_OK;
  // Copies from pageable memory are synchronous calls, which a thread that captures a stream
  // in global mode may not make: these writes are libsk's own, outside any capture.
  RelaxedCapture relaxed(a);
  if (!sync_zeroed_) {
    if (sk_status st =
            device_->check(a.cuMemsetD8Async(sync_, 0, sync_bytes_, stream), call, "cuMemsetD8Async (sync buffer)");
        st != SK_OK)
      return st;
    sync_zeroed_ = true;
  }
  if (!table_written_) {
    // Pageable source: the driver has staged it when the call returns.
    if (sk_status st =
            device_->check(a.cuMemcpyHtoDAsync(sync_ + table_offset_, table_.data(), table_.size() * 4, stream),
                           call, "cuMemcpyHtoDAsync (step table)");
        st != SK_OK)
      return st;
    table_written_ = true;
  }
  if (dirty_end_ > dirty_begin_) {
    // Pageable source: the driver has staged it when the call returns.
    if (sk_status st =
            device_->check(a.cuMemcpyHtoDAsync(args_buffer_ + dirty_begin_ * 8, slots_.data() + dirty_begin_,
                                               (dirty_end_ - dirty_begin_) * 8, stream),
                           call, "cuMemcpyHtoDAsync (arguments)");
        st != SK_OK)
      return st;
    dirty_begin_ = dirty_end_ = 0;
  }
  return SK_OK;
}

sk_status LinkedProgram::launch_captured(CUstream stream, const char *call, uint32_t runs, CUdeviceptr stop) {
  const DriverApi &a = device_->api();
  {
    // These waits are synchronous calls, which the capturing thread may make only in relaxed
    // mode (a global-mode capture would fail them and be invalidated).
    RelaxedCapture relaxed(a);
    // A replay starts after the capture ends: launches queued before it, on any stream, are
    // over by then once this waits for them. A captured stream may not wait for an event
    // recorded outside its capture.
    if (launched_)
      if (sk_status st = device_->check(a.cuEventSynchronize(last_), call, "cuEventSynchronize"); st != SK_OK)
        return st;
    const bool writes = !sync_zeroed_ || !table_written_ || dirty_end_ > dirty_begin_;
    if (writes) {
      // libsk's own stream, which no application captures, then a wait for it.
      const CUstream own = device_->default_stream();
      if (sk_status st = write_state(own, call); st != SK_OK) return st;
      if (sk_status st = device_->check(a.cuStreamSynchronize(own), call, "cuStreamSynchronize"); st != SK_OK)
        return st;
    }
  }
  if (sk_status st = launch_kernel(stream, call, runs, stop); st != SK_OK) return st;
  captured_ = true;
  return SK_OK;
}

sk_status LinkedProgram::launch_kernel(CUstream stream, const char *call, uint32_t runs, CUdeviceptr stop) {
  CUdeviceptr report = report_;
  void *params[kEntryParams];
  params[0] = source_ == ArgSource::Params ? static_cast<void *>(slots_.data()) : static_cast<void *>(&args_buffer_);
  params[1] = &sync_;
  params[2] = &report;
  params[3] = &runs;
  params[4] = &stop;
  const unsigned grid[3] = {grid_, 1, 1}, block[3] = {threads_, 1, 1};
  const KernelLaunch launch(grid, block, dynamic_shared_, stream, cooperative_);
  return device_->check(device_->api().cuLaunchKernelEx(launch.config(), function_, params, nullptr), call,
                        ("cuLaunchKernelEx of '" + name_ + "'").c_str());
}

void LinkedProgram::read_slots(size_t first, size_t count, uint64_t *out) {
  std::lock_guard<std::mutex> lock(mutex_);
  std::copy(slots_.begin() + first, slots_.begin() + first + count, out);
}

sk_status LinkedProgram::set_slots(size_t first, const uint64_t *values, size_t count) {
  if (sk_status st = device_->usable("sk_superkernel_set_arg"); st != SK_OK) return st;
  std::lock_guard<std::mutex> lock(mutex_);
  if (first + count > slots_.size())
    return fail(SK_ERR_INVALID_ARGUMENT, "'%s': argument slots %zu-%zu do not exist", name_.c_str(), first,
                first + count - 1);
  if (count == 0) return SK_OK;
  // parameter mode: later launches copy the slots at launch
  std::copy(values, values + count, slots_.begin() + first);
  if (source_ != ArgSource::Buffer) return SK_OK;
  // sk.h: launches already queued finish with the old value first, and the call waits for
  // them. The next launch writes the buffer, on its own stream. The waits are libsk's own,
  // outside any capture the calling thread makes.
  if (launched_ || captured_) {
    ContextScope ctx(*device_, "sk_superkernel_set_arg");
    if (ctx.status() != SK_OK) return ctx.status();
    const DriverApi &a = device_->api();
    RelaxedCapture relaxed(a);
    if (launched_)
      if (sk_status st = device_->check(a.cuEventSynchronize(last_), "sk_superkernel_set_arg", "cuEventSynchronize");
          st != SK_OK)
        return st;
    // A captured launch reads the buffer when the graph replays: the slots are written now, on
    // libsk's own stream (the application orders this after the replays it queued).
    if (captured_) {
      const CUstream own = device_->default_stream();
      if (sk_status st =
              device_->check(a.cuMemcpyHtoDAsync(args_buffer_ + first * 8, &slots_[first], 8 * count, own),
                             "sk_superkernel_set_arg", "cuMemcpyHtoDAsync (arguments)");
          st != SK_OK)
        return st;
      return device_->check(a.cuStreamSynchronize(own), "sk_superkernel_set_arg", "cuStreamSynchronize");
    }
  }
  if (dirty_end_ == dirty_begin_) {
    dirty_begin_ = first;
    dirty_end_ = first + count;
  } else {
    dirty_begin_ = std::min(dirty_begin_, first);
    dirty_end_ = std::max(dirty_end_, first + count);
  }
  return SK_OK;
}

sk_status LinkedProgram::wait(const char *call) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!launched_) return SK_OK;
  ContextScope ctx(*device_, call);
  if (ctx.status() != SK_OK) return ctx.status();
  return device_->check(device_->api().cuEventSynchronize(last_), call, "cuEventSynchronize");
}

}  // namespace sk::cuda
