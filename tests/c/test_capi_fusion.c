/* Public C API: a super kernel computes what its kernels compute launched one by one.
 * Chains of kernels (fill, axpb, gather, rotate, sk_sync_all reductions, task-overlap pairs) are
 * run three ways: on the host by a C reference, unfused (one sk_launch_kernel per kernel) and
 * fused (one sk_launch), many times, with objects from several compilers and options. */
#include "test_util.h"

enum op { OP_FILL, OP_AXPB, OP_GATHER, OP_ROTATE, OP_SYNC_SUM, OP_PRODUCE, OP_CONSUME, OP_COUNT };
static const char *const op_kernel[OP_COUNT] = {"capi_fill",     "capi_axpb",       "capi_gather",    "capi_rotate",
                                                "capi_sync_sum", "capi_ov_produce", "capi_ov_consume"};
static const char *const op_object[OP_COUNT] = {"capi_chain", "capi_chain",   "capi_chain",  "capi_chain",
                                                "capi_sync",  "capi_overlap", "capi_overlap"};

#define MAX_STEPS 160
#define MAX_BUFS 96

struct step {
  enum op op;
  uint32_t bd;
  uint32_t buf[3]; /* buffer numbers of the pointer arguments */
  uint32_t x;      /* seed or stride */
  int32_t a, b;
  /* bound values, pointed to by args */
  uint32_t *p[3];
  uint32_t n;
  void *args[4];
};

struct chain {
  uint32_t n;    /* elements per buffer */
  uint32_t nbuf; /* buffers in the pool */
  uint32_t nsteps;
  struct step steps[MAX_STEPS];
};

struct kernels {
  sk_module *mods[3];
  sk_kernel *k[OP_COUNT];
};

static void load_all(sk_device *dev, const char *variant, struct kernels *ks) {
  static const char *const objects[3] = {"capi_chain", "capi_sync", "capi_overlap"};
  int i, j;
  for (i = 0; i < 3; ++i) ks->mods[i] = load_kernels(dev, variant, objects[i]);
  for (j = 0; j < OP_COUNT; ++j)
    for (i = 0; i < 3; ++i)
      if (strcmp(op_object[j], objects[i]) == 0) ks->k[j] = get_kernel(ks->mods[i], op_kernel[j]);
}

static void unload_all(struct kernels *ks) {
  int i;
  for (i = 0; i < 3; ++i) sk_module_unload(ks->mods[i]);
}

static struct step *add_step(struct chain *c, enum op op, uint32_t bd, uint32_t b0, uint32_t b1, uint32_t b2) {
  struct step *s;
  assert_true(c->nsteps < MAX_STEPS);
  assert_true(b0 < c->nbuf && b1 < c->nbuf && b2 < c->nbuf);
  s = &c->steps[c->nsteps++];
  memset(s, 0, sizeof *s);
  s->op = op;
  s->bd = bd;
  s->buf[0] = b0;
  s->buf[1] = b1;
  s->buf[2] = b2;
  return s;
}

/* Points each step's args at its values, with buffers inside `pool`. */
static void bind(struct chain *c, uint32_t *pool) {
  uint32_t i;
  for (i = 0; i < c->nsteps; ++i) {
    struct step *s = &c->steps[i];
    s->p[0] = pool + (size_t)s->buf[0] * c->n;
    s->p[1] = pool + (size_t)s->buf[1] * c->n;
    s->p[2] = pool + (size_t)s->buf[2] * c->n;
    s->n = c->n;
    s->args[0] = &s->p[0];
    switch (s->op) {
      case OP_FILL:
        s->args[1] = &s->n;
        s->args[2] = &s->x;
        break;
      case OP_AXPB:
        s->args[1] = &s->n;
        s->args[2] = &s->a;
        s->args[3] = &s->b;
        break;
      case OP_GATHER:
        s->args[1] = &s->p[1];
        s->args[2] = &s->n;
        s->args[3] = &s->x;
        break;
      case OP_ROTATE:
        s->args[1] = &s->p[1];
        s->args[2] = &s->n;
        break;
      case OP_SYNC_SUM:
        s->args[1] = &s->p[1];
        s->args[2] = &s->p[2];
        s->args[3] = &s->n;
        break;
      case OP_PRODUCE:
        s->args[1] = &s->p[1];
        s->args[2] = &s->n;
        s->args[3] = &s->x;
        break;
      case OP_CONSUME:
        s->args[1] = &s->p[1];
        s->args[2] = &s->p[2];
        s->args[3] = &s->n;
        break;
      default: fail_msg("bad op");
    }
  }
}

