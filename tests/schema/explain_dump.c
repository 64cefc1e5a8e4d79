/* Linked into the C and C++ test executables with -Wl,--wrap=sk_finalize: when ctest gives a
 * test SK_TEST_EXPLAIN_DIR (tests/schema/CMakeLists.txt), every super kernel it finalizes writes
 * its explain JSON there, one file per distinct document, for explain.schema to validate. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sk.h>

sk_status __real_sk_finalize(sk_scope *scope, sk_superkernel **out);
sk_status __wrap_sk_finalize(sk_scope *scope, sk_superkernel **out);

/* A document that cannot be written would go unvalidated: the test stops instead. */
static void dump_failed(const char *what, const char *detail) {
  fprintf(stderr, "explain_dump: %s: %s\n", what, detail);
  abort();
}

static void dump_explain(sk_superkernel *sk, const char *dir) {
  size_t size = 0, done = 0;
  char *text;
  char path[4096];
  unsigned long long hash = 14695981039346656037ull; /* FNV-1a: equal documents, one name */
  int fd;
  if (sk_superkernel_explain(sk, NULL, 0, &size) != SK_OK) dump_failed("sk_superkernel_explain", sk_last_error());
  text = (char *)malloc(size);
  if (!text) dump_failed("malloc", strerror(ENOMEM));
  if (sk_superkernel_explain(sk, text, size, NULL) != SK_OK) dump_failed("sk_superkernel_explain", sk_last_error());
  for (size_t i = 0; i + 1 < size; ++i) hash = (hash ^ (unsigned char)text[i]) * 1099511628211ull;
  if (mkdir(dir, 0755) != 0 && errno != EEXIST) dump_failed(dir, strerror(errno));
  snprintf(path, sizeof path, "%s/%016llx.json", dir, hash);
  fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0644);
  if (fd < 0 && errno != EEXIST) dump_failed(path, strerror(errno));
  while (fd >= 0 && done + 1 < size) {
    ssize_t n = write(fd, text + done, size - 1 - done);
    if (n < 0 && errno != EINTR) dump_failed(path, strerror(errno));
    if (n > 0) done += (size_t)n;
  }
  if (fd >= 0) close(fd);
  free(text);
}

sk_status __wrap_sk_finalize(sk_scope *scope, sk_superkernel **out) {
  const char *dir = getenv("SK_TEST_EXPLAIN_DIR");
  sk_status st = __real_sk_finalize(scope, out);
  if (st == SK_OK && dir && *dir && out && *out) dump_explain(*out, dir);
  return st;
}
