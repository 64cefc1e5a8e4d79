/* A kernel whose symbol, and the name its metadata gives, are not UTF-8 (bytes 0xff 0xfe), as
 * an object may have them: libsk must still load, fuse and name it, with its messages and
 * explain JSON kept valid UTF-8 (src/common/text_escape.hpp). */
#include <sk_kernel.h>

void scale_not_utf8(float *x, uint32_t n) __asm__("scale_\xff\xfe");

void scale_not_utf8(float *x, uint32_t n) {
  uint32_t begin, end;
  sk_block_range(n, &begin, &end);
  for (uint32_t i = begin; i < end; ++i) x[i] = x[i] * 3.0f + 1.0f;
}

/* SK_KERNEL would record the C name: the record is written out to name the symbol. */
__attribute__((section(".sk.kernels"), used, aligned(1))) static const char scale_not_utf8_meta[] =
    "sk1;kernel=scale_\xff\xfe;sig=ptr,u32;type=vector";
