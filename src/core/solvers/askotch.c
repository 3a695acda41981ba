/* ASkotch and Skotch (Rathore, Frangella, Yang, Derezinski and Udell, "Have
 * ASkotch", journal version: Algorithms 1-3), and their exact-block relatives
 * SAP / NSAP (block Gauss-Seidel of Tu et al.: the block system (K_BB +
 * lambda I) d = g solved exactly by Cholesky, step size 1), written once for
 * both precisions on the kernel operator.
 *
 * Iteration (accelerated form; Skotch/SAP update w directly):
 *   B <- b distinct rows (uniform, or ridge-leverage-score sampling)
 *   P + rho I <- rank-r Nystrom approximation of K_BB (trace from the
 *                operator's diagonal) with its damping rho
 *   L <- lambda_max((P + rho I)^{-1/2} (K_BB + lambda I) (P + rho I)^{-1/2})
 *   g <- K_{B:} z + lambda z_B - y_B;  d <- (P + rho I)^{-1} g
 *   w <- z - (1/L) I_B d;  v <- (1 - beta) z + beta v - (gamma/L) I_B d
 *   z <- alpha v + (1 - alpha) w
 * with beta = 1 - sqrt(mu/nu), gamma = 1/sqrt(mu nu), alpha = 1/(1 + gamma
 * nu) and the paper's defaults mu = lambda, nu = n/b (Table 3).  When lambda
 * >= nu the defaults take Skotch's / SAP's step instead (no momentum): mu =
 * lambda would give beta < 0, and the momentum clamped to mu = nu/2 only
 * slowed these well-conditioned problems (41 passes to a relative residual
 * of 1e-8 against Skotch's 25.6 at n = 5e3, lambda = 0.1 n; 21 against 14
 * to 1e-4 at n = 2e4, lambda = 0.01 n).  Given mu or nu, mu < nu is required.
 *
 * Momentum restart (restart = auto, the default; none is the paper's
 * iteration unchanged).  With mu = lambda the momentum is mistuned whenever
 * lambda is far from the strong convexity of the preconditioned block
 * iteration: at n = 1e3, lambda = 1e-6 n the paper's ASkotch and NSAP do not
 * converge in 300 passes while Skotch and SAP reach 1e-8 in 90.  Following the
 * gradient restart of O'Donoghue and Candes ("Adaptive restart for
 * accelerated gradient schemes", 2015: restart when grad f(z_k)^T (w_{k+1} -
 * w_k) > 0), adapted to random blocks: the iteration only knows the block
 * gradient g at z, and (w_new - w_old)_B = (z - w_old)_B - d / L, so the
 * test splits into the momentum's ascent <g, (z - w_old)_B> (a b/n-scaled
 * sample of grad f(z)^T (z - w_old), dense) and the step's descent <g, d> / L
 * (block only, always > 0).  The unscaled test (theta = 1) almost never fires
 * on a b/n sample; we restart when the ascent exceeds theta = 0.1 of the
 * descent (chosen on a study of the restart rule: 0.01 restarts on block
 * noise and loses the speed-up of NSAP at n/b = 40; 0.25 and above miss the
 * n = 1e3 divergence).  A restart sets v = z = w_new (the start of the
 * iteration: with the momentum killed at every iteration ASkotch takes
 * Skotch's step).  Cost: two gathers and three b-dots per iteration; no
 * randomness, so the iterates depend on the seed only. */
#include <float.h>
#include <math.h>
#include <string.h>
#include "solver.h"
#include "../dist/dist.h"

