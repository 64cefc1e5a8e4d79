/* Linker test kernel: at_quick_exit, which a program links from glibc's libc_nonshared.a and
 * libsk does not provide (its handlers would outlive the module): refused, saying where it
 * normally comes from. */
#include <stdlib.h>

static void static_only_nothing(void) {}
int static_only_missing(void) { return at_quick_exit(static_only_nothing); }
