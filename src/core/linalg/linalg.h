/* linalg/: the numerical building blocks solvers share, each written once:
 * low-rank (Nystrom / partial Cholesky) preconditioners, multi-right-hand-side
 * preconditioned CG, randomised powering, kernel eigensystems, and the
 * EigenPro preconditioned Richardson iteration. */
#ifndef KRR_LINALG_H
#define KRR_LINALG_H
#include "../loss/loss.h"

/* Y(n x q, ld n) = M V(n x q, ld n) for a psd M */
typedef krr_status (*krr_matmul_fn)(void *arg, const void *V, int q, void *Y);

/* --- low-rank preconditioners (lowrank.c) -------------------------------------
 * P + rho I on an n-dimensional space with P = U diag(lam) U^T (U n x r_eff on
 * the device).  Built either by the randomized Nystrom sketch of a psd M
 * (Rathore et al., Alg. 2; Frangella, Tropp and Udell: U orthonormal in exact
 * arithmetic) or from a partial Cholesky factor F (U = F, lam = 1).
 * Inverse: with orth (double-precision Nystrom) U (Lam+rho)^{-1} U^T g +
 * (g - U U^T g)/rho; otherwise the Woodbury form (g - U C^{-1} C^{-T} U^T g)/rho
 * with C^T C = rho diag(1/lam) + U^T U (upper Cholesky). */
typedef struct krr_lowrank {
  krr_precision prec;
  int64_t n;
  int r, r_eff, mmax;
  int orth;           /* U has orthonormal columns (use the orthogonal form) */
  int gram_ok;        /* the sketch may leave U not quite orthonormal (Woodbury
                         applications only, no invsqrt): large sketches then
                         take the polled Gram route (krr_nystrom_sketch) */
  double rho;
  void *U, *Y;        /* n x r: basis / factor, and sketch workspace */
  void *C;            /* r x r */
  void *S, *dinv, *dsq; /* r */
  void *t;            /* r x mmax */
  double *lam, *hv;   /* host r */
  /* distributed (krr_lowrank_distribute): U and Y hold this rank's rows
   * (n = the local count) of an nglob-row space starting at global row row0;
   * the Gram products U^T U, U^T Y, Y^T Y and U^T g are summed over comm */
  struct krr_comm *comm;
  int64_t row0, nglob;
} krr_lowrank;
/* Make lr (allocated for the local n rows) the local part of a low-rank
 * preconditioner whose rows are spread over the ranks of comm (NULL or one
 * rank: nothing changes).  Only the Gram route of the sketch and the
 * Woodbury applications run distributed: the sketch needs gram_ok and
 * nglob >= 2 r. */
void krr_lowrank_distribute(krr_lowrank *lr, struct krr_comm *comm, int64_t row0, int64_t nglob);

typedef enum { KRR_RHO_DAMPED = 0, KRR_RHO_REGULARIZATION = 1, KRR_RHO_VALUE = 2 } krr_rho_mode;
#define KRR_RHO_CHOICES "damped|regularization"

krr_status krr_lowrank_alloc(krr_arena *a, krr_precision prec, int64_t n, int r, int mmax,
                             krr_lowrank *lr);
double krr_lowrank_memory(krr_precision prec, int64_t n, int r, int mmax);
/* Nystrom sketch of M (trace tr) into U, lam, r_eff (Alg. 2 with shift retries).
 * With gram_ok, a sketch of more than krr_piece_flops work orthonormalises
 * the test matrix by Cholesky QR and takes the singular vectors from the
 * eigensystem of the r x r Gram matrix, every n-sized step in polled pieces
 * (orth = 0 after it); otherwise Householder QR and a thin SVD. */
krr_status krr_nystrom_sketch(krr_ctx *ctx, krr_lowrank *lr, krr_matmul_fn mv, void *arg,
                              double trace, uint64_t seed);
