/* A far data reference the rewriter must refuse: `push [rip+far_data_b]` uses the stack pointer,
 * which its stub moves. far_data_a is referenced more often, so the placement keeps it in reach
 * and far_data_b (mapped far away by the test) is the one to rewrite. x86-64 only. */
#if defined(__x86_64__)
__asm__(".text\n"
        ".globl far_data_push\n"
        ".type far_data_push, @function\n"
        "far_data_push:\n"
        "  movl far_data_a(%rip), %eax\n"
        "  addl far_data_a(%rip), %eax\n"
        "  pushq far_data_b(%rip)\n"
        "  popq %rcx\n"
        "  ret\n"
        ".size far_data_push, .-far_data_push\n");
#else
int far_data_refused_nothing;  /* the test is x86-64's */
#endif
