/* Public C API: block-local edges (SK_KERNEL_FLAG_BLOCK_LOCAL, scope option block-local). A
 * chain of element-wise kernels with block-local edges, broken by kernels that read other
 * blocks' results (whose edges stay barriers), computes bit for bit what its kernels compute
 * launched one by one: on 1 to 4 cores, with blocks multiplexed, with stream fusion, captured.
 * A block-local edge waits for no other block; every edge that cannot be block-local is
 * refused naming both kernels and what differs; explain shows the edges. */
#include "test_util.h"

#define N 1000u
#define LINKS 12u /* block-local axpb steps per run of the chain */
/* Polls of bl_wait_peer: LONG where the peer must come (it returns as soon as it does), SHORT
 * where it must not (always spent). */
#define LONG_POLLS 200000000u
#define SHORT_POLLS 300000u

struct kernels {
  sk_module *chain, *bl, *sync, *mixed;
  sk_kernel *fill, *axpb, *gather, *rotate, *wait_peer, *raise, *sync_sum, *hard_sum, *cube_tag, *vector_tag,
      *mix_scale;
};

static void load(sk_device *dev, struct kernels *k) {
  k->chain = load_kernels(dev, TEST_VARIANT, "capi_chain");
  k->bl = load_kernels(dev, TEST_VARIANT, "capi_block_local");
  k->sync = load_kernels(dev, TEST_VARIANT, "capi_sync");
  k->mixed = load_kernels(dev, TEST_VARIANT, "capi_mixed");
  k->fill = get_kernel(k->chain, "capi_fill");
  k->axpb = get_kernel(k->chain, "capi_axpb");
  k->gather = get_kernel(k->chain, "capi_gather");
  k->rotate = get_kernel(k->chain, "capi_rotate");
  k->wait_peer = get_kernel(k->bl, "bl_wait_peer");
  k->raise = get_kernel(k->bl, "bl_raise");
  k->sync_sum = get_kernel(k->sync, "capi_sync_sum");
  k->hard_sum = get_kernel(k->mixed, "hard_sync_sum");
  k->cube_tag = get_kernel(k->mixed, "cube_tag");
  k->vector_tag = get_kernel(k->mixed, "vector_tag");
  k->mix_scale = get_kernel(k->mixed, "mix_tile_scale");
}

static void unload(struct kernels *k) {
  sk_module_unload(k->chain);
  sk_module_unload(k->bl);
  sk_module_unload(k->sync);
  sk_module_unload(k->mixed);
}

/* One launch of a kernel: fused (sk_add_kernel into `scope`, block-local where `bl`) or, with
 * scope NULL, unfused (sk_launch_kernel). */
struct sink {
  sk_scope *scope;
  uint32_t stream;
};

static void put(struct sink *s, sk_kernel *k, uint32_t bd, void **args, int bl) {
  sk_kernel_options o = SK_KERNEL_OPTIONS_INIT;
  if (!s->scope) {
    SK_CHECK(sk_launch_kernel(k, bd, args, NULL));
    return;
  }
  o.flags = bl ? SK_KERNEL_FLAG_BLOCK_LOCAL : 0;
  o.stream = s->stream;
  SK_CHECK(sk_add_kernel(s->scope, k, bd, args, &o));
}

struct bufs {
  uint32_t *a, *b, *c;
};

/* The chain on buffers `u`: fill a and b, block-local axpbs on a, a gather of a into b (a
 * barrier: it reads other blocks' elements), block-local axpbs on b, a rotate of b into c
 * (barrier), block-local axpbs on c. `salt` varies the constants between chains. With
 * `event`, scope event `event` is recorded after the first fill (whose successor is
 * block-local): a kernel that waits for it waits for every block of that fill. */
static void put_chain_event(struct sink *s, const struct kernels *k, struct bufs *u, uint32_t bd, uint32_t salt,
                            int event) {
  static uint32_t n = N, seeds[2] = {7u, 1234567u}, stride = 17u;
  static int32_t ab[2 * LINKS];
  void *fa[] = {&u->a, &n, &seeds[0]}, *fb[] = {&u->b, &n, &seeds[1]};
  void *gather[] = {&u->b, &u->a, &n, &stride}, *rotate[] = {&u->c, &u->b, &n};
  uint32_t i;
  for (i = 0; i < 2 * LINKS; ++i) ab[i] = (int32_t)(i * 2654435761u + salt) | 1;
  put(s, k->fill, bd, fa, 0);
  if (event >= 0) SK_CHECK(sk_scope_record_event(s->scope, s->stream, (uint32_t)event));
  put(s, k->fill, bd, fb, 1); /* touches only b, which fill(a) does not touch */
  for (i = 0; i < LINKS; ++i) {
    uint32_t **buf = i < LINKS / 3 ? &u->a : i < 2 * LINKS / 3 ? &u->b : &u->c;
    void *args[] = {buf, &n, &ab[2 * i], &ab[2 * i + 1]};
    if (i == LINKS / 3) put(s, k->gather, bd, gather, 0);
    if (i == 2 * LINKS / 3) put(s, k->rotate, bd, rotate, 0);
    put(s, k->axpb, bd, args, 1);
  }
}

