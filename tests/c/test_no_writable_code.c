/* No writable code: after loading every test object of every variant through sk_module_load
 * (twice: the second load is a module-cache hit), no mapping of the process is both writable and
 * executable; after unloading them, the code mappings the loads made are gone. Objects meant to
 * fail (TLS, unknown relocations...) may fail to load: that is not what is tested. */
#include <dirent.h>

#include "test_util.h"

static const char *const all_variants[] = {
    "gcc-O0-pie",   "gcc-O0-pic",   "gcc-O0-nopic",   "gcc-O2-pie",   "gcc-O2-pic",   "gcc-O2-nopic",
    "gcc-O3-pie",   "gcc-O3-pic",   "gcc-O3-nopic",   "clang-O0-pie", "clang-O0-pic", "clang-O0-nopic",
    "clang-O2-pie", "clang-O2-pic", "clang-O2-nopic", "clang-O3-pie", "clang-O3-pic", "clang-O3-nopic"};

#define MAX_MODULES 4096
#define MAX_RANGES 4096

struct range {
  unsigned long begin, end;
};

/* Scans /proc/self/maps: fails on a writable+executable mapping; collects anonymous executable
 * ranges (what the linker maps: nothing else in a test process runs code from anonymous memory). */
static size_t code_ranges(struct range *out, size_t cap) {
  FILE *fp = fopen("/proc/self/maps", "r");
  char line[4096];
  size_t n = 0;
  assert_non_null(fp);
  while (fgets(line, sizeof line, fp)) {
    unsigned long begin, end, offset, inode;
    char perms[8], dev[16];
    int consumed = 0;
    const char *path;
    if (sscanf(line, "%lx-%lx %7s %lx %15s %lu %n", &begin, &end, perms, &offset, dev, &inode, &consumed) < 6)
      continue;
    if (perms[1] == 'w' && perms[2] == 'x') fail_msg("writable and executable mapping: %s", line);
    path = line + consumed;
    if (perms[2] == 'x' && (*path == '\0' || *path == '\n') && n < cap) {
      out[n].begin = begin;
      out[n].end = end;
      ++n;
    }
  }
  fclose(fp);
  return n;
}

static int ends_with(const char *s, const char *suffix) {
  size_t a = strlen(s), b = strlen(suffix);
  return a >= b && strcmp(s + a - b, suffix) == 0;
}

static void test_no_writable_code(void **state) {
  static struct range before[MAX_RANGES], loaded[MAX_RANGES], after[MAX_RANGES];
  static sk_module *mods[MAX_MODULES];
  sk_device *dev = open_device("host:cores=1");
  size_t n_before, n_loaded, n_after, n_mods = 0, n_failed = 0, v, i, j;
  (void)state;
  n_before = code_ranges(before, MAX_RANGES);
  for (v = 0; v < sizeof all_variants / sizeof all_variants[0]; ++v) {
    char dir[1024];
    DIR *d;
    struct dirent *e;
    snprintf(dir, sizeof dir, "%s/%s", SK_TEST_KERNEL_DIR, all_variants[v]);
    d = opendir(dir);
    assert_non_null(d);
    while ((e = readdir(d)) != NULL) {
      char path[2048];
      unsigned char *bytes;
      size_t size = 0, copy;
      if (!ends_with(e->d_name, ".o")) continue;
      snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
      bytes = read_whole_file(path, &size);
      for (copy = 0; copy < 2; ++copy) {
        sk_module *m = NULL;
        assert_true(n_mods < MAX_MODULES);
        if (sk_module_load(dev, bytes, size, &m) == SK_OK)
          mods[n_mods++] = m;
        else
          ++n_failed;
      }
      free(bytes);
    }
    closedir(d);
  }
  n_loaded = code_ranges(loaded, MAX_RANGES);
  print_message("%zu modules loaded, %zu loads refused, %zu anonymous code mappings (%zu before)\n", n_mods,
                n_failed, n_loaded, n_before);
  assert_true(n_mods > 300);
  assert_true(n_loaded > n_before);
  for (i = 0; i < n_mods; ++i) sk_module_unload(mods[i]);
  n_after = code_ranges(after, MAX_RANGES);
  /* Every anonymous code mapping present now was there before the loads. */
  for (i = 0; i < n_after; ++i) {
    int known = 0;
    for (j = 0; j < n_before && !known; ++j)
      known = after[i].begin == before[j].begin && after[i].end == before[j].end;
    if (!known) fail_msg("code mapping %lx-%lx outlived the unloads", after[i].begin, after[i].end);
  }
  sk_device_close(dev);
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_no_writable_code)};
  return cmocka_run_group_tests_name("c_no_writable_code", tests, NULL, NULL);
}
