/* Preconditioned conjugate gradients on (K + lambda I) w = y, written once
 * for both precisions on the kernel operator and the shared CG (linalg/cg.c:
 * m right-hand sides share each kernel pass).
 * Preconditioners:
 *  - Nystrom (Frangella, Tropp and Udell): rank-r randomized Nystrom of the
 *    full K via one kernel product with r right-hand sides, rho damped /
 *    regularization / value, applied by Woodbury (linalg/lowrank.c).
 *  - randomly pivoted / greedy partial Cholesky (Chen, Epperly, Tropp,
 *    Webber): F (n x r), P = F F^T + lambda I via Woodbury.  RPCholesky
 *    draws pivots one at a time from the residual diagonal kept on the host
 *    in double (starting from the operator's diagonal); each pivot costs one
 *    kernel column K(X, x_s) and one n-vector download.  Greedy takes them
 *    in blocks (linalg/pchol.c: one kernel product and one GEMM per block)
 *    when the operator is whole on this process, else one at a time.
 *  - none.
 * Distributed (a sharded operator over several ranks): the Nystrom
 * preconditioner or none; the full product sends the shards in turn and
 * the sketch sums its Gram matrices over the ranks (linalg/lowrank.c); the
 * partial Cholesky preconditioners, which pick pivots over the whole
 * kernel, refuse.
 * Automatic rank (rank = 0) of the blocked greedy Cholesky preconditioner
 * (the others take min(100, n), min(100, n / 2) when distributed): as
 * large as pays, by cost, and no larger than the spectrum needs.  Rank r
 * costs about 3.4 n r^2 flops at the GEMM rate (n r^2 in the blocked
 * updates, 1.1 n r^2 in the Gram triangle of the Woodbury core, the rest in
 * the kernel columns, pivot searches and triangular solves), an iteration
 * n^2 kernel entries worth about 2 p + 44 flops each at that rate
 * (inst/bench/bench_kernel_mv.c: 64 in double and 55 in float at p = 10)
 * and 2.5 more for each further right-hand side (measured: 10 columns cost
 * 1.35 times one); r is chosen so that the factor costs about three
 * iterations, r = sqrt(3 n (2 p + 44 + 2.5 (m - 1)) / 3.4), capped at n, at
 * 4096 and at what fits in half the memory budget.  On Friedman 1 (p = 10, ML lambda;
 * inst/bench/RESULTS.md) that rank was within 15% of the fastest of the
 * ranks tried, to the converged solution and to the converged test error,
 * at n = 4e4 and 1e5.  The
 * factor stops earlier when the trace of the residual K - F F^T falls below
 * lambda: the preconditioned matrix then has its eigenvalues in [1, 2] and
 * further pivots cannot save more than a few iterations (its condition
 * number is at most 1 + tr(K - F F^T) / lambda).  Under a deadline
 * (time_limit) it also stops once a quarter of the time left has gone, so
 * that the iterations start and a time-limited fit returns an iterate.
 * The sketch / factor does not depend on lambda and is kept across a change
 * of lambda (only rho and the Woodbury core are redone).  Passes: 1 per
 * product with K + lambda I (an iteration, and each residual replacement,
 * every resid_every iterations), +1 for the Nystrom sketch, + r/n for the
 * partial Cholesky.  resid_est is the CG (recursive) residual ||r|| / ||y||. */
#include <float.h>
#include <math.h>
#include <string.h>
#include "solver.h"
#include "../dist/dist.h"

#define OPTIONS(X)                                                                            \
  X(preconditioner, CHOICE, 0, 0, 0, 0, "nystrom|rpcholesky|greedy_cholesky|none",            \
    "preconditioner: randomized Nystrom, randomly pivoted or greedy partial Cholesky, or none") \
  X(rank, INT, 0, 1, INFINITY, 0, NULL, "rank r of the preconditioner (0: automatic for greedy_cholesky, else min(100, n))")     \
  X(rho, RHO, KRR_RHO_DAMPED, 0, 0, 0, KRR_RHO_CHOICES,                                       \
    "damping of the Nystrom preconditioner: damped, regularization or a number")              \
  X(resid_every, INT, 50, 1, INFINITY, 0, NULL,                                               \
    "recompute the residual exactly every this many iterations")
typedef struct { krr_common_opts common; KRR_OPT_FIELDS(OPTIONS) } opts_t;
static const krr_optdef optdefs[] = {KRR_OPT_DEFS(OPTIONS)};
enum { PC_NYSTROM = 0, PC_RPCHOLESKY = 1, PC_GREEDY = 2, PC_NONE = 3 };