static void put_chain(struct sink *s, const struct kernels *k, struct bufs *u, uint32_t bd, uint32_t salt) {
  put_chain_event(s, k, u, bd, salt, -1);
}

static struct bufs alloc_bufs(sk_device *dev) {
  struct bufs u;
  u.a = (uint32_t *)mem_alloc(dev, N * sizeof(uint32_t));
  u.b = (uint32_t *)mem_alloc(dev, N * sizeof(uint32_t));
  u.c = (uint32_t *)mem_alloc(dev, N * sizeof(uint32_t));
  return u;
}

static void free_bufs(sk_device *dev, struct bufs *u) {
  sk_mem_free(dev, u->a);
  sk_mem_free(dev, u->b);
  sk_mem_free(dev, u->c);
}

static void expect_same(const struct bufs *got, const uint32_t *want) {
  assert_memory_equal(got->a, want, N * sizeof(uint32_t));
  assert_memory_equal(got->b, want + N, N * sizeof(uint32_t));
  assert_memory_equal(got->c, want + 2 * N, N * sizeof(uint32_t));
}

static void keep(const struct bufs *u, uint32_t *out) {
  memcpy(out, u->a, N * sizeof(uint32_t));
  memcpy(out + N, u->b, N * sizeof(uint32_t));
  memcpy(out + 2 * N, u->c, N * sizeof(uint32_t));
}

/* Fused with block-local edges == unfused, bit for bit, on devices of 1 to 4 cores (and 4 whose
 * releases go through the two-level tree, barrier_group=2), with as many blocks as cores and
 * with blocks multiplexed (more blocks than cores, and not a multiple of them), launched
 * several times (each launch a new epoch of the counters). */
static void test_chain_matches_unfused(void **state) {
  static const uint32_t core_counts[] = {1, 2, 3, 4, 4};
  uint32_t ci, bi, run;
  (void)state;
  for (ci = 0; ci < 5; ++ci) {
    char spec[64];
    const uint32_t cores = core_counts[ci];
    const uint32_t block_dims[2] = {cores, 2 * cores + 1};
    sk_device *dev;
    struct kernels k;
    struct bufs u;
    uint32_t *want = (uint32_t *)malloc(3 * N * sizeof(uint32_t));
    assert_non_null(want);
    snprintf(spec, sizeof spec, "host:cores=%u%s", cores, ci == 4 ? ",barrier_group=2" : "");
    dev = open_device(spec);
    load(dev, &k);
    u = alloc_bufs(dev);
    for (bi = 0; bi < 2; ++bi) {
      struct sink unfused = {NULL, 0}, fused = {NULL, 0};
      sk_superkernel *sk = NULL;
      put_chain(&unfused, &k, &u, block_dims[bi], cores + bi);
      SK_CHECK(sk_stream_synchronize(NULL));
      keep(&u, want);
      SK_CHECK(sk_scope_begin(dev, "bl_chain", NULL, &fused.scope));
      put_chain(&fused, &k, &u, block_dims[bi], cores + bi);
      SK_CHECK(sk_finalize(fused.scope, &sk));
      SK_EXPECT_EXPLAIN(sk, "\"edge\":\"block-local\"");
      if (ci == 4) SK_EXPECT_EXPLAIN(sk, "\"barrier\":\"tree\"");
      for (run = 0; run < 3; ++run) {
        memset(u.a, 0, N * sizeof(uint32_t));
        memset(u.c, 0, N * sizeof(uint32_t));
        SK_CHECK(sk_launch(sk, NULL));
        SK_CHECK(sk_stream_synchronize(NULL));
        expect_same(&u, want);
      }
      SK_CHECK(sk_launch_repeat(sk, 4, NULL, NULL));
      SK_CHECK(sk_stream_synchronize(NULL));
      expect_same(&u, want);
      sk_superkernel_destroy(sk);
    }
    free_bufs(dev, &u);
    unload(&k);
    sk_device_close(dev);
    free(want);
  }
}

