/* Linker test kernel: a relocation type the host linker does not handle (x86-64:
 * R_X86_64_GOTPLT64; AArch64: R_AARCH64_MOVW_PREL_G0). */
#if defined(__x86_64__)
__asm__(".globl reloc_unknown_sym\n.section .data.reloc_unknown,\"aw\",@progbits\n"
        ".globl reloc_unknown_slot\nreloc_unknown_slot: .reloc ., R_X86_64_GOTPLT64, reloc_unknown_sym\n"
        ".quad 0\n");
#elif defined(__aarch64__)
__asm__(".globl reloc_unknown_sym\n.section .data.reloc_unknown,\"aw\",@progbits\n"
        ".globl reloc_unknown_slot\nreloc_unknown_slot: .reloc ., R_AARCH64_MOVW_PREL_G0, reloc_unknown_sym\n"
        ".quad 0\n");
#endif
int reloc_unknown_fn(void) { return 1; }