#define OPTIONS(X)                                                                            \
  X(block_size, INT, 0, 1, INFINITY, 0, NULL,                                                 \
    "block size b (0: by cost, or the paper's, see defaults)")                                \
  X(rank, INT, 0, 1, INFINITY, 0, NULL,                                                       \
    "Nystrom rank r of the block preconditioner (0: by the spectrum, or the paper's, see defaults)") \
  X(defaults, CHOICE, 0, 0, 0, 0, "cost|paper",                                               \
    "block size and rank when not given: cost (b by cost, r by K_BB's spectrum) or paper (b = ceiling(n / 100), r = min(100, b))") \
  X(rho, RHO, KRR_RHO_DAMPED, 0, 0, 0, KRR_RHO_CHOICES,                                       \
    "damping: damped (lambda + the r-th Nystrom eigenvalue), regularization (lambda) or a number") \
  X(accelerated, FLAG, 1, 0, 1, 0, NULL, "Nesterov acceleration (ASkotch, NSAP) or not (Skotch, SAP)") \
  X(block_solve, CHOICE, 0, 0, 0, 0, "nystrom|exact",                                         \
    "the block step: Nystrom-preconditioned (ASkotch, Skotch) or an exact Cholesky solve with unit step (NSAP, SAP)") \
  X(sampling, CHOICE, 0, 0, 0, 0, "uniform|rls", "block sampling: uniform or approximate ridge leverage scores") \
  X(rls_subsample, INT, 0, 1, INFINITY, 0, NULL,                                              \
    "dictionary size s of the leverage-score estimate (0: min(n, 2000))")                     \
  X(mu, REAL, 0, 0, INFINITY, 1, NULL, "acceleration parameter mu (0: lambda)")               \
  X(restart, CHOICE, 0, 0, 0, 0, "auto|none",                                                 \
    "momentum restart (accelerated): auto (adaptive gradient restart) or none (the paper's iteration)") \
  X(nu, REAL, 0, 0, INFINITY, 1, NULL, "acceleration parameter nu (0: n / b)")                \
  X(power_iters, INT, 10, 1, 1000, 0, NULL, "power iterations for the step size")             \
  X(block_mem_limit, REAL, 536870912.0, 0, INFINITY, 0, NULL,                                 \
    "form K_BB explicitly when its b^2 entries take at most this many bytes")
typedef struct { krr_common_opts common; KRR_OPT_FIELDS(OPTIONS) } opts_t;
static const krr_optdef optdefs[] = {KRR_OPT_DEFS(OPTIONS)};
enum { BLOCK_NYSTROM = 0, BLOCK_EXACT = 1 };
enum { SAMPLE_UNIFORM = 0, SAMPLE_RLS = 1 };
enum { RESTART_AUTO = 0, RESTART_NONE = 1 };
enum { DEFAULTS_COST = 0, DEFAULTS_PAPER = 1 };
/* restart = auto: the momentum is restarted when its ascent along the sampled
   block gradient exceeds this fraction of the block step's descent (see the
   header) */
#define RESTART_THETA 0.1

typedef struct {
  int auto_block, auto_rank, accelerated, exact, materialize, restart;
  int rank_max;         /* auto_rank: the cap, allocated (the option stays 0) */
  int momentum;         /* accelerated, and the momentum used at this lambda */
  int64_t restarts;     /* momentum restarts in this solve */
  double mu, nu, beta, gamma, alpha, L;
  krr_lowrank lr;       /* Nystrom preconditioner of K_BB */
  krr_block blk;
  krr_kbb kbb;          /* products with K_BB (materialised or not) */
  krr_rls rls;          /* sampling = rls */
  void *v, *z;          /* n x m (accelerated only) */
  void *KB;             /* b x b, when materialised (SAP/NSAP: its Cholesky factor) */
  void *g, *d, *gb;     /* b x m */
  void *p1, *p2, *p3;   /* b (powering) */
  uint64_t *mark;
  /* a lambda path (obj->lcol; SAP/NSAP only): K_BB + lambda_q I factored in
   * double per group of columns with the same lambda (Cholesky), or, from
   * PATH_TRI_GROUPS groups on, K_BB's tridiagonal form once per block */
  krr_bcd grp;
  void *Gd, *Ad, *gd;   /* b x b, b x b (Cholesky form only), b x m: double */
} ask_t;

static const char *const extras[] = {"step_L", "rho", "materialized", "rank_used", "restarts", "momentum", "t_nystrom",
                                     "t_power", "t_block", "t_update", NULL};

#define A(s) ((ask_t *)(s)->st)
#define O(s) SOPT(s, opts_t)

/* The tridiagonal reduction costs about five Cholesky factorisations of the
 * same block on one core (4/3 b^3 flops, half of them in matrix-vector
 * products; measured with OpenBLAS at b = 300 .. 1000), so a path of fewer
 * lambdas factors each shifted block. */
#define PATH_TRI_GROUPS 6
static int path_tri(const krr_solver *s) {
  return s->obj && s->obj->lcol && krr_bcd_count_groups(s->obj) >= PATH_TRI_GROUPS;
}

/* the rank the work space holds: the given one, or the cap of the rank by
 * the spectrum (kept in the state: the option stays 0, so that a rebuild
 * chooses again) */
static int rank_held(const krr_solver *s) {
  return A(s)->auto_rank ? A(s)->rank_max : (int)O(s)->rank;
}