typedef struct {
  int pc, r;
  krr_lowrank lr;
  krr_cg cg;
  krr_block piv;     /* one pivot row */
  double *dh, *col;  /* host n: residual diagonal, factor column (Cholesky) */
  int64_t *pivots;   /* host r: the greedy pivots */
  int auto_rank;     /* the rank was automatic (greedy, blocked): stops by the trace */
  double dscale;     /* the largest diagonal entry of K (pivots below eps 1e3 of it stop) */
} pcg_t;

#define PCG_AUTO_RANK_MAX 4096

static const char *const extras[] = {"rho", "rank_effective", NULL};

#define P(s) ((pcg_t *)(s)->st)
#define O(s) SOPT(s, opts_t)

/* the automatic rank of the blocked greedy Cholesky preconditioner (see the top) */
#define PCG_AUTO_PASSES 3.0 /* the factor's cost in iterations */
#define PCG_PAIR_FLOPS(p, m) (2.0 * (p) + 44.0 + 2.5 * ((m)-1.0))
#define PCG_FACTOR_FLOPS 3.4 /* the factor's cost over n r^2 flops */
static int64_t auto_rank(const krr_solver *s) {
  double r = ceil(sqrt(PCG_AUTO_PASSES * (double)s->n *
                       PCG_PAIR_FLOPS((double)s->op->p, (double)s->m) / PCG_FACTOR_FLOPS));
  if (r > PCG_AUTO_RANK_MAX) r = PCG_AUTO_RANK_MAX;
  return (int64_t)r < s->n ? (int64_t)r : s->n;
}

static double pcg_memory(const krr_solver *s) {
  const opts_t *o = O(s);
  int64_t n = s->op ? s->op->nloc : s->n, m = s->m; /* this rank's rows */
  int r = (int)o->rank;
  int chol = o->preconditioner == PC_RPCHOLESKY || o->preconditioner == PC_GREEDY;
  return (double)s->es * (double)(n * m) /* w */ +
         krr_cg_memory(s->prec, n, (int)m, o->preconditioner != PC_NONE) +
         (r > 0 ? krr_lowrank_memory(s->prec, n, r, (int)m) : 0.0) + krr_block_bytes(s->op, 1) +
         (chol ? 16.0 * (double)n + 8.0 * (r > 0 ? r : 1) : 0.0) +
         /* the blocked greedy factor's buffers while it runs */
         (o->preconditioner == PC_GREEDY && r > 0 ? krr_pivoted_cholesky_memory(s->op, r) : 0.0) +
         /* distributed: the sharded product's shard buffers (about nloc rows of the points
          * and of q = max(r, m) columns, three on the host and three on the device) */
         (s->op && s->op->nloc != s->n
              ? (double)s->es * (double)n * (3.0 * (double)KRR_MAX(s->op->p, KRR_MAX(r, m)) +
                                           (double)s->op->p + 2.0 * (double)KRR_MAX(r, m))
              : 0.0);
}

static krr_status pcg_resolve(krr_solver *s) {
  opts_t *o = O(s);
  P(s)->auto_rank = 0;
  if (!s->data_free && s->op->nloc != s->n &&
      (o->preconditioner == PC_RPCHOLESKY || o->preconditioner == PC_GREEDY))
    return krr_fail(s->ctx, KRR_ERR_INPUT, "distributed PCG takes preconditioner = \"nystrom\" or "
                    "\"none\" (the partial Cholesky factors pick pivots over the whole kernel "
                    "on one process)");
  if (o->preconditioner == PC_NONE) {
    o->rank = 0;
  } else if (o->rank == 0 && o->preconditioner == PC_GREEDY && !s->data_free &&
             s->op->nloc == s->n) {
    /* the largest rank up to auto_rank() whose need fits half the budget */
    double avail = 0;
    KTRY(krr_memory_budget(s->ctx, o->common.mem_limit, &avail));
    int64_t lo = 1, hi = auto_rank(s);
    while (lo < hi) {
      o->rank = lo + (hi - lo + 1) / 2;
      if (pcg_memory(s) <= 0.5 * avail) lo = o->rank; else hi = o->rank - 1;
    }
    o->rank = lo;
    P(s)->auto_rank = 1;
  } else if (o->rank == 0) {
    /* distributed, the sketch's Cholesky QR needs rank <= n / 2 */
    int64_t cap = !s->data_free && s->op->nloc != s->n ? s->n / 2 : s->n;
    o->rank = cap < 100 ? (cap > 0 ? cap : 1) : 100;
  } else if (o->rank > s->n) {
    return krr_fail(s->ctx, KRR_ERR_INPUT, "`rank` (%lld) must not exceed the number of training "
                    "points (%lld)", (long long)o->rank, (long long)s->n);
  }
  return KRR_OK;
}

/* out = (K + lambda I) in, n x m: one pass */
static krr_status apply_A(void *arg, const void *in, void *out) {
  krr_solver *s = (krr_solver *)arg;
  int64_t n = s->op->nloc;
  KTRY(krr_op_mv(s->op, NULL, NULL, in, n, s->m, out, n));
  s->diag.passes += 1;
  return SOP(s, axpby, n * s->m, s->obj->lambda, in, 1.0, out);
}

