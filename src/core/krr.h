/* askotch core: the public C API (no R, no CUDA, no printing, no longjmp).
 *
 * Layers of src/core, lowest first.  A file may use (include, call) only its
 * own folder and the folders listed BEFORE it; only solvers/registry.c knows
 * every solver; nothing in src/core includes a backend (src/cpu, src/cuda) or
 * R.  tools/check_deps.sh checks this rule on the object files (no file-level
 * dependency circles either).
 *
 *   krr.h, ops.h,       the public API, the device table (krr_ops) and the
 *   kernel_math.h,      math shared with the backends (kernel formulas,
 *   kderiv_math.h,      the likelihood gradient's pair loop, counter-based
 *   rng.h               random numbers)
 *   base/      context, status, timing, buffer arena, option tables
 *   dist/      the communicator seam: serial (default) or MPI (mpi.c, the only
 *              file that includes mpi.h)
 *   data/      the training points on the device (problem), host <-> device
 *   op/        kernel operators: what solvers use instead of the raw points
 *              (exact kernel on one device today; random-feature and
 *              MPI-sharded operators are new files here)
 *   loss/      the loss table (squared first) and the objective (loss, lambda,
 *              targets)
 *   sampling/  uniform blocks, ridge-leverage-score blocks, centres
 *   linalg/    low-rank (Nystrom / partial Cholesky) preconditioners, CG,
 *              powering, eigensystems, the EigenPro iteration
 *   solvers/   one file per solver, common.c (the shared skeleton) and
 *              registry.c (the table of solvers: one line each)
 *
 * A fit: krr_problem_create (data) -> krr_op_compose (operator: the exact
 * kernel or features, sharded, intercept, observation weights; or one
 * constructor such as krr_op_exact_create) -> krr_objective_init (loss,
 * lambda, targets) -> krr_options_new (a solver's options, by name) ->
 * krr_solver_init -> krr_solver_step ... -> krr_solver_weights ->
 * krr_solver_free.  A solver state can solve again:
 * krr_solver_set_targets / krr_solver_set_lambda / krr_solver_set_weights. */
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
  KRR_ERR_INTERNAL = 6,
  KRR_ERR_INTERRUPT = 7, /* the caller's poll callback asked to stop (user interrupt) */
  KRR_ERR_TIME_LIMIT = 8 /* the context's deadline passed before the work finished */
} krr_status;

typedef enum { KRR_FLOAT = 0, KRR_DOUBLE = 1 } krr_precision;

/* The kernels; kernel_math.h has their formulas (one list, KRR_KERNEL_LIST). */
typedef enum {
  KRR_RBF = 0,      /* exp(-d2^2 / (2 s^2)) */
  KRR_LAPLACE = 1,  /* exp(-d1 / s), L1 distance */
  KRR_MATERN12 = 2, /* exp(-d2 / s) */
  KRR_MATERN32 = 3, /* (1 + sqrt3 d/s) exp(-sqrt3 d/s) */
  KRR_MATERN52 = 4  /* (1 + sqrt5 d/s + 5 d^2/(3 s^2)) exp(-sqrt5 d/s) */
} krr_kernel_type;
#define KRR_N_KERNELS 5
/* the code of a composite kernel (kernel algebra, below): not a row of the
 * kernel list, so every path that evaluates only listed kernels refuses it */
#define KRR_COMPOSITE ((krr_kernel_type)64)

/* Composite kernels: K = sum_t amp_t prod_{c in term t} k_c, each component
 * k_c a kernel of one family on its own columns of the points, with its own
 * hyperparameters (kcomp_math.h has the families' formulas and derivatives;
 * data/kcomp.c evaluates a composite through the device table). */
#define KRR_KS_MAXC 8  /* components of a composite kernel (so also terms) */
#define KRR_KS_MAXD 16 /* listed columns of one component */
typedef enum {
  KRR_KF_LISTED = 0,   /* a kernel of the list (kernel_math.h), bandwidth bw */
  KRR_KF_MATERN = 1,   /* Matern of smoothness par[0] > 0, length scale bw */
  KRR_KF_PERIODIC = 2, /* exp(-2 sin^2(pi d / par[0]) / bw^2), period par[0] */
  KRR_KF_LINEAR = 3,   /* x . x' */
  KRR_KF_POLY = 4      /* (par[1] x . x' + par[2])^par[0], par[0] in 1..20 */
} krr_kfamily;
#define KRR_N_KFAMILIES 5
typedef struct {
  int family; /* krr_kfamily */
  int base;   /* KRR_KF_LISTED: the listed kernel's code */
  int metric; /* 0: Euclidean (L1 for an L1 listed kernel); 1: great-circle
               * distance in km between (longitude, latitude) in degrees */
  int term;   /* the product term it belongs to, 0 .. nterm - 1 */
  int nd;     /* the columns it reads: 0 all, else dims[0 .. nd) (0-based) */
  int dims[KRR_KS_MAXD];
  double bw;     /* bandwidth / length scale (families LISTED, MATERN, PERIODIC) */
  double par[3]; /* as above */
} krr_kcomp;
/* One product term of a composite, for the backends' fused products
 * (ops.h kprod_mv / kprod_block): the points hold the components' columns
 * side by side, component c reading columns off[c] .. off[c + 1). */
typedef struct {
  int ncomp;
  int off[KRR_KS_MAXC + 1];
  krr_kcomp comp[KRR_KS_MAXC];
} krr_kprod;
typedef struct {
  int nterm, ncomp;        /* ncomp >= nterm >= 1; components ordered by term */
  double amp[KRR_KS_MAXC]; /* the terms' amplitudes (> 0) */
  krr_kcomp comp[KRR_KS_MAXC];
} krr_kspec;

typedef struct {
  krr_kernel_type type;
  double bandwidth; /* sigma > 0 (a composite: 1, unused) */
  krr_kspec spec;   /* type == KRR_COMPOSITE only */
} krr_kernel;

typedef struct krr_ops krr_ops;
struct krr_ctx;
/* a unit of work on a context (krr_overlap) */
typedef krr_status (*krr_task)(struct krr_ctx *ctx, void *arg);