static double need(const krr_solver *s, int64_t b, int r, int mat) {
  const opts_t *o = O(s);
  int64_t n = s->n, m = s->m, nl = s->op ? s->op->nloc : n; /* n-vectors: this rank's rows */
  int acc = o->accelerated != 0, exact = o->block_solve == BLOCK_EXACT;
  double e = (double)(acc ? 3 : 1) * (double)(nl * m) + (mat ? (double)b * (double)b : 0.0) +
             3.0 * (double)(b * m) + 3.0 * (double)b;
  double rls = 0;
  if (o->sampling == SAMPLE_RLS) { /* the sampler, and the score estimate's work space (setup) */
    double sd = (double)o->rls_subsample, chunk = 2097152.0; /* s x c <= 2^21 */
    rls = krr_rls_memory(n, b) + (double)s->es * (sd * sd + chunk) + 8.0 * chunk +
          krr_block_bytes(s->op, o->rls_subsample) + krr_block_bytes(s->op, (int64_t)(chunk / sd) + 1);
  }
  double path = s->obj && s->obj->lcol ?
    8.0 * ((path_tri(s) ? 0.0 : 2.0) * (double)b * (double)b + (double)(b * m)) +
    krr_bcd_memory(b, b, krr_bcd_count_groups(s->obj), (int)m, path_tri(s)) : 0.0;
  return e * (double)s->es + krr_block_bytes(s->op, b) +
         (exact ? 0.0 : krr_lowrank_memory(s->prec, b, r, m)) + (double)(n / 8 + 8) + rls + path;
}

/* K_BB is formed when it fits block_mem_limit and is no larger than the data
 * (at least 64 MiB): the default block n / 100 at n = 1e6, p = 10 made K_BB
 * ten times the data in single precision, for no measurable speed (its uses,
 * the sketch and the power iterations, recompute it in b^2 p, against the
 * b n p of the block's kernel rows). */
static int64_t kbb_largest(const krr_solver *s) {
  if (s->es == 0) return s->n; /* (the data-free check of the options) */
  double data = (double)s->n * (double)(s->op ? s->op->p : 1) * (double)s->es;
  double cap = data > 67108864.0 ? data : 67108864.0;
  double lim = O(s)->block_mem_limit < cap ? O(s)->block_mem_limit : cap;
  return (int64_t)sqrt(lim / (double)s->es);
}
static int kbb_small(const krr_solver *s, int64_t b) { return b <= kbb_largest(s); }
static int materialize(const krr_solver *s, double avail) {
  const opts_t *o = O(s);
  int64_t b = o->block_size;
  int exact = o->block_solve == BLOCK_EXACT;
  return (exact || kbb_small(s, b)) && need(s, b, rank_held(s), 1) <= avail;
}

/* --- the block size and rank by cost (defaults = cost) -------------------------
 * Per iteration ASkotch evaluates the block's kernel rows, b n kernel values,
 * and builds the rank-r Nystrom approximation of K_BB: b^2 kernel values for
 * K_BB, about 2 b^2 r flops for the sketch, 6 b r^2 for the Cholesky QR and
 * the reconstruction, 10 r^3 for the r x r factorisations, and 20 b^2 for the
 * ten power iterations; with K_BB matrix-free (materialize) the sketch and
 * the powering evaluate it again, 11 b^2 kernel values.  A kernel value costs
 * about 3p + 60 flops of GEMM work on the CPU backend (RBF in double on two
 * cores: 1.3e9 values per second at p = 10 and 4.9e7 at p = 784, against 113
 * GFLOP/s of DGEMM).  The block is the largest b (at least min(n, 256)) whose
 * preconditioner at the largest rank it may get, r_max = max(100, b / 3) (at
 * most RANK_CAP and b), costs no more than its kernel rows, so the block
 * product stays the larger part of an iteration; then the rank is chosen by
 * the spectrum (choose_rank).  Sizes in double: b = 996 at n = 2e4 and p =
 * 10; 2896, the largest formed K_BB, at n = 1e4 and p = 784 and at n = 2e5 ..
 * 5e5 and p = 10; 11 823 at n = 1e6 and p = 10, K_BB matrix-free (the paper's
 * n / 100: 200, 100, 2000 .. 5000, 10 000). */
#define RANK_CAP 2000
#define RANK_FLOOR 50
static int rank_cap(int64_t b) {
  int64_t r = (b + 2) / 3;
  if (r < 100) r = 100;
  if (r > RANK_CAP) r = RANK_CAP;
  return (int)(r < b ? r : b);
}
static int block_pays(const krr_solver *s, int64_t b, double cp, double kv) {
  double bd = (double)b, r = rank_cap(b);
  double nys = bd * bd * (kv * cp + 2.0 * r + 20.0) + 6.0 * bd * r * r + 10.0 * r * r * r;
  return nys <= bd * (double)s->n * cp;
}
/* the largest b in [lo, hi] for which block_pays holds (it holds up to some
 * b, then fails), lo when none */