static krr_status apply_M(void *arg, const void *in, void *out) {
  krr_solver *s = (krr_solver *)arg;
  return krr_lowrank_inv(s->ctx, &P(s)->lr, in, out, s->m);
}

/* Y = K V (n x q): the sketch product of the Nystrom preconditioner */
static krr_status sketch_mv(void *arg, const void *V, int q, void *Y) {
  krr_solver *s = (krr_solver *)arg;
  int64_t n = s->op->nloc;
  return krr_op_mv(s->op, NULL, NULL, V, n, q, Y, n);
}

static krr_status pcg_init(krr_solver *s) {
  pcg_t *c = P(s);
  const opts_t *o = O(s);
  krr_arena *a = &s->arena;
  c->pc = o->preconditioner;
  c->r = (int)o->rank;
  KTRY(krr_solver_alloc_weights(s, s->op->nloc, s->prec));
  KTRY(krr_cg_alloc(&c->cg, a, s->prec, s->op->nloc, s->m, s->op, apply_A,
                    c->pc == PC_NONE ? NULL : apply_M, s, (int)o->resid_every));
  if (c->r > 0) {
    KTRY(krr_lowrank_alloc(a, s->prec, s->op->nloc, c->r, s->m, &c->lr));
    c->lr.gram_ok = 1; /* PCG applies the preconditioner by Woodbury only */
    int64_t row0 = 0;
    krr_comm *comm = krr_op_comm(s->op, &row0); /* sharded: this rank's rows */
    krr_lowrank_distribute(&c->lr, comm, row0, s->n);
  }
  if (c->pc == PC_RPCHOLESKY || c->pc == PC_GREEDY) {
    c->dh = (double *)krr_arena_host(a, s->n, sizeof(double));
    c->col = (double *)krr_arena_host(a, s->n, sizeof(double));
    c->pivots = (int64_t *)krr_arena_host(a, c->r > 0 ? c->r : 1, sizeof(int64_t));
    KTRY(KRR_ALLOCATED(a, c->dh, c->col, c->pivots));
    KTRY(krr_block_alloc(s->op, a, 1, &c->piv));
  }
  return KRR_OK;
}

/* next pivot from the host residual diagonal: sampled proportionally to it
 * (RPCholesky) or its argmax (greedy); -1 when it is exhausted */
static int64_t pick_pivot(krr_solver *s, int k, uint64_t stream) {
  pcg_t *c = P(s);
  int64_t n = s->n, best = -1;
  double tot = 0, mx = 0;
  for (int64_t i = 0; i < n; i++) {
    tot += c->dh[i];
    if (c->dh[i] > mx) { mx = c->dh[i]; best = i; }
  }
  double floor_ = (s->prec == KRR_DOUBLE ? DBL_EPSILON : FLT_EPSILON) * 1e3 * c->dscale;
  if (!(mx > floor_)) return -1;
  if (c->pc == PC_GREEDY) return best;
  double u = krr_rng_unif(stream, (uint64_t)k) * tot, acc = 0;
  for (int64_t i = 0; i < n; i++) {
    acc += c->dh[i];
    if (acc >= u && c->dh[i] > 0) return i;
  }
  return best;
}

