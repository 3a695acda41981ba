/* Sketched preconditioned SVRG for ridge regression on explicit features
 * (Gonen, Orabona and Shalev-Shwartz, "Solving Ridge Regression using
 * Sketched Preconditioned SVRG", ICML 2016, Algorithms 1-3, eq. (8),
 * Section 5.1), and plain SVRG (Johnson and Zhang 2013; Xiao and Zhang
 * 2014) as its baseline.  See svrg.c.
 *
 * The direct entry point on a host feature matrix (the C driver's reference
 * for the registry entry); the same method is the registry solver "svrg" (options by name,
 * the generic step loop) on any operator with a finite feature map: random
 * features (krr_op_features_create), x itself (krr_op_linear_create) or
 * Nystrom features as the points of a linear operator; R fits through the
 * registry entry. */
#ifndef KRR_SVRG_H
#define KRR_SVRG_H
#include "../krr.h"

typedef struct {
  int rank;             /* k: sketch rank (precondition only) */
  int lanczos_iters;    /* q: Krylov blocks after the first (0: ceil(log(d) / sqrt(1/2))) */
  int epochs;           /* most epochs S */
  int64_t epoch_length; /* inner steps m per epoch */
  double step;          /* eta = step / beta_hat */
  int precondition;     /* 1: eq. (8); 0: plain SVRG */
  int sampling;         /* 0: uniform, 1: by the smoothness constants */
  double tol;           /* stop when ||Z'(Zw - y) + lambda w|| <= tol ||Z'y|| (worst column) */
  uint64_t seed;
} krr_svrg_opts;

typedef struct {
  int k;            /* rank used (0 without preconditioner) */
  int q;            /* Krylov blocks after the first */
  double *sigma2;   /* host, k: sketched eigenvalues of C = Z'Z / n, descending (caller's) */
  double beta_hat;  /* average smoothness (1/N) sum beta_i */
  double eta;       /* step */
  int epochs_run;
  double *objective; /* host, epochs + 1 (caller's): (1/2n)||Zw-y||^2 + lambda/(2n)||w||^2, summed over columns */
  double *gradient;  /* host, epochs + 1 (caller's): the relative criterion above */
  double *seconds;   /* host, epochs + 1 (caller's): since the start of the call */
} krr_svrg_info;

/* Zt: d x n column-major (column i is phi(x_i)); Y: n x m; lambda: the
 * package's absolute lambda, (Z'Z + lambda I) W = Z'Y; W: d x m, in: the
 * start, out: the result. */
krr_status krr_svrg_solve(krr_ctx *ctx, const double *Zt, int64_t n, int64_t d, int m,
                          const double *Y, double lambda, const krr_svrg_opts *o, double *W,
                          krr_svrg_info *info);

/* Zt (M x n) = sqrt(2/M) cos(W x_i + c) for the points X (n x p column-major),
 * the random Fourier features of op/features.c (same draws for the same seed). */
krr_status krr_svrg_rff(krr_ctx *ctx, const krr_kernel *k, const double *X, int64_t n, int p,
                        int64_t M, uint64_t seed, double *Zt);
#endif
