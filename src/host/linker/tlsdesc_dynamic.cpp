#include "host/linker/tlsdesc_dynamic.hpp"

#if defined(__aarch64__)
extern "C" void sk_tlsdesc_dynamic();

// Called by `blr x1` with x0 = the descriptor; returns the offset from TPIDR_EL0 in x0. The
// caller's code keeps values in every register but x0, x1 and x30 (SVE code included: GCC saves
// what a descriptor call may clobber above the low 128 bits), so all that __tls_get_addr may
// change is saved: x1-x18, the frame and link registers, q0-q31 and the flags.
asm(R"(
  .text
  .p2align 4
  .globl sk_tlsdesc_dynamic
  .hidden sk_tlsdesc_dynamic
  .type sk_tlsdesc_dynamic, %function
sk_tlsdesc_dynamic:
  stp x29, x30, [sp, #-176]!
  mov x29, sp
  stp x1, x2, [sp, #16]
  stp x3, x4, [sp, #32]
  stp x5, x6, [sp, #48]
  stp x7, x8, [sp, #64]
  stp x9, x10, [sp, #80]
  stp x11, x12, [sp, #96]
  stp x13, x14, [sp, #112]
  stp x15, x16, [sp, #128]
  stp x17, x18, [sp, #144]
  mrs x1, nzcv
  str x1, [sp, #160]
  sub sp, sp, #512
  stp q0, q1, [sp, #0]
  stp q2, q3, [sp, #32]
  stp q4, q5, [sp, #64]
  stp q6, q7, [sp, #96]
  stp q8, q9, [sp, #128]
  stp q10, q11, [sp, #160]
  stp q12, q13, [sp, #192]
  stp q14, q15, [sp, #224]
  stp q16, q17, [sp, #256]
  stp q18, q19, [sp, #288]
  stp q20, q21, [sp, #320]
  stp q22, q23, [sp, #352]
  stp q24, q25, [sp, #384]
  stp q26, q27, [sp, #416]
  stp q28, q29, [sp, #448]
  stp q30, q31, [sp, #480]
  ldr x0, [x0, #8]
  bl __tls_get_addr
  mrs x1, tpidr_el0
  sub x0, x0, x1
  ldp q0, q1, [sp, #0]
  ldp q2, q3, [sp, #32]
  ldp q4, q5, [sp, #64]
  ldp q6, q7, [sp, #96]
  ldp q8, q9, [sp, #128]
  ldp q10, q11, [sp, #160]
  ldp q12, q13, [sp, #192]
  ldp q14, q15, [sp, #224]
  ldp q16, q17, [sp, #256]
  ldp q18, q19, [sp, #288]
  ldp q20, q21, [sp, #320]
  ldp q22, q23, [sp, #352]
  ldp q24, q25, [sp, #384]
  ldp q26, q27, [sp, #416]
  ldp q28, q29, [sp, #448]
  ldp q30, q31, [sp, #480]
  add sp, sp, #512
  ldr x1, [sp, #160]
  msr nzcv, x1
  ldp x1, x2, [sp, #16]
  ldp x3, x4, [sp, #32]
  ldp x5, x6, [sp, #48]
  ldp x7, x8, [sp, #64]
  ldp x9, x10, [sp, #80]
  ldp x11, x12, [sp, #96]
  ldp x13, x14, [sp, #112]
  ldp x15, x16, [sp, #128]
  ldp x17, x18, [sp, #144]
  ldp x29, x30, [sp], #176
  ret
  .size sk_tlsdesc_dynamic, .-sk_tlsdesc_dynamic
)");

namespace sk::host {
uint64_t tlsdesc_dynamic() { return reinterpret_cast<uint64_t>(&sk_tlsdesc_dynamic); }
}  // namespace sk::host
#else
namespace sk::host {
uint64_t tlsdesc_dynamic() { return 0; }
}  // namespace sk::host
#endif