/* What the kernels compute, block by block where the block count shows in the result. */
static void reference(const struct chain *c, uint32_t *pool) {
  uint32_t i, j, k, n = c->n;
  for (k = 0; k < c->nsteps; ++k) {
    const struct step *s = &c->steps[k];
    uint32_t *p0 = pool + (size_t)s->buf[0] * n, *p1 = pool + (size_t)s->buf[1] * n;
    uint32_t *p2 = pool + (size_t)s->buf[2] * n;
    switch (s->op) {
      case OP_FILL:
        for (i = 0; i < n; ++i) p0[i] = i * 2654435761u + s->x;
        break;
      case OP_AXPB:
        for (i = 0; i < n; ++i) p0[i] = p0[i] * (uint32_t)s->a + (uint32_t)s->b;
        break;
      case OP_GATHER:
        for (i = 0; i < n; ++i) p0[i] += p1[(uint32_t)(((uint64_t)i * s->x + 1) % n)] ^ i;
        break;
      case OP_ROTATE:
        for (i = 0; i < n; ++i) {
          uint32_t v = p1[(i + 1) % n];
          p0[i] = ((v << 5) | (v >> 27)) ^ s->bd;
        }
        break;
      case OP_SYNC_SUM: {
        uint32_t total = 0;
        for (j = 0; j < s->bd; ++j) {
          uint32_t part = 0;
          for (i = j; i < n; i += s->bd) part += p0[i] * (i | 1u);
          p1[j] = part;
          total += part * (j + 1);
        }
        for (i = 0; i < n; ++i) p2[i] = p0[i] + total;
        break;
      }
      case OP_PRODUCE:
        for (i = 0; i < n; ++i) p0[i] = p0[i] * 3u + s->x + i;
        for (i = 0; i < n; ++i) p1[i] = i * s->x + 17u;
        break;
      case OP_CONSUME:
        for (i = 0; i < n; ++i) p1[i] += i * 7u;
        for (i = 0; i < n; ++i) p2[i] = p0[(uint32_t)(((uint64_t)i * 13u + 5u) % n)] + p1[i];
        break;
      default: fail_msg("bad op");
    }
  }
}

static void garbage(uint32_t *host, size_t count, uint32_t salt) {
  size_t i;
  for (i = 0; i < count; ++i) host[i] = (uint32_t)(i * 40503u) ^ salt;
}

/* First difference between two pools, as a message in `why` (0 if they are equal). */
static int pools_differ(const uint32_t *got, const uint32_t *want, size_t count, const char *what,
                        const char *variant, int round, char *why, size_t cap) {
  size_t i;
  if (memcmp(got, want, count * sizeof(uint32_t)) == 0) return 0;
  for (i = 0; i < count && got[i] == want[i]; ++i) {
  }
  snprintf(why, cap, "%s (%s, round %d): element %zu differs: got 0x%08x, expected 0x%08x", what, variant, round, i,
           got[i], want[i]);
  return 1;
}

static void expect_pool_equal(const uint32_t *got, const uint32_t *want, size_t count, const char *what,
                              const char *variant, int round) {
  char why[256];
  if (pools_differ(got, want, count, what, variant, round, why, sizeof why)) fail_msg("%s", why);
}

