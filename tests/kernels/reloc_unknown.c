/* Linker test kernel: a relocation type the host linker does not handle (R_X86_64_GOTPLT64). */
__asm__(".globl reloc_unknown_sym\n.section .data.reloc_unknown,\"aw\",@progbits\n"
        ".globl reloc_unknown_slot\nreloc_unknown_slot: .reloc ., R_X86_64_GOTPLT64, reloc_unknown_sym\n"
        ".quad 0\n");
int reloc_unknown_fn(void) { return 1; }
