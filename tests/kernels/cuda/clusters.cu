// __global__ kernels of thread block clusters, launched as compiled: one compiled for pairs
// (__cluster_dims__(2, 1, 1)), one that runs only in the cluster its launch gives
// (__cluster_dims__(): .explicitcluster), and one in whatever cluster its launch has, a
// cluster of one block included. Each rotates its values in its cluster (cluster_rotate.cuh).
#include "cluster_rotate.cuh"

extern "C" __global__ void __launch_bounds__(128) __cluster_dims__(2, 1, 1)
    cluster_pairs(const float *in, float *out) {
  rotate_in_cluster(in, out);
}

extern "C" __global__ void __launch_bounds__(128) __cluster_dims__() cluster_explicit(const float *in, float *out) {
  rotate_in_cluster(in, out);
}

extern "C" __global__ void __launch_bounds__(128) cluster_any(const float *in, float *out) { rotate_in_cluster(in, out); }