static sk_superkernel *build(sk_device *dev, const struct kernels *ks, struct chain *c, const char *name,
                             const char *options) {
  sk_scope *scope = NULL;
  sk_superkernel *sk = NULL;
  uint32_t i;
  SK_CHECK(sk_scope_begin(dev, name, options, &scope));
  for (i = 0; i < c->nsteps; ++i) {
    struct step *s = &c->steps[i];
    SK_CHECK(sk_add_kernel(scope, ks->k[s->op], s->bd, s->op == OP_COUNT ? NULL : s->args, NULL));
  }
  SK_CHECK(sk_finalize(scope, &sk));
  return sk;
}

/* Reference, unfused, then `launches` fused launches (the first half checked one by one, the
 * second half queued back to back), all compared with memcmp. Returns 0 and a message in `why`
 * on the first difference, after cleaning up what it made (the caller cleans up, then fails). */
static int run_chain(sk_device *dev, const struct kernels *ks, struct chain *c, const char *variant,
                     const char *options, int launches, char *why, size_t cap) {
  const size_t count = (size_t)c->nbuf * c->n, bytes = count * sizeof(uint32_t);
  uint32_t *pool = (uint32_t *)mem_alloc(dev, bytes);
  uint32_t *want = (uint32_t *)malloc(bytes), *init = (uint32_t *)malloc(bytes);
  uint32_t *got = (uint32_t *)malloc(bytes);
  sk_superkernel *sk;
  uint32_t i;
  int round, differ;
  assert_non_null(want);
  assert_non_null(init);
  assert_non_null(got);
  bind(c, pool);
  garbage(init, count, 0x9e3779b9u);
  memcpy(want, init, bytes);
  reference(c, want);

  /* Unfused: one launch per kernel, in order on the default stream. */
  SK_CHECK(sk_memcpy(dev, pool, init, bytes));
  for (i = 0; i < c->nsteps; ++i) {
    struct step *s = &c->steps[i];
    SK_CHECK(sk_launch_kernel(ks->k[s->op], s->bd, s->args, NULL));
  }
  SK_CHECK(sk_stream_synchronize(NULL));
  SK_CHECK(sk_memcpy(dev, got, pool, bytes));
  differ = pools_differ(got, want, count, "unfused vs reference", variant, 0, why, cap);

  /* Fused. */
  sk = build(dev, ks, c, "fusion_chain", options);
  for (round = 0; !differ && round < launches / 2; ++round) {
    SK_CHECK(sk_memcpy(dev, pool, init, bytes));
    SK_CHECK(sk_launch(sk, NULL));
    SK_CHECK(sk_stream_synchronize(NULL));
    SK_CHECK(sk_memcpy(dev, got, pool, bytes));
    differ = pools_differ(got, want, count, "fused vs unfused", variant, round, why, cap);
  }
  /* Back to back: every launch starts from what the previous left, and each chain rewrites
   * every buffer before it reads it, so the end state is the same. */
  if (!differ) {
    SK_CHECK(sk_memcpy(dev, pool, init, bytes));
    for (; round < launches; ++round) SK_CHECK(sk_launch(sk, NULL));
    SK_CHECK(sk_memcpy(dev, got, pool, bytes)); /* waits for the queued launches */
    SK_CHECK(sk_stream_synchronize(NULL));
    differ = pools_differ(got, want, count, "fused back to back vs unfused", variant, round, why, cap);
  }

  sk_superkernel_destroy(sk);
  sk_mem_free(dev, pool);
  free(want);
  free(init);
  free(got);
  return !differ;
}

static uint32_t rng_next(uint32_t *state) {
  *state = *state * 1664525u + 1013904223u;
  return *state >> 8;
}

/* A long chain over buffers 0..2 (data), 3 (partials), then pairs of fresh buffers for each
 * produce/consume pair (side and pre), so the overlapped parts never share data. Every buffer a
 * launch reads is written earlier in the same launch: launches can be repeated. */
