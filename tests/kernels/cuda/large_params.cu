// __global__ kernels of large by-value parameters as nvcc writes their .nv.info: up to 4 KiB
// each parameter's size is in EIATTR_KPARAM_INFO's top bits; a kernel of more than 4 KiB of
// parameters (CUDA 12.1's limit of 32764 bytes) gets another record, whose size is the whole
// word. Compiled to linked SASS (nvcc -cubin): launched as compiled, each parameter whole, the
// largest as large as PyTorch's multi-tensor kernels take.
struct Table4k {
  float v[1024];
};
struct Table5k {
  float v[1250];
};
struct Table27k {
  float v[6912];
};

extern "C" __global__ void __launch_bounds__(64) table_4k(float *out, Table4k t) {
  out[threadIdx.x] = t.v[threadIdx.x];
}

extern "C" __global__ void __launch_bounds__(64) table_5k(float *out, Table5k t) {
  out[threadIdx.x] = t.v[threadIdx.x];
}

extern "C" __global__ void __launch_bounds__(64) table_27k(float *out, Table27k t) {
  out[threadIdx.x] = t.v[threadIdx.x * 108];
}