static int64_t largest_paying(const krr_solver *s, int64_t lo, int64_t hi, double cp, double kv) {
  while (lo < hi) {
    int64_t mid = lo + (hi - lo + 1) / 2;
    if (block_pays(s, mid, cp, kv)) lo = mid; else hi = mid - 1;
  }
  return lo;
}
/* A block past the largest one whose K_BB is formed pays for its recomputed
 * K_BB only when it is at least twice as large (at n = 2e5, p = 10 the
 * matrix-free optimum was 2% larger than the formed 2896 and its K_BB
 * evaluations cost 16% of the block product; at n = 1e6 it is 3.8 times
 * larger at 13%). */
static int64_t cost_block(const krr_solver *s) {
  double cp = 3.0 * (double)(s->op ? s->op->p : 1) + 60.0;
  int64_t lo = s->n < 256 ? s->n : 256, bm = kbb_largest(s);
  if (bm < lo) return largest_paying(s, lo, s->n, cp, 11.0);
  if (bm > s->n) bm = s->n;
  int64_t b1 = largest_paying(s, lo, bm, cp, 1.0);
  if (b1 < bm || bm >= s->n) return b1;
  int64_t b2 = largest_paying(s, bm, s->n, cp, 11.0);
  return b2 >= 2 * b1 ? b2 : b1;
}

static double ask_memory(const krr_solver *s) {
  const opts_t *o = O(s);
  return need(s, o->block_size, rank_held(s), materialize(s, s->avail));
}

static krr_status ask_resolve(krr_solver *s) {
  opts_t *o = O(s);
  int64_t n = s->n;
  int paper = o->defaults == DEFAULTS_PAPER, nys = o->block_solve != BLOCK_EXACT;
  A(s)->auto_block = o->block_size == 0;
  A(s)->auto_rank = 0;
  if (o->block_size == 0)
    o->block_size = paper ? (n + 99) / 100 : nys ? cost_block(s) : krr_default_block(n);
  if (o->block_size > n)
    return krr_fail(s->ctx, KRR_ERR_INPUT, "`block_size` (%lld) must not exceed the number of "
                    "training points (%lld)", (long long)o->block_size, (long long)n);
  if (s->obj && s->obj->lcol && o->block_solve != BLOCK_EXACT)
    return krr_fail(s->ctx, KRR_ERR_INPUT, "a `lambda` path is solved at once by sap() (exact "
                    "blocks) or bcd(), not by ASkotch's Nystrom blocks");
  if (o->block_solve == BLOCK_EXACT) {
    o->rank = 0;
  } else if (o->rank == 0 && paper) {
    o->rank = o->block_size < 100 ? o->block_size : 100;
  } else if (o->rank == 0) {
    A(s)->auto_rank = 1;
    A(s)->rank_max = rank_cap(o->block_size);
  } else if (o->rank > o->block_size) {
    return krr_fail(s->ctx, KRR_ERR_INPUT, "`rank` (%lld) must not exceed the block size (%lld)",
                    (long long)o->rank, (long long)o->block_size);
  }
  if (o->sampling == SAMPLE_RLS) {
    if (o->rls_subsample == 0) o->rls_subsample = n < 2000 ? n : 2000;
    if (o->rls_subsample > n)
      return krr_fail(s->ctx, KRR_ERR_INPUT, "`rls_subsample` (%lld) must not exceed the number of "
                      "training points (%lld)", (long long)o->rls_subsample, (long long)n);
  }
  return KRR_OK;
}

/* largest b whose need (K_BB matrix-free) fits avail; a user block refuses */
static krr_status ask_shrink(krr_solver *s, double avail) {
  opts_t *o = O(s);
  int64_t lo = 0, hi = o->block_size;
  while (lo < hi) {
    int64_t mid = lo + (hi - lo + 1) / 2;
    int rk = rank_held(s) < mid ? rank_held(s) : (int)mid;
    if (need(s, mid, rk, o->block_solve == BLOCK_EXACT) <= avail) lo = mid; else hi = mid - 1;
  }
  if (!A(s)->auto_block || lo < 1)
    return krr_fail(s->ctx, KRR_ERR_MEMORY,
                    "the fit needs %.1f MiB beyond the data but only %.1f MiB are available; "
                    "try block_size = %lld%s", ask_memory(s) / 1048576.0, avail / 1048576.0,
                    (long long)(lo > 0 ? lo : 1),
                    lo < 1 ? " or a smaller data set / single precision" : "");
  o->block_size = lo;
  if (o->rank > lo) o->rank = lo;
  if (A(s)->auto_rank) A(s)->rank_max = rank_cap(lo);
  return KRR_OK;
}