/* partial Cholesky F (n x r) into lr->U; P = F F^T (lam = 1) */
static krr_status partial_cholesky(krr_solver *s) {
  pcg_t *c = P(s);
  krr_lowrank *lr = &c->lr;
  int64_t n = s->n;
  size_t es = s->es;
  uint64_t stream = krr_rng_stream(krr_options_seed(s->opts), 0, 11);
  KTRY(krr_op_diag(s->op, NULL, c->dh));
  c->dscale = 0;
  for (int64_t i = 0; i < n; i++) c->dscale = c->dh[i] > c->dscale ? c->dh[i] : c->dscale;
  int k = 0, rmax = c->r;
  if (c->pc == PC_GREEDY && s->op->nloc == n) {
    /* greedy pivots in blocks: one GEMM per block (linalg/pchol.c); an
     * automatic rank (only here) stops once tr(K - F F^T) <= lambda, and,
     * under a deadline, once a quarter of the time left has gone: the
     * Woodbury core costs about as much again, and the rest is left to the
     * iterations, so that a time-limited fit has an iterate to return */
    double stop_trace = c->auto_rank ? s->obj->lambda : 0.0;
    double floor_ = (s->prec == KRR_DOUBLE ? DBL_EPSILON : FLT_EPSILON) * 1e3 * c->dscale;
    double left = krr_time_left(s->ctx);
    double stop_at = c->auto_rank && isfinite(left) ? krr_now() + 0.25 * fmax(left, 0.0) : 0.0;
    KTRY(krr_pivoted_cholesky(s->op, NULL, c->r, stop_trace, floor_, stop_at, lr->U, c->dh,
                              c->pivots, &k));
    rmax = k; /* it stopped by the rank, the trace, the numerical rank or the clock */
  }
  for (; k < rmax; k++) {
    KTRY(krr_poll(s->ctx));
    int64_t piv = pick_pivot(s, k, stream);
    if (piv < 0) break;
    void *f = KAT(lr->U, (int64_t)k * n, es);
    KTRY(krr_block_set(s->op, &c->piv, &piv, 1));
    KTRY(krr_op_mat(s->op, NULL, &c->piv, f, n));
    if (k > 0) KTRY(SOP(s, gemm, 0, 1, n, 1, k, -1.0, lr->U, n, KAT(lr->U, piv, es), n, 1.0, f, n));
    KTRY(krr_download_vec(s->ctx, s->prec, f, n, c->col));
    double g = c->col[piv];
    if (!(g > 0) || !isfinite(g)) break;
    double sg = sqrt(g);
    KTRY(SOP(s, axpby, n, 0.0, f, 1.0 / sg, f));
    for (int64_t i = 0; i < n; i++) {
      double v = c->col[i] / sg;
      c->dh[i] -= v * v;
      if (c->dh[i] < 0) c->dh[i] = 0;
    }
    c->dh[piv] = 0;
  }
  lr->r_eff = k;
  lr->orth = 0;
  for (int j = 0; j < k; j++) lr->lam[j] = 1.0;
  s->diag.passes += (double)k / (double)n;
  return KRR_OK;
}

/* the sketch or factor: independent of lambda */
static krr_status pcg_prepare(krr_solver *s) {
  pcg_t *c = P(s);
  if (c->pc == PC_NYSTROM) {
    double tr = 0;
    krr_status st = krr_op_trace(s->op, NULL, &tr); /* this rank's rows: summed */
    krr_comm *comm = krr_op_comm(s->op, NULL);
    if (comm) st = krr_comm_agree(comm, s->ctx, st);
    if (st == KRR_OK && comm)
      st = krr_comm_allreduce(comm, s->ctx, &tr, 1, KRR_DT_DOUBLE, KRR_RED_SUM);
    KTRY(st);
    KTRY(krr_nystrom_sketch(s->ctx, &c->lr, sketch_mv, s, tr,
                            krr_rng_stream(krr_options_seed(s->opts), 0, 10)));
    s->diag.passes += 1;
  } else if (c->pc != PC_NONE) {
    KTRY(partial_cholesky(s));
  }
  return KRR_OK;
}

static krr_status pcg_tune(krr_solver *s) {
  pcg_t *c = P(s);
  if (c->pc == PC_NONE) return KRR_OK;
  double rho = c->pc == PC_NYSTROM ? krr_lowrank_rho(&c->lr, O(s)->rho, s->obj->lambda)
                                   : s->obj->lambda;
  KTRY(krr_lowrank_prepare(s->ctx, &c->lr, rho));
  krr_solver_set_extra(s, "rho", rho);
  krr_solver_set_extra(s, "rank_effective", c->lr.r_eff);
  return KRR_OK;
}

static void track(krr_solver *s, int done) {
  double yn = s->obj->ynorm;
  s->diag.resid_est = yn > 0 ? P(s)->cg.rnorm / yn : P(s)->cg.rnorm;
  s->diag.done = done;
}

static krr_status pcg_start(krr_solver *s) {
  pcg_t *c = P(s);
  KTRY(krr_cg_start(&c->cg, s->w, s->obj->y, s->w_zero));
  track(s, c->cg.live == 0);
  return KRR_OK;
}

static krr_status pcg_iterate(krr_solver *s) {
  int done = 0;
  KTRY(krr_cg_iter(&P(s)->cg, s->obj->y, &done));
  krr_solver_tick(s);
  track(s, done);
  return KRR_OK;
}

const krr_solver_def krr_solver_pcg = {
    .name = "pcg",
    .title = "PCG",
    .losses = "squared",
    .options = {optdefs, KRR_NOPTS(optdefs), sizeof(opts_t)},
    .extras = extras,
    .state_size = sizeof(pcg_t),
    .mem_advice = "try a smaller rank",
    .resolve = pcg_resolve,
    .memory = pcg_memory,
    .init = pcg_init,
    .prepare = pcg_prepare,
    .tune = pcg_tune,
    .start = pcg_start,
    .iterate = pcg_iterate,
    .distributed = 1, /* the sharded operator's full product (its shards in turn) and a
                         Nystrom sketch summed over the ranks (Cholesky QR, r x r Gram
                         matrices); the partial Cholesky preconditioners refuse */
};
