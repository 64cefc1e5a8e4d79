/*
 * sk-demo — one "decode step" of a tiny MLP-like model, run unfused and fused.
 *
 * Per layer (8 kernels):  rmsnorm (sk_sync_all) -> matvec down -> bias -> SiLU -> matvec up
 *                         -> bias -> residual (task overlap) -> scale
 * plus a final rmsnorm: 8 * layers + 1 kernels per step, with block dims 1, 2, 4 and 8 (blocks
 * beyond the device's cores are multiplexed by the runtime).
 *
 * Unfused: one sk_launch_kernel per kernel on the default stream, then sk_stream_synchronize.
 * Fused:   the same kernels in one scope, finalized once, then one sk_launch per step.
 * The two run side by side (alternating steps, each on its own copy of the state, sharing the
 * weights), so that machine noise hits both alike; the medians of the step times are compared.
 * Both copies start from the same state and must end bit-identical.
 *
 * usage: sk-demo [--steps N] [--layers N] [--kernels DIR] [device-spec]
 */
#define _POSIX_C_SOURCE 200809L
#include <sk.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#ifndef SK_DEMO_KERNEL_DIR
#define SK_DEMO_KERNEL_DIR "."
#endif

enum { DIM = 4096, RANK = 32, MAX_ARGS = 6, MAX_LAYERS = 64 };

#define CHECK(call)                                                                            \
  do {                                                                                         \
    sk_status st_ = (call);                                                                    \
    if (st_ != SK_OK) {                                                                        \
      fprintf(stderr, "sk-demo: %s failed: %s: %s\n", #call, sk_status_name(st_),             \
              sk_last_error());                                                                \
      exit(1);                                                                                 \
    }                                                                                          \
  } while (0)

/* One kernel launch of the step: the kernel, its block count and its argument values. */
typedef struct launch {
  sk_kernel *kernel;
  char name[32]; /* sub-kernel name in the plan (explain, option lists) */
  uint32_t block_dim;
  uint64_t values[MAX_ARGS]; /* each argument's value lives in one slot */
  void *args[MAX_ARGS];      /* args[i] = &values[i], as cuLaunchKernel wants */
} launch;

/* The step's launches, once per state copy: [0] unfused, [1] fused. */
static launch plan[2][8 * MAX_LAYERS + 1];
static int nplan[2];

/* Argument builders: store a pointer, u32 or f32 value in the next slot. */
static launch *add(int set, sk_kernel *k, const char *name, int layer, uint32_t block_dim) {
  launch *l = &plan[set][nplan[set]++];
  memset(l, 0, sizeof *l);
  l->kernel = k;
  snprintf(l->name, sizeof l->name, layer < 0 ? "%s" : "%s.%d", name, layer);
  l->block_dim = block_dim;
  for (int i = 0; i < MAX_ARGS; ++i) l->args[i] = &l->values[i];
  return l;
}
static void arg_ptr(launch *l, int i, const void *p) { memcpy(&l->values[i], &p, sizeof p); }
static void arg_u32(launch *l, int i, uint32_t v) { memcpy(&l->values[i], &v, sizeof v); }
static void arg_f32(launch *l, int i, float v) { memcpy(&l->values[i], &v, sizeof v); }

/* Fixed-seed PRNG (xorshift32) so every run sees the same inputs. */
static uint32_t rng_state = 0x9e3779b9u;
static float uniform(float lo, float hi) {
  rng_state ^= rng_state << 13;
  rng_state ^= rng_state >> 17;
  rng_state ^= rng_state << 5;
  return lo + (hi - lo) * (float)(rng_state >> 8) / 16777216.0f;
}

static sk_device *dev;
static void *buffers[16 * MAX_LAYERS]; /* everything allocated, freed before sk_device_close */
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

/* Cores the host device will use: cores=N from the spec, else the online CPUs (its default). */
static uint32_t device_cores(const char *spec) {
  const char *c = strstr(spec, "cores=");
  long n = c ? strtol(c + 6, NULL, 10) : sysconf(_SC_NPROCESSORS_ONLN);
  return n > 0 ? (uint32_t)n : 1;
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
  float *gain, *w_down, *b_down, *w_up, *b_up, *gate;
} layer_weights;

/* State and scratch of one copy. x is the residual stream carried from step to step. */
typedef struct state {
  float *x, *n, *r, *u, *out, *partials, *stats;
} state;

typedef struct kernels {
  sk_kernel *norm, *matvec, *bias, *silu, *scale, *residual;
} kernels;