/* Stream fusion: two block-local chains on two streams side by side (each packed on cores of
 * its own, its block-local steps on its cores), joined by events, one of them recorded after a
 * kernel whose successor is block-local (it must still count its end); and a capture whose
 * block-local edges come from the scope option block-local, as its launches carry no flags. */
static void test_streams_and_capture(void **state) {
  sk_device *dev = open_device("host:cores=4");
  struct kernels k;
  struct bufs u[2];
  uint32_t *want = (uint32_t *)malloc(6 * N * sizeof(uint32_t));
  uint32_t n = N, stride = 5u, run;
  sk_superkernel *sk = NULL;
  struct sink unfused = {NULL, 0}, s0 = {NULL, 0}, s1 = {NULL, 1};
  void *join[] = {&u[0].a, &u[1].c, &n, &stride};
  sk_stream *stream = NULL;
  (void)state;
  assert_non_null(want);
  load(dev, &k);
  u[0] = alloc_bufs(dev);
  u[1] = alloc_bufs(dev);
  put_chain(&unfused, &k, &u[0], 2, 1);
  put_chain(&unfused, &k, &u[1], 2, 2);
  put(&unfused, k.gather, 2, join, 0);
  SK_CHECK(sk_stream_synchronize(NULL));
  keep(&u[0], want);
  keep(&u[1], want + 3 * N);

  SK_CHECK(sk_scope_begin(dev, "bl_streams", "stream-fusion=1", &s0.scope));
  s1.scope = s0.scope;
  put_chain(&s0, &k, &u[0], 2, 1);
  put_chain_event(&s1, &k, &u[1], 2, 2, 1);
  SK_CHECK(sk_scope_record_event(s0.scope, 1, 0));
  SK_CHECK(sk_scope_wait_event(s0.scope, 0, 1));
  SK_CHECK(sk_scope_wait_event(s0.scope, 0, 0));
  put(&s0, k.gather, 2, join, 0);
  SK_CHECK(sk_finalize(s0.scope, &sk));
  SK_EXPECT_EXPLAIN(sk, "\"placement\":\"follows\"");
  for (run = 0; run < 3; ++run) {
    memset(u[0].c, 0, N * sizeof(uint32_t));
    memset(u[1].a, 0, N * sizeof(uint32_t));
    SK_CHECK(sk_launch(sk, NULL));
    SK_CHECK(sk_stream_synchronize(NULL));
    expect_same(&u[0], want);
    expect_same(&u[1], want + 3 * N);
  }
  sk_superkernel_destroy(sk);

  /* Captured: plain sk_launch_kernel calls, block-local by the option. */
  SK_CHECK(sk_stream_create(dev, &stream));
  SK_CHECK(sk_stream_begin_capture(stream, "bl_capture", "block-local=capi_axpb"));
  {
    uint32_t seeds[2] = {7u, 1234567u};
    int32_t a = 3, b = 11;
    void *fa[] = {&u[0].a, &n, &seeds[0]}, *ax[] = {&u[0].a, &n, &a, &b}, *ro[] = {&u[0].c, &u[0].a, &n};
    uint32_t i;
    for (i = 0; i < 2; ++i) {
      SK_CHECK(sk_launch_kernel(k.fill, 3, fa, stream));
      SK_CHECK(sk_launch_kernel(k.axpb, 3, ax, stream));
      SK_CHECK(sk_launch_kernel(k.axpb, 3, ax, stream));
      SK_CHECK(sk_launch_kernel(k.rotate, 3, ro, stream));
    }
    SK_CHECK(sk_stream_end_capture(stream, &sk));
    SK_EXPECT_EXPLAIN(sk, "\"edge\":\"block-local\"");
    SK_CHECK(sk_launch(sk, stream));
    SK_CHECK(sk_stream_synchronize(stream));
    keep(&u[0], want);
    memset(u[0].c, 0, N * sizeof(uint32_t));
    for (i = 0; i < 2; ++i) {
      SK_CHECK(sk_launch_kernel(k.fill, 3, fa, NULL));
      SK_CHECK(sk_launch_kernel(k.axpb, 3, ax, NULL));
      SK_CHECK(sk_launch_kernel(k.axpb, 3, ax, NULL));
      SK_CHECK(sk_launch_kernel(k.rotate, 3, ro, NULL));
    }
    SK_CHECK(sk_stream_synchronize(NULL));
    expect_same(&u[0], want);
  }
  sk_superkernel_destroy(sk);
  sk_stream_destroy(stream);
  free_bufs(dev, &u[0]);
  free_bufs(dev, &u[1]);
  unload(&k);
  sk_device_close(dev);
  free(want);
}