static void make_mixed_chain(struct chain *c, uint32_t cores, uint32_t seed, uint32_t min_steps) {
  static const uint32_t dims[] = {1, 2, 3, 4, 5, 7, 16, 64, 100, 2, 1, 3};
  uint32_t r = seed, next_buf = 4;
  memset(c, 0, sizeof *c);
  c->n = 1024;
  c->nbuf = MAX_BUFS;
  add_step(c, OP_FILL, 5, 0, 0, 0)->x = 11;
  add_step(c, OP_FILL, 1, 1, 0, 0)->x = 5;
  add_step(c, OP_FILL, 64, 2, 0, 0)->x = 9;
  while (c->nsteps < min_steps) {
    uint32_t kind = rng_next(&r) % 6, x = rng_next(&r) % 3, y = (x + 1 + rng_next(&r) % 2) % 3;
    uint32_t bd = dims[rng_next(&r) % (sizeof dims / sizeof dims[0])];
    struct step *s;
    switch (kind) {
      case 0:
        s = add_step(c, OP_AXPB, bd, x, 0, 0);
        s->a = (int32_t)(rng_next(&r) % 17) - 8;
        s->b = (int32_t)(rng_next(&r) % 1000) - 500;
        break;
      case 1:
      case 2: add_step(c, OP_GATHER, bd, x, y, 0)->x = 1 + rng_next(&r) % 97; break;
      case 3: add_step(c, OP_ROTATE, bd, x, y, 0); break;
      case 4: {
        static const uint32_t sync_dims[] = {1, 2, 3, 4};
        bd = sync_dims[rng_next(&r) % 4];
        if (bd > cores) bd = cores;
        add_step(c, OP_SYNC_SUM, bd, x, 3, y);
        break;
      }
      default: {
        /* fill(pre); produce(x, side); consume(x, pre, y): consume on no more cores than
         * produce, so each of its cores has passed produce's start. */
        uint32_t side = next_buf++, pre = next_buf++, cbd;
        assert_true(next_buf <= c->nbuf);
        add_step(c, OP_FILL, dims[rng_next(&r) % 12], pre, 0, 0)->x = rng_next(&r);
        add_step(c, OP_PRODUCE, bd, x, side, 0)->x = rng_next(&r) % 1000;
        cbd = 1 + rng_next(&r) % bd;
        add_step(c, OP_CONSUME, cbd, x, pre, y);
        break;
      }
    }
  }
  if (next_buf < c->nbuf) c->nbuf = next_buf;
}

/* ---- tests ------------------------------------------------------------------------------- */

static void test_long_chain_variants(void **state) {
  static const char *const variants[] = {"gcc-O0-pie",   "gcc-O2-nopic", "clang-O3-pic",
                                         "clang-O2-pie", "gcc-O3-pic",   "clang-O0-nopic"};
  size_t v;
  (void)state;
  for (v = 0; v < sizeof variants / sizeof variants[0]; ++v) {
    /* 2, 3 and 4 cores; short spins: these machines are shared, and a core that spins while
     * the one it waits for is descheduled only burns time. */
    static const uint32_t spins[] = {10, 2, 0};
    uint32_t cores = 2 + (uint32_t)(v % 3);
    char spec[64], why[256];
    int ok;
    struct chain *c = (struct chain *)malloc(sizeof *c);
    struct kernels ks;
    sk_device *dev;
    assert_non_null(c);
    /* Odd variants count releases in groups of 2 (a combining tree on 3 and 4 cores). */
    snprintf(spec, sizeof spec, "host:cores=%u,spin_us=%u,barrier_group=%u", cores, spins[v % 3], v % 2 ? 2u : 0u);
    dev = open_device(spec);
    load_all(dev, variants[v], &ks);
    make_mixed_chain(c, cores, 12345u + (uint32_t)v, 72);
    assert_true(c->nsteps >= 64);
    ok = run_chain(dev, &ks, c, variants[v], NULL, 100, why, sizeof why);
    unload_all(&ks);
    sk_device_close(dev);
    free(c);
    if (!ok) fail_msg("%s", why);
  }
}