/* One context per fit / per call: owns the backend handle, the error detail
 * and the resource policy. */
typedef struct krr_ctx {
  const krr_ops *ops;
  /* The table of the host (CPU) backend, for the work a solver keeps on the
   * host whatever the device (Joker's trust-region loops, SVRG's epochs): the
   * core never names a backend, so whoever creates the context supplies it
   * (krr_ctx_init).  On a CPU context it is ops itself. */
  const krr_ops *host_ops;
  void *dev;           /* backend state (stream, handles, workspace) */
  krr_status status;   /* last error */
  char msg[1024];      /* human-readable detail of the last error */
  int threads;         /* CPU threads for this context (>= 1) */
  int device_id;       /* CUDA device ordinal */
  /* Interrupts and deadlines (zero: none).  The core calls krr_poll(ctx)
   * between units of work (iterations, setup loops, row chunks of kernel
   * products, factorisation panels), on the calling thread and outside any
   * parallel region.  `poll` (the caller's, e.g. the R glue's check for a
   * user interrupt) is called at most every `poll_every` seconds (0: 0.1);
   * a nonzero return stops the work with KRR_ERR_INTERRUPT, which unwinds
   * through the ordinary error path (everything is freed) and stays set
   * (`interrupted`) until the caller clears it.  `deadline` (krr_now()
   * seconds, > 0) stops the work with KRR_ERR_TIME_LIMIT once passed. */
  int (*poll)(void *poll_data);
  void *poll_data;
  double poll_every;
  double poll_next;    /* internal: the next time poll is due */
  /* the most flops of one piece of a large product or triangular solve
   * between two polls (base/factor.c; 0: 2^33, about 0.1 s on two cores) */
  double piece_flops;
  int interrupted;     /* set once poll returned nonzero */
  double deadline;
  /* internal: a task waiting to run beside the next kernel product
   * (krr_overlap; NULL when none), its size, its result, and whether it is
   * running now (polling is paused meanwhile) */
  krr_task side;
  void *side_arg;
  double side_flops;
  krr_status side_status;
  int side_busy;
} krr_ctx;

/* --- context (base/ctx.c) --------------------------------------------------
 * ops: the device's table; host_ops: the host backend's (krr_cpu_ops(); the
 * same table as ops on the CPU).  A missing table is KRR_ERR_NOT_BUILT (no
 * ops) or KRR_ERR_INPUT (no host_ops). */
krr_status krr_ctx_init(krr_ctx *ctx, const krr_ops *ops, const krr_ops *host_ops, int threads,
                        int device_id);
void krr_ctx_free(krr_ctx *ctx);
/* Record an error (printf-style detail) and return it; the first error of a
 * chain is kept. */