/* bl_wait_peer's block 1 polls for bl_raise's block 0. Behind a barrier bl_raise cannot start
 * before bl_wait_peer has ended: the polls run out. Block-local, core 0 runs bl_raise's block
 * 0 while core 1 still polls: block 1 sees it. */
static uint32_t peer_seen(sk_device *dev, const struct kernels *k, int bl, uint32_t polls) {
  uint32_t *flag = (uint32_t *)mem_alloc(dev, sizeof(uint32_t)),
           *seen = (uint32_t *)mem_alloc(dev, 2 * sizeof(uint32_t));
  void *args[] = {&flag, &seen, &polls};
  uint32_t result;
  sk_scope *scope = NULL;
  sk_superkernel *sk = NULL;
  struct sink s = {NULL, 0};
  *flag = 0;
  seen[1] = 7;
  SK_CHECK(sk_scope_begin(dev, "bl_peer", NULL, &scope));
  s.scope = scope;
  put(&s, k->wait_peer, 2, args, 0);
  put(&s, k->raise, 2, args, bl);
  SK_CHECK(sk_finalize(scope, &sk));
  SK_CHECK(sk_launch(sk, NULL));
  SK_CHECK(sk_stream_synchronize(NULL));
  result = seen[1];
  sk_superkernel_destroy(sk);
  sk_mem_free(dev, flag);
  sk_mem_free(dev, seen);
  return result;
}

static void test_edge_waits_for_no_other_block(void **state) {
  sk_device *dev = open_device("host:cores=2");
  struct kernels k;
  (void)state;
  load(dev, &k);
  assert_int_equal(peer_seen(dev, &k, 1, LONG_POLLS), 1);
  assert_int_equal(peer_seen(dev, &k, 0, SHORT_POLLS), 0);
  unload(&k);
  sk_device_close(dev);
}

/* Explain: the edge of each step, where it waits and releases, and its placement. The flag on
 * the first kernel changes nothing (it has no edge); debug-sync-all=1 keeps the barrier. */
static void test_explain(void **state) {
  sk_device *dev = open_device("host:cores=2");
  struct kernels k;
  struct bufs u;
  uint32_t n = N, seed = 1;
  int32_t a = 3, b = 5;
  void *fa[] = {&u.a, &n, &seed}, *ax[] = {&u.a, &n, &a, &b};
  sk_superkernel *sk = NULL;
  struct sink s = {NULL, 0};
  (void)state;
  load(dev, &k);
  u = alloc_bufs(dev);
  SK_CHECK(sk_scope_begin(dev, "bl_explain", NULL, &s.scope));
  put(&s, k.fill, 2, fa, 1); /* first: nothing to relax */
  put(&s, k.axpb, 2, ax, 1);
  put(&s, k.axpb, 2, ax, 0);
  SK_CHECK(sk_finalize(s.scope, &sk));
  SK_EXPECT_EXPLAIN(sk, "\"wait_previous\":\"launch\",\"release_next\":\"none\"");
  SK_EXPECT_EXPLAIN(sk,
                    "\"previous_step\":0,\"edge\":\"block-local\",\"wait_previous\":\"none\","
                    "\"release_next\":\"kernel end\"");
  SK_EXPECT_EXPLAIN(sk, "\"previous_step\":1,\"edge\":\"barrier\",\"wait_previous\":\"kernel start\"");
  sk_superkernel_destroy(sk);

  SK_CHECK(sk_scope_begin(dev, "bl_debug", "debug-sync-all=1", &s.scope));
  put(&s, k.fill, 2, fa, 0);
  put(&s, k.axpb, 2, ax, 1);
  SK_CHECK(sk_finalize(s.scope, &sk));
  SK_EXPECT_EXPLAIN(sk, "\"previous_step\":0,\"edge\":\"barrier\"");
  sk_superkernel_destroy(sk);
  free_bufs(dev, &u);
  unload(&k);
  sk_device_close(dev);
}

/* Task overlap around a block-local edge: produce, produce (block-local), consume. The first
 * produce lets nothing start (nothing waits for it); the second releases consume at its
 * sk_set_next_task_start, once every core ran both produces' blocks; consume waits at its
 * start, as its sk_wait_pre_task_end would need the first produce ended, which no arrival
 * tells. Fused == unfused, on 2 blocks and on 5 (multiplexed). */