/* Kernels from different compilers in one super kernel. */
static void test_mixed_compilers_one_superkernel(void **state) {
  sk_device *dev = open_device("host:cores=3");
  struct kernels a, b;
  struct chain *c = (struct chain *)malloc(sizeof *c);
  uint32_t i;
  (void)state;
  assert_non_null(c);
  load_all(dev, "gcc-O2-pic", &a);
  load_all(dev, "clang-O0-pie", &b);
  /* Odd steps run clang's code: swap kernel tables by building the chain twice would lose the
   * mix, so build an interleaved table of kernels instead. */
  make_mixed_chain(c, 3, 777u, 64);
  {
    const size_t count = (size_t)c->nbuf * c->n, bytes = count * sizeof(uint32_t);
    uint32_t *pool = (uint32_t *)mem_alloc(dev, bytes);
    uint32_t *want = (uint32_t *)malloc(bytes), *got = (uint32_t *)malloc(bytes);
    sk_scope *scope = NULL;
    sk_superkernel *sk = NULL;
    int round;
    assert_non_null(want);
    assert_non_null(got);
    bind(c, pool);
    garbage(want, count, 7);
    SK_CHECK(sk_memcpy(dev, pool, want, bytes));
    reference(c, want);
    SK_CHECK(sk_scope_begin(dev, "mixed_compilers", NULL, &scope));
    for (i = 0; i < c->nsteps; ++i) {
      struct step *s = &c->steps[i];
      SK_CHECK(sk_add_kernel(scope, (i % 2 ? b.k : a.k)[s->op], s->bd, s->args, NULL));
    }
    SK_CHECK(sk_finalize(scope, &sk));
    for (round = 0; round < 10; ++round) SK_CHECK(sk_launch(sk, NULL));
    SK_CHECK(sk_stream_synchronize(NULL));
    SK_CHECK(sk_memcpy(dev, got, pool, bytes));
    expect_pool_equal(got, want, count, "mixed compilers vs reference", "gcc-O2-pic+clang-O0-pie", 10);
    sk_superkernel_destroy(sk);
    sk_mem_free(dev, pool);
    free(want);
    free(got);
  }
  unload_all(&a);
  unload_all(&b);
  sk_device_close(dev);
  free(c);
}

static void test_sync_all(void **state) {
  static const char *const variants[] = {"gcc-O0-pie", "clang-O2-pie", "gcc-O3-nopic"};
  size_t v;
  (void)state;
  for (v = 0; v < sizeof variants / sizeof variants[0]; ++v) {
    sk_device *dev = open_device("host:cores=4,spin_us=2");
    struct kernels ks;
    struct chain *c = (struct chain *)calloc(1, sizeof *c);
    uint32_t k;
    char why[256];
    int ok;
    assert_non_null(c);
    load_all(dev, variants[v], &ks);
    c->n = 1000;
    c->nbuf = 4;
    add_step(c, OP_FILL, 7, 0, 0, 0)->x = 3;
    for (k = 0; k < 12; ++k) {
      /* every block count up to the device's cores, partials in buffer 3 */
      uint32_t bd = 1 + k % 4;
      add_step(c, OP_SYNC_SUM, bd, k % 3, 3, (k + 1) % 3);
      add_step(c, OP_ROTATE, 9, (k + 2) % 3, (k + 1) % 3, 0);
    }
    add_step(c, OP_SYNC_SUM, 4, 2, 3, 0);
    ok = run_chain(dev, &ks, c, variants[v], NULL, 40, why, sizeof why);
    unload_all(&ks);
    sk_device_close(dev);
    free(c);
    if (!ok) fail_msg("%s", why);
  }
}

