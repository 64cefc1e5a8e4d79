/*
 * sk-demo — decode steps of a small transformer with random weights, run unfused and fused.
 *
 * One step (17 kernels per layer + 4):
 *   embed(token) -> per layer:
 *     rmsnorm (sk_sync_all) -> q, k, v mat-vecs -> RoPE -> KV-cache append -> attention scores
 *     -> softmax -> attention values -> output mat-vec -> residual (task overlap)
 *     -> rmsnorm -> gate, up mat-vecs -> SiLU(gate) * up -> down mat-vec -> residual
 *   -> final rmsnorm -> LM-head mat-vec -> argmax (the next token) and position + 1.
 * The token and the position live in device memory, so a step needs nothing from the host and
 * the fused step, built once, is replayed as is. Block dims 1, 2, 4 and 8 (blocks beyond the
 * device's cores are multiplexed by the runtime).
 *
 * Unfused: one sk_launch_kernel per kernel on the default stream, then sk_stream_synchronize.
 * Fused:   the same kernels in one scope with stream fusion, finalized once, then one sk_launch
 *          per step. The k and v mat-vecs run on scope streams 1 and 2 beside q, and the up
 *          mat-vec on stream 1 beside gate, ordered by scope events: a core goes from q to k to
 *          v (from gate to up) without waiting for the other cores, so the step has fewer
 *          barriers than a chain of its kernels. The demo counts them from the plan (explain).
 * The two run side by side (alternating steps, each on its own copy of the state, sharing the
 * weights), so that machine noise hits both alike; the medians of the step times are compared.
 * Both copies start from the same state; every step must pick the same token, and the hidden
 * state, logits and KV caches must end bit-identical. Then, with --trace PATH, the fused step
 * is built again with profiling=1 and its last of TRACE_LAUNCHES launches written as a Chrome
 * trace (sk_superkernel_write_trace).
 * With --tokens-per-launch N, both copies then decode the same tokens with the fused step, as an
 * engine's loop would: the host loop queues one sk_launch per token of the step captured from
 * copy 0's unfused launches (sk_stream_begin_capture, its scope streams and events as sk_streams
 * and sk_events) and synchronizes after each;
 * the device loop queues one sk_launch_repeat of N tokens (with a stop flag that stays zero: no
 * end-of-sequence token in a random model) and synchronizes once. Rounds of N tokens alternate,
 * the median time per token is compared, and the two copies must end bit-identical again.
 *
 * usage: sk-demo [--steps N] [--layers N] [--tokens-per-launch N] [--kernels DIR] [--trace PATH]
 *                [device-spec]
 */
#define _POSIX_C_SOURCE 200809L
#include <sk.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#ifndef SK_DEMO_KERNEL_DIR
#define SK_DEMO_KERNEL_DIR "."
#endif
#ifndef SK_DEMO_KERNEL_FLAGS
#define SK_DEMO_KERNEL_FLAGS "flags this build did not record"
#endif

/* Model shape: DIM-wide residual stream, HEADS attention heads, FFN-wide MLP, VOCAB tokens. */
enum { DIM = 128, HEADS = 4, FFN = 384, VOCAB = 256, MAX_LAYERS = 32, MAX_ARGS = 7 };
enum { PER_LAYER = 17, EXTRA = 4, MAX_KERNELS = PER_LAYER * MAX_LAYERS + EXTRA };
/* Launches of the profiled super kernel; the trace is the last one's (the first ones warm it). */
enum { TRACE_LAUNCHES = 3 };

#define CHECK(call)                                                                            \
  do {                                                                                         \
    sk_status st_ = (call);                                                                    \
    if (st_ != SK_OK) {                                                                        \
      fprintf(stderr, "sk-demo: %s failed: %s: %s\n", #call, sk_status_name(st_),             \
              sk_last_error());                                                                \
      exit(1);                                                                                 \
    }                                                                                          \
  } while (0)

/* One kernel launch of the step: the kernel, its block count and its argument values; and for
 * the fused step its scope stream and the scope events it waits for and records (-1: none). */
typedef struct launch {
  sk_kernel *kernel;
  char name[32]; /* sub-kernel name in the plan (explain, option lists, the trace) */
  uint32_t block_dim;
  uint32_t stream;
  int wait_event, record_event;
  uint64_t values[MAX_ARGS]; /* each argument's value lives in one slot */
  void *args[MAX_ARGS];      /* args[i] = &values[i], as cuLaunchKernel wants */
} launch;