static void test_task_overlap_around_the_edge(void **state) {
  sk_device *dev = open_device("host:cores=2");
  sk_module *ov = load_kernels(dev, TEST_VARIANT, "capi_overlap");
  sk_kernel *produce = get_kernel(ov, "capi_ov_produce"), *consume = get_kernel(ov, "capi_ov_consume");
  uint32_t *a = (uint32_t *)mem_alloc(dev, N * sizeof(uint32_t)),
           *side = (uint32_t *)mem_alloc(dev, N * sizeof(uint32_t));
  uint32_t *pre = (uint32_t *)mem_alloc(dev, N * sizeof(uint32_t)),
           *b = (uint32_t *)mem_alloc(dev, N * sizeof(uint32_t));
  uint32_t *want = (uint32_t *)malloc(N * sizeof(uint32_t)), n = N, seeds[2] = {5, 9}, bd;
  void *p0[] = {&a, &side, &n, &seeds[0]}, *p1[] = {&a, &side, &n, &seeds[1]}, *c[] = {&a, &pre, &b, &n};
  (void)state;
  assert_non_null(want);
  for (bd = 2; bd <= 5; bd += 3) {
    struct sink unfused = {NULL, 0}, fused = {NULL, 0};
    sk_superkernel *sk = NULL;
    uint32_t i, run;
    for (i = 0; i < N; ++i) a[i] = i, pre[i] = 3 * i;
    put(&unfused, produce, bd, p0, 0);
    put(&unfused, produce, bd, p1, 0);
    put(&unfused, consume, bd, c, 0);
    SK_CHECK(sk_stream_synchronize(NULL));
    memcpy(want, b, N * sizeof(uint32_t));
    SK_CHECK(sk_scope_begin(dev, "bl_overlap", "early-start=1", &fused.scope));
    put(&fused, produce, bd, p0, 0);
    put(&fused, produce, bd, p1, 1);
    put(&fused, consume, bd, c, 0);
    SK_CHECK(sk_finalize(fused.scope, &sk));
    SK_EXPECT_EXPLAIN(sk, "\"wait_previous\":\"launch\",\"release_next\":\"none\"");
    SK_EXPECT_EXPLAIN(sk,
                      "\"edge\":\"block-local\",\"wait_previous\":\"none\",\"release_next\":"
                      "\"sk_set_next_task_start\"");
    SK_EXPECT_EXPLAIN(sk, "\"edge\":\"barrier\",\"wait_previous\":\"kernel start\"");
    for (run = 0; run < 3; ++run) {
      for (i = 0; i < N; ++i) a[i] = i, pre[i] = 3 * i, b[i] = 0;
      SK_CHECK(sk_launch(sk, NULL));
      SK_CHECK(sk_stream_synchronize(NULL));
      assert_memory_equal(b, want, N * sizeof(uint32_t));
    }
    sk_superkernel_destroy(sk);
  }
  sk_mem_free(dev, a);
  sk_mem_free(dev, side);
  sk_mem_free(dev, pre);
  sk_mem_free(dev, b);
  free(want);
  sk_module_unload(ov);
  sk_device_close(dev);
}

/* Finalizing a scope of two kernels (the second block-local, with these options) fails with
 * SK_ERR_INCOMPATIBLE naming both kernels and `what`. */
static void expect_refused(sk_device *dev, const char *options, sk_kernel *first, uint32_t bd0, sk_kernel_options o0,
                           sk_kernel *second, uint32_t bd1, sk_kernel_options o1, void **args0, void **args1,
                           int wait_event, const char *what) {
  sk_scope *scope = NULL;
  sk_superkernel *sk = SENTINEL(sk_superkernel);
  char both[200];
  SK_CHECK(sk_scope_begin(dev, "bl_bad", options, &scope));
  SK_CHECK(sk_add_kernel(scope, first, bd0, args0, &o0));
  if (wait_event) {
    SK_CHECK(sk_scope_record_event(scope, 0, 0));
    SK_CHECK(sk_scope_wait_event(scope, 0, 0));
  }
  o1.flags |= SK_KERNEL_FLAG_BLOCK_LOCAL;
  SK_CHECK(sk_add_kernel(scope, second, bd1, args1, &o1));
  SK_EXPECT_ERR(sk_finalize(scope, &sk), SK_ERR_INCOMPATIBLE, what);
  assert_ptr_equal(sk, SENTINEL(sk_superkernel));
  snprintf(both, sizeof both, "scope 'bl_bad': kernel 1 '%s' is block-local to kernel 0 '%s'",
           o1.name ? o1.name : "?", o0.name ? o0.name : "?");
  SK_EXPECT_MSG(both);
}

