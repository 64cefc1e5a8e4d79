/* Linked with Debian's reference BLAS (libblas.a, unmodified): the kernels are the library's
 * own Fortran functions (every argument by pointer). This object pulls in the members they
 * are in and wraps sdot_, whose float result a kernel cannot return. */
#include <sk_kernel.h>

void saxpy_(const int *n, const float *a, const float *x, const int *incx, float *y, const int *incy);
void sgemv_(const char *trans, const int *m, const int *n, const float *alpha, const float *a,
            const int *lda, const float *x, const int *incx, const float *beta, float *y,
            const int *incy);
float sdot_(const int *n, const float *x, const int *incx, const float *y, const int *incy);

/* Referenced so that the link pulls their members in. */
void (*const blas_chain_needs[])(void) = {(void (*)(void))saxpy_, (void (*)(void))sgemv_};

/* *out = sdot_(n, x, incx, y, incy) */
SK_KERNEL(blas_sdot_into, "ptr,ptr,ptr,ptr,ptr,ptr")
void blas_sdot_into(const int *n, const float *x, const int *incx, const float *y, const int *incy,
                    float *out) {
  *out = sdot_(n, x, incx, y, incy);
}