static krr_status ask_init(krr_solver *s) {
  ask_t *a = A(s);
  const opts_t *o = O(s);
  krr_arena *ar = &s->arena;
  /* n-vectors hold this rank's rows (all n on one process) */
  int64_t n = s->n, b = o->block_size, nm = s->op->nloc * (int64_t)s->m;
  int m = s->m;
  size_t es = s->es;
  a->accelerated = o->accelerated;
  a->restart = o->accelerated && o->restart == RESTART_AUTO;
  a->exact = o->block_solve == BLOCK_EXACT;
  a->materialize = materialize(s, s->avail);
  a->L = 1.0; /* exact block solves take unit steps */
  if (a->exact && !a->materialize)
    return krr_fail(s->ctx, KRR_ERR_MEMORY, "SAP needs the %lld x %lld block kernel matrix in "
                    "memory; use a smaller block_size", (long long)b, (long long)b);
  KTRY(krr_solver_alloc_weights(s, s->op->nloc, s->prec));
  if (a->accelerated) {
    a->v = krr_arena_dev(ar, nm, es);
    a->z = krr_arena_dev(ar, nm, es);
    KTRY(KRR_ALLOCATED(ar, a->v, a->z));
  }
  KTRY(krr_block_alloc(s->op, ar, b, &a->blk));
  if (a->materialize) KTRY(KRR_ALLOCATED(ar, a->KB = krr_arena_dev(ar, b * b, es)));
  a->g = krr_arena_dev(ar, b * m, es);
  a->d = krr_arena_dev(ar, b * m, es);
  a->gb = krr_arena_dev(ar, b * m, es);
  a->p1 = krr_arena_dev(ar, b, es);
  a->p2 = krr_arena_dev(ar, b, es);
  a->p3 = krr_arena_dev(ar, b, es);
  a->mark = (uint64_t *)krr_arena_host(ar, n / 64 + 1, sizeof(uint64_t));
  KTRY(KRR_ALLOCATED(ar, a->g, a->d, a->gb, a->p1, a->p2, a->p3, a->mark));
  if (!a->exact) KTRY(krr_lowrank_alloc(ar, s->prec, b, rank_held(s), m, &a->lr));
  /* (a rank by the spectrum is published when chosen, at the first step) */
  krr_solver_set_extra(s, "rank_used", a->exact ? 0.0 : a->auto_rank ? NAN : (double)o->rank);
  if (o->sampling == SAMPLE_RLS) {
    if (s->op->nloc != n)
      return krr_fail(s->ctx, KRR_ERR_INPUT, "`sampling = \"rls\"` does not run distributed; "
                      "use sampling = \"uniform\"");
    KTRY(krr_rls_alloc(ar, n, b, &a->rls));
  }
  a->kbb = (krr_kbb){s->op, &a->blk, a->materialize ? a->KB : NULL, 0.0};
  krr_solver_set_extra(s, "materialized", a->materialize);
  if (s->obj->lcol) {
    KTRY(krr_bcd_alloc(&a->grp, ar, b, b, krr_options_seed(s->opts), s->obj, path_tri(s)));
    KTRY(KRR_ALLOCATED(ar, a->gd = krr_arena_dev(ar, b * m, sizeof(double))));
    if (a->grp.tri) { /* K_BB goes straight into the reflectors' slot */
      a->Gd = krr_bcd_slot(&a->grp, 0, 0);
    } else {
      a->Gd = krr_arena_dev(ar, b * b, sizeof(double));
      a->Ad = krr_arena_dev(ar, b * b, sizeof(double));
      KTRY(KRR_ALLOCATED(ar, a->Gd, a->Ad));
    }
  }
  return KRR_OK;
}

/* the block B (its indices, rows and, when formed, K_BB) from the stream */
static krr_status sample_block(krr_solver *s, uint64_t stream) {
  ask_t *a = A(s);
  const opts_t *o = O(s);
  int64_t b = o->block_size;
  if (o->sampling == SAMPLE_RLS) krr_rls_sample(&a->rls, stream, b, a->blk.idx_h);
  else krr_sample_uniform(stream, s->n, b, a->mark, a->blk.idx_h);
  KTRY(krr_block_set(s->op, &a->blk, a->blk.idx_h, b));
  if (a->materialize) KTRY(krr_op_mat(s->op, &a->blk, &a->blk, a->KB, b));
  return KRR_OK;
}