/* produce/consume pairs with every block count mix where consume's cores all ran produce, under
 * the default options (overlap on) and with overlap turned off two ways. */
static void test_task_overlap(void **state) {
  static const char *const variants[] = {"gcc-O2-pie", "clang-O3-nopic"};
  static const char *const options[] = {NULL, "early-start=1", "early-start=0", "debug-sync-all=1"};
  static const uint32_t pairs[][2] = {{1, 1}, {2, 1}, {3, 3}, {3, 2}, {5, 4},
                                      {8, 3}, {3, 1}, {7, 7}, {2, 2}, {16, 9}};
  size_t v, o, p;
  (void)state;
  for (v = 0; v < sizeof variants / sizeof variants[0]; ++v) {
    for (o = 0; o < sizeof options / sizeof options[0]; ++o) {
      sk_device *dev = open_device("host:cores=3,spin_us=2");
      struct kernels ks;
      struct chain *c = (struct chain *)calloc(1, sizeof *c);
      uint32_t buf = 3;
      char why[256];
      int ok;
      assert_non_null(c);
      load_all(dev, variants[v], &ks);
      c->n = 2048;
      c->nbuf = 3 + 2 * (uint32_t)(sizeof pairs / sizeof pairs[0]);
      add_step(c, OP_FILL, 4, 0, 0, 0)->x = 1;
      add_step(c, OP_FILL, 2, 1, 0, 0)->x = 2;
      for (p = 0; p < sizeof pairs / sizeof pairs[0]; ++p) {
        uint32_t side = buf++, pre = buf++;
        add_step(c, OP_FILL, 3, pre, 0, 0)->x = (uint32_t)p;
        add_step(c, OP_AXPB, 5, p % 2, 0, 0)->a = 3;
        add_step(c, OP_PRODUCE, pairs[p][0], p % 2, side, 0)->x = 100 + (uint32_t)p;
        add_step(c, OP_CONSUME, pairs[p][1], p % 2, pre, 2);
        add_step(c, OP_GATHER, 2, (p + 1) % 2, 2, 0)->x = 3;
      }
      ok = run_chain(dev, &ks, c, variants[v], options[o], 30, why, sizeof why);
      unload_all(&ks);
      sk_device_close(dev);
      free(c);
      if (!ok) fail_msg("options \"%s\": %s", options[o] ? options[o] : "(null)", why);
    }
  }
}

/* consume on more cores than produce: its extra cores reach consume without having passed
 * produce's start, and consume's part before sk_wait_pre_task_end may overlap only produce,
 * never the kernels before produce (here: the fill of consume's own `pre` buffer). */
static void test_task_overlap_wider_consumer(void **state) {
  sk_device *dev = open_device("host:cores=3");
  struct kernels ks;
  struct chain *c = (struct chain *)calloc(1, sizeof *c);
  char why[256];
  int ok;
  (void)state;
  assert_non_null(c);
  load_all(dev, "gcc-O2-pie", &ks);
  c->n = 1u << 16;
  c->nbuf = 4;
  add_step(c, OP_FILL, 1, 0, 0, 0)->x = 1;
  add_step(c, OP_FILL, 1, 2, 0, 0)->x = 2; /* pre */
  add_step(c, OP_PRODUCE, 1, 0, 1, 0)->x = 3;
  add_step(c, OP_CONSUME, 3, 0, 2, 3);
  ok = run_chain(dev, &ks, c, "gcc-O2-pie", NULL, 20, why, sizeof why);
  unload_all(&ks);
  sk_device_close(dev);
  free(c);
  if (!ok) fail_msg("%s", why);
}

