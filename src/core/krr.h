/* askotch core: public C API (no R, no CUDA, no printing).
 *
 * Layering (see DESIGN.md): solvers in src/core are written once against the
 * krr_ops table (ops.h); src/cpu and src/cuda implement that table; src/r_*.c
 * is the only glue that talks to R.
 */
#ifndef KRR_H
#define KRR_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
  KRR_OK = 0,
  KRR_ERR_INPUT = 1,     /* an argument is invalid */
  KRR_ERR_MEMORY = 2,    /* host/device allocation failed or would not fit */
  KRR_ERR_DEVICE = 3,    /* CUDA runtime / library failure */
  KRR_ERR_NUMERIC = 4,   /* factorisation failed, non-finite values */
  KRR_ERR_NOT_BUILT = 5, /* backend not compiled in / not available */
  KRR_ERR_INTERNAL = 6
} krr_status;

typedef enum { KRR_FLOAT = 0, KRR_DOUBLE = 1 } krr_precision;

typedef enum {
  KRR_RBF = 0,      /* exp(-d2^2 / (2 s^2)) */
  KRR_LAPLACE = 1,  /* exp(-d1 / s), L1 distance */
  KRR_MATERN12 = 2, /* exp(-d2 / s) */
  KRR_MATERN32 = 3, /* (1 + sqrt3 d/s) exp(-sqrt3 d/s) */
  KRR_MATERN52 = 4  /* (1 + sqrt5 d/s + 5 d^2/(3 s^2)) exp(-sqrt5 d/s) */
} krr_kernel_type;
#define KRR_N_KERNELS 5

typedef struct {
  krr_kernel_type type;
  double bandwidth; /* sigma > 0 */
} krr_kernel;

typedef struct krr_ops krr_ops;

/* One context per fit / per call: owns the backend handle, the error detail
 * and the resource policy. */
typedef struct krr_ctx {
  const krr_ops *ops;
  void *dev;           /* backend state (stream, handles, workspace) */
  krr_status status;   /* last error */
  char msg[1024];      /* human-readable detail of the last error */
  int threads;         /* CPU threads for this context (>= 1) */
  int device_id;       /* CUDA device ordinal */
} krr_ctx;

