/* Needs libmulti.a's multi_tls_big.o, whose thread-locals cannot be placed. */
int multi_tls_big_touch(int i);
int multi_wants_tls_big(int i) { return multi_tls_big_touch(i); }
