/* The R glue's distributed part (r_dist.c): the communicator of an SPMD
 * session (NULL unless askotch_mpi_init() ran and a distributed fit is being
 * set up). */
#ifndef ASKOTCH_R_DIST_H
#define ASKOTCH_R_DIST_H
#include "../core/krr.h"
struct krr_comm;
struct krr_comm *askotch_r_dist_comm(void);
/* The CUDA device of this process: in an SPMD session, its rank among the
 * ranks of its machine modulo the machine's devices (one GPU per rank where
 * there are as many); else device 0. */
int askotch_r_device_id(void);
/* The reductions R may ask of ffi_mpi_allreduce, indexed by their krr_redop
 * code (read by R through ffi_info()$codes$reduce). */
#define ASKOTCH_R_N_REDUCE 3
extern const char *const askotch_r_reduce_names[ASKOTCH_R_N_REDUCE];
#endif
