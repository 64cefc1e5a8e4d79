/* A third-party program that writes to stderr and looks at stdin: gcc's default PIE code reaches
 * the external variables `stderr` and `stdin` with R_X86_64_PC32 (it assumes copy relocations).
 * In a program that copy-relocates `stderr` (it uses it) and not `stdin` (left in libc), the two
 * lie terabytes apart: the loader rewrites the references it cannot reach. */
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

void *thirdparty_stdin_stream(void) { return stdin; }