/* rho from the mode: damped lambda + lam_r, regularization lambda, or value */
double krr_lowrank_rho(const krr_lowrank *lr, krr_rho rho, double lambda);
/* set rho; precompute the diagonal factors and (unless orth in double) C */
krr_status krr_lowrank_prepare(krr_ctx *ctx, krr_lowrank *lr, double rho);
/* out = (P + rho I)^{-1} in, in/out n x m (ld n), m <= mmax; out may equal in */
krr_status krr_lowrank_inv(krr_ctx *ctx, krr_lowrank *lr, const void *in, void *out, int m);
/* out = (P + rho I)^{-1/2} in (orthonormal U only) */
krr_status krr_lowrank_invsqrt(krr_ctx *ctx, krr_lowrank *lr, const void *in, void *out, int m);

/* --- greedy partial Cholesky of a kernel operator (pchol.c) -------------------
 * K ~ L L^T (L n x rank, device, the operator's precision, ld n) from up to r
 * pivots chosen greedily in blocks by the largest residual diagonal, each
 * entry weighted by pw (host n, or NULL for 1); stops early once the
 * weighted residual trace sum_i pw_i d_i is <= stop_trace or the largest
 * weighted residual is <= tiny, or, when stop_at > 0, at the first block
 * that would begin at or after the time stop_at (krr_now()'s clock; the
 * first block always runs).  d (host n) returns the residual diagonal
 * diag(K - L L^T) (unweighted, >= 0), piv (host r) the pivots in order.
 * E = K - L L^T is the Nystrom error of the pivots, psd.  The operator must
 * hold all n rows on this process. */
krr_status krr_pivoted_cholesky(krr_op *op, const double *pw, int r, double stop_trace, double tiny,
                                double stop_at, void *L, double *d, int64_t *piv, int *rank);
/* bytes it holds while it runs (beyond L, d and piv) */
double krr_pivoted_cholesky_memory(const krr_op *op, int r);

/* --- products with a block's kernel matrix (blockmat.c) ---------------------
 * K_BB of a loaded block, materialised in KB (b x b, the operator's
 * precision) or, with KB = NULL, matrix-free; matmul functions for the
 * sketch (krr_kbb_mul: K_BB V) and the powering (krr_kbb_hmul: (K_BB +
 * lambda I) V), arg = a krr_kbb. */
typedef struct krr_kbb {
  krr_op *op;
  const krr_block *blk;
  const void *KB;
  double lambda;
} krr_kbb;
krr_status krr_kbb_mul(void *arg, const void *V, int q, void *Y);
krr_status krr_kbb_hmul(void *arg, const void *V, int q, void *Y);

/* --- randomised powering (power.c) ---------------------------------------------
 * L = lambda_max((P + rho I)^{-1/2} H (P + rho I)^{-1/2}) for the psd H given
 * by mul (b-vectors, q = 1), iters power iterations from a random start,
 * Rayleigh quotient taken before normalising (Rathore et al., Alg. 3);
 * p1, p2, p3: b-vector scratch.  A non-positive estimate is KRR_ERR_NUMERIC. */
krr_status krr_power_lmax(krr_ctx *ctx, krr_lowrank *lr, krr_matmul_fn mul, void *arg,
                          int iters, uint64_t seed, void *p1, void *p2, void *p3, double *L);

/* --- preconditioned conjugate gradients, m right-hand sides (cg.c) -------------
 * Independent CG runs on A x_j = b_j sharing the products: one application of
 * A to all m columns per iteration, the scalars kept per column; a column
 * whose r.z vanishes (or turns non-positive) is finished.  Every `every`
 * iterations the residual is recomputed as b - A x (against the drift of the
 * recursive residual); a column whose true residual exceeds twice the
 * recursive one, or did not decrease since the previous replacement, has lost
 * conjugacy (typical in float near its accuracy floor) and its direction is
 * restarted.  Vectors are len x m (ld len); reductions go through red (an
 * operator's n-vectors) or, with red = NULL, are local. */
