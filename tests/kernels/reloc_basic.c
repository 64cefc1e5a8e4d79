/* Linker test kernel: what compilers emit for ordinary C — data, .bss, COMMON, constants,
 * string literals, a jump table, a function-pointer table, libc calls, device-API calls, a weak
 * undefined symbol and (position-independent builds only) the address of external data. */
#include <sk_kernel.h>
#include <stddef.h>
#include <string.h>

SK_KERNEL(reloc_block, "")
SK_KERNEL_TYPED(reloc_scale, "f64", SK_CORE_CUBE)

int reloc_counter = 5;                             /* .data */
static int reloc_hidden_bss[64];                   /* .bss */
__attribute__((common)) long reloc_common_var;     /* SHN_COMMON */
const double reloc_constants[4] = {1.5, 2.25, -3.125, 4.0}; /* .rodata */
extern int reloc_weak_missing(int) __attribute__((weak));

int reloc_switch(int x) {
  switch (x) { /* dense cases: a jump table in .rodata at every -O level */
    case 0: return 11;
    case 1: return 27;
    case 2: return 31;
    case 3: return 45;
    case 4: return 52;
    case 5: return 68;
    case 6: return 71;
    case 7: return 89;
    case 8: return 93;
    default: return -1;
  }
}

static int sq(int x) { return x * x; }
static int neg(int x) { return -x; }
static int twice(int x) { return 2 * x; }
static int plus7(int x) { return x + 7; }
typedef int (*reloc_fn)(int);
static reloc_fn const reloc_table[4] = {sq, neg, twice, plus7}; /* .data.rel.ro in PIC */

int reloc_apply(int i, int x) { return reloc_table[i & 3](x); }

const char *reloc_string(int i) {
  static const char *const words[4] = {"alpha", "beta", "gamma", "delta"};
  return words[i & 3];
}

size_t reloc_strlen(const char *s) { return strlen(s); }

uint32_t reloc_block(void) { return sk_block_idx() * 100 + sk_block_num(); }

int reloc_weak_check(int x) { return reloc_weak_missing ? reloc_weak_missing(x) : -7; }

long reloc_bss_roundtrip(int v) {
  reloc_hidden_bss[v & 63] += v;
  reloc_common_var += v;
  reloc_counter += 1;
  return reloc_hidden_bss[v & 63] * 1000 + reloc_common_var;
}

int *reloc_counter_address(void) { return &reloc_counter; }

double reloc_scale(double x) { return x * 3.7 + 0.25 + reloc_constants[(int)x & 3]; }

#ifdef __PIC__
/* Only where external data is reached through the GOT: non-PIC code would need it below 4 GiB. */
extern int reloc_ext_data;
int *reloc_ext_address(void) { return &reloc_ext_data; }
int reloc_ext_read(void) { return reloc_ext_data; }
#endif
