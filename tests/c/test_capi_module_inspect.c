/* Public C API: sk_module_inspect on the host backend, an object or archive read without a
 * device: what it says agrees with the module sk_module_load makes of the same bytes, and a
 * malformed record is refused naming the object (or archive member) and the record. */
#include "test_util.h"

static const char *const variants[] = {"gcc-O0-pie", "gcc-O2-pie", "clang-O0-pic", "clang-O2-nopic"};

static unsigned char *read_kernels(const char *variant, const char *name, size_t *size) {
  char path[1024];
  kernel_path(path, sizeof path, variant, name);
  return read_whole_file(path, size);
}

/* sk_module_inspect's JSON after a size query; the caller frees it. */
static char *inspect(const char *spec, const void *image, size_t size) {
  size_t needed = 0;
  char *json;
  SK_CHECK(sk_module_inspect(spec, image, size, NULL, 0, &needed));
  json = (char *)malloc(needed);
  assert_non_null(json);
  SK_CHECK(sk_module_inspect(spec, image, size, json, needed, NULL));
  assert_int_equal(strlen(json) + 1, needed);
  return json;
}

/* The object of kernel `name` in the JSON, up to its closing brace (kernel objects nest none). */
static char *kernel_object(const char *json, const char *name) {
  char key[256];
  const char *start, *end;
  char *out;
  snprintf(key, sizeof key, "{\"name\":\"%s\",", name);
  start = strstr(json, key);
  if (!start) fail_msg("no kernel '%s' in %s", name, json);
  end = strchr(start, '}');
  assert_non_null(end);
  out = (char *)malloc((size_t)(end - start) + 2);
  assert_non_null(out);
  memcpy(out, start, (size_t)(end - start) + 1);
  out[end - start + 1] = '\0';
  return out;
}

static char *kernel_string(sk_status (*fn)(sk_kernel *, char *, size_t, size_t *), sk_kernel *k) {
  size_t size = 0;
  char *text;
  SK_CHECK(fn(k, NULL, 0, &size));
  text = (char *)malloc(size);
  assert_non_null(text);
  SK_CHECK(fn(k, text, size, NULL));
  return text;
}

/* Every kernel the loaded module declares is in the JSON with the signature and core type
 * libsk gives the kernel taken from it, and nothing else is. */
static void test_kernels_agree_with_the_loaded_module(void **state) {
  sk_device *dev = (sk_device *)*state;
  size_t v;
  for (v = 0; v < sizeof variants / sizeof variants[0]; ++v) {
    size_t size = 0, count = 0, i, declared_in_json = 0;
    unsigned char *image = read_kernels(variants[v], "capi_misc", &size);
    char *json = inspect("host", image, size);
    const char *at = json;
    sk_module *mod = NULL;
    SK_CHECK(sk_module_load(dev, image, size, &mod));
    SK_CHECK(sk_module_kernel_count(mod, &count));
    assert_true(count > 0);
    for (i = 0; i < count; ++i) {
      char name[256], expected[1024], *object, *sig, *type;
      sk_kernel *k = NULL;
      SK_CHECK(sk_module_kernel_name(mod, i, name, sizeof name, NULL));
      k = get_kernel(mod, name);
      sig = kernel_string(sk_kernel_signature, k);
      type = kernel_string(sk_kernel_core_type, k);
      object = kernel_object(json, name);
      snprintf(expected, sizeof expected,
               "{\"name\":\"%s\",\"signature\":\"%s\",\"core_type\":\"%s\",\"defined\":true,\"device_api\":[", name,
               sig, type);
      if (strncmp(object, expected, strlen(expected)) != 0)
        fail_msg("%s: %s is not %s...", variants[v], object, expected);
      assert_null(strstr(object, "\"error\""));
      free(object);
      free(sig);
      free(type);
    }
    while ((at = strstr(at, "{\"name\":")) != NULL) ++declared_in_json, ++at;
    assert_int_equal(declared_in_json, count);
    /* Defined without a record: not a declared kernel. */
    assert_null(strstr(json, "capi_plain_add"));
    assert_non_null(strstr(json, "\"kind\":\"object\""));
    assert_non_null(strstr(json, "<memory image of "));
    sk_module_unload(mod);
    free(json);
    free(image);
  }
}

/* The device API a kernel reaches is what libsk's plan of it says. */
static void test_device_api_is_the_plans(void **state) {
  sk_device *dev = (sk_device *)*state;
  size_t size = 0;
  unsigned char *image = read_kernels(TEST_VARIANT, "capi_sync", &size);
  char *json = inspect("host", image, size), *object = kernel_object(json, "capi_sync_sum"), *explain;
  const char *plan_api, *plan_end;
  sk_module *mod = NULL;
  sk_scope *scope = NULL;
  sk_superkernel *sk = NULL;
  void *p = NULL;
  uint32_t n = 1;
  void *args[4];
  args[0] = &p;
  args[1] = &p;
  args[2] = &p;
  args[3] = &n;
  SK_CHECK(sk_module_load(dev, image, size, &mod));
  SK_CHECK(sk_scope_begin(dev, "inspect", NULL, &scope));
  SK_CHECK(sk_add_kernel(scope, get_kernel(mod, "capi_sync_sum"), 1, args, NULL));
  SK_CHECK(sk_finalize(scope, &sk));
  explain = explain_text(sk);
  plan_api = strstr(explain, "\"device_api\":[");
  assert_non_null(plan_api);
  plan_end = strchr(plan_api, ']');
  assert_non_null(plan_end);
  assert_non_null(strstr(object, "sk_sync_all"));
  {
    char wanted[1024];
    size_t len = (size_t)(plan_end - plan_api) + 1;
    assert_true(len < sizeof wanted);
    memcpy(wanted, plan_api, len);
    wanted[len] = '\0';
    if (!strstr(object, wanted)) fail_msg("%s does not hold the plan's %s", object, wanted);
  }
  free(explain);
  sk_superkernel_destroy(sk);
  sk_module_unload(mod);
  free(object);
  free(json);
  free(image);
}

