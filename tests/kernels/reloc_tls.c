/* Linker test kernel: a thread-local counter, one per thread that calls it. */
__thread int reloc_tls_counter;
int reloc_tls_get(void) { return ++reloc_tls_counter; }