typedef krr_status (*krr_linop_fn)(void *arg, const void *in, void *out);
typedef struct krr_cg {
  krr_ctx *ctx;
  krr_precision prec;
  size_t es;
  int64_t len;
  int m, every, live;
  krr_op *red;
  krr_linop_fn A, M; /* M NULL: unpreconditioned (z is r) */
  void *arg;
  void *x;           /* the iterate (the caller's buffer, set by krr_cg_start) */
  void *r, *z, *d, *Ad;
  double *rz, *rn, *rlast;
  int *frozen, *restart;
  int64_t since;
  double rnorm;      /* ||r||_F (recursive) after the last update */
  /* the last iteration's step of each column (host, m; 0 where it did not
   * move), and whether it replaced r by b - A x: else A's last input was
   * the direction d, so a caller can update what it derives from x */
  double *step;
  int replaced;
  /* optional record of the CG coefficients (stochastic Lanczos quadrature):
   * with rec_cap > 0, iteration t (0-based, t < rec_cap) of column j stores
   * its step alpha in rec_alpha[t * m + j] and the next direction's beta in
   * rec_beta[t * m + j] (NaN where the column was finished); the caller
   * sets rec_alpha, rec_beta (host, rec_cap * m) and rec_cap after alloc */
  double *rec_alpha, *rec_beta;
  int rec_cap, rec_it;
} krr_cg;

krr_status krr_cg_alloc(krr_cg *cg, krr_arena *a, krr_precision prec, int64_t len, int m,
                        krr_op *red, krr_linop_fn A, krr_linop_fn M, void *arg, int every);
double krr_cg_memory(krr_precision prec, int64_t len, int m, int precond);
/* start from x (the caller's buffer): r = b - A x (x_zero: r = b, no product) */
krr_status krr_cg_start(krr_cg *cg, void *x, const void *b, int x_zero);
/* one iteration; 1 in *done when every column has finished */
krr_status krr_cg_iter(krr_cg *cg, const void *b, int *done);

/* --- kernel eigensystems (eigsys.c) ---------------------------------------------
 * Top-q eigensystem of K(X_S, X_S) for a loaded block S: U (device |S| x q,
 * largest first), w (host, |S| entries ascending: the top q + 1 eigenvalues
 * in the last q + 1, NaN before them -- only those are computed).  The
 * |S| x |S| work space lives only in this call. */
krr_status krr_kernel_eigsys(krr_op *op, const krr_block *S, int q, uint64_t seed, void *U,
                             double *w);
/* The top k eigenpairs of a symmetric positive semidefinite n x n device
 * matrix K (ld n) as the ops table's syev_top (W, n entries: the k values
 * ascending in the first k; Z: n x k vectors in that order), by polled
 * subspace iteration where one LAPACK call would be long, else (or without
 * convergence) by LAPACK, which overwrites K.  seed: the subspace's random start; *iters (may be NULL):
 * its iterations, 0 when LAPACK ran alone, negative when it did not converge
 * and LAPACK ran after it.  krr_sym_top_bytes: the device bytes of K, W, Z
 * and the work space together. */
krr_status krr_sym_top(krr_ctx *ctx, krr_precision prec, int64_t n, void *K, int64_t k,
                       uint64_t seed, void *W, void *Z, int *iters);
double krr_sym_top_bytes(int64_t n, int64_t k, size_t es);

/* --- the EigenPro iteration (eigenpro.c) ----------------------------------------
 * EigenPro 2.0 (Ma and Belkin): preconditioned mini-batch SGD (Richardson) on
 * (K + lambda I) w = y for an operator and an objective with the squared loss
 * (lambda may be 0 inside EigenPro 3.0), see solvers/eigenpro.c for the
 * method and its rules.  prepare (the subsample and its eigensystem) does not
 * depend on lambda; tune (preconditioner, batch, step) does. */
