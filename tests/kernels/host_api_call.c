/* A kernel calling libsk's host API (sk_stream_synchronize would wait for the launch running it):
 * refused at load under every symbols= policy, naming the symbol and the object. */
#include <sk.h>
#include <sk_kernel.h>

SK_KERNEL(host_api_call, "ptr")
void host_api_call(uint32_t *out) {
  if (sk_block_idx() == 0) *out = (uint32_t)sk_stream_synchronize(0);
}
