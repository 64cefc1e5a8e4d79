/* Linker test kernel: one slot per relocation type, written with .reloc so that every compiler
 * emits exactly that type (the -mcmodel=large / GOT-relative types are not in the build matrix).
 * The test reads the slots back and checks the psABI formula. x86-64 only: AArch64 has
 * reloc_asm_aarch64.c. */
#if defined(__x86_64__)
__asm__(
    ".globl reloc_far_low\n.globl reloc_far_high\n.globl reloc_ext_fn\n"
    ".globl reloc_abs16\n.globl reloc_abs8\n.globl reloc_abs32\n.globl reloc_abs32s\n"
    ".globl reloc_reach_a\n.globl reloc_reach_b\n"
    ".section .data.reloc_target,\"aw\",@progbits\n"
    ".p2align 3\n.globl asm_target\n.type asm_target,@object\n.size asm_target,8\n"
    "asm_target: .quad 0x1122334455667788\n"
    /* The 8- and 16-bit PC-relative slots first: asm_target must be within their reach. */
    ".section .data.reloc_slots,\"aw\",@progbits\n"
    ".globl slot_pc16\nslot_pc16: .reloc ., R_X86_64_PC16, asm_target\n.word 0\n"
    ".globl slot_abs16\nslot_abs16: .reloc ., R_X86_64_16, reloc_abs16\n.word 0\n"
    ".globl slot_pc8\nslot_pc8: .reloc ., R_X86_64_PC8, asm_target\n.byte 0\n"
    ".globl slot_abs8\nslot_abs8: .reloc ., R_X86_64_8, reloc_abs8\n.byte 0\n"
    ".globl slot_none\nslot_none: .reloc ., R_X86_64_NONE, asm_target\n.byte 0x5a\n"
    ".p2align 3\n"
    ".globl slot_64\nslot_64: .reloc ., R_X86_64_64, asm_target+8\n.quad 0\n"
    ".globl slot_pc64\nslot_pc64: .reloc ., R_X86_64_PC64, asm_target\n.quad 0\n"
    ".globl slot_gotoff64\nslot_gotoff64: .reloc ., R_X86_64_GOTOFF64, asm_target\n.quad 0\n"
    ".globl slot_gotpc64\nslot_gotpc64: .reloc ., R_X86_64_GOTPC64, asm_target\n.quad 0\n"
    ".globl slot_gotpcrel64\nslot_gotpcrel64: .reloc ., R_X86_64_GOTPCREL64, asm_target\n.quad 0\n"
    ".globl slot_got64\nslot_got64: .reloc ., R_X86_64_GOT64, asm_target\n.quad 0\n"
    ".globl slot_pltoff64\nslot_pltoff64: .reloc ., R_X86_64_PLTOFF64, reloc_ext_fn\n.quad 0\n"
    ".globl slot_size64\nslot_size64: .reloc ., R_X86_64_SIZE64, asm_target+1\n.quad 0\n"
    ".globl slot_gotpc32\nslot_gotpc32: .reloc ., R_X86_64_GOTPC32, asm_target\n.long 0\n"
    ".globl slot_gotpcrel\nslot_gotpcrel: .reloc ., R_X86_64_GOTPCREL, asm_target\n.long 0\n"
    ".globl slot_pc32\nslot_pc32: .reloc ., R_X86_64_PC32, asm_target+4\n.long 0\n"
    ".globl slot_pc32_ext\nslot_pc32_ext: .reloc ., R_X86_64_PC32, reloc_reach_a\n.long 0\n"
    ".globl slot_pc32_ext_b\nslot_pc32_ext_b: .reloc ., R_X86_64_PC32, reloc_reach_b\n.long 0\n"
    ".globl slot_plt_low\nslot_plt_low: .reloc ., R_X86_64_PLT32, reloc_far_low\n.long 0\n"
    ".globl slot_plt_high\nslot_plt_high: .reloc ., R_X86_64_PLT32, reloc_far_high\n.long 0\n"
    ".globl slot_abs32\nslot_abs32: .reloc ., R_X86_64_32, reloc_abs32\n.long 0\n"
    ".globl slot_abs32s\nslot_abs32s: .reloc ., R_X86_64_32S, reloc_abs32s\n.long 0\n"
    ".globl slot_size32\nslot_size32: .reloc ., R_X86_64_SIZE32, asm_target\n.long 0\n"
    ".text\n"
    /* jmp *GOT(%rip): R_X86_64_GOTPCRELX; the GOT entry must hold reloc_ext_fn. */
    ".globl reloc_asm_call_got\n.type reloc_asm_call_got,@function\n"
    "reloc_asm_call_got: jmp *reloc_ext_fn@GOTPCREL(%rip)\n"
    /* movq GOT(%rip), %rax: R_X86_64_REX_GOTPCRELX, never relaxed into a lea. */
    ".globl reloc_asm_got_address\n.type reloc_asm_got_address,@function\n"
    "reloc_asm_got_address: movq asm_target@GOTPCREL(%rip), %rax\nret\n"
    /* jmp rel32 written with R_X86_64_PC32: a branch, so a stub may serve a far target. */
    ".globl reloc_asm_jmp_pc32\n.type reloc_asm_jmp_pc32,@function\n"
    "reloc_asm_jmp_pc32: .byte 0xe9\n.reloc ., R_X86_64_PC32, reloc_ext_fn-4\n.long 0\n");
#endif