/* --- context --------------------------------------------------------------*/
krr_status krr_ctx_init(krr_ctx *ctx, const krr_ops *ops, int threads, int device_id);
void krr_ctx_free(krr_ctx *ctx);
/* Record an error (printf-style detail) and return it. */
krr_status krr_fail(krr_ctx *ctx, krr_status st, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
const char *krr_status_name(krr_status st);
size_t krr_sizeof(krr_precision prec);

/* --- problem ----------------------------------------------------------------
 * Training data on the device: X (n x p, row-major = point-contiguous, already
 * standardised), y (n x m, column-major).  Created from host column-major
 * double arrays (the R layout), converted and transposed in chunks. */
typedef struct krr_problem {
  krr_precision prec;
  int64_t n;
  int p;
  int m;
  krr_kernel kernel;
  double lambda;
  void *X;      /* device, prec, n*p */
  void *y;      /* device, prec, n*m */
  double ynorm; /* Frobenius norm of y (double accumulation) */
} krr_problem;

krr_status krr_problem_create(krr_ctx *ctx, krr_precision prec, const double *X_colmajor,
                              int64_t n, int p, const double *y_colmajor, int m,
                              krr_kernel kernel, double lambda, krr_problem *out);
void krr_problem_free(krr_ctx *ctx, krr_problem *pb);

/* Upload a host column-major double n x p matrix as device row-major prec. */
krr_status krr_upload_points(krr_ctx *ctx, krr_precision prec, const double *X_colmajor,
                             int64_t n, int p, void **dev_out);
/* Upload/download a host double array as/from device prec (element count len). */
krr_status krr_upload_vec(krr_ctx *ctx, krr_precision prec, const double *h, int64_t len,
                          void **dev_out);
krr_status krr_download_vec(krr_ctx *ctx, krr_precision prec, const void *d, int64_t len,
                            double *h);

/* OUT (n1 x q, host col-major double) = K(X1, X2) V for host data: used for
 * prediction and fitted values.  X1, X2 column-major doubles (R layout). */
krr_status krr_kernel_apply_host(krr_ctx *ctx, krr_precision prec, const krr_kernel *k,
                                 const double *X1, int64_t n1, const double *X2, int64_t n2,
                                 int p, const double *V, int q, double *out);
/* OUT (n1 x n2 host col-major double) = K(X1, X2), host data. */
krr_status krr_kernel_matrix_host(krr_ctx *ctx, krr_precision prec, const krr_kernel *k,
                                  const double *X1, int64_t n1, const double *X2, int64_t n2,
                                  int p, double *out);

/* --- solvers --------------------------------------------------------------*/
typedef enum {
  KRR_SOLVER_ASKOTCH = 0,
  KRR_SOLVER_SKOTCH = 1,
  KRR_SOLVER_CHOLESKY = 2,
  KRR_SOLVER_SAP = 3,  /* exact-block sketch-and-project (block Gauss-Seidel) */
  KRR_SOLVER_NSAP = 4, /* its Nesterov-accelerated form */
  KRR_SOLVER_PCG = 5,      /* preconditioned CG on (K + lambda I) w = y (pcg.c) */
  KRR_SOLVER_FALKON = 6,   /* inducing points, Falkon preconditioner (falkon.c) */
  KRR_SOLVER_EIGENPRO = 7, /* EigenPro preconditioned SGD: 2.0 (eigenpro.c), 3.0 on inducing
                              points (eigenpro3.c, ep_version = 3) */
  KRR_SOLVER_ASKOTCH_V1 = 8 /* ASkotch first version: fixed partition, NU_ACDM (askotch_v1.c) */
} krr_solver_kind;

/* block sampling of ASkotch / Skotch (krr_solver_opts.sampling) */
typedef enum {
  KRR_SAMPLING_UNIFORM = 0, /* b distinct indices uniformly */
  KRR_SAMPLING_RLS = 1      /* b distinct indices with probability ~ approximate ridge
                               leverage scores (rls.c), computed once at init */
} krr_sampling;

/* PCG preconditioners (krr_solver_opts.precond) */
typedef enum {
  KRR_PRECOND_NYSTROM = 0,    /* randomized Nystrom of K, rank r, rho per rho_mode */
  KRR_PRECOND_RPCHOLESKY = 1, /* randomly pivoted partial Cholesky, F F^T + lambda I */
  KRR_PRECOND_GREEDY = 2,     /* greedy (argmax residual diagonal) partial Cholesky */
  KRR_PRECOND_NONE = 3
} krr_precond;
#define KRR_N_PRECONDS 4

typedef enum { KRR_RHO_DAMPED = 0, KRR_RHO_REGULARIZATION = 1, KRR_RHO_VALUE = 2 } krr_rho_mode;

typedef struct krr_solver_opts {
  krr_solver_kind kind;
  int64_t block_size;      /* b; 0 = default n/100 (at least min(n, 100)) */
  int rank;                /* r; 0 = default min(100, b) */
  krr_rho_mode rho_mode;
  double rho_value;        /* with KRR_RHO_VALUE */
  double mu, nu;           /* <= 0: defaults mu = lambda, nu = n/b */
  int power_iters;         /* 0 = default 10 */
  uint64_t seed;
  size_t block_mem_limit;  /* materialise K_BB when b*b*sizeof(real) <= this (0 = 256 MiB) */
  size_t mem_limit;        /* bytes the fit may allocate beyond X and y (0 = backend free memory) */
  /* --- PCG / Falkon / EigenPro (appended; zero = default) --- */
  krr_precond precond;     /* PCG preconditioner (default Nystrom); rank = r (0: min(100, n)) */
  const int64_t *centers;  /* Falkon, EigenPro 3.0: 0-based training-row indices of the centres (NULL: sample) */
  int64_t n_centers;       /* Falkon, EigenPro 3.0: number of centres (0: min(n, 20000, ceil(sqrt(n) log n))) */
  int resid_every;         /* PCG/Falkon: recompute the residual exactly every this many
                              iterations (0 = 50) */
  int64_t ep_subsample;    /* EigenPro: s, points of the preconditioner subsample (0: min(n, 4000)) */
  int64_t ep_batch;        /* EigenPro: gradient batch (0: automatic, EigenPro 2.0 rule) */
  double ep_step;          /* EigenPro: step size (<= 0: automatic) */
  /* --- appended (zero = default) --- */
  krr_sampling sampling;   /* ASkotch/Skotch block sampling (default uniform) */
  int64_t rls_subsample;   /* RLS sampling: dictionary size s (0: min(n, 2000)) */
  int ep_version;          /* EigenPro: 0 or 2 = EigenPro 2.0, 3 = EigenPro 3.0 on the centres of
                              centers / n_centers (as Falkon; ep_subsample drawn from them);
                              rank = q, the corrected eigendirections (0: min(100, s - 1)) */
  double v1_beta;          /* ASkotch v1: NU_ACDM parameter beta in [0, 1] (default 0: block
                              sampling ~ L_b^(1/2)); mu (<= 0: lambda) is its strong convexity */
} krr_solver_opts;

void krr_solver_opts_default(krr_solver_opts *o);

typedef struct krr_diag {
  int64_t iter;        /* iterations done */
  double passes;       /* data passes: iter * b / n (cholesky: 1 after the solve) */
  double block_resid;  /* last ||g||_F / ||y_B||_F (relative block residual) */
  double resid_est;    /* running estimate of ||K_l w - y|| / ||y|| */
  int done;            /* solver finished (exact solvers) */
  int64_t block_size;
  int rank;
  double step_L;       /* last powering estimate */
  double rho;          /* last damping */
  int materialized;    /* K_BB formed explicitly */
  double t_block, t_nystrom, t_power, t_update; /* seconds spent in each phase */
} krr_diag;

typedef struct krr_solver krr_solver;

/* Memory (bytes) a solver needs beyond X and y; used to refuse early. */
size_t krr_solver_memory(const krr_problem *pb, const krr_solver_opts *o, int materialize);
/* Largest block size that fits in avail bytes (0 if none). */
int64_t krr_suggest_block(const krr_problem *pb, const krr_solver_opts *o, size_t avail);

krr_status krr_solver_init(krr_ctx *ctx, const krr_problem *pb, const krr_solver_opts *o,
                           krr_solver **out);
krr_status krr_solver_step(krr_solver *s, int64_t iters);
void krr_solver_diag(const krr_solver *s, krr_diag *out);
/* host n x m column-major double */
krr_status krr_solver_weights(krr_solver *s, double *w_out);
/* exact ||(K + lambda I) w - y||_F / ||y||_F (one full kernel pass).
 * Falkon, EigenPro 3.0: the exact relative residual of the normal equations
 * ||(K_nm^T K_nm + lambda K_mm) a - K_nm^T y|| / ||K_nm^T y|| (two n x m passes). */
krr_status krr_solver_residual(krr_solver *s, double *relres);
/* Inducing-point solvers (Falkon, EigenPro 3.0): the number of centres and their 0-based row
 * indices in the training data (idx_out has ncenters entries).  Full-KRR solvers
 * have 0 centres.  krr_solver_weights writes n x m for full-KRR solvers and
 * ncenters x m (the centre coefficients a; predict with K(x, X[centres]) a) for
 * the inducing-point solvers. */
int64_t krr_solver_ncenters(const krr_solver *s);
krr_status krr_solver_centers(krr_solver *s, int64_t *idx_out);
void krr_solver_free(krr_solver *s);

/* Exact relative residual of host weights w (n x m) for a problem. */
krr_status krr_problem_residual(krr_ctx *ctx, const krr_problem *pb, const void *w_dev,
                                double *relres);

/* --- backends ---------------------------------------------------------------*/
const krr_ops *krr_cpu_ops(void);
/* NULL when not compiled in; *why (static string) explains. */
const krr_ops *krr_cuda_ops(const char **why);
int krr_cuda_device_count(void);
/* Fill name (len bytes), total memory (bytes), compute capability; KRR_OK or error. */
krr_status krr_cuda_device_info(int dev, char *name, size_t len, size_t *mem_total,
                                int *cc_major, int *cc_minor);

/* CPU thread policy (one place): the default is ASKOTCH_THREADS or the number
 * of processors; every request is capped by omp_get_thread_limit(). */
int krr_cpu_threads_default(void);
int krr_cpu_threads_cap(int requested); /* requested <= 0: the default */
/* The CPU backend sets the process-wide BLAS thread count (OpenBLAS, BLIS)
 * for its own calls.  Callers that return to a user (the R glue) save the
 * count on entry and put it back before returning, also on error:
 *   _get: the count of the BLAS that serves cblas, -1 if it has no control;
 *   _restore: set it to n (n >= 1) and forget the backend's cached value. */
int krr_cpu_blas_threads_get(void);
void krr_cpu_blas_threads_restore(int n);

/* Monotonic clock (seconds). */
double krr_now(void);

#ifdef __cplusplus
}
#endif
#endif