/* The rank by the spectrum (rank not given, defaults = cost): the number of
 * eigenvalues above lambda of the rank-r_max Nystrom approximation of one
 * sampled K_BB (a stream of its own: the iterates' blocks are unchanged), at
 * least min(RANK_FLOOR, r_max).  With rho = lambda + lambda_r the
 * preconditioned block then has the condition number about 2 that the
 * paper's fast regime asks for (Theorem 17, c_rho = rho / lambda), and a
 * spectrum that decays fast does not pay for columns it does not need.
 * Measured (Friedman 1, n = 2e4, p = 10, lambda = 0.0056, b about 1000): 315
 * eigenvalues of K_BB above lambda; rank 100 left a relative residual of
 * 1.5e-2 after 60 passes, rank 300 reached 1e-6 in 58; a smooth 3-input
 * function at the same n: 65 above lambda, rank 100 and 387 took the same
 * passes, 387 at 3.6 times the time.  Every rank of a distributed fit takes
 * rank 0's count. */
static krr_status choose_rank(krr_solver *s) {
  ask_t *a = A(s);
  uint64_t seed = krr_options_seed(s->opts);
  a->lr.r = a->rank_max;
  KTRY(sample_block(s, krr_rng_stream(seed, UINT64_MAX, 0))); /* (collective, agreed) */
  double tr = 0, lambda = s->obj->lambda, r = 0;
  krr_status st = krr_op_trace(s->op, &a->blk, &tr); /* local: a failure is agreed below */
  if (st == KRR_OK)
    st = krr_nystrom_sketch(s->ctx, &a->lr, krr_kbb_mul, &a->kbb, tr, krr_rng_stream(seed, UINT64_MAX, 1));
  krr_comm *comm = krr_op_comm(s->op, NULL);
  if (comm) st = krr_comm_agree(comm, s->ctx, st); /* every rank the same status */
  KTRY(st);
  for (int k = 0; k < a->lr.r_eff; k++) r += a->lr.lam[k] > lambda;
  if (r < RANK_FLOOR) r = RANK_FLOOR;
  if (comm) KTRY(krr_comm_bcast(comm, s->ctx, &r, sizeof r, 0));
  if (r > a->rank_max) r = a->rank_max;
  a->lr.r = (int)r;
  krr_solver_set_extra(s, "rank_used", r);
  return KRR_OK;
}

/* lambda-dependent: leverage scores, the rank by the spectrum, acceleration
 * parameters */
static krr_status ask_tune(krr_solver *s) {
  ask_t *a = A(s);
  const opts_t *o = O(s);
  double lambda = s->obj->lambda;
  if (s->obj->lcol) KTRY(krr_bcd_regroup(s->ctx, &a->grp, s->obj));
  else a->grp.ng = 0;
  if (o->sampling == SAMPLE_RLS)
    KTRY(krr_rls_compute(&a->rls, s->op, lambda, o->rls_subsample, krr_options_seed(s->opts)));
  if (a->auto_rank) KTRY(choose_rank(s));
  a->nu = o->nu > 0 ? o->nu : (double)s->n / (double)o->block_size;
  a->mu = o->mu > 0 ? o->mu : lambda;
  if (o->mu > 0 || o->nu > 0) {
    if (!(a->mu < a->nu))
      return krr_fail(s->ctx, KRR_ERR_INPUT, "acceleration parameters need `mu` < `nu` (got mu = %g, "
                      "nu = %g)", a->mu, a->nu);
  }
  /* lambda >= n/b with the defaults: Skotch's step (see the header) */
  a->momentum = a->accelerated && (o->mu > 0 || o->nu > 0 || a->mu < a->nu);
  if (a->mu >= a->nu) a->mu = 0.5 * a->nu; /* (unused without momentum) */
  a->beta = 1.0 - sqrt(a->mu / a->nu);
  a->gamma = 1.0 / sqrt(a->mu * a->nu);
  a->alpha = 1.0 / (1.0 + a->gamma * a->nu);
  return KRR_OK;
}

/* the momentum sequences restart at the current weights */
static krr_status ask_start(krr_solver *s) {
  ask_t *a = A(s);
  a->restarts = 0;
  if (!a->accelerated) return KRR_OK;
  krr_solver_set_extra(s, "restarts", 0.0);
  krr_solver_set_extra(s, "momentum", (double)a->momentum);
  if (!a->momentum) return KRR_OK;
  size_t bytes = s->es * (size_t)(s->op->nloc * s->m);
  KTRY(s->ctx->ops->copy(s->ctx, a->v, s->w, bytes));
  return s->ctx->ops->copy(s->ctx, a->z, s->w, bytes);
}

