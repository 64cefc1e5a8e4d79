/* Linker test kernel: thread-local storage, which the host linker rejects. */
__thread int reloc_tls_counter;
int reloc_tls_get(void) { return ++reloc_tls_counter; }