/* Launches on two streams and on the default stream; each stream keeps its order. */
static void test_streams(void **state) {
  sk_device *dev = open_device("host:cores=3");
  sk_device *other = open_device("host:cores=1");
  sk_stream *s1 = NULL, *s2 = NULL, *foreign = NULL;
  struct kernels ks;
  struct chain *c1 = (struct chain *)malloc(sizeof *c1), *c2 = (struct chain *)malloc(sizeof *c2);
  uint32_t *pool1, *pool2, *want1, *want2, *got;
  size_t bytes1, bytes2;
  sk_superkernel *sk1, *sk2;
  int round;
  uint32_t i;
  (void)state;
  assert_non_null(c1);
  assert_non_null(c2);
  load_all(dev, "clang-O2-pie", &ks);
  make_mixed_chain(c1, 3, 1u, 40);
  make_mixed_chain(c2, 3, 2u, 40);
  bytes1 = (size_t)c1->nbuf * c1->n * sizeof(uint32_t);
  bytes2 = (size_t)c2->nbuf * c2->n * sizeof(uint32_t);
  pool1 = (uint32_t *)mem_alloc(dev, bytes1);
  pool2 = (uint32_t *)mem_alloc(dev, bytes2);
  want1 = (uint32_t *)malloc(bytes1);
  want2 = (uint32_t *)malloc(bytes2);
  got = (uint32_t *)malloc(bytes1 > bytes2 ? bytes1 : bytes2);
  assert_non_null(want1);
  assert_non_null(want2);
  assert_non_null(got);
  bind(c1, pool1);
  bind(c2, pool2);
  garbage(want1, bytes1 / 4, 1);
  garbage(want2, bytes2 / 4, 2);
  SK_CHECK(sk_memcpy(dev, pool1, want1, bytes1));
  SK_CHECK(sk_memcpy(dev, pool2, want2, bytes2));
  reference(c1, want1);
  reference(c2, want2);
  sk1 = build(dev, &ks, c1, "stream_one", NULL);
  sk2 = build(dev, &ks, c2, "stream_two", NULL);
  SK_CHECK(sk_stream_create(dev, &s1));
  SK_CHECK(sk_stream_create(dev, &s2));
  SK_CHECK(sk_stream_create(other, &foreign));
  SK_EXPECT_ERR(sk_launch(sk1, foreign), SK_ERR_INCOMPATIBLE, "stream_one");
  SK_EXPECT_ERR(sk_launch_kernel(ks.k[OP_FILL], 1, c1->steps[0].args, foreign), SK_ERR_INCOMPATIBLE, "capi_fill");
  SK_EXPECT_ERR(sk_launch_kernel(ks.k[OP_FILL], 0, c1->steps[0].args, s1), SK_ERR_INVALID_ARGUMENT, "capi_fill");
  SK_EXPECT_ERR(sk_launch_kernel(ks.k[OP_FILL], 2, NULL, s1), SK_ERR_INVALID_ARGUMENT, "capi_fill");
  for (round = 0; round < 10; ++round) {
    SK_CHECK(sk_launch(sk1, s1));
    SK_CHECK(sk_launch(sk2, s2));
  }
  SK_CHECK(sk_stream_synchronize(s1));
  SK_CHECK(sk_memcpy(dev, got, pool1, bytes1));
  expect_pool_equal(got, want1, bytes1 / 4, "stream one", "clang-O2-pie", round);
  SK_CHECK(sk_stream_synchronize(s2));
  SK_CHECK(sk_memcpy(dev, got, pool2, bytes2));
  expect_pool_equal(got, want2, bytes2 / 4, "stream two", "clang-O2-pie", round);
  /* Unfused launches on a stream, the super kernel on the default stream. */
  garbage(got, bytes2 / 4,
          2); /* the same start as the reference: the partials past a block count stay as they were */
  SK_CHECK(sk_memcpy(dev, pool2, got, bytes2));
  for (i = 0; i < c2->nsteps; ++i)
    SK_CHECK(sk_launch_kernel(ks.k[c2->steps[i].op], c2->steps[i].bd, c2->steps[i].args, s2));
  SK_CHECK(sk_launch(sk1, NULL));
  SK_CHECK(sk_stream_synchronize(s2));
  SK_CHECK(sk_stream_synchronize(NULL));
  SK_CHECK(sk_memcpy(dev, got, pool2, bytes2));
  expect_pool_equal(got, want2, bytes2 / 4, "unfused on a stream", "clang-O2-pie", 0);
  SK_CHECK(sk_memcpy(dev, got, pool1, bytes1));
  expect_pool_equal(got, want1, bytes1 / 4, "default stream", "clang-O2-pie", 0);
  /* Destroying a stream with work queued waits for it. */
  SK_CHECK(sk_launch(sk2, s2));
  sk_stream_destroy(s2);
  sk_stream_destroy(s1);
  sk_stream_destroy(foreign);
  sk_superkernel_destroy(sk1);
  sk_superkernel_destroy(sk2);
  sk_mem_free(dev, pool1);
  sk_mem_free(dev, pool2);
  free(want1);
  free(want2);
  free(got);
  free(c1);
  free(c2);
  unload_all(&ks);
  sk_device_close(other);
  sk_device_close(dev);
}