/* out = (P + rho I)^{-1} in; SAP/NSAP: (K_BB + lambda I)^{-1} in from the factor in KB */
static krr_status pc_inv(krr_solver *s, const void *in, void *out) {
  ask_t *a = A(s);
  int64_t b = a->blk.b;
  if (!a->exact) return krr_lowrank_inv(s->ctx, &a->lr, in, out, s->m);
  if (a->grp.ng > 0) { /* a path: each group with its factor, in double */
    KTRY(krr_convert(s->ctx, s->prec, in, KRR_DOUBLE, a->gd, b * s->m));
    KTRY(krr_bcd_solve(s->ctx, &a->grp, 0, a->gd, b));
    return krr_convert(s->ctx, KRR_DOUBLE, a->gd, s->prec, out, b * s->m);
  }
  if (out != in) KTRY(s->ctx->ops->copy(s->ctx, out, in, s->es * (size_t)(b * s->m)));
  KTRY(SOP(s, trsm, 0, 1, b, s->m, 1.0, a->KB, b, out, b));
  return SOP(s, trsm, 0, 0, b, s->m, 1.0, a->KB, b, out, b);
}

/* a path's block factors (K_BB from step 1) */
static krr_status path_factor(krr_ctx *ctx, void *arg) {
  krr_solver *s = (krr_solver *)arg;
  ask_t *a = A(s);
  int64_t b = a->blk.b;
  KTRY(krr_convert(ctx, s->prec, a->KB, KRR_DOUBLE, a->Gd, b * b));
  return krr_bcd_factor_shifted(ctx, &a->grp, 0, a->Gd, a->Ad, 1e-15 * (double)b, 0.0, "SAP");
}

/* the block gradient g (and the norms of g and y_B) at src */
typedef struct {
  krr_solver *s;
  const void *src;
  double gn, ybn;
} grad_t;
static krr_status block_gradient(krr_ctx *ctx, void *arg) {
  grad_t *gr = (grad_t *)arg;
  ask_t *a = A(gr->s);
  (void)ctx;
  return krr_block_gradient(gr->s->op, gr->s->obj, &a->blk, gr->src, a->g, a->gb, a->d, &gr->gn,
                            &gr->ybn);
}