krr_status krr_fail(krr_ctx *ctx, krr_status st, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
/* Clear the error state before a new call. */
void krr_clear(krr_ctx *ctx);
const char *krr_status_name(krr_status st);
size_t krr_sizeof(krr_precision prec);
/* Monotonic clock (seconds). */
double krr_now(void);
/* Check for an interrupt (the context's poll callback, time-throttled) and
 * the deadline: KRR_OK, KRR_ERR_INTERRUPT or KRR_ERR_TIME_LIMIT (recorded
 * with krr_fail).  Cheap (one clock read) when nothing is due.  Call only
 * from the thread that owns the context, outside parallel regions. */
krr_status krr_poll(krr_ctx *ctx);
/* Seconds left before the context's deadline (INFINITY when it has none). */
double krr_time_left(const krr_ctx *ctx);
/* Run `side` (about side_flops of work, on one thread) beside `main`, which
 * must not read what side writes nor write what it reads: the CPU backend
 * runs it on the calling thread inside the first kernel product of `main`
 * whose team has other threads to start the product (the caller joins them
 * when side is done: e.g. a lambda path's block factorisation hidden behind
 * the block's kernel rows); otherwise, or on other backends, it runs after
 * `main`.  Side runs with ctx->threads = 1 and polling paused (it must be
 * short: a factorisation, not a loop).  Returns main's status, else side's. */
krr_status krr_overlap(krr_ctx *ctx, krr_task side, void *side_arg, double side_flops,
                       krr_task main, void *main_arg);
/* Backends: run the waiting side task now, if any (once). */
void krr_side_run(krr_ctx *ctx);

/* --- problem: the training points (data/problem.c) --------------------------
 * X (n x p, row-major = point-contiguous, already standardised) on the
 * device, uploaded from a host column-major double matrix (the R layout),
 * converted and transposed in chunks.  Data only: the kernel belongs to the
 * operator, the loss, lambda and the targets to the objective. */
typedef struct krr_problem {
  krr_precision prec;
  int64_t n;
  int p;
  void *X; /* device, prec, n*p */
} krr_problem;

krr_status krr_problem_create(krr_ctx *ctx, krr_precision prec, const double *X_colmajor,
                              int64_t n, int p, krr_problem *out);
void krr_problem_free(krr_ctx *ctx, krr_problem *pb);

/* Upload a host column-major double n x p matrix as device row-major prec. */
krr_status krr_upload_points(krr_ctx *ctx, krr_precision prec, const double *X_colmajor,
                             int64_t n, int p, void **dev_out);
/* Upload/download a host double array as/from device prec (element count len). */
krr_status krr_upload_vec(krr_ctx *ctx, krr_precision prec, const double *h, int64_t len,
                          void **dev_out);
krr_status krr_download_vec(krr_ctx *ctx, krr_precision prec, const void *d, int64_t len,
                            double *h);

/* Host-data kernel products (prediction, fitted values): X1, X2 column-major
 * doubles (R layout).  OUT (n1 x q) = K(X1, X2) V; OUT (n1 x n2) = K(X1, X2). */
krr_status krr_kernel_apply_host(krr_ctx *ctx, krr_precision prec, const krr_kernel *k,
                                 const double *X1, int64_t n1, const double *X2, int64_t n2,
                                 int p, const double *V, int q, double *out);
krr_status krr_kernel_matrix_host(krr_ctx *ctx, krr_precision prec, const krr_kernel *k,
                                  const double *X1, int64_t n1, const double *X2, int64_t n2,
                                  int p, double *out);
/* out[i] = K(x_i, x_i) for the n rows of X (column-major doubles): 1 for
 * every listed kernel; a composite's from its components (data/kcomp.c). */
krr_status krr_kernel_diag_host(krr_ctx *ctx, krr_precision prec, const krr_kernel *k,
                                const double *X, int64_t n, int p, double *out);
/* Greedy partial Cholesky K(X, X) ~ L L^T in double (linalg/pchol.c,
 * krr_pivoted_cholesky): L host n x r column-major (the first *rank columns
 * set), d = diag(K - L L^T), piv the pivots (0-based) in order; pw pivot
 * weights or NULL. */
krr_status krr_kernel_pchol_host(krr_ctx *ctx, const krr_kernel *k, const double *X, int64_t n,
                                 int p, const double *pw, int r, double stop_trace, double tiny,
                                 double *L, double *d, int64_t *piv, int *rank);
/* *med = the median of the distances between the rows of X (host
 * column-major n x p; Euclidean, or L1 when l1), the median of the positive
 * ones when that is 0, 0 when none is positive (data/median.c) */
krr_status krr_median_distance(krr_ctx *ctx, const double *X, int64_t n, int p, int l1,
                               double *med);
const char *krr_kernel_name(krr_kernel_type t); /* "rbf", ...; NULL if unknown */
/* text for printing: "Gaussian (RBF)", ... and the formula; NULL if unknown */
const char *krr_kernel_label(krr_kernel_type t);
const char *krr_kernel_formula(krr_kernel_type t);
/* Derivatives of the kernel matrix, in double on the host, for the Gaussian
 * process likelihood's gradient (kernel_math.h, DLOGS).  X1 (n1 x p), X2
 * (n2 x p) column-major doubles (R layout; for ARD already divided by the
 * length scales); for each of the nd codes deriv[c], the n1 x n2 matrix
 * out[c * n1 * n2 + ...] (column-major) is
 *   deriv = 0 : K(X1, X2);
 *   deriv = -1: dK/dlog s, s the kernel's bandwidth;
 *   deriv = j : dK/dlog ell_j (1 <= j <= p), the length scale of column j.
 * Checks the kernel code, the bandwidth and the codes (KRR_ERR_INPUT);
 * polls ctx between blocks of the points of X2. */
krr_status krr_kernel_deriv_host(krr_ctx *ctx, const krr_kernel *k, const double *X1, int64_t n1,
                                 const double *X2, int64_t n2, int p, const int *deriv, int nd,
                                 double *out);
/* The second derivatives: slice c is d^2K/dtheta_a dtheta_b for the codes
 * a = deriv[c], b = deriv2[c] (each 0, -1 or 1..p as above; a code 0 leaves
 * the other's first derivative, (0, 0) the kernel). */
krr_status krr_kernel_deriv2_host(krr_ctx *ctx, const krr_kernel *k, const double *X1, int64_t n1,
                                  const double *X2, int64_t n2, int p, const int *deriv,
                                  const int *deriv2, int nd, double *out);

/* The contractions out[c] = sum_{i,l} w_il dK_c(x_i, x_l) of the weights
 * w = s W + U U^T (W n x n and U n x r column-major; r = 0: U unused) with
 * the derivative matrices of the points X (n x p) against themselves, codes
 * as above (first derivatives), without forming the matrices: the
 * likelihood's gradient tr(M dK) for a symmetric M = s A^{-1} + U U^T
 * (kderiv_math.h).  T: NULL, or the pairs' statistics (n x n, squared
 * distances or L1 distances as the kernel takes them), read instead of
 * accumulated from X.  On the host backend's threads (its kernel_deriv_dot),
 * the column blocks' sums added in a fixed order: the bits do not depend on
 * the thread count.  Checks as above; polls ctx between groups of blocks. */
krr_status krr_kernel_deriv_dot_host(krr_ctx *ctx, const krr_kernel *k, const double *X, int64_t n,
                                     int p, const int *deriv, int nd, const double *W, double s,
                                     const double *U, int r, const double *T, double *out);

/* Composite kernels (data/kcomp.c): NULL when the spec is valid for points
 * of p columns, else the reason (static text). */
const char *krr_kspec_invalid(const krr_kspec *s, int p);
/* A composite kernel's matrix and derivatives in double on the host, X1, X2
 * column-major as for krr_kernel_deriv_host; the codes: 0 the kernel,
 * -(t + 1) d/dlog of term t's amplitude, 1 + 4 c + j d/dlog of component
 * c's learnable hyperparameter j (kcomp_math.h). */
krr_status krr_kcomp_deriv_host(krr_ctx *ctx, const krr_kernel *k, const double *X1, int64_t n1,
                                const double *X2, int64_t n2, int p, const int *codes, int nd,
                                double *out);
/* The same codes' contractions out[c] = sum_{i,l} W_il dK_c(x_i, x_l) with
 * the n x n column-major weights W, the points X against themselves,
 * without forming the matrices (as krr_kernel_deriv_dot_host). */
krr_status krr_kcomp_deriv_dot_host(krr_ctx *ctx, const krr_kernel *k, const double *X, int64_t n,
                                    int p, const int *codes, int nd, const double *W, double *out);

/* The statistic of component c (kcomp_math.h: squared distance, L1
 * distance, dot product, or squared great-circle km) between the rows of
 * X1 and X2 (column-major doubles): out n1 x n2, column-major. */
krr_status krr_kcomp_stat_host(krr_ctx *ctx, const krr_kernel *k, int c, const double *X1,
                               int64_t n1, const double *X2, int64_t n2, int p, double *out);

/* The eigendecomposition of the symmetric n x n host matrix A (lower
 * triangle read; column-major doubles): A <- its eigenvectors, w <- the
 * eigenvalues ascending, by the host backend's eigensolver, which polls the
 * context between steps (linalg/eigsys.c). */
krr_status krr_sym_eigen_host(krr_ctx *ctx, int64_t n, double *A, double *w);

/* The upper Cholesky factor A = R^T R of the symmetric n x n host matrix A
 * (upper triangle read; column-major doubles): A <- R, the entries below
 * the diagonal zero, in the host backend's panels (krr_potrf_polled: the
 * bits do not depend on the thread count, and the context is polled
 * between panels). *info > 0 (KRR_OK): the factorisation breaks down at
 * that column (a pivot not positive, or a value not finite there), and A
 * holds no factor; pivots at rounding level are the caller's to judge
 * (linalg/chol.c). */
krr_status krr_chol_host(krr_ctx *ctx, int64_t n, double *A, int *info);

/* The Gaussian posterior of a Gaussian-process prior K (n x n host matrix,
 * column-major, read whole) and Gaussian sites with precisions tau >= 0 and
 * shifts nu (linalg/sites.c): R <- the upper Cholesky factor of
 * B = I + S^1/2 K S^1/2 (S = diag(tau); lower triangle zero), var <- the
 * posterior marginal variances (var NULL: not computed, n^3 flops fewer),
 * alpha <- the weights of the posterior mean mean = K alpha.  The step of
 * expectation propagation's sweeps and of the Laplace approximation's
 * Newton iterations (Rasmussen and Williams 2006, sec. 3.4 and 3.6). */
krr_status krr_gp_sites_host(krr_ctx *ctx, int64_t n, const double *K, const double *tau,
                             const double *nu, double *R, double *var, double *mean, double *alpha);

/* Expectation propagation's tilted distributions sigma(y_i f) N(f; m_i, v_i)
 * / Z_i for the logistic likelihood (y_i = +-1, v_i > 0; loss/tilted.c):
 * out (n x 3, column-major) <- log Z_i, their means and their variances, by
 * the trapezoidal rule. */
krr_status krr_ep_tilted_logistic(krr_ctx *ctx, int64_t n, const double *y, const double *m,
                                  const double *v, double *out);

/* The Gaussian-process profile log likelihood of the m columns of Y ~ N(0,
 * s_k^2 (K + lambda I)) (K = K(X, X), s_k^2 profiled) on all n points without
 * forming K, by stochastic Lanczos quadrature and Hutchinson estimates from
 * one preconditioned CG run on [Y, probes] (linalg/slq.c has the method and
 * its references).  X host column-major n x p (for ARD already divided by
 * the length scales), Y host n x m; in double precision on ctx's device.
 * nk: 0 (no kernel gradient), 1 (d/dlog bandwidth) or p (d/dlog ell_j);
 * grad and grad_se (nk + 1, or NULL for none) get the gradient in those
 * and then log lambda, and the standard errors of its stochastic parts.
 * The preconditioner P = U diag(s) U^T + lambda I (host pcU n x rank, pcs
 * rank): with *pcr > 0 the caller's (kept across calls), else built here
 * from a rank-`rank` pivoted Cholesky factor and, with pcU, returned with
 * its rank in *pcr.  alpha (host n x m, or NULL) returns (K + lambda I)^{-1}
 * Y and, with warm, is the solve's start.  yAy (m) gets y_k^T alpha_k;
 * terms (probes, or NULL) the probes' log-determinant terms (their
 * differences between two calls with the same seed give the standard error
 * of a change in the estimate). */
typedef struct {
  int probes;     /* >= 2 */
  int rank;       /* preconditioner rank built here (0: none) */
  int maxit;      /* CG iterations at most */
  double tol;     /* relative residual of each column */
  uint64_t seed;  /* the probes' stream */
  double fd_step; /* h of the central differences dK V (log scale) */
} krr_slq_opts;
typedef struct {
  double loglik, loglik_se, logdet, logdet_se, edf, edf_se;
  int iterations, converged, rank;
} krr_slq_result;
krr_status krr_gp_slq(krr_ctx *ctx, const double *X, int64_t n, int p, krr_kernel kernel,
                      const double *Y, int m, double lambda, int nk, const krr_slq_opts *o,
                      double *pcU, double *pcs, int *pcr, double *alpha, int warm,
                      krr_slq_result *res, double *yAy, double *grad, double *grad_se,
                      double *terms);

/* --- kernel operator (op/) --------------------------------------------------
 * The training-set kernel matrix K = K(X, X) as solvers see it.  The exact
 * operator evaluates the kernel on the points of a problem (which must outlive
 * it). */
typedef struct krr_op krr_op;
krr_status krr_op_exact_create(krr_ctx *ctx, const krr_problem *pb, krr_kernel kernel,
                               krr_op **out);
void krr_op_free(krr_op *op);

/* Random Fourier features (op/features.c): the operator K ~ Z Z^T with
 * Z = psi(X), psi(x) = sqrt(2/M) cos(W x + c), W (M x p) drawn from the
 * kernel's spectral density and c ~ U[0, 2 pi), both from `seed` (the same
 * on every device and thread count).  Supported: rbf (Gaussian), laplace
 * (independent Cauchy per coordinate), matern12/32/52 (multivariate t with
 * 1/3/5 degrees of freedom), each matching the scale conventions of
 * kernel_math.h, and composites of stationary components (op/features.c;
 * psi then scaled by the square root of the sum of the amplitudes).  Holds W, c beyond the data (O(M p)) and never all of Z:
 * products run over chunks of rows; a loaded block of b rows holds Z_B
 * (b x M).  The problem must outlive the operator. */
krr_status krr_op_features_create(krr_ctx *ctx, const krr_problem *pb, const krr_kernel *k,
                                  int64_t M, uint64_t seed, krr_op **out);
/* theta = Z^T alpha (host, nfeat x m column-major; nfeat = M, or M + 1 for a
 * shifted features operator whose last row is sqrt(c) colSums(alpha)) for
 * device weights alpha (the operator's precision, nloc x m).  Predictions
 * are then psi(x)^T theta: krr_features_apply. */
krr_status krr_op_features_theta(krr_op *op, const void *alpha, int m, double *theta_host);
/* the same for host weights (nloc x m doubles), and the operator's feature
 * count nfeat (0: exact); op/host.c */
krr_status krr_op_features_theta_host(krr_op *op, const double *alpha_host, int m,
                                      double *theta_host);
int64_t krr_op_nfeat(const krr_op *op);
/* out (nnew x m, host column-major) = psi(xnew) theta for new points xnew
 * (host column-major nnew x p, the R layout) and theta (host M x m), in
 * double precision, blocked over the new points (memory O(M p + M m +
 * chunk M)).  (k, p, M, seed) must be those of the operator. */
krr_status krr_features_apply(krr_ctx *ctx, const krr_kernel *k, int p, int64_t M, uint64_t seed,
                              const double *xnew_host, int64_t nnew, const double *theta_host,
                              int m, double *out_host);
/* The same with one draw of the features per column: column j of out is
 * psi_j(xnew) theta[, j], psi_j the features of seeds[j] (pathwise
 * posterior draws with fresh frequencies, R/gp.R). */
krr_status krr_features_draws(krr_ctx *ctx, const krr_kernel *k, int p, int64_t M,
                              const uint64_t *seeds, const double *xnew_host, int64_t nnew,
                              const double *theta_host, int m, double *out_host);

/* The linear operator K = X X^T (op/linear.c): the feature map is the point
 * itself, psi(x) = x (nfeat = p), so ridge regression in its features is
 * linear ridge regression (the svrg solver's `features = "linear"`).  The
 * problem must outlive the operator. */
krr_status krr_op_linear_create(krr_ctx *ctx, const krr_problem *pb, krr_op **out);

/* A penalised intercept (op/shift.c): the operator K + c 1 1^T (c > 0) over
 * any inner operator, i.e. the model f(x) = sum_i alpha_i k(x, x_i) + b with
 * b = c sum_i alpha_i and penalty b^2 / (2 c) (kernlab's bound-constraint
 * SVMs use c = 1).  Takes ownership of `inner` in every case: the wrapper
 * frees it (also when the creation fails), so free only the wrapper.  When
 * the inner operator has features, the wrapper's are them plus a constant
 * column sqrt(c) (nfeat = M + 1). */
krr_status krr_op_shift_create(krr_op *inner, double c, krr_op **out);

/* Observation weights (op/scale.c): the operator D K D, D = diag(d), d > 0
 * finite (nloc values, host; copied), over any inner operator.  Weighted KRR
 * (K + lambda W^{-1}) alpha = y with W = D^2 is (D K D + lambda I) v = D y,
 * alpha = D v: the caller scales the targets and the solution by d.  Takes
 * ownership of `inner` in every case (freed also when creation fails).  A
 * features inner gives the features D Z (nfeat unchanged). */
krr_status krr_op_scale_create(krr_op *inner, const double *d, krr_op **out);

/* The MPI-sharded operator (op/sharded.c) over the exact operator `local` on
 * this rank's rows (contiguous ranges in rank order); comm from dist/ (not
 * owned, must outlive the operator).  Collective: every rank calls it; the
 * shapes (p, at least one row each), kernel and precision are checked on
 * all and the same error returned on every rank.  Owns `local` (freed also
 * on failure). */
struct krr_comm;
krr_status krr_op_sharded_create(krr_op *local, struct krr_comm *comm, krr_op **out);

/* The training-set operator of a fit (op/compose.c), composed as every front
 * end (the R glue, MPI ranks, the C driver) composes it: the exact kernel
 * on the problem's points, or M > 0 random features drawn from `seed`
 * (krr_op_features_create), or for M < 0 the linear operator K = X X^T
 * whose features are the points (krr_op_linear_create); sharded over the ranks of `comm` when it is not
 * NULL (the exact kernel only: with features, a linear operator, an intercept or observation
 * weights it is an input error); K + c 1 1^T when c > 0 (a penalised
 * intercept, krr_op_shift_create); D K D when obsd is not NULL (observation
 * weights w = obsd^2, one per row; krr_op_scale_create).  *out is NULL on
 * failure.  The problem and comm must outlive the operator. */
krr_status krr_op_compose(krr_ctx *ctx, const krr_problem *pb, krr_kernel kernel, int64_t M,
                          uint64_t seed, double c, const double *obsd, struct krr_comm *comm,
                          krr_op **out);
/* Observation weights, D = diag(d): weighted KRR (K + lambda W^{-1}) alpha
 * = y, W = D^2, is solved on a composed operator with obsd = d as
 * (D K D + lambda I) v = D y, alpha = D v.  krr_obs_targets: ys (n x m) =
 * D y.  krr_obs_scale_rows: multiply (inverse = 0: v -> alpha) or divide
 * (inverse = 1: alpha -> v, a warm start) the rows of W (rows x m, host,
 * column-major) by d of the rows the weights live on: row i of W is row
 * idx[i] (an inducing-point solver's centres, krr_solver_centers), or row i
 * when idx is NULL. */
void krr_obs_targets(const double *d, const double *y, int64_t n, int m, double *ys);
void krr_obs_scale_rows(const double *d, const int64_t *idx, int64_t rows, int m, double *W,
                        int inverse);

/* --- losses and the objective (loss/) ----------------------------------------
 * The package fits  min_theta 1/2 ||theta||^2 + (1/lambda) sum_i l(y_i, f_i)
 * with f = K alpha, through its dual
 *   min_{alpha in box} 1/2 alpha^T K alpha + (1/lambda) sum_i xi*_{y_i}(-lambda alpha_i)
 * (Zhang et al., "Joker", Theorem 1; xi_y = l(y, .), xi* its conjugate).  For
 * the squared loss l = 1/2 (y - f)^2 the dual is exactly (K + lambda I) alpha
 * = y, kernel ridge regression with the absolute ridge lambda. */
typedef struct krr_loss krr_loss;
int krr_loss_count(void);
const krr_loss *krr_loss_get(int i);
const krr_loss *krr_loss_lookup(const char *name); /* NULL if unknown */
const char *krr_loss_name(const krr_loss *loss);

typedef struct krr_objective {
  const krr_loss *loss;
  double lambda;  /* > 0 */
  double param;   /* loss parameter (Huber delta, SVR epsilon); krr_objective_set_param */
  krr_precision prec;
  int64_t n;      /* rows of y on this process */
  int m;          /* right-hand sides (columns of y) */
  void *y;        /* device, prec, n x m column-major (owned) */
  double ynorm;   /* ||y||_F (double accumulation) */
  double *ycol;   /* ||y_j|| of each column (host, m; owned; NULL: not kept) */
  double *lcol;   /* a lambda path: lambda of each column (host, m; owned; NULL: lambda
                   * for all) -- only solvers with lambda_path take it */
  void *rows;     /* device, prec, n x m (owned; NULL: every row in every column): 1 where
                   * column j's fit uses row i, 0 where it holds the row out (its dual
                   * variable fixed at 0, its loss not counted): krr_solver_set_rows */
} krr_objective;

krr_status krr_objective_init(krr_ctx *ctx, const krr_op *op, const krr_loss *loss,
                              double lambda, const double *y, int m, krr_objective *out);
void krr_objective_free(krr_ctx *ctx, krr_objective *obj);
/* The primal P(a) and the dual D(a) (the one the solvers minimise: P + D >=
 * 0, zero at the solution) at host weights a (n x m column-major doubles,
 * one row per row of the operator); one kernel pass (loss/values.c). */
krr_status krr_objective_values_host(krr_op *op, const krr_objective *obj, const double *a_host,
                                     double *primal, double *dual);
/* A lambda path solved at once (squared loss): column j of the targets is
 * solved with lambda lcol[j] (> 0, finite; m values); obj->lambda becomes
 * the smallest.  The targets are usually the same columns repeated once per
 * lambda; runs of equal consecutive lambdas share the solvers' factors.
 * Only solvers that declare lambda_path accept such an objective. */
krr_status krr_objective_set_lambdas(krr_ctx *ctx, krr_objective *obj, const double *lcol);
/* lambda of column j */
static inline double krr_objective_lambda(const krr_objective *obj, int j) {
  return obj->lcol ? obj->lcol[j] : obj->lambda;
}
/* Set the loss parameter (krr_objective_init sets the loss's default: Huber
 * delta = 1, SVR epsilon = 0.1), validated per loss: huber delta > 0, svr
 * epsilon >= 0, finite; losses without a parameter accept any finite value
 * and ignore it.  Input errors name the parameter. */
krr_status krr_objective_set_param(krr_ctx *ctx, krr_objective *obj, double param);
/* the name of a loss's parameter ("delta", "epsilon"), NULL if it has none */
const char *krr_loss_param_name(const krr_loss *loss);
/* The bound b of the dual box |alpha_i| <= b at lambda and the loss
 * parameter (ignored by a loss without one), from the box the solvers use
 * (+INFINITY: unbounded, squared hinge), for the losses whose dual solution
 * has support vectors to count -- exact zeros or points at the bound (hinge,
 * SVR, squared hinge, Huber); NaN for the others (squared: no box;
 * logistic: its solution stays inside its box). */
double krr_loss_dual_bound(const krr_loss *loss, double lambda, double param);
/* The relative duality gap (P + D) / max(|P|, |D|, 1e-300) of the primal P
 * and the dual D the solvers minimise (P + D >= 0, zero at the solution):
 * the criterion of the losses other than the squared one, and what R's
 * trace reports at each exact check. */
double krr_duality_gap(double primal, double dual);

/* --- solver options (base/options.c; each solver declares its own table) ----
 * Options are declared once, in the solver's file, with their default, range
 * and one line of documentation; the same table sets the C defaults, parses
 * the options R sends (an unknown name is an input error) and answers the
 * info entry point R reads.  Every solver also takes the common options seed
 * and mem_limit. */
typedef enum {
  KRR_OPT_INT = 0,    /* whole number (int64_t) */
  KRR_OPT_REAL = 1,   /* number (double) */
  KRR_OPT_FLAG = 2,   /* 0 or 1 (int) */
  KRR_OPT_CHOICE = 3, /* one of the names in choices (int index) */
  KRR_OPT_RHO = 4,    /* a choice name or a positive number (krr_rho) */
  KRR_OPT_INDICES = 5 /* 0-based row indices (krr_indices, copied) */
} krr_opt_type;

typedef struct krr_optinfo {
  const char *name;
  krr_opt_type type;
  double def;          /* default (INT/REAL/FLAG; CHOICE/RHO: index of the default choice) */
  double lo, hi;       /* range of a given value (INT/REAL) */
  int lo_open;         /* value must be > lo (else >= lo) */
  const char *choices; /* CHOICE/RHO: names separated by '|' */
  const char *doc;     /* one line; says what the default (often 0 = automatic) means */
} krr_optinfo;

typedef struct krr_solver_def krr_solver_def;
typedef struct krr_options krr_options;

/* Options of a solver, at their defaults. */
krr_status krr_options_new(krr_ctx *ctx, const krr_solver_def *def, krr_options **out);
krr_status krr_options_copy(krr_ctx *ctx, const krr_options *src, krr_options **out);
void krr_options_free(krr_options *o);
/* Set by name, validated against the table (input errors name the option). */
krr_status krr_options_set_num(krr_ctx *ctx, krr_options *o, const char *name, double v);
krr_status krr_options_set_str(krr_ctx *ctx, krr_options *o, const char *name, const char *v);
krr_status krr_options_set_indices(krr_ctx *ctx, krr_options *o, const char *name,
                                   const int64_t *idx, int64_t len);
/* Check options without data: ranges, and the solver's rules that hold for
 * every data size (e.g. rank <= block_size when both are given). */
krr_status krr_options_check(krr_ctx *ctx, const krr_options *o);
/* Parse "name=value name=value ..." (numbers or choice names): for tests and
 * the standalone driver. */
krr_status krr_options_parse(krr_ctx *ctx, krr_options *o, const char *spec);
/* The table: count, entry i (common options first), and the current value of
 * entry i (INT/REAL/FLAG: the number; CHOICE: the index; RHO: the mode index
 * and, for a number, *num; INDICES: their count). */
int krr_options_count(const krr_solver_def *def);
void krr_options_info(const krr_solver_def *def, int i, krr_optinfo *out);
double krr_options_value(const krr_options *o, int i, double *num);
const int64_t *krr_options_indices(const krr_options *o, int i, int64_t *len);
const krr_solver_def *krr_options_solver(const krr_options *o);

/* --- solvers (solvers/) -------------------------------------------------------*/
int krr_solver_count(void);
const krr_solver_def *krr_solver_get(int i);
const krr_solver_def *krr_solver_lookup(const char *name); /* NULL if unknown */
const char *krr_solver_name(const krr_solver_def *def);
const char *krr_solver_title(const krr_solver_def *def);
/* capabilities: runs on an operator sharded over ranks; takes a lambda path */
int krr_solver_distributed(const krr_solver_def *def);
int krr_solver_lambda_path(const krr_solver_def *def);
/* whether a solver with these options takes a lambda path */
int krr_options_lambda_path(const krr_options *o);
int krr_solver_supports(const krr_solver_def *def, const krr_loss *loss);
/* per-solver diagnostics beyond the generic ones: count and names */
int krr_solver_extra_count(const krr_solver_def *def);
const char *krr_solver_extra_name(const krr_solver_def *def, int i);
/* per-solver result vectors (svrg: the sketch's eigenvalues, the objective
 * per epoch): count and names (krr_solver_vector reads them) */
int krr_solver_vector_count(const krr_solver_def *def);
const char *krr_solver_vector_name(const krr_solver_def *def, int i);

/* Generic diagnostics of every solver.  The criterion is the loss's: the
 * relative residual ||(K + lambda I) w - y||_F / ||y||_F for the squared loss
 * (for the inducing-point solvers, that of their normal equations), the
 * relative duality gap otherwise. */
typedef struct krr_diag {
  int64_t iter;        /* iterations of the current solve */
  double passes;       /* data passes of the current solve (n^2 kernel pairs each) */
  double resid_est;    /* running estimate of the criterion */
  double block_resid;  /* last block criterion ||g_B|| / ||y_B|| (block methods; NaN otherwise) */
  int done;            /* the solver has finished (exact solve, or CG exhausted) */
  double t_setup;      /* seconds in setup (preconditioners, factorisations, sketches) */
  double t_iter;       /* seconds in iterations */
} krr_diag;

typedef struct krr_solver krr_solver;

/* Create a solver for the objective over the operator (both borrowed: they
 * must outlive the solver; the options are copied and resolved).  Data-
 * dependent defaults are resolved and the memory need checked against the
 * budget (mem_limit, else 90% of the device's free memory) before anything is
 * allocated: a refusal is KRR_ERR_MEMORY with advice. */
krr_status krr_solver_init(krr_ctx *ctx, krr_op *op, krr_objective *obj,
                           const krr_options *opts, krr_solver **out);
/* Run iters iterations (setup happens in the first call). */
krr_status krr_solver_step(krr_solver *s, int64_t iters);
/* As krr_solver_step, but ending early after the first iteration numbered
 * at least `from_iter` (counting from 1 over the state's life) whose running
 * criterion estimate is at most `stop_below` (never when stop_below < 0):
 * the stopping decision belongs to an iteration, not to the wall-clock
 * length of a slice, so a seed and a thread count give the same fit. */
krr_status krr_solver_step_until(krr_solver *s, int64_t iters, double stop_below,
                                 int64_t from_iter);

/* --- the stop policy (solvers/stop.c) ---------------------------------------
 * One rule for every caller (R, each rank of a distributed fit, the C
 * driver): the loss's criterion at most `tol`, confirmed by an exact check
 * (when the running estimate is at most tol, at most once a pass; a duality
 * gap also at passes 1, 2, 4, 8, ...; without exact checks, exact_ok = 0,
 * the estimate decides), or `max_passes`, or `max_iter` iterations, or `time_limit` seconds after t0
 * (the final exact check counted inside it), or the precision floor; an
 * exact solver ends with "exact".  The checks fall on iterations fixed by
 * the iteration count, never by the caller's budget or the clock (except
 * time_limit), so every caller stops at the same iteration. */
typedef enum krr_stop_reason {
  KRR_STOP_NONE = 0, /* go on: the call's budget ended, or it ran a check */
  KRR_STOP_TOL,
  KRR_STOP_MAX_PASSES,
  KRR_STOP_TIME_LIMIT,
  KRR_STOP_PRECISION, /* the rounding floor of the working precision */
  KRR_STOP_EXACT,    /* an exact solver finished */
  KRR_STOP_MAX_ITER  /* max_iter iterations ran (svrg: epochs) */
} krr_stop_reason;
/* "tol", "max_passes", ... (NULL for KRR_STOP_NONE) */
const char *krr_stop_reason_name(krr_stop_reason r);

typedef struct krr_stop {
  /* the rule (krr_stop_init sets tol, max_passes, time_limit, t0 = now and
   * the defaults; the caller the rest) */
  double tol;            /* 0: run the budget (max_passes / time_limit) */
  double max_passes;     /* INFINITY: none */
  double time_limit;     /* seconds after t0 (INFINITY: none) */
  double max_iter;       /* iterations of the state's solve (INFINITY: none) */
  double t0;             /* krr_now() when the fit's clock started */
  int gap;               /* the criterion is a duality gap (checked at passes 1, 2, 4, ...) */
  int exact_ok;          /* exact checks allowed (else the running estimate decides) */
  int direct;            /* an exact solver: done means "exact" */
  /* The precision floor (stop.c): with use_floor, where the floor applies
   * (a squared-loss fit with tol > 0 on the plain exact kernel: stop.c's
   * floor_kind), a stalled fit whose criterion is within floor_factor times
   * floor_per_w ||W||_F stops with "precision".  floor_per_w is measured by
   * the policy at the first stall (NaN until then; a caller may set it
   * instead) from floor_X: the training points as the problem got them
   * (host, column-major n x p doubles, borrowed; NULL: not measured). */
  int use_floor;
  double floor_factor;   /* 2 */
  double floor_per_w;
  const double *floor_X;
  /* the exact criterion (NULL: krr_solver_residual); called from
   * krr_solver_run with the caller's data */
  krr_status (*exact)(krr_solver *s, void *data, double *crit);
  void *exact_data;
  /* kept between calls */
  int64_t next_exact_iter, due_iter, floor_iter;
  double best_est, best_pass, t_exact, per_iter, deadline, floor;
  int final_exact, exact_cut;
  int est_missed; /* an exact check found the criterion above tol where the solver's exact
                   * estimate (exact_est) was at it: rounding; checks are spaced again */
} krr_stop;
void krr_stop_init(krr_stop *p, double tol, double max_passes, double time_limit);
/* The precision floor per unit ||W||_F at the solver's current weights, as
 * the policy measures it for a solve under p (stop.c); NaN where the floor
 * does not apply to that solve or p->floor_X is NULL. */
krr_status krr_stop_floor(krr_solver *s, const krr_stop *p, double *per_w);

typedef struct krr_stop_result {
  krr_stop_reason reason;
  double exact;          /* the exact criterion computed by the call's last check, else NaN */
  double elapsed;        /* seconds since t0 at the last check */
  krr_diag diag;
} krr_stop_result;
/* Run the solver under the policy until it gives a reason, or until `iters`
 * iterations ran, or after a check that computed the exact criterion (one
 * row of a trace); the divergence of a squared-loss fit (running estimate
 * above 1e8) also returns, with KRR_STOP_NONE, for the caller to report.
 * An error in the setup (KRR_ERR_TIME_LIMIT: its deadline) is returned. */
krr_status krr_solver_run(krr_solver *s, krr_stop *p, int64_t iters, krr_stop_result *r);

void krr_solver_diag(const krr_solver *s, krr_diag *out);
/* the i-th result vector of a solver: its length, written into out (host)
 * unless out is NULL */
int64_t krr_solver_vector(krr_solver *s, int i, double *out);
/* the i-th per-solver extra diagnostic (NaN before it is known) */
double krr_solver_extra(const krr_solver *s, int i);
/* The resolved options (data-dependent defaults filled in).  Choices made
 * during setup (EigenPro's batch and step) are per-solver diagnostics. */
const krr_options *krr_solver_options(const krr_solver *s);
/* Weights: host n x m column-major double, or ncenters x m for the
 * inducing-point solvers (predict with K(x, X[centres]) a). */
krr_status krr_solver_weights(krr_solver *s, double *w_out);
/* F_out (host, nloc x m) = K w at the training rows: the fitted scores, held-out rows
 * included (kept by the solver where it has them, else one kernel product) */
krr_status krr_solver_products(krr_solver *s, double *F_out);
/* Hold rows out of each column's fit (host, nloc x m: 1 uses the row, 0 holds it out):
 * the columns become the folds of a cross-validation on one kernel matrix, their
 * products at the held-out rows the predictions there (krr_solver_products).  For the
 * losses with a duality gap and the solvers that take it (dcd); the held-out rows'
 * weights are 0 from the next solve on. */
krr_status krr_solver_set_rows(krr_solver *s, const double *rows);
/* A solver on a random-feature operator that keeps its own primal weights
 * (theta, nfeat x m: random-feature BCD) gives them here (host doubles);
 * 0 from krr_solver_has_theta when it keeps none (then theta = Z^T w is one
 * pass over the operator, krr_op_features_theta). */
int krr_solver_has_theta(const krr_solver *s);
krr_status krr_solver_theta(krr_solver *s, double *theta_host);
int64_t krr_solver_weights_rows(const krr_solver *s);
/* The exact criterion (one full kernel pass; two n x m passes for Falkon and
 * EigenPro 3.0). */
krr_status krr_solver_residual(krr_solver *s, double *crit);
/* Inducing-point solvers: number of centres and their 0-based rows. */
int64_t krr_solver_ncenters(const krr_solver *s);
krr_status krr_solver_centers(krr_solver *s, int64_t *idx_out);
/* Bytes the solver has held at most beyond the data and targets, and its
 * estimate (which the budget check uses; the exact criterion needs 2 n m
 * more numbers while it runs, 3 n m for the losses whose criterion is the
 * duality gap). */
double krr_solver_memory_used(const krr_solver *s);
double krr_solver_memory_estimate(const krr_solver *s);
void krr_solver_free(krr_solver *s);

/* Solving again.  Each keeps what does not depend on the change (the Nystrom
 * sketches, eigensystems and centre factorisations; a Cholesky factor keeps
 * for new targets) and restarts the iteration counters:
 *  - new targets (the objective's y, m columns): the iteration restarts
 *    from zero weights, exactly as a fresh fit would (set weights afterwards
 *    for a warm start); a different m rebuilds the work space and the setup;
 *  - a new lambda (factorisations with lambda inside are redone); restarts
 *    from the current weights (a warm start along a lambda path), for the
 *    losses other than the squared scaled by old / new lambda so that the
 *    conjugate variable v = -lambda a (the loss's slope at the predictions,
 *    loss/loss.h) is kept: DeCoste and Wagstaff's "alpha seeding" (KDD
 *    2000), which keeps each point's place in its box [0, 1/lambda];
 *  - new weights (a warm start; rows as krr_solver_weights). */
krr_status krr_solver_set_targets(krr_solver *s, const double *y, int m);
krr_status krr_solver_set_lambda(krr_solver *s, double lambda);
krr_status krr_solver_set_weights(krr_solver *s, const double *w);

/* --- backends ---------------------------------------------------------------*/
const krr_ops *krr_cpu_ops(void);
/* NULL when not compiled in or no device; *why (static string) explains. */
const krr_ops *krr_cuda_ops(const char **why);
/* Whether the CUDA backend can be used: KRR_OK, KRR_ERR_NOT_BUILT (compiled
 * without the toolkit) or KRR_ERR_DEVICE (no driver or device); *why as above. */
krr_status krr_cuda_status(const char **why);
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

#ifdef __cplusplus
}
#endif
#endif