typedef struct krr_ep {
  krr_ctx *ctx;
  krr_op *op;
  const krr_objective *obj;
  int64_t n, S, bs, bs_cap, user_batch;
  int q, m;
  double user_step, step_scale, beta, top, mstar, eta;
  uint64_t seed;
  krr_block sub, batch;
  uint64_t *mark;
  double *w_eig, *uh;  /* host: S eigenvalues (ascending), S x q eigenvectors */
  void *U, *D;         /* S x q, q */
  void *g, *gb, *gw, *h, *t; /* 3 x (bs_cap x m), S x m, q x m */
} krr_ep;

/* S = subsample, q = rank, batch (0: automatic, at most bs_cap), step (0:
 * automatic, scaled by step_scale) */
krr_status krr_ep_alloc(krr_ep *ep, krr_arena *a, krr_op *op, const krr_objective *obj,
                        int64_t S, int q, int64_t batch, double step, double step_scale,
                        uint64_t seed);
double krr_ep_memory(const krr_op *op, int m, int64_t S, int q, int64_t bs_cap);
int64_t krr_ep_batch_cap(int64_t n, int64_t batch);
krr_status krr_ep_prepare(krr_ep *ep);
krr_status krr_ep_tune(krr_ep *ep);
/* one SGD step on w (n-vector) with batch number it; block gradient norms out */
krr_status krr_ep_iter(krr_ep *ep, void *w, uint64_t it, double *gn, double *ybn);

/* The block gradient g(b x m) = K(X_B, X) a + grad f(a_B) of the dual on the
 * loaded block B (for the squared loss the block residual of (K + lambda I) a
 * = y); gb holds y_B on return, work (b x m) is scratch.  *gnorm = ||g||_F,
 * *ynorm = ||y_B||_F; a non-finite gradient is KRR_ERR_NUMERIC. */
krr_status krr_block_gradient(krr_op *op, const krr_objective *obj, const krr_block *B,
                              const void *a, void *g, void *gb, void *work, double *gnorm,
                              double *ynorm);
/* --- Cholesky with a jitter fallback (chol.c) -----------------------------------
 * A (n x n, double, device) <- the upper Cholesky factor of src + delta I:
 * delta = 0 first, then jitter0, 10 jitter0, ... (nine tries).  *used is
 * the delta that worked, NaN when none did (then A holds no factor; the
 * caller reports it).  src and A must not overlap. */
krr_status krr_chol_jitter(krr_ctx *ctx, int64_t n, const void *src, void *A, double jitter0,
                           double *used);
/* B (n x m, ld ldb, double) <- (T^T T)^{-1} B for an upper factor T (n x n) */
krr_status krr_chol_solve(krr_ctx *ctx, int64_t n, const void *T, int m, void *B, int64_t ldb);

/* --- block coordinate descent in feature space (bcd.c; Tu et al. 2016,
 * Algorithms 2 and 3): p coordinates cut once into nb = ceil(p / b)
 * near-equal consecutive pieces, visited each epoch in a fresh random order;
 * the blocks' Cholesky factors (b x b double each, p b in all, per lambda
 * group) cached until lambda changes.  A lambda path (obj->lcol) is solved
 * at once: the columns form ng groups of equal lambda (group q: columns
 * c0[q] .. c0[q + 1] - 1, lambda lam[q]), sharing each block's kernel and
 * Gram products.
 * Shifted blocks (the systems G_k + lambda I, G_k fixed) with several groups
 * keep instead each block's tridiagonal form G_k = Q_k T_k Q_k^T (Householder
 * reflectors: p b + p numbers whatever the number of lambdas, and
 * lambda-free: a change of lambda keeps it; 4/3 b^3 flops once, against
 * b^3 / 3 per lambda for the Cholesky factors); a solve for every lambda at
 * once is then Q^T g, one O(b) tridiagonal solve per column with
 * T_k + lambda_q I's LDL^T factor (2 b numbers per group), and Q (.). */
