/* A third-party program, compiled as is with its main renamed (as -Dmain=tu_main would):
 * stdio, libm, a jump table, static data, string literals, a function-pointer table. */
#define main thirdparty_calc_main
#include <math.h>
#include <stdio.h>
#include <string.h>

static char out[256];
static int counter;
static double scale = 2.5;
static const char *names[] = {"zero", "one", "two", "three"};
typedef int (*op_fn)(int, int);
static int add(int a, int b) { return a + b; }
static int mul(int a, int b) { return a * b; }
static const op_fn ops[] = {add, mul};

static int classify(int x) {
  switch (x) {
    case 0: return 11;
    case 1: return 27;
    case 2: return 31;
    case 3: return 45;
    case 4: return 52;
    case 5: return 68;
    case 6: return 71;
    case 7: return 89;
    default: return -1;
  }
}

int main(int argc, char **argv) {
  counter++;
  int n = snprintf(out, sizeof out, "%s %d %.3f %.3f %.3f %s", names[argc & 3],
                   classify(argc) + ops[argc & 1](argc, 3), sin(scale * argc), exp(1.0 / argc),
                   (double)sqrtf((float)argc), argc > 1 ? argv[1] : "-");
  if (argc > 100) printf("%s\n", out); /* linked, not run */
  return n + counter * 1000;
}

const char *thirdparty_calc_output(void) { return out; }
