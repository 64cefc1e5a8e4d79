/* A libmulti.a member with 1 MiB of thread-locals reached with the local-exec model (these
 * objects are -fPIE): more than glibc's static TLS space, so pulling it in fails the load, and
 * the message names the member. */
__thread char multi_tls_big_buffer[1 << 20];
int multi_tls_big_touch(int i) { return ++multi_tls_big_buffer[i & ((1 << 20) - 1)]; }
