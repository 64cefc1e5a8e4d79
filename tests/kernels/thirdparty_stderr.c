/* A third-party program that writes to stderr: gcc's default PIE code reaches the external
 * variable `stderr` with R_X86_64_PC32 (it assumes a copy relocation), so the object must be
 * placed within 2 GiB of it. */
#define main thirdparty_stderr_main
#include <stdio.h>

static char line[128];

int main(int argc, char **argv) {
  int n = snprintf(line, sizeof line, "thirdparty_stderr: %d %s", argc, argc > 1 ? argv[1] : "-");
  fprintf(stderr, "%s\n", line);
  fflush(stderr);
  return n;
}

void *thirdparty_stderr_stream(void) { return stderr; }