/* The step's launches, once per state copy: [0] unfused, [1] fused. */
static launch plan[2][MAX_KERNELS];
static int nplan[2];

/* Appends a launch of k to plan[set] and returns it; the arguments follow with arg_*(). */
static launch *add(int set, sk_kernel *k, const char *name, int layer, uint32_t block_dim) {
  launch *l = &plan[set][nplan[set]++];
  memset(l, 0, sizeof *l);
  l->kernel = k;
  snprintf(l->name, sizeof l->name, layer < 0 ? "%s" : "%s.%d", name, layer);
  l->block_dim = block_dim;
  l->wait_event = l->record_event = -1;
  for (int i = 0; i < MAX_ARGS; ++i) l->args[i] = &l->values[i];
  return l;
}
/* Puts l on scope stream `stream`, after event `wait` (-1: none); records `record` after it. */
static void on_stream(launch *l, uint32_t stream, int wait, int record) {
  l->stream = stream, l->wait_event = wait, l->record_event = record;
}
static void arg_ptr(launch *l, int i, const void *p) { memcpy(&l->values[i], &p, sizeof p); }
static void arg_u32(launch *l, int i, uint32_t v) { memcpy(&l->values[i], &v, sizeof v); }
static void arg_f32(launch *l, int i, float v) { memcpy(&l->values[i], &v, sizeof v); }

/* Fixed-seed PRNG (xorshift32) so every run sees the same weights. */
static uint32_t rng_state = 0x9e3779b9u;
static float uniform(float lo, float hi) {
  rng_state ^= rng_state << 13;
  rng_state ^= rng_state >> 17;
  rng_state ^= rng_state << 5;
  return lo + (hi - lo) * (float)(rng_state >> 8) / 16777216.0f;
}

static sk_device *dev;
static void *buffers[64 * MAX_LAYERS]; /* everything allocated, freed before sk_device_close */
static int nbuffers;
static sk_module *modules[8];
static int nmodules;

/* Device buffer of n floats filled with uniform(lo, hi) values (lo == hi: a constant). */
static float *tensor(size_t n, float lo, float hi) {
  void *p = NULL;
  float *host = malloc(n * sizeof(float));
  if (!host) exit(1);
  for (size_t i = 0; i < n; ++i) host[i] = lo == hi ? lo : uniform(lo, hi);
  CHECK(sk_mem_alloc(dev, n * sizeof(float), &p));
  buffers[nbuffers++] = p;
  CHECK(sk_memcpy(dev, p, host, n * sizeof(float)));
  free(host);
  return p;
}
/* A rows x cols weight matrix scaled so mat-vec outputs stay around unit size. */
static float *weights(size_t rows, size_t cols) {
  float r = 1.7f / sqrtf((float)cols);
  return tensor(rows * cols, -r, r);
}
static uint32_t *scalar_u32(uint32_t v) {
  void *p = NULL;
  CHECK(sk_mem_alloc(dev, sizeof v, &p));
  buffers[nbuffers++] = p;
  CHECK(sk_memcpy(dev, p, &v, sizeof v));
  return p;
}

static double now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static sk_module *load(const char *dir, const char *object) {
  char path[4096];
  sk_module *mod = NULL;
  snprintf(path, sizeof path, "%s/%s", dir, object);
  CHECK(sk_module_load_file(dev, path, &mod));
  return modules[nmodules++] = mod;
}