/* A record whose signature does not parse: the object inspects, and the kernel carries the error
 * sk_module_get_kernel gives it. */
static void test_a_kernel_libsk_would_refuse_says_why(void **state) {
  size_t size = 0;
  unsigned char *image = read_kernels(TEST_VARIANT, "capi_badsig", &size);
  char *json = inspect("host", image, size), *object = kernel_object(json, "capi_badsig");
  const char *error = strstr(object, "\"error\":\"");
  (void)state;
  assert_non_null(error);
  assert_non_null(strstr(error, "'float'"));
  assert_non_null(strstr(error, "capi_badsig"));
  free(object);
  free(json);
  free(image);
}

/* A malformed record fails the whole inspection as it fails sk_module_load, naming it. */
static void test_a_malformed_record_is_refused_naming_it(void **state) {
  size_t size = 0;
  unsigned char *image = read_kernels(TEST_VARIANT, "capi_badtype", &size);
  char buf[64] = "untouched";
  size_t needed = 12345;
  (void)state;
  SK_EXPECT_ERR(sk_module_inspect("host", image, size, buf, sizeof buf, &needed), SK_ERR_BAD_BINARY, "warp9");
  SK_EXPECT_MSG("capi_badtype");
  SK_EXPECT_MSG("<memory image of ");
  assert_string_equal(buf, "untouched");
  assert_int_equal(needed, 12345);
  free(image);
}

/* An `ar` archive of the given objects, without a symbol index (libsk reads the members'). */
static unsigned char *archive_of(const char *const *names, size_t count, size_t *size) {
  unsigned char *out = (unsigned char *)malloc(8);
  size_t len = 8, i;
  assert_non_null(out);
  memcpy(out, "!<arch>\n", 8);
  for (i = 0; i < count; ++i) {
    size_t member_size = 0;
    unsigned char *member = read_kernels(TEST_VARIANT, names[i], &member_size);
    char header[128], member_name[32];
    snprintf(member_name, sizeof member_name, "%s.o/", names[i]);
    assert_true(strlen(member_name) <= 16);
    /* The header is 60 bytes when every field fits its width. */
    assert_int_equal(snprintf(header, sizeof header, "%-16s%-12s%-6s%-6s%-8s%-10zu`\n", member_name, "0", "0", "0",
                              "644", member_size),
                     60);
    out = (unsigned char *)realloc(out, len + 60 + member_size + 1);
    assert_non_null(out);
    memcpy(out + len, header, 60);
    memcpy(out + len + 60, member, member_size);
    len += 60 + member_size;
    if (member_size % 2) out[len++] = '\n';
    free(member);
  }
  *size = len;
  return out;
}

static void test_archive_members(void **state) {
  static const char *const good[] = {"capi_misc", "capi_sync"};
  static const char *const bad[] = {"capi_misc", "capi_badtype"};
  size_t size = 0;
  unsigned char *image = archive_of(good, 2, &size);
  char *json = inspect("host", image, size), *object;
  const char *misc, *sync;
  (void)state;
  assert_non_null(strstr(json, "\"kind\":\"archive\""));
  misc = strstr(json, "{\"name\":\"capi_misc.o\",\"bytes\":");
  sync = strstr(json, "{\"name\":\"capi_sync.o\",\"bytes\":");
  assert_non_null(misc);
  assert_non_null(sync);
  /* Each member's kernels under it. */
  assert_true(strstr(misc, "capi_types") < sync);
  assert_true(strstr(json, "capi_sync_sum") > sync);
  object = kernel_object(sync, "capi_sync_sum");
  assert_non_null(strstr(object, "sk_sync_all"));
  free(object);
  free(json);
  free(image);
  image = archive_of(bad, 2, &size);
  SK_EXPECT_ERR(sk_module_inspect("host", image, size, NULL, 0, &size), SK_ERR_BAD_BINARY,
                "(capi_badtype.o): kernel 'capi_badtype': unknown core type 'warp9'");
  free(image);
}

static void test_bad_specs_and_images(void **state) {
  size_t size = 0, needed = 0;
  unsigned char *image = read_kernels(TEST_VARIANT, "capi_misc", &size);
  char small[4];
  (void)state;
  SK_EXPECT_ERR(sk_module_inspect("host:wat=1", image, size, NULL, 0, &needed), SK_ERR_INVALID_ARGUMENT, "'wat'");
  SK_EXPECT_ERR(sk_module_inspect("host:cores=0", image, size, NULL, 0, &needed), SK_ERR_INVALID_ARGUMENT, "cores");
  SK_EXPECT_ERR(sk_module_inspect("host", "hello", 5, NULL, 0, &needed), SK_ERR_BAD_BINARY,
                "<memory image of 5 bytes>");
  SK_EXPECT_ERR(sk_module_inspect("host", image, size, small, sizeof small, &needed), SK_ERR_INVALID_ARGUMENT,
                "cap is 4");
  assert_true(needed > sizeof small);
  free(inspect("host:cores=2,symbols=strict", image, size));
  free(image);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_kernels_agree_with_the_loaded_module),
      cmocka_unit_test(test_device_api_is_the_plans),
      cmocka_unit_test(test_a_kernel_libsk_would_refuse_says_why),
      cmocka_unit_test(test_a_malformed_record_is_refused_naming_it),
      cmocka_unit_test(test_archive_members),
      cmocka_unit_test(test_bad_specs_and_images),
  };
  return cmocka_run_group_tests(tests, test_setup_host_device, test_teardown_device);
}
