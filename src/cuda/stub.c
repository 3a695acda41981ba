/* CUDA backend stub: compiled instead of the .cu files when askotch is built
 * without the CUDA toolkit (tools/config_cuda.sh sets CUDA_OBJS = cuda/stub.o).
 * Plain C, no CUDA headers. */
#include <stddef.h>
#include "../core/krr.h"

krr_status krr_cuda_status(const char **why) {
  (void)krr_cuda_ops(why);
  return KRR_ERR_NOT_BUILT;
}

const krr_ops *krr_cuda_ops(const char **why) {
  if (why)
    *why = "askotch was built without CUDA support (reinstall with CUDA toolkit; see ?askotch_devices)";
  return NULL;
}

int krr_cuda_device_count(void) { return 0; }

krr_status krr_cuda_device_info(int dev, char *name, size_t len, size_t *mem_total, int *cc_major,
                                int *cc_minor) {
  (void)dev;
  if (name && len > 0) name[0] = '\0';
  if (mem_total) *mem_total = 0;
  if (cc_major) *cc_major = 0;
  if (cc_minor) *cc_minor = 0;
  return KRR_ERR_NOT_BUILT;
}
