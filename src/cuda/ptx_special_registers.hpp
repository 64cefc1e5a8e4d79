// How a sub-kernel's reads of its grid and block registers (%ctaid, %nctaid, %tid, %ntid) read
// once it is a function of a super kernel: the block index and the grid size of libsk's
// virtual block (sk_block_idx, sk_block_num), every grid register from the step's shape
// (__sk_grid) for a kernel whose grid has more dimensions, a thread index beyond x rebuilt from
// the super kernel's 1-D one with the block's shape, given by the PTX (.reqntid) or, through
// __sk_thread, by the caller; and the grid workspace cooperative groups' grid sync reads from
// %envreg1/%envreg2 (__sk_grid_workspace: a word of the step's in the sync buffer). ptx_module.cpp
// decides which reading each function needs.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace sk::cuda {

// A read of a special register the rewrite replaces: its statement's text range, guard
// ("@%p1 " or ""), the register written, the special register read.
struct SpecialRead {
  size_t at, len;
  std::string guard, dst, reg;
};

// libsk's functions (superkernel.ptx) through which a sub-kernel reads its grid registers when
// its grid has more dimensions, and its thread registers when its caller gives the block's shape.
constexpr char kGridFunction[] = "__sk_grid";
constexpr char kThreadFunction[] = "__sk_thread";
// The grid workspace's address, for cg::this_grid().sync(): `what` 1 its high 32 bits (what
// %envreg1 holds in a cooperative launch), 2 its low ones (%envreg2).
constexpr char kWorkspaceFunction[] = "__sk_grid_workspace";
// What griddepcontrol.wait (programmatic dependent launch) calls: the wait for the steps the
// current one depends on, by whichever threads reach it (it takes and returns nothing).
constexpr char kDependentWaitFunction[] = "__sk_dependent_wait";

// A function of libsk's a rewritten module calls: the device API or one of the above.
bool library_function(std::string_view name);

// One of the fourteen registers the rewrite replaces.
bool special_register(std::string_view reg);
// The argument of __sk_grid_workspace for %envreg1 and %envreg2 (-1: neither).
int workspace_register(std::string_view reg);
// The argument of __sk_grid for a grid register: the block index's x, y, z, then the grid's
// extents (-1: not a grid register).
int grid_register(std::string_view reg);
bool grid_beyond_x(std::string_view reg);  // %ctaid.y/z, %nctaid.y/z
// The argument of __sk_thread for a thread register: the thread index's x, y, z, then the
// block's extents (-1: not a thread register).
int thread_register(std::string_view reg);
// The device-API function the rewrite reads an .x grid register through ("" for any other).
std::string_view grid_api(std::string_view reg);

// Why reads of special registers cannot be rewritten, "" if they can: a thread index beyond x
// needs the block's shape (`shape_known`).
std::string special_refusal(const std::vector<SpecialRead> &reads, bool shape_known);

// The read `s` as the rewritten function reads it: through libsk's device API, from __sk_grid
// in a function of a sub-kernel whose grid has more dimensions (`grid_nd`), rebuilt from the
// 1-D thread index with the shape `block`, or from __sk_thread where the caller gives the shape
// (`block_nd`). "" where the register reads the same in the super kernel.
std::string special_read(const SpecialRead &s, const uint32_t block[3], bool grid_nd, bool block_nd);

// The `.extern .func` declaration of libsk function `fn` that a rewrite calls.
std::string special_function_declaration(const std::string &fn);

}  // namespace sk::cuda
