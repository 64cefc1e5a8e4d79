/* Linker test kernel: 1 MiB of thread-locals. Local-exec code (-fPIE and -fno-pic objects)
 * needs them in glibc's static TLS space, which is far smaller: refused, naming the variable
 * and the model. -fPIC objects reach them through __tls_get_addr and load. */
__thread char tls_too_big_buffer[1 << 20];
int tls_too_big_touch(int i) { return ++tls_too_big_buffer[i & ((1 << 20) - 1)]; }