/* A kernel without parameters, module state, and the kernel without metadata in a super kernel. */
static void test_noargs_and_plain_kernels(void **state) {
  sk_device *dev = open_device("host:cores=2");
  sk_module *mod = load_kernels(dev, "clang-O0-pie", "capi_misc");
  sk_kernel *noargs = get_kernel(mod, "capi_noargs"), *read = get_kernel(mod, "capi_read_counter");
  sk_kernel *plain = NULL;
  uint32_t *buf = (uint32_t *)mem_alloc(dev, 64 * sizeof(uint32_t));
  uint32_t *counter = (uint32_t *)mem_alloc(dev, sizeof(uint32_t));
  uint32_t n = 64, add = 3, i;
  void *plain_args[3], *read_args[1];
  sk_scope *scope = NULL;
  sk_superkernel *sk = NULL;
  int round;
  (void)state;
  plain_args[0] = &buf;
  plain_args[1] = &n;
  plain_args[2] = &add;
  read_args[0] = &counter;
  SK_CHECK(sk_module_get_kernel_with_signature(mod, "capi_plain_add", "ptr,u32,u32", &plain));
  memset(buf, 0, 64 * sizeof(uint32_t));
  SK_CHECK(sk_scope_begin(dev, "plain", NULL, &scope));
  SK_CHECK(sk_add_kernel(scope, noargs, 5, NULL, NULL)); /* multiplexed on 2 cores */
  SK_CHECK(sk_add_kernel(scope, plain, 3, plain_args, NULL));
  SK_CHECK(sk_add_kernel(scope, noargs, 1, NULL, NULL));
  SK_CHECK(sk_add_kernel(scope, read, 2, read_args, NULL));
  SK_CHECK(sk_add_kernel(scope, plain, 7, plain_args, NULL));
  SK_CHECK(sk_finalize(scope, &sk));
  for (round = 1; round <= 10; ++round) {
    SK_CHECK(sk_launch(sk, NULL));
    SK_CHECK(sk_stream_synchronize(NULL));
    assert_int_equal(*counter, 6u * (uint32_t)round);
    for (i = 0; i < n; ++i) assert_int_equal(buf[i], 6u * (uint32_t)round);
  }
  sk_superkernel_destroy(sk);
  sk_module_unload(mod);
  sk_mem_free(dev, buf);
  sk_mem_free(dev, counter);
  sk_device_close(dev);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_long_chain_variants),
      cmocka_unit_test(test_mixed_compilers_one_superkernel),
      cmocka_unit_test(test_sync_all),
      cmocka_unit_test(test_task_overlap),
      cmocka_unit_test(test_task_overlap_wider_consumer),
      cmocka_unit_test(test_streams),
      cmocka_unit_test(test_noargs_and_plain_kernels),
  };
  return cmocka_run_group_tests_name("c_api_fusion", tests, NULL, NULL);
}