/* Appends one step (8 kernels per layer + the final norm) working on state `st` to plan[set]. */
static void build_plan(int set, const kernels *k, const layer_weights *w, int layers,
                       const float *final_gain, const state *st, uint32_t sync_blocks) {
  launch *s;
  for (int l = 0; l < layers; ++l) {
    s = add(set, k->norm, "norm", l, sync_blocks);
    arg_ptr(s, 0, st->x), arg_ptr(s, 1, w[l].gain), arg_ptr(s, 2, st->n);
    arg_ptr(s, 3, st->partials), arg_u32(s, 4, DIM), arg_f32(s, 5, 1e-6f);
    s = add(set, k->matvec, "down", l, 2);
    arg_ptr(s, 0, w[l].w_down), arg_ptr(s, 1, st->n), arg_ptr(s, 2, st->r);
    arg_u32(s, 3, RANK), arg_u32(s, 4, DIM);
    s = add(set, k->bias, "down_bias", l, 1);
    arg_ptr(s, 0, st->r), arg_ptr(s, 1, w[l].b_down), arg_u32(s, 2, RANK);
    s = add(set, k->silu, "silu", l, 2);
    arg_ptr(s, 0, st->r), arg_u32(s, 1, RANK);
    s = add(set, k->matvec, "up", l, 8);
    arg_ptr(s, 0, w[l].w_up), arg_ptr(s, 1, st->r), arg_ptr(s, 2, st->u);
    arg_u32(s, 3, DIM), arg_u32(s, 4, RANK);
    s = add(set, k->bias, "up_bias", l, 4);
    arg_ptr(s, 0, st->u), arg_ptr(s, 1, w[l].b_up), arg_u32(s, 2, DIM);
    s = add(set, k->residual, "residual", l, 4); /* stats: 2 floats per block, 4 blocks */
    arg_ptr(s, 0, st->x), arg_ptr(s, 1, st->u), arg_ptr(s, 2, w[l].gate);
    arg_ptr(s, 3, st->stats + 8 * l), arg_u32(s, 4, DIM);
    s = add(set, k->scale, "scale", l, 2);
    arg_ptr(s, 0, st->x), arg_f32(s, 1, 0.9f), arg_u32(s, 2, DIM);
  }
  s = add(set, k->norm, "final_norm", -1, sync_blocks);
  arg_ptr(s, 0, st->x), arg_ptr(s, 1, final_gain), arg_ptr(s, 2, st->out);
  arg_ptr(s, 3, st->partials), arg_u32(s, 4, DIM), arg_f32(s, 5, 1e-6f);
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

/* Copies buffer `src` of a state (n floats) into fresh host memory. */
static float *fetch(const float *src, size_t n) {
  float *host = malloc(n * sizeof(float));
  if (!host) exit(1);
  CHECK(sk_memcpy(dev, host, src, n * sizeof(float)));
  return host;
}

int main(int argc, char **argv) {
  int nrun = 200, layers = 8;
  const char *spec = "host", *kdir = SK_DEMO_KERNEL_DIR;
  for (int i = 1; i < argc; ++i) {
    if (!strcmp(argv[i], "--steps") && i + 1 < argc) nrun = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--layers") && i + 1 < argc) layers = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--kernels") && i + 1 < argc) kdir = argv[++i];
    else if (argv[i][0] != '-') spec = argv[i];
    else {
      fprintf(stderr, "usage: %s [--steps N] [--layers N] [--kernels DIR] [device-spec]\n", argv[0]);
      return 2;
    }
  }
  if (nrun < 1 || layers < 1 || layers > MAX_LAYERS) {
    fprintf(stderr, "sk-demo: --steps must be >= 1 and --layers in 1..%d\n", MAX_LAYERS);
    return 2;
  }

  CHECK(sk_device_open(spec, &dev));
  uint32_t cores = device_cores(spec);
  /* sk_sync_all needs all of the kernel's blocks running at once: block_dim <= cores. */
  uint32_t sync_blocks = cores < 4 ? cores : 4;

  kernels k;
  sk_module *m_elem = load(kdir, "elementwise.o");
  k.norm = get(load(kdir, "rmsnorm.o"), "rmsnorm");
  k.matvec = get(load(kdir, "matvec.o"), "matvec");
  k.residual = get(load(kdir, "residual.o"), "residual");
  k.bias = get(m_elem, "bias_add"), k.silu = get(m_elem, "silu"), k.scale = get(m_elem, "scale");

  layer_weights w[MAX_LAYERS];
  for (int l = 0; l < layers; ++l) {
    w[l].gain = tensor(DIM, 0.9f, 1.1f), w[l].w_down = tensor((size_t)RANK * DIM, -0.03f, 0.03f);
    w[l].b_down = tensor(RANK, -0.1f, 0.1f), w[l].w_up = tensor((size_t)DIM * RANK, -0.2f, 0.2f);
    w[l].b_up = tensor(DIM, -0.05f, 0.05f), w[l].gate = tensor(DIM, 0.2f, 0.6f);
  }
  float *final_gain = tensor(DIM, 1.0f, 1.0f);
  float *x0 = tensor(DIM, -1.0f, 1.0f);
  state st[2];
  for (int set = 0; set < 2; ++set) {
    st[set] = (state){tensor(DIM, 0, 0),  tensor(DIM, 0, 0), tensor(RANK, 0, 0),
                      tensor(DIM, 0, 0),  tensor(DIM, 0, 0), tensor(64, 0, 0),
                      tensor((size_t)layers * 8, 0, 0)};
    CHECK(sk_memcpy(dev, st[set].x, x0, DIM * sizeof(float)));
    build_plan(set, &k, w, layers, final_gain, &st[set], sync_blocks);
  }

  /* The fused version of the step on state copy 1: built once, launched every step. */
  sk_scope *scope = NULL;
  sk_superkernel *sk = NULL;
  CHECK(sk_scope_begin(dev, "decode_step", NULL, &scope));
  for (int i = 0; i < nplan[1]; ++i) {
    sk_kernel_options opts = SK_KERNEL_OPTIONS_INIT;
    opts.name = plan[1][i].name;
    CHECK(sk_add_kernel(scope, plan[1][i].kernel, plan[1][i].block_dim, plan[1][i].args, &opts));
  }
  CHECK(sk_finalize(scope, &sk));

  /* Side by side: one unfused step, one fused step, nrun times. */
  double *t[2] = {malloc(nrun * sizeof(double)), malloc(nrun * sizeof(double))};
  double total[2] = {0, 0};
  for (int step = 0; step < nrun; ++step) {
    total[0] += t[0][step] = run_step(0, NULL);
    total[1] += t[1][step] = run_step(1, sk);
  }
  double us[2] = {median(t[0], nrun), median(t[1], nrun)};

  size_t sizes[3] = {DIM, DIM, (size_t)layers * 8};
  float *res[2][3];
  int same = 1;
  for (int set = 0; set < 2; ++set) {
    res[set][0] = fetch(st[set].out, sizes[0]);
    res[set][1] = fetch(st[set].x, sizes[1]);
    res[set][2] = fetch(st[set].stats, sizes[2]);
  }
  for (int i = 0; i < 3; ++i) same &= !memcmp(res[0][i], res[1][i], sizes[i] * sizeof(float));

  printf("libsk %u.%u.%u demo on \"%s\" (%u cores): %d layers, dim %d, rank %d, %d steps\n",
         sk_version() / 10000, sk_version() / 100 % 100, sk_version() % 100, spec, cores, layers,
         DIM, RANK, nrun);
  printf("kernels per step:      %d (block dims 1, 2, 4, 8; sk_sync_all on %u blocks)\n",
         nplan[1], sync_blocks);
  printf("unfused:               %9.1f us/step  median (mean %.1f; %d launches + 1 sync)\n", us[0],
         total[0] / nrun, nplan[0]);
  printf("fused:                 %9.1f us/step  median (mean %.1f; 1 launch + 1 sync)\n", us[1],
         total[1] / nrun);
  printf("per-kernel overhead:   %9.2f us saved per kernel\n", (us[0] - us[1]) / nplan[0]);
  printf("speed-up:              %9.2fx\n", us[0] / us[1]);
  printf("out[0..3]:             %g %g %g %g\n", res[1][0][0], res[1][0][1], res[1][0][2],
         res[1][0][3]);
  printf("fused == unfused:      %s\n", same ? "bit-identical" : "MISMATCH");

  size_t needed = 0;
  sk_superkernel_explain(sk, NULL, 0, &needed); /* SK_ERR_INVALID_ARGUMENT, needed set */
  char *json = malloc(needed ? needed : 1);
  CHECK(sk_superkernel_explain(sk, json, needed, &needed));
  printf("explain (%zu bytes): %.400s%s\n", needed, json, strlen(json) > 400 ? " ..." : "");
  free(json);

  for (int set = 0; set < 2; ++set) {
    free(t[set]);
    for (int i = 0; i < 3; ++i) free(res[set][i]);
  }
  sk_superkernel_destroy(sk);
  for (int i = 0; i < nmodules; ++i) sk_module_unload(modules[i]);
  for (int i = 0; i < nbuffers; ++i) sk_mem_free(dev, buffers[i]);
  sk_device_close(dev);
  if (!same) {
    fprintf(stderr, "sk-demo: fused and unfused outputs differ\n");
    return 1;
  }
  return 0;
}