static sk_kernel_options named(const char *name) {
  sk_kernel_options o = SK_KERNEL_OPTIONS_INIT;
  o.name = name;
  return o;
}

static sk_kernel_options pinned(const char *name, uint32_t first_core, uint32_t core_count) {
  sk_kernel_options o = named(name);
  o.first_core = first_core;
  o.core_count = core_count;
  return o;
}

static void test_refusals(void **state) {
  sk_device *dev = open_device("host:cores=6");
  struct kernels k;
  uint32_t *buf = (uint32_t *)mem_alloc(dev, 64 * sizeof(uint32_t)), n = 8, tag = 1;
  int32_t a = 3, b = 5;
  void *ax[] = {&buf, &n, &a, &b}, *tags[] = {&buf, &tag}, *sums[] = {&buf, &buf, &buf, &n};
  void *mix[] = {&buf, &buf, &buf, &buf, &n};
  sk_kernel_options cube = named("b");
  (void)state;
  load(dev, &k);
  cube.core_type = "cube";
  expect_refused(dev, NULL, k.axpb, 4, named("a"), k.axpb, 2, named("b"), ax, ax, 0,
                 "their block counts differ (2 vs 4)");
  expect_refused(dev, NULL, k.vector_tag, 2, named("a"), k.cube_tag, 2, cube, tags, tags, 0,
                 "their core types differ (cube vs vector)");
  expect_refused(dev, NULL, k.mix_scale, 1, named("a"), k.mix_scale, 1, named("b"), mix, mix, 0,
                 "they are mixed (mix_1_1) kernels");
  expect_refused(dev, "stream-fusion=1", k.axpb, 2, named("a"), k.axpb, 2, named("b"), ax, ax, 1,
                 "it also waits for an event (sk_scope_wait_event)");
  expect_refused(dev, NULL, k.axpb, 4, pinned("a", 2, 2), k.axpb, 4, pinned("b", 0, 2), ax, ax, 0,
                 "their placements differ (vector cores 0..1 vs 2..3)");
  expect_refused(dev, NULL, k.axpb, 4, named("a"), k.axpb, 4, pinned("b", 0, 2), ax, ax, 0,
                 "their placements differ (vector cores 0..1 vs 0..3)");
  expect_refused(dev, NULL, k.axpb, 4, pinned("a", 0, 2), k.sync_sum, 4, named("b"), ax, sums, 0,
                 "it synchronises its cores (sk_sync_all) on block_dim 4, and its predecessor runs on 2 vector "
                 "cores");
  expect_refused(dev, NULL, k.axpb, 2, named("a"), k.hard_sum, 2, named("b"), ax, sums, 0,
                 "it uses hard cross-core sync");
  expect_refused(dev, NULL, k.hard_sum, 2, named("a"), k.hard_sum, 4, named("b"), sums, sums, 0,
                 "the scope is split into dispatches between them");
  /* The option says the same, and its refusals name it. */
  {
    sk_scope *scope = NULL;
    sk_superkernel *sk = SENTINEL(sk_superkernel);
    sk_kernel_options oa = named("a"), ob = named("b");
    SK_CHECK(sk_scope_begin(dev, "bl_opt", "block-local=b", &scope));
    SK_CHECK(sk_add_kernel(scope, k.axpb, 4, ax, &oa));
    SK_CHECK(sk_add_kernel(scope, k.axpb, 3, ax, &ob));
    SK_EXPECT_ERR(sk_finalize(scope, &sk), SK_ERR_INCOMPATIBLE,
                  "scope 'bl_opt': kernel 1 'b' is block-local to kernel 0 'a' (scope option block-local), but "
                  "their block counts differ (3 vs 4)");
    assert_ptr_equal(sk, SENTINEL(sk_superkernel));
  }
  sk_mem_free(dev, buf);
  unload(&k);
  sk_device_close(dev);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_chain_matches_unfused),
      cmocka_unit_test(test_streams_and_capture),
      cmocka_unit_test(test_edge_waits_for_no_other_block),
      cmocka_unit_test(test_task_overlap_around_the_edge),
      cmocka_unit_test(test_explain),
      cmocka_unit_test(test_refusals),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