typedef struct krr_bcd {
  int64_t p, b, nb;
  uint64_t seed;
  int ng, ngcap;        /* lambda groups (now, allocated for) */
  int tri;              /* the tridiagonal form (shifted blocks, ngcap > 1) */
  int *c0;              /* host ng + 1: first column of each group */
  double *lam;          /* host ng: lambda of each group */
  int64_t *order;       /* host nb: this epoch's order */
  unsigned char *have;  /* host nb: factors (or tridiagonal form) cached (every group) */
  void *factors;        /* device double: block k's factor of group q at q p b + off_k b;
                           tri: block k's reflectors at off_k b */
  void *tau;            /* device double p (tri): the reflectors' scales, block k at off_k */
  void *ldl;            /* device double 2 ngcap p (tri): group q's D at 2 q p + off_k,
                           its subdiagonal of L at (2 q + 1) p + off_k */
  void *de;             /* device double 2 b (tri): sytrd's diagonal and subdiagonal */
  double *td;           /* host 2 p (tri): the blocks' T (diagonal at off_k, subdiagonal
                           at p + off_k) */
  double *hf;           /* host 2 b (tri): one block's D and L for one group */
  double jabs, jrel;    /* tri: the first jitter, jabs + jrel lam[q] (factor_shifted's) */
  const char *who;      /* tri: the solver named in a factor's error */
} krr_bcd;
int krr_bcd_count_groups(const krr_objective *obj);
/* bytes of the cache; shifted: the blocks' systems are G_k + lambda I */
double krr_bcd_memory(int64_t p, int64_t b, int ng, int m, int shifted);
krr_status krr_bcd_alloc(krr_bcd *c, krr_arena *a, int64_t p, int64_t b, uint64_t seed,
                         const krr_objective *obj, int shifted);
/* the groups of the objective's lambdas again (after a change of lambda);
 * drops the cached factors (a tridiagonal form stays: it does not depend on
 * lambda; its LDL^T factors are redone) */
krr_status krr_bcd_regroup(krr_ctx *ctx, krr_bcd *c, const krr_objective *obj);
/* drop the cached factors */
void krr_bcd_forget(krr_bcd *c);
/* block k: coordinates off .. off + len - 1 */
void krr_bcd_range(const krr_bcd *c, int64_t k, int64_t *off, int64_t *len);
/* the block of iteration iter (0-based) */
int64_t krr_bcd_pick(krr_bcd *c, int64_t iter);
/* block k's cached factor of group g (len x len, ld len) */
void *krr_bcd_slot(const krr_bcd *c, int64_t k, int g);
/* factor G (len x len, double) into block k's slot of group g; Cholesky
 * failures retried with jitter0, 10 jitter0, ... (a proximal step: the fixed
 * point stays; `who` names the solver in the error); the caller sets have[k]
 * once every group is factored */
krr_status krr_bcd_factor(krr_ctx *ctx, krr_bcd *c, int64_t k, int g, const void *G,
                          double jitter0, const char *who);
/* shifted blocks: block k's systems G + lam[q] I for every group (G len x len
 * double, kept; T a len x len double work space), factored (first jitter
 * abs_jitter + rel_jitter lam[q], as above) or, in the tridiagonal form,
 * reduced once (G may then be krr_bcd_slot(c, k, 0) itself: reduced in
 * place, not kept; T unused); sets have[k] */
krr_status krr_bcd_factor_shifted(krr_ctx *ctx, krr_bcd *c, int64_t k, const void *G, void *T,
                                  double abs_jitter, double rel_jitter, const char *who);
/* g (len x m, ld ldg, double) <- H_kk^{-1} g, each group with its factor */
krr_status krr_bcd_solve(krr_ctx *ctx, const krr_bcd *c, int64_t k, void *g, int64_t ldg);
#endif
