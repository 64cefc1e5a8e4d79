/* Linker test kernel for AArch64 hosts (reloc_asm.c is x86-64's): every relocation type the
 * linker handles, as both compilers' assemblers emit it — data slots written with .reloc, and
 * small functions whose instructions carry the instruction relocations. The test reads the
 * patched fields back (relocate_aarch64_test.cpp) and calls the functions. */
#if defined(__aarch64__)
#define FN(name) ".globl " #name "\n.type " #name ",%function\n.p2align 2\n" #name ":\n"
__asm__(
    ".globl reloc_ext_fn\n.globl reloc_far_fn\n.globl reloc_far_low\n.globl reloc_far_high\n"
    ".globl reloc_reach_a\n.globl reloc_reach_b\n.globl reloc_abs16\n.globl reloc_abs32\n"
    ".globl reloc_movw16\n.globl reloc_movw32\n.globl reloc_movw48\n.globl reloc_movw64\n"
    /* 16 bytes, 16-aligned: every LDSTn_ABS_LO12_NC scale can load from it. */
    ".section .data.reloc_target,\"aw\",%progbits\n"
    ".p2align 4\n.globl asm_target\n.type asm_target,%object\n.size asm_target,16\n"
    "asm_target: .8byte 0x1122334455667788\n.8byte 0x99aabbccddeeff00\n"
    /* The 16-bit PC-relative slot first: asm_target must be within its reach. */
    ".section .data.reloc_slots,\"aw\",%progbits\n"
    ".globl slot_prel16\nslot_prel16: .reloc ., R_AARCH64_PREL16, asm_target\n.2byte 0\n"
    ".globl slot_abs16\nslot_abs16: .reloc ., R_AARCH64_ABS16, reloc_abs16\n.2byte 0\n"
    ".globl slot_none\nslot_none: .reloc ., R_AARCH64_NONE, asm_target\n.byte 0x5a\n"
    ".p2align 3\n"
    ".globl slot_abs64\nslot_abs64: .reloc ., R_AARCH64_ABS64, asm_target+8\n.8byte 0\n"
    ".globl slot_prel64\nslot_prel64: .reloc ., R_AARCH64_PREL64, asm_target\n.8byte 0\n"
    ".globl slot_abs32\nslot_abs32: .reloc ., R_AARCH64_ABS32, reloc_abs32\n.4byte 0\n"
    ".globl slot_prel32\nslot_prel32: .reloc ., R_AARCH64_PREL32, asm_target+4\n.4byte 0\n"
    ".globl slot_prel32_ext\nslot_prel32_ext: .reloc ., R_AARCH64_PREL32, reloc_reach_a\n.4byte 0\n"
    /* A literal for ldr (LD_PREL_LO19): within ±1 MiB of the code. */
    ".section .rodata.reloc_literal,\"a\",%progbits\n"
    ".p2align 3\n.globl asm_literal\nasm_literal: .8byte 0x0123456789abcdef\n"
    /* Branch targets in a section of their own, so that the branches keep their relocations. */
    ".section .text.reloc_targets,\"ax\",%progbits\n"
    FN(asm_zero) "mov x0, #42\nret\n"
    FN(asm_even) "mov x0, #43\nret\n"
    ".text\n"
    /* ADR_PREL_PG_HI21 + ADD_ABS_LO12_NC, and the _NC page form: &asm_target. */
    FN(a64_adrp_add) "adrp x0, asm_target\nadd x0, x0, :lo12:asm_target\nret\n"
    FN(a64_adrp_nc) "adrp x0, :pg_hi21_nc:asm_target\nadd x0, x0, :lo12:asm_target\nret\n"
    FN(a64_adr) "adr x0, asm_target\nret\n"
    /* ADRP to an external symbol: the mapping must lie within ±4 GiB of it. */
    FN(a64_adrp_ext) "adrp x0, reloc_reach_b\nadd x0, x0, :lo12:reloc_reach_b\nret\n"
    /* LDST8/16/32/64/128_ABS_LO12_NC: loads from asm_target at each access size. */
    FN(a64_ldst8) "adrp x1, asm_target\nldrb w0, [x1, :lo12:asm_target]\nret\n"
    FN(a64_ldst16) "adrp x1, asm_target+2\nldrh w0, [x1, :lo12:asm_target+2]\nret\n"
    FN(a64_ldst32) "adrp x1, asm_target+4\nldr w0, [x1, :lo12:asm_target+4]\nret\n"
    FN(a64_ldst64) "adrp x1, asm_target+8\nldr x0, [x1, :lo12:asm_target+8]\nret\n"
    FN(a64_ldst128) "adrp x1, asm_target\nldr q0, [x1, :lo12:asm_target]\n"
    "umov x0, v0.d[0]\numov x1, v0.d[1]\neor x0, x0, x1\nret\n"
    /* ADR_GOT_PAGE + LD64_GOT_LO12_NC: the GOT entry of an external symbol. */
    FN(a64_got) "adrp x0, :got:reloc_reach_b\nldr x0, [x0, :got_lo12:reloc_reach_b]\nret\n"
    /* MOVW_UABS_G0..G3: checked and _NC forms build each value 16 bits at a time. */
    FN(a64_movw16) "movz x0, #:abs_g0:reloc_movw16\nret\n"
    FN(a64_movw32) "movz x0, #:abs_g1:reloc_movw32\nmovk x0, #:abs_g0_nc:reloc_movw32\nret\n"
    FN(a64_movw48) "movz x0, #:abs_g2:reloc_movw48\nmovk x0, #:abs_g1_nc:reloc_movw48\n"
    "movk x0, #:abs_g0_nc:reloc_movw48\nret\n"
    FN(a64_movw64) "movz x0, #:abs_g3:reloc_movw64\nmovk x0, #:abs_g2_nc:reloc_movw64\n"
    "movk x0, #:abs_g1_nc:reloc_movw64\nmovk x0, #:abs_g0_nc:reloc_movw64\nret\n"
    /* CALL26 and JUMP26 (a tail call) to functions near and far: far ones go through stubs. */
    FN(a64_call) "stp x29, x30, [sp, #-16]!\nmov x29, sp\nbl reloc_ext_fn\nldp x29, x30, [sp], #16\nret\n"
    FN(a64_jump) "b reloc_ext_fn\n"
    FN(a64_call_far) "stp x29, x30, [sp, #-16]!\nmov x29, sp\nbl reloc_far_fn\nldp x29, x30, [sp], #16\nret\n"
    FN(a64_jump_far) "b reloc_far_fn\n"
    ".globl slot_call_low\nslot_call_low: bl reloc_far_low\n"
    ".globl slot_jump_high\nslot_jump_high: b reloc_far_high\n"
    /* CONDBR19, TSTBR14, LD_PREL_LO19. */
    FN(a64_condbr) "cmp x0, #0\nb.eq asm_zero\nmov x0, #1\nret\n"
    FN(a64_tstbr) "tbz x0, #0, asm_even\nmov x0, #1\nret\n"
    FN(a64_literal) "ldr x0, asm_literal\nret\n");
#endif