static sk_kernel *get(sk_module *mod, const char *name) {
  sk_kernel *k = NULL;
  CHECK(sk_module_get_kernel(mod, name, &k));
  return k; /* owned by the module */
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static double median(double *v, int n) {
  qsort(v, n, sizeof *v, cmp_double);
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* Weights of one layer (shared by both state copies). */
typedef struct layer_weights {
  float *attn_gain, *wq, *wk, *wv, *wo, *attn_scale; /* attn_scale: residual gate per channel */
  float *mlp_gain, *w_gate, *w_up, *w_down, *mlp_scale;
} layer_weights;

typedef struct model {
  layer_weights layer[MAX_LAYERS];
  float *embedding, *final_gain, *lm_head;
} model;

/* State and scratch of one copy: the token and position, the KV caches and activations. */
typedef struct state {
  uint32_t *token, *pos;
  float *k_cache[MAX_LAYERS], *v_cache[MAX_LAYERS];
  float *x, *xn, *q, *k, *v, *scores, *att, *o, *gate, *up, *h, *down, *logits;
  float *partials, *stats;
} state;

typedef struct kernels {
  sk_kernel *embed, *norm, *matvec, *rope, *kv_append, *scores, *softmax, *values, *residual,
      *silu_mul, *argmax;
} kernels;

static launch *matvec(int set, const kernels *k, const char *name, int layer, uint32_t blocks,
                      const float *w, const float *x, float *y, uint32_t rows, uint32_t cols) {
  launch *s = add(set, k->matvec, name, layer, blocks);
  arg_ptr(s, 0, w), arg_ptr(s, 1, x), arg_ptr(s, 2, y), arg_u32(s, 3, rows), arg_u32(s, 4, cols);
  return s;
}
static launch *rmsnorm(int set, const kernels *k, const char *name, int layer, uint32_t blocks,
                       const state *st, const float *gain) {
  launch *s = add(set, k->norm, name, layer, blocks);
  arg_ptr(s, 0, st->x), arg_ptr(s, 1, gain), arg_ptr(s, 2, st->xn);
  arg_ptr(s, 3, st->partials), arg_u32(s, 4, DIM), arg_f32(s, 5, 1e-5f);
  return s;
}
/* x += scale * u (task overlap: see residual.c); stats: 2 floats per block, 4 blocks. */
static void residual(int set, const kernels *k, const char *name, int layer, const state *st,
                     const float *u, const float *scale, int slot) {
  launch *s = add(set, k->residual, name, layer, 4);
  arg_ptr(s, 0, st->x), arg_ptr(s, 1, u), arg_ptr(s, 2, scale);
  arg_ptr(s, 3, st->stats + 8 * slot), arg_u32(s, 4, DIM);
}

/* Appends one decode step working on state `st` to plan[set]. Stream 0 runs the step in order;
 * per layer, events 5l..5l+4 let k and v (streams 1, 2) start after attn_norm and rope and
 * kv_append wait for them, and let up (stream 1) start after mlp_norm and silu_mul wait for it.
 * Every buffer a side stream writes is next written or read on stream 0 after such a wait. */
static void build_plan(int set, const kernels *k, const model *m, int layers, const state *st,
                       uint32_t ctx, uint32_t sync_blocks) {
  launch *s = add(set, k->embed, "embed", -1, 2);
  arg_ptr(s, 0, st->x), arg_ptr(s, 1, m->embedding), arg_ptr(s, 2, st->token);
  arg_u32(s, 3, DIM);
  for (int l = 0; l < layers; ++l) {
    const layer_weights *w = &m->layer[l];
    const int e = 5 * l; /* e: xn for attention; e+1: k; e+2: v; e+3: xn for the MLP; e+4: up */
    on_stream(rmsnorm(set, k, "attn_norm", l, sync_blocks, st, w->attn_gain), 0, -1, e);
    matvec(set, k, "q", l, 4, w->wq, st->xn, st->q, DIM, DIM);
    on_stream(matvec(set, k, "k", l, 4, w->wk, st->xn, st->k, DIM, DIM), 1, e, e + 1);
    on_stream(matvec(set, k, "v", l, 4, w->wv, st->xn, st->v, DIM, DIM), 2, e, e + 2);
    s = add(set, k->rope, "rope", l, 2);
    arg_ptr(s, 0, st->q), arg_ptr(s, 1, st->k), arg_ptr(s, 2, st->pos), arg_u32(s, 3, DIM);
    arg_u32(s, 4, HEADS);
    on_stream(s, 0, e + 1, -1);
    s = add(set, k->kv_append, "kv_append", l, 2);
    arg_ptr(s, 0, st->k), arg_ptr(s, 1, st->v), arg_ptr(s, 2, st->k_cache[l]);
    arg_ptr(s, 3, st->v_cache[l]), arg_ptr(s, 4, st->pos), arg_u32(s, 5, DIM);
    on_stream(s, 0, e + 2, -1);
    s = add(set, k->scores, "attn_scores", l, HEADS);
    arg_ptr(s, 0, st->q), arg_ptr(s, 1, st->k_cache[l]), arg_ptr(s, 2, st->scores);
    arg_ptr(s, 3, st->pos), arg_u32(s, 4, DIM), arg_u32(s, 5, HEADS), arg_u32(s, 6, ctx);
    s = add(set, k->softmax, "softmax", l, HEADS);
    arg_ptr(s, 0, st->scores), arg_ptr(s, 1, st->pos), arg_u32(s, 2, HEADS), arg_u32(s, 3, ctx);
    s = add(set, k->values, "attn_values", l, 4);
    arg_ptr(s, 0, st->scores), arg_ptr(s, 1, st->v_cache[l]), arg_ptr(s, 2, st->att);
    arg_ptr(s, 3, st->pos), arg_u32(s, 4, DIM), arg_u32(s, 5, HEADS), arg_u32(s, 6, ctx);
    matvec(set, k, "o", l, 4, w->wo, st->att, st->o, DIM, DIM);
    residual(set, k, "attn_residual", l, st, st->o, w->attn_scale, 2 * l);
    on_stream(rmsnorm(set, k, "mlp_norm", l, sync_blocks, st, w->mlp_gain), 0, -1, e + 3);
    matvec(set, k, "gate", l, 8, w->w_gate, st->xn, st->gate, FFN, DIM);
    on_stream(matvec(set, k, "up", l, 8, w->w_up, st->xn, st->up, FFN, DIM), 1, e + 3, e + 4);
    s = add(set, k->silu_mul, "silu_mul", l, 2);
    arg_ptr(s, 0, st->gate), arg_ptr(s, 1, st->up), arg_ptr(s, 2, st->h), arg_u32(s, 3, FFN);
    on_stream(s, 0, e + 4, -1);
    matvec(set, k, "down", l, 4, w->w_down, st->h, st->down, DIM, FFN);
    residual(set, k, "mlp_residual", l, st, st->down, w->mlp_scale, 2 * l + 1);
  }
  rmsnorm(set, k, "final_norm", -1, sync_blocks, st, m->final_gain);
  matvec(set, k, "lm_head", -1, 8, m->lm_head, st->xn, st->logits, VOCAB, DIM);
  s = add(set, k->argmax, "argmax", -1, 1);
  arg_ptr(s, 0, st->logits), arg_u32(s, 1, VOCAB), arg_ptr(s, 2, st->token);
  arg_ptr(s, 3, st->pos);
}

/* Runs one step of plan[set] (fused: one launch of sk) and returns its time in microseconds. */
static double run_step(int set, sk_superkernel *sk) {
  double t0 = now_us();
  if (sk) {
    CHECK(sk_launch(sk, NULL));
  } else {
    for (int i = 0; i < nplan[set]; ++i) {
      const launch *l = &plan[set][i];
      CHECK(sk_launch_kernel(l->kernel, l->block_dim, l->args, NULL));
    }
  }
  CHECK(sk_stream_synchronize(NULL));
  return now_us() - t0;
}

/* plan[set] as one super kernel, its streams and events included (options: "stream-fusion=1"
 * and more). */
static sk_superkernel *fuse(int set, const char *name, const char *options) {
  sk_scope *scope = NULL;
  sk_superkernel *sk = NULL;
  CHECK(sk_scope_begin(dev, name, options, &scope));
  for (int i = 0; i < nplan[set]; ++i) {
    const launch *l = &plan[set][i];
    sk_kernel_options opts = SK_KERNEL_OPTIONS_INIT;
    opts.name = l->name;
    opts.stream = l->stream;
    if (l->wait_event >= 0) CHECK(sk_scope_wait_event(scope, l->stream, (uint32_t)l->wait_event));
    CHECK(sk_add_kernel(scope, l->kernel, l->block_dim, l->args, &opts));
    if (l->record_event >= 0)
      CHECK(sk_scope_record_event(scope, l->stream, (uint32_t)l->record_event));
  }
  CHECK(sk_finalize(scope, &sk));
  return sk;
}

/* Reads the integer after `key` in json[0..end), or returns -1. */
/* plan[set] recorded from its unfused launches, as an engine issues them (stream capture): its
 * scope streams are sk_streams, its scope events sk_events, and every sk_launch_kernel between
 * begin and end capture is recorded instead of run. */
static sk_superkernel *capture(int set, const char *name, const char *options) {
  sk_stream *streams[4] = {NULL};
  sk_event **events = calloc((size_t)nplan[set] + 1, sizeof *events);
  if (!events) exit(1);
  int nevents = 0;
  for (int i = 0; i < nplan[set]; ++i) {
    const launch *l = &plan[set][i];
    if (l->stream >= sizeof streams / sizeof streams[0]) exit(1);
    if (!streams[l->stream]) CHECK(sk_stream_create(dev, &streams[l->stream]));
    if (l->record_event >= nevents) nevents = l->record_event + 1;
  }
  for (int e = 0; e < nevents; ++e) CHECK(sk_event_create(dev, &events[e]));
  sk_superkernel *sk = NULL;
  CHECK(sk_stream_begin_capture(streams[0], name, options));
  for (int i = 0; i < nplan[set]; ++i) {
    const launch *l = &plan[set][i];
    if (l->wait_event >= 0) CHECK(sk_stream_wait_event(streams[l->stream], events[l->wait_event]));
    CHECK(sk_launch_kernel(l->kernel, l->block_dim, l->args, streams[l->stream]));
    if (l->record_event >= 0) CHECK(sk_event_record(events[l->record_event], streams[l->stream]));
  }
  CHECK(sk_stream_end_capture(streams[0], &sk));
  for (int e = 0; e < nevents; ++e) sk_event_destroy(events[e]);
  free(events);
  for (size_t i = 0; i < sizeof streams / sizeof streams[0]; ++i) sk_stream_destroy(streams[i]);
  return sk;
}

static long json_int(const char *json, const char *end, const char *key) {
  const char *at = strstr(json, key);
  return at && at < end ? strtol(at + strlen(key), NULL, 10) : -1;
}

/*
 * Barriers of a plan, read from its explain JSON: the steps that wait for a step whose end no
 * earlier wait already implies (waits are transitive: a step that ended had its inputs). In a
 * chain every step but the first is one; with stream fusion k waits for what q waited for.
 * *streams receives the number of scope streams.
 */
static int count_barriers(const char *json, int *streams) {
  enum { WORDS = (MAX_KERNELS + 63) / 64 };
  static uint64_t done_by[MAX_KERNELS][WORDS]; /* [i]: steps known ended once step i ended */
  uint64_t known[WORDS] = {0};                 /* steps every later step knows have ended */
  int barriers = 0, n = 0;
  *streams = 1;
  const char *at = strstr(json, "\"steps\":[");
  while (at && (at = strstr(at, "{\"index\":")) && n < MAX_KERNELS) {
    const char *next = strstr(at + 1, "{\"index\":"), *end = next ? next : at + strlen(at);
    long deps[1 + MAX_KERNELS], ndeps = 0, prev = json_int(at, end, "\"previous_step\":");
    long stream = json_int(at, end, "\"stream\":");
    if (stream + 1 > *streams) *streams = (int)stream + 1;
    if (prev >= 0) deps[ndeps++] = prev;
    const char *list = strstr(at, "\"waits_for_steps\":[");
    for (const char *p = list && list < end ? strchr(list, '[') + 1 : "]"; *p != ']';) {
      char *after = NULL;
      deps[ndeps++] = strtol(p, &after, 10);
      if (after == p || ndeps > MAX_KERNELS) break;
      p = *after == ',' ? after + 1 : after;
    }
    memset(done_by[n], 0, sizeof done_by[n]);
    int waits = 0;
    for (long d = 0; d < ndeps; ++d) {
      long s = deps[d];
      if (s < 0 || s >= n) continue;
      waits |= !(known[s / 64] >> (s % 64) & 1);
      for (int w = 0; w < WORDS; ++w) done_by[n][w] |= done_by[s][w];
      done_by[n][s / 64] |= 1ull << (s % 64);
    }
    for (int w = 0; w < WORDS; ++w) known[w] |= done_by[n][w];
    barriers += waits;
    ++n, at = end;
  }
  return barriers;
}

/* 1 if buffer a of both states holds the same bytes. */
static int same_bytes(const void *a, const void *b, size_t bytes) {
  char *ha = malloc(bytes), *hb = malloc(bytes);
  if (!ha || !hb) exit(1);
  CHECK(sk_memcpy(dev, ha, a, bytes));
  CHECK(sk_memcpy(dev, hb, b, bytes));
  int same = !memcmp(ha, hb, bytes);
  free(ha), free(hb);
  return same;
}

int main(int argc, char **argv) {
  int nrun = 256, layers = 6, per_launch = 0;
  const char *spec = "host", *kdir = SK_DEMO_KERNEL_DIR, *trace = NULL;
  for (int i = 1; i < argc; ++i) {
    if (!strcmp(argv[i], "--steps") && i + 1 < argc) nrun = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--layers") && i + 1 < argc) layers = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--tokens-per-launch") && i + 1 < argc) per_launch = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--kernels") && i + 1 < argc) kdir = argv[++i];
    else if (!strcmp(argv[i], "--trace") && i + 1 < argc) trace = argv[++i];
    else if (argv[i][0] != '-') spec = argv[i];
    else {
      fprintf(stderr, "usage: %s [--steps N] [--layers N] [--tokens-per-launch N] [--kernels DIR] "
                      "[--trace PATH] [device-spec]\n", argv[0]);
      return 2;
    }
  }
  if (nrun < 1 || nrun > 100000 || layers < 1 || layers > MAX_LAYERS || per_launch < 0 ||
      per_launch > 100000) {
    fprintf(stderr, "sk-demo: --steps must be in 1..100000, --tokens-per-launch in 0..100000 and "
                    "--layers in 1..%d\n", MAX_LAYERS);
    return 2;
  }
  /* The loop comparison's rounds of per_launch tokens: about --steps tokens in all. */
  const int rounds = per_launch ? (nrun + per_launch - 1) / per_launch : 0;

  CHECK(sk_device_open(spec, &dev));
  uint32_t cores = 0;
  CHECK(sk_device_cores(dev, &cores));
  /* sk_sync_all needs all of the kernel's blocks running at once: block_dim <= cores. */
  uint32_t sync_blocks = cores < 4 ? cores : 4;
  /* KV-cache rows: one per step */
  uint32_t ctx = (uint32_t)nrun + TRACE_LAUNCHES + (uint32_t)(rounds * per_launch);

  kernels k;
  sk_module *m_attn = load(kdir, "attention.o"), *m_tok = load(kdir, "tokens.o");
  k.norm = get(load(kdir, "rmsnorm.o"), "rmsnorm");
  k.matvec = get(load(kdir, "matvec.o"), "matvec");
  k.residual = get(load(kdir, "residual.o"), "residual");
  k.silu_mul = get(load(kdir, "elementwise.o"), "silu_mul");
  k.rope = get(m_attn, "rope"), k.kv_append = get(m_attn, "kv_append");
  k.scores = get(m_attn, "attn_scores"), k.softmax = get(m_attn, "softmax");
  k.values = get(m_attn, "attn_values");
  k.embed = get(m_tok, "embed"), k.argmax = get(m_tok, "argmax_advance");

  static model m;
  for (int l = 0; l < layers; ++l) {
    layer_weights *w = &m.layer[l];
    w->attn_gain = tensor(DIM, 0.9f, 1.1f);
    w->wq = weights(DIM, DIM), w->wk = weights(DIM, DIM), w->wv = weights(DIM, DIM);
    w->wo = weights(DIM, DIM), w->attn_scale = tensor(DIM, 0.2f, 0.5f);
    w->mlp_gain = tensor(DIM, 0.9f, 1.1f);
    w->w_gate = weights(FFN, DIM), w->w_up = weights(FFN, DIM), w->w_down = weights(DIM, FFN);
    w->mlp_scale = tensor(DIM, 0.2f, 0.5f);
  }
  m.embedding = tensor((size_t)VOCAB * DIM, -1.0f, 1.0f);
  m.final_gain = tensor(DIM, 1.0f, 1.0f);
  m.lm_head = weights(VOCAB, DIM);

  static state st[2];
  for (int set = 0; set < 2; ++set) {
    state *s = &st[set];
    s->token = scalar_u32(1), s->pos = scalar_u32(0);
    for (int l = 0; l < layers; ++l) {
      s->k_cache[l] = tensor((size_t)ctx * DIM, 0, 0);
      s->v_cache[l] = tensor((size_t)ctx * DIM, 0, 0);
    }
    s->x = tensor(DIM, 0, 0), s->xn = tensor(DIM, 0, 0), s->q = tensor(DIM, 0, 0);
    s->k = tensor(DIM, 0, 0), s->v = tensor(DIM, 0, 0), s->att = tensor(DIM, 0, 0);
    s->o = tensor(DIM, 0, 0), s->down = tensor(DIM, 0, 0);
    s->scores = tensor((size_t)HEADS * ctx, 0, 0);
    s->gate = tensor(FFN, 0, 0), s->up = tensor(FFN, 0, 0), s->h = tensor(FFN, 0, 0);
    s->logits = tensor(VOCAB, 0, 0), s->partials = tensor(64, 0, 0);
    s->stats = tensor((size_t)layers * 16, 0, 0);
    build_plan(set, &k, &m, layers, s, ctx, sync_blocks);
  }

  /* The fused version of the step on state copy 1: built once, launched every step. */
  double t_build = now_us();
  sk_superkernel *sk = fuse(1, "decode_step", "stream-fusion=1");
  t_build = now_us() - t_build;
  size_t needed = 0;
  CHECK(sk_superkernel_explain(sk, NULL, 0, &needed)); /* a size query */
  char *json = malloc(needed);
  if (!json) exit(1);
  CHECK(sk_superkernel_explain(sk, json, needed, &needed));
  int streams = 0, barriers = count_barriers(json, &streams);
  free(json);

  /* Side by side: one unfused step, one fused step, nrun times; the tokens must agree. */
  double *t[2] = {malloc(nrun * sizeof(double)), malloc(nrun * sizeof(double))};
  uint32_t *tokens = malloc(nrun * sizeof(uint32_t));
  int same_tokens = 1;
  for (int step = 0; step < nrun; ++step) {
    t[0][step] = run_step(0, NULL);
    t[1][step] = run_step(1, sk);
    uint32_t tok[2];
    CHECK(sk_memcpy(dev, &tok[0], st[0].token, sizeof tok[0]));
    CHECK(sk_memcpy(dev, &tok[1], st[1].token, sizeof tok[1]));
    same_tokens &= tok[0] == tok[1];
    tokens[step] = tok[1];
  }
  double us[2] = {median(t[0], nrun), median(t[1], nrun)};

  int same = same_tokens;
  same &= same_bytes(st[0].x, st[1].x, DIM * sizeof(float));
  same &= same_bytes(st[0].logits, st[1].logits, VOCAB * sizeof(float));
  same &= same_bytes(st[0].pos, st[1].pos, sizeof(uint32_t));
  for (int l = 0; l < layers; ++l) {
    same &= same_bytes(st[0].k_cache[l], st[1].k_cache[l], (size_t)ctx * DIM * sizeof(float));
    same &= same_bytes(st[0].v_cache[l], st[1].v_cache[l], (size_t)ctx * DIM * sizeof(float));
  }

  printf("libsk %u.%u.%u demo on \"%s\" (%u cores): transformer decode, %d layers, dim %d, "
         "%d heads, ffn %d, vocab %d, %d steps\n",
         sk_version() / 10000, sk_version() / 100 % 100, sk_version() % 100, spec, cores, layers,
         DIM, HEADS, FFN, VOCAB, nrun);
  printf("kernels:    %d per step, built with %s (block dims 1, 2, 4, 8)\n", nplan[1],
         SK_DEMO_KERNEL_FLAGS);
  printf("unfused:    %.1f us/step median (%d sk_launch_kernel + 1 sync)\n", us[0], nplan[0]);
  printf("fused:      %.1f us/step median (1 sk_launch + 1 sync; built in %.0f us)\n", us[1],
         t_build);
  printf("speed-up:   %.2fx, %.2f us saved per kernel\n", us[0] / us[1],
         (us[0] - us[1]) / nplan[0]);
  printf("barriers:   %d per step fused (%d streams), %d in a chain of the %d kernels: %d saved\n",
         barriers, streams, nplan[1] - 1, nplan[1], nplan[1] - 1 - barriers);
  printf("tokens:    ");
  for (int i = 0; i < nrun && i < 16; ++i) printf(" %u", tokens[i]);
  printf("%s\n", nrun > 16 ? " ..." : "");
  printf("check:      fused == unfused: %s\n",
         same ? "bit-identical (tokens, hidden state, logits, KV caches)" : "MISMATCH");

  /* The decode loop on the host and on the device, from the same state (checked above). */
  int loop_same = 1;
  if (per_launch) {
    /* The host loop replays the step captured from state copy 0's unfused launches. */
    sk_superkernel *host_loop = capture(0, "decode_step_captured", "stream-fusion=1");
    uint32_t *eos = scalar_u32(0); /* stays 0: every round decodes per_launch tokens */
    double *round_us[2] = {malloc(rounds * sizeof(double)), malloc(rounds * sizeof(double))};
    if (!round_us[0] || !round_us[1]) exit(1);
    for (int r = 0; r < rounds; ++r) {
      double t0 = now_us();
      for (int i = 0; i < per_launch; ++i) {
        CHECK(sk_launch(host_loop, NULL));
        CHECK(sk_stream_synchronize(NULL));
      }
      round_us[0][r] = (now_us() - t0) / per_launch;
      t0 = now_us();
      CHECK(sk_launch_repeat(sk, (uint32_t)per_launch, eos, NULL));
      CHECK(sk_stream_synchronize(NULL));
      round_us[1][r] = (now_us() - t0) / per_launch;
      uint32_t tok[2];
      CHECK(sk_memcpy(dev, &tok[0], st[0].token, sizeof tok[0]));
      CHECK(sk_memcpy(dev, &tok[1], st[1].token, sizeof tok[1]));
      loop_same &= tok[0] == tok[1];
    }
    double loop_us[2] = {median(round_us[0], rounds), median(round_us[1], rounds)};
    uint32_t eos_now = 1;
    CHECK(sk_memcpy(dev, &eos_now, eos, sizeof eos_now));
    loop_same &= eos_now == 0;
    loop_same &= same_bytes(st[0].x, st[1].x, DIM * sizeof(float));
    loop_same &= same_bytes(st[0].logits, st[1].logits, VOCAB * sizeof(float));
    loop_same &= same_bytes(st[0].pos, st[1].pos, sizeof(uint32_t));
    for (int l = 0; l < layers; ++l) {
      loop_same &= same_bytes(st[0].k_cache[l], st[1].k_cache[l], (size_t)ctx * DIM * sizeof(float));
      loop_same &= same_bytes(st[0].v_cache[l], st[1].v_cache[l], (size_t)ctx * DIM * sizeof(float));
    }
    printf("host loop:  %.1f us/token median (the step captured from the unfused launches: 1 sk_launch "
           "+ 1 sync per token)\n",
           loop_us[0]);
    printf("device loop: %.1f us/token median (1 sk_launch_repeat of %d tokens + 1 sync; %d rounds)\n",
           loop_us[1], per_launch, rounds);
    printf("loop ratio: %.2fx (host loop / device loop)\n", loop_us[0] / loop_us[1]);
    printf("check:      device loop == host loop: %s\n",
           loop_same ? "bit-identical (tokens, hidden state, logits, KV caches)" : "MISMATCH");
    for (int set = 0; set < 2; ++set) free(round_us[set]);
    sk_superkernel_destroy(host_loop);
  }

  /* More steps, fused with profiling=1; the last one written as a Chrome trace (a track per
   * core). */
  if (trace) {
    sk_superkernel *profiled = fuse(1, "decode_step_profiled", "stream-fusion=1:profiling=1");
    for (int i = 0; i < TRACE_LAUNCHES; ++i) run_step(1, profiled);
    CHECK(sk_superkernel_write_trace(profiled, trace));
    printf("trace:      %s (ui.perfetto.dev or chrome://tracing)\n", trace);
    sk_superkernel_destroy(profiled);
  }

  for (int set = 0; set < 2; ++set) free(t[set]);
  free(tokens);
  sk_superkernel_destroy(sk);
  for (int i = 0; i < nmodules; ++i) sk_module_unload(modules[i]);
  for (int i = 0; i < nbuffers; ++i) sk_mem_free(dev, buffers[i]);
  sk_device_close(dev);
  if (!same) {
    fprintf(stderr, "sk-demo: fused and unfused outputs differ\n");
    return 1;
  }
  if (!loop_same) {
    fprintf(stderr, "sk-demo: the device loop and the host loop differ\n");
    return 1;
  }
  return 0;
}
