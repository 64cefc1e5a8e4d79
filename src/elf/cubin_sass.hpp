// What a linked function's SASS does that its `.nv.info` does not say. Read from the
// instruction words of sm_75 and later (16 bytes each); the encodings were checked against
// nvdisasm for sm_75 to sm_120.
#pragma once
#include <cstddef>
#include <cstdint>

namespace sk::elf {

// Cooperative groups' grid.sync() reads the grid workspace the driver gives a cooperative
// launch (%envreg1/2, a constant of bank 0 at an offset of the architecture's) and traps where
// it is null. Code that uses cooperative groups (EIATTR_COOP_GROUP_INSTR_OFFSETS, which a
// block's sync() records too) and does both syncs its grid. Where the offset is not known (below
// sm_75, from sm_100) every function counts as reading it, so the trap alone decides: a kernel
// that also calls __trap() is taken as syncing its grid, and a cooperative launch of it is
// refused only when its grid cannot run at once.
struct SassFacts {
  bool traps = false;                 // BPT.TRAP: __trap()
  bool reads_grid_workspace = false;  // a read of %envreg2's constant
  bool syncs_grid() const { return traps && reads_grid_workspace; }
};

SassFacts read_sass(const uint8_t *code, size_t size, uint32_t sm);

}  // namespace sk::elf