static krr_status ask_iterate(krr_solver *s) {
  ask_t *a = A(s);
  const opts_t *o = O(s);
  krr_ctx *ctx = s->ctx;
  int64_t n = s->n, b = o->block_size, nm = s->op->nloc * (int64_t)s->m;
  int m = s->m;
  uint64_t it = (uint64_t)s->diag.iter, seed = krr_options_seed(s->opts);
  double t0 = krr_now();

  /* 1. block, its rows and (when it fits) K_BB; the block preconditioner */
  KTRY(sample_block(s, krr_rng_stream(seed, it, 0)));
  if (a->exact && a->grp.ng == 0) { /* (a path factors beside step 2's block gradient) */
    int info = 0;
    KTRY(SOP(s, add_diag, b, a->KB, b, s->obj->lambda, NULL));
    KTRY(SOP(s, potrf, b, a->KB, b, &info));
    if (info != 0)
      return krr_fail(ctx, KRR_ERR_NUMERIC, "block Cholesky of K_BB + lambda I failed (column %d); "
                      "increase lambda or use precision = \"double\"", info);
  } else if (!a->exact) {
    double tr = 0;
    KTRY(krr_op_trace(s->op, &a->blk, &tr));
    KTRY(krr_nystrom_sketch(ctx, &a->lr, krr_kbb_mul, &a->kbb, tr, krr_rng_stream(seed, it, 1)));
    KTRY(krr_lowrank_prepare(ctx, &a->lr, krr_lowrank_rho(&a->lr, o->rho, s->obj->lambda)));
  }
  KTRY(ctx->ops->sync(ctx));
  double t1 = krr_now();
  a->kbb.lambda = s->obj->lambda;
  if (!a->exact)
    KTRY(krr_power_lmax(ctx, &a->lr, krr_kbb_hmul, &a->kbb, (int)o->power_iters,
                        krr_rng_stream(seed, it, 2), a->p1, a->p2, a->p3, &a->L));
  KTRY(ctx->ops->sync(ctx));
  double t2 = krr_now();

  /* 2. block gradient at z (accelerated) or w; a path's factorisation
   * (K_BB + lambda_q I per group, or K_BB's tridiagonal form) runs beside
   * its kernel product (krr_overlap: one thread factors while the others
   * start the product), so t_block includes it */
  grad_t gr = {s, a->momentum ? a->z : s->w, 0.0, 0.0};
  if (a->exact && a->grp.ng > 0) {
    double b3 = (double)b * (double)b * (double)b;
    KTRY(krr_overlap(ctx, path_factor, s, a->grp.tri ? 4.0 / 3.0 * b3 : a->grp.ng * b3 / 3.0,
                     block_gradient, &gr));
  } else {
    KTRY(block_gradient(ctx, &gr));
  }
  double gn = gr.gn, ybn = gr.ybn;
  double t3 = krr_now();

  /* 3. direction and update */
  KTRY(pc_inv(s, a->g, a->d));
  double sL = 1.0 / a->L;
  size_t es = s->es;
  if (a->momentum) {
    int restart = 0;
    if (a->restart) { /* <g, w_B> before the step, <g, w_new_B> = <g, z_B - d / L> after */
      double t_old = 0, t_new = 0, gd = 0;
      KTRY(krr_op_gather(s->op, &a->blk, s->w, m, a->gb, b));
      KTRY(SOP(s, dot, b * m, a->g, a->gb, &t_old));
      KTRY(krr_op_gather(s->op, &a->blk, a->z, m, a->gb, b));
      KTRY(SOP(s, axpby, b * m, -sL, a->d, 1.0, a->gb));
      KTRY(SOP(s, dot, b * m, a->g, a->gb, &t_new));
      KTRY(SOP(s, dot, b * m, a->g, a->d, &gd));
      /* <g, (z - w_old)_B> = <g, (w_new - w_old)_B> + <g, d> / L */
      restart = t_new - t_old + sL * gd > RESTART_THETA * sL * gd;
    }
    if (restart) { /* w = v = z = z - d / L on B */
      a->restarts++;
      KTRY(ctx->ops->copy(ctx, s->w, a->z, es * (size_t)nm));
      KTRY(krr_op_scatter_axpy(s->op, -sL, a->d, b, m, &a->blk, s->w));
      KTRY(ctx->ops->copy(ctx, a->v, s->w, es * (size_t)nm));
      KTRY(ctx->ops->copy(ctx, a->z, s->w, es * (size_t)nm));
    } else {
      /* w = z - d / L (on B), v = (1 - beta) z + beta v - gamma d / L (on B),
       * z = alpha v + (1 - alpha) w: one pass over the n x m sequences, then
       * the block's corrections (z's: alpha gamma / L + (1 - alpha) / L) */
      KTRY(SOP(s, momentum, nm, a->alpha, a->beta, a->z, a->v, s->w));
      KTRY(krr_op_scatter_axpy(s->op, -sL, a->d, b, m, &a->blk, s->w));
      KTRY(krr_op_scatter_axpy(s->op, -a->gamma * sL, a->d, b, m, &a->blk, a->v));
      KTRY(krr_op_scatter_axpy(s->op, -(a->alpha * a->gamma + 1.0 - a->alpha) * sL, a->d, b, m,
                               &a->blk, a->z));
    }
  } else {
    KTRY(krr_op_scatter_axpy(s->op, -sL, a->d, b, m, &a->blk, s->w));
  }
  KTRY(ctx->ops->sync(ctx));
  double t4 = krr_now();

  /* 4. diagnostics */
  krr_solver_tick(s);
  s->diag.passes = (double)s->diag.iter * (double)b / (double)n;
  krr_solver_track_block(s, b, gn, ybn);
  krr_solver_set_extra(s, "step_L", a->L);
  krr_solver_set_extra(s, "rho", a->exact ? 0.0 : a->lr.rho);
  if (a->accelerated) krr_solver_set_extra(s, "restarts", (double)a->restarts);
  krr_solver_add_extra(s, "t_nystrom", t1 - t0);
  krr_solver_add_extra(s, "t_power", t2 - t1);
  krr_solver_add_extra(s, "t_block", t3 - t2);
  krr_solver_add_extra(s, "t_update", t4 - t3);
  return KRR_OK;
}

/* a lambda path needs exact blocks (SAP / NSAP): one factor of K_BB +
 * lambda_q I per lambda; the Nystrom blocks' preconditioner is lambda's */
static int ask_path_options(const krr_options *o) {
  return KRR_OPTS(o, opts_t)->block_solve == BLOCK_EXACT;
}

const krr_solver_def krr_solver_askotch = {
    .name = "askotch",
    .title = "ASkotch",
    .losses = "squared",
    .options = {optdefs, KRR_NOPTS(optdefs), sizeof(opts_t)},
    .extras = extras,
    .state_size = sizeof(ask_t),
    .mem_advice = "use a smaller block_size",
    .distributed = 1, /* block products only: sharded operator (uniform sampling) */
    .lambda_path = 1, /* SAP / NSAP only (exact blocks; refused for Nystrom blocks) */
    .path_options = ask_path_options,
    .resolve = ask_resolve,
    .memory = ask_memory,
    .shrink = ask_shrink,
    .init = ask_init,
    .tune = ask_tune,
    .start = ask_start,
    .iterate = ask_iterate,
};
