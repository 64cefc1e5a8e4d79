// What $SK_CUDA_DUMP_DIR receives, for the artifacts of a device run: the linked cubin of every
// super kernel (and sk_launch_kernel entry) as it is loaded, the PTX it compiles as one program
// (BuiltImage::program_ptx) where it has one, and, when a synchronisation reports
// an aborted launch (a hang, a flag id out of range), the words of that super kernel's sync
// buffer. Files are named <pid>-<id>-<name>.cubin, .ptx and .sync.txt (the name with
// characters other than [A-Za-z0-9_.-] as '_'). A file that cannot be written is left out:
// diagnostics never fail the call that makes them.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace sk::cuda {

constexpr char kDumpDirEnv[] = "SK_CUDA_DUMP_DIR";

// Whether $SK_CUDA_DUMP_DIR is set (read at each call).
bool dumping();

// `suffix`: ".cubin", ".ptx".
void dump_image(uint64_t id, const std::string &name, const char *suffix, const void *bytes, size_t size);

// `words`: the sync buffer of a super kernel of step_names.size() steps (sync_layout), hang
// report included; `message`: what the synchronisation reported.
void dump_sync_buffer(uint64_t id, const std::string &name, const std::vector<std::string> &step_names,
                      const std::vector<uint64_t> &words, const std::string &message);

}  // namespace sk::cuda
