/* Stand-ins for the two cpu_ops.c functions the kernel primitives and ctx.c
 * need, so that driver/test_kernels and inst/bench/bench_kernel_mv link
 * without the rest of the CPU backend.  Only Makefile.kernels and
 * inst/bench/Makefile use this file; the package links src/cpu/cpu_ops.c. */
#include <omp.h>
#include "../src/cpu/cpu.h"

void openblas_set_num_threads(int);

void krr_cpu_blas_threads(int n) { openblas_set_num_threads(n > 0 ? n : 1); }

int krr_cpu_threads_default(void) {
  int n = omp_get_max_threads();
  return n > 0 ? n : 1;
}
