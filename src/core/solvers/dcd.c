/* DCD: greedy dual coordinate descent on the kernel matrix formed once, the
 * small-n path of every loss while K fits the memory budget.
 *
 * The dual (loss/loss.h): min_{a in box} D(a) = 1/2 a^T K a + f(a), f
 * separable.  Without an offset there is no equality constraint, so one
 * variable at a time can move (Steinwart, Hush and Scovel, "Training SVMs
 * without offset", JMLR 2011; Hsieh et al., "A dual coordinate descent
 * method for large-scale linear SVM", ICML 2008, kernelised; for the
 * logistic loss the one-variable Newton of Yu, Huang and Lin, "Dual
 * coordinate descent methods for logistic regression", MLJ 2011).  With
 * F = K a kept for every row, the step on variable i solves
 *     min_{t in box_i} q_i/2 (t - a_i)^2 + F_i (t - a_i) + f_i(t),  q_i = K_ii,
 * exactly (closed forms; logistic: safeguarded Newton), and F += (t - a_i) K_{:i}:
 * O(n) work per step, over a column of K held in memory, as LIBSVM's SMO
 * with its whole kernel matrix cached.  The variable is chosen greedily by
 * the largest decrease of D (the second-order working-set choice of Fan,
 * Chen and Lin, JMLR 2005, for one variable): exact for the quadratic and
 * piecewise-linear f, for the logistic loss the bound g^2 / (2 (q + 4 lambda))
 * clipped to the box; the choice scan is fused with the F update in one
 * sweep over the column.  A point whose dual variable sits at a bound or at
 * zero with its gradient pointing out is not chosen, which is what makes
 * the hinge and SVR duals (most points off the support) cheap.
 *
 * Coordinate descent finds the face (which variables sit at their bounds)
 * fast but crawls on it when K restricted to the free variables is
 * ill-conditioned, as at a large C.  When an iteration cuts the gap by less
 * than half, a face step (face_step) takes a damped Newton direction on
 * the free variables (a Cholesky factor of their block of K; conjugate
 * gradients when that costs too much) and a projected search along it.
 *
 * The loops run on the host over a host copy of K (on a device the matrix
 * is formed there and downloaded): a chain of O(n) steps is latency bound on
 * a GPU.  a and F are kept in double; K in the fit's precision (float halves
 * the memory).  Each iteration runs `steps` steps on each column (a column
 * holding rows out, krr_solver_set_rows, steps of its own size; one far
 * below the columns' mean gap waits); its criterion estimate is the exact
 * relative duality gap at the new a (F is known, so the gap costs O(n m)).
 * A data pass (n^2 kernel pairs) is counted as n steps. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "solver.h"
#include "../loss_math.h"

#define OPTIONS(X)                       \
  X(steps, INT, 0, 1, INFINITY, 0, NULL, \
    "coordinate steps per column and iteration (0: max(64, n / 8))")
typedef struct {
  krr_common_opts common;
  KRR_OPT_FIELDS(OPTIONS)
} opts_t;
static const krr_optdef optdefs[] = {KRR_OPT_DEFS(OPTIONS)};

typedef struct {
  void *K;         /* host n x n, the fit's precision */
  double *a, *F;   /* host n x m: dual weights and F = K a */
  double *y;       /* host n x m targets */
  double *lo, *hi; /* host n x m: the box of each variable */
  double *gp, *ih; /* host n x m: f'(a) (SVR: -y) and 1 / (q + f''(a)) (SVR: 1 / q) */
  double *q;       /* host n: diag(K) */
  double *gain;    /* host n: the scan's decreases */
  double *keys;    /* host 2 n: the logistic face's keys and rows */
  void *Fd, *work; /* device n x m: F in the fit's precision, scratch (the criterion) */
  double steps;    /* coordinate steps of this solve, all columns */
  /* the steps on the free variables (face_step) */
  int64_t cap;          /* the most free variables it takes */
  double *H;            /* host cap x cap (double): K_FF + diag f'' */
  double *R;            /* host cap x cap (double): H's Cholesky factor (face_newton) */
  double *mu;           /* host m: each column's damping of the Newton steps (face_newton) */
  double *g, *cv, *sv;  /* host cap: gradient, curvatures, the step */
  double *cr, *cp, *cq; /* host cap: CG's residual, direction, product */
  double *sa, *sb, *sy; /* host cap: with the six above, the shrunk problem's arrays */
  int64_t *idx;         /* host cap: the free variables */
  double *gap, *last;   /* host m: each column's relative duality gap (column_gaps) now and
                         * after the previous iteration's face steps */
  int *ran;             /* host m: the column took coordinate steps in this iteration */
  int64_t *used;        /* host m: the rows each column uses (n but for held-out rows) */
  int kept;             /* a and F = K a are those of the last start or whole iteration */
  double work_since;    /* doubles read by coordinate steps since the last face steps */
  double faces;         /* face steps taken */
  krr_ctx hctx;         /* on a device: a host context for the face steps BLAS */
  int host;
} dcd_t;

static const char *const extras[] = {"steps", "face_steps", NULL};

/* the face steps' cap on the free variables (their H holds FACE_MAX^2
 * doubles, 32 MB) and on their CG steps */
#define FACE_MAX 2048
#define FACE_CG_MAX 500
/* the flops of a dense factorisation that cost as much time as one double
 * read by the coordinate steps' memory-bound sweeps (a conservative ratio) */
#define FLOPS_PER_READ 16.0
/* the Newton steps' damping mu (relative to H's mean diagonal): its start,
 * least and most */
#define MU_START 1e-6
#define MU_MIN 1e-12
#define MU_MAX 1.0

#define D(s) ((dcd_t *)(s)->st)
#define O(s) SOPT(s, opts_t)

static double dcd_memory(const krr_solver *s) {
  double n = (double)s->n, nm = n * (double)s->m, K = (double)s->es * n * n;
  double dev = s->ctx && !krr_ctx_on_host(s->ctx) ? K : 0.0; /* K formed on the device first */
  double c = n < FACE_MAX ? n : FACE_MAX;
  return K + dev + 8.0 * (7.0 * nm + 4.0 * n + 2.0 * c * c + 10.0 * c + 5.0 * s->m) +
         (double)s->es * 3.0 * nm;
}

static krr_status dcd_resolve(krr_solver *s) {
  KTRY(krr_loss_check_param(s->ctx, s->obj));
  if (O(s)->steps == 0) O(s)->steps = s->n / 8 > 64 ? s->n / 8 : 64;
  return KRR_OK;
}

static krr_status dcd_init(krr_solver *s) {
  dcd_t *d = D(s);
  krr_arena *ar = &s->arena;
  int64_t n = s->n, nm = n * (int64_t)s->m;
  KTRY(krr_solver_alloc_weights(s, n, s->prec));
  d->K = krr_arena_host(ar, n * n, s->es);
  d->a = krr_arena_host(ar, nm, sizeof(double));
  d->F = krr_arena_host(ar, nm, sizeof(double));
  d->y = krr_arena_host(ar, nm, sizeof(double));
  d->lo = krr_arena_host(ar, nm, sizeof(double));
  d->hi = krr_arena_host(ar, nm, sizeof(double));
  d->gp = krr_arena_host(ar, nm, sizeof(double));
  d->ih = krr_arena_host(ar, nm, sizeof(double));
  d->q = krr_arena_host(ar, n, sizeof(double));
  d->gain = krr_arena_host(ar, n, sizeof(double));
  d->keys = krr_arena_host(ar, 2 * n, sizeof(double));
  d->Fd = krr_arena_dev(ar, nm, s->es);
  d->work = krr_arena_dev(ar, nm, s->es);
  d->cap = n < FACE_MAX ? n : FACE_MAX;
  d->H = krr_arena_host(ar, d->cap * d->cap, sizeof(double));
  d->R = krr_arena_host(ar, d->cap * d->cap, sizeof(double));
  d->mu = krr_arena_host(ar, s->m, sizeof(double));
  d->gap = krr_arena_host(ar, s->m, sizeof(double));
  d->last = krr_arena_host(ar, s->m, sizeof(double));
  d->ran = krr_arena_host(ar, s->m, sizeof(int));
  d->used = krr_arena_host(ar, s->m, sizeof(int64_t));
  d->idx = krr_arena_host(ar, d->cap, sizeof(int64_t));
  KTRY(KRR_ALLOCATED(ar, d->K, d->a, d->F, d->y, d->lo, d->hi, d->gp, d->ih, d->q, d->gain, d->keys,
                     d->Fd, d->work, d->H, d->R, d->mu, d->gap, d->last, d->ran, d->used, d->idx));
  double **vec[] = {&d->g, &d->cv, &d->sv, &d->cr, &d->cp, &d->cq, &d->sa, &d->sb, &d->sy};
  for (size_t v = 0; v < sizeof vec / sizeof vec[0]; v++)
    if (!(*vec[v] = (double *)krr_arena_host(ar, d->cap, sizeof(double)))) return s->ctx->status;
  if (!krr_ctx_on_host(s->ctx)) {
    KTRY(krr_ctx_host_twin(s->ctx, &d->hctx));
    d->host = 1;
  }
  return KRR_OK;
}

static void dcd_release(krr_solver *s) {
  dcd_t *d = D(s);
  if (d->host) krr_ctx_free(&d->hctx);
  d->host = 0;
}


/* the statements once for each storage precision of K (es bytes): KT is
 * double or float in them */
#define BY_PREC(es, KT, ...)      \
  do {                            \
    if ((es) == sizeof(double)) { \
      typedef double KT;          \
      __VA_ARGS__                 \
    } else {                      \
      typedef float KT;           \
      __VA_ARGS__                 \
    }                             \
  } while (0)

/* H (na x na) = K[idx, idx] (K n x n, element size es) */
static void gather_block(const void *K, size_t es, int64_t n, const int64_t *idx, int64_t na,
                         double *H) {
  BY_PREC(es, KT, {
    for (int64_t k = 0; k < na; k++) {
      const KT *Kk = (const KT *)K + idx[k] * n;
      for (int64_t r = 0; r < na; r++) H[r + k * na] = (double)Kk[idx[r]];
    }
  });
}

/* F[:] += t K_{:j} (K n x n, element size es) */
static void add_column(const void *K, size_t es, int64_t n, double *restrict F, int64_t j,
                       double t) {
  BY_PREC(es, KT, {
    const KT *restrict Kj = (const KT *)K + j * n;
    _Pragma("omp simd") for (int64_t r = 0; r < n; r++) F[r] += t * (double)Kj[r];
  });
}

/* K over all rows, into host memory (on a device: formed there, downloaded) */
static krr_status dcd_prepare(krr_solver *s) {
  dcd_t *d = D(s);
  krr_ctx *ctx = s->ctx;
  int64_t n = s->n;
  size_t bytes = s->es * (size_t)n * (size_t)n;
  KTRY(krr_refuse_flops(ctx, (double)n * (double)n * (3.0 * s->op->p + 2.0),
                        "forming the n x n kernel matrix"));
  if (krr_ctx_on_host(ctx)) {
    KTRY(krr_op_mat(s->op, NULL, NULL, d->K, n));
  } else {
    void *Kd = krr_dalloc(ctx, n * n, s->es);
    if (!Kd) return ctx->status;
    krr_status st = krr_op_mat(s->op, NULL, NULL, Kd, n);
    if (st == KRR_OK) st = ctx->ops->download(ctx, d->K, Kd, bytes);
    krr_dfree(ctx, &Kd);
    KTRY(st);
  }
  BY_PREC(s->es, KT, {
    for (int64_t i = 0; i < n; i++) d->q[i] = (double)((const KT *)d->K)[i * n + i];
  });
  return KRR_OK;
}

/* f'(a) (SVR: -y, its |a| part handled in the step) and 1 / (q + f''(a)) of one variable */
static void curv_of(const krr_solver *s, double q, double y, double a, double *gp, double *ih) {
  const krr_objective *o = s->obj;
  int code = o->loss->code;
  double e = krr_precision_eps(s->prec), l = o->lambda;
  if (code == KRR_LOSS_SVR) {
    *gp = -y;
    *ih = 1.0 / q;
    return;
  }
  *gp = krr_loss_elem(code, KRR_MAP_GRAD, l, o->param, e, y, a, 0.0);
  /* logistic: f'' = lambda / (u (1 - u)) >= 4 lambda, so that g^2 / (2 (q + 4 lambda)) bounds
   * the decrease (the curvature at a would hide the points held near 0 by the log barrier) */
  *ih = 1.0 / (q + (code == KRR_LOSS_LOGISTIC
                        ? 4.0 * l
                        : krr_loss_elem(code, KRR_MAP_CURV, l, o->param, e, y, a, 0.0)));
}

/* the rows held out of each column's fit (obj->rows): their variables fixed at 0 by an
 * empty box [0, 0], so that no step moves them, while F = K a still covers them (their
 * predictions); d->used counts the others */
static krr_status hold_out(krr_solver *s) {
  dcd_t *d = D(s);
  int64_t n = s->n;
  for (int c = 0; c < s->m; c++) d->used[c] = n;
  if (!s->obj->rows) return KRR_OK;
  for (int c = 0; c < s->m; c++) {
    int64_t off = (int64_t)c * n;
    KTRY(krr_download_vec(s->ctx, s->prec, KAT(s->obj->rows, off, s->es), n, d->gain));
    for (int64_t i = 0; i < n; i++)
      if (d->gain[i] == 0.0) d->a[off + i] = d->lo[off + i] = d->hi[off + i] = 0.0, d->used[c]--;
  }
  return KRR_OK;
}

/* The starting point: a = s->w projected into the box, F = K a, the boxes
 * and curvatures.  When a new lambda only rescaled the last iterate
 * (s->w_rescale), a and F rescale with it and F follows the few variables
 * the new box moves: no pass over K, which a warm start on a path (every
 * variable of the logistic loss nonzero) would otherwise cost. */
static krr_status dcd_start(krr_solver *s) {
  dcd_t *d = D(s);
  const krr_objective *o = s->obj;
  int64_t n = s->n, nm = n * (int64_t)s->m;
  double e = krr_precision_eps(s->prec), r = d->kept ? s->w_rescale : 0, *a0 = d->ih;
  d->kept = 0;
  if (r > 0) {
    for (int64_t k = 0; k < nm; k++) d->a[k] *= r, d->F[k] *= r;
  } else {
    KTRY(krr_download_vec(s->ctx, s->prec, s->w, nm, d->a));
    memset(d->F, 0, sizeof(double) * (size_t)nm);
  }
  memcpy(a0, d->a, sizeof(double) * (size_t)nm); /* ih (set below) keeps a before the boxes */
  KTRY(krr_download_vec(s->ctx, s->prec, o->y, nm, d->y));
  for (int64_t k = 0; k < nm; k++) {
    double *lo = &d->lo[k], *hi = &d->hi[k], a;
    krr_lm_box(o->loss->code, o->lambda, o->param, e, d->y[k], lo, hi);
    a = krr_lm_clamp(d->a[k], *lo, *hi);
    /* a bound missed by rounding (a warm start scaled to a new lambda, in the weights'
     * precision) is the bound: the face steps take a variable off its bounds as free */
    if (isfinite(*hi) && *hi - a <= 8.0 * e * fabs(*hi)) a = *hi;
    if (isfinite(*lo) && a - *lo <= 8.0 * e * fabs(*lo)) a = *lo;
    d->a[k] = a;
  }
  KTRY(hold_out(s));
  for (int c = 0; c < s->m; c++) {
    double *a = d->a + (int64_t)c * n, *F = d->F + (int64_t)c * n, *b = a0 + (int64_t)c * n;
    for (int64_t i = 0; i < n; i++) {
      double t = a[i] - (r > 0 ? b[i] : 0.0);
      if (t == 0) continue;
      add_column(d->K, s->es, n, F, i, t);
      if ((i & 255) == 255) KTRY(krr_poll(s->ctx));
    }
    for (int64_t i = 0; i < n; i++)
      curv_of(s, d->q[i], d->y[i + c * n], a[i], &d->gp[i + c * n], &d->ih[i + c * n]);
  }
  d->steps = d->faces = d->work_since = 0;
  for (int c = 0; c < s->m; c++) d->mu[c] = MU_START, d->last[c] = NAN;
  d->kept = 1;
  return KRR_OK;
}

/* One sweep: F += delta K_{:j} (delta = 0: none), then the decrease gain[r]
 * of the step on each variable r, and the largest of them (0 when none is
 * positive; NaN never wins).  Q: the quadratic-or-Newton form (t = clamp(a -
 * g / h)), V: SVR's soft threshold.  One loop per precision of K (BY_PREC)
 * and form, each vectorised (omp simd: the arrays do not alias). */
#define SWEEP_BODY(KT, FORM)                                                    \
  {                                                                             \
    const KT *restrict Kj = (const KT *)K + j * n;                              \
    _Pragma("omp simd reduction(max : best)") for (int64_t r = 0; r < n; r++) { \
      F[r] += delta * (double)Kj[r];                                            \
      FORM;                                                                     \
      best = gain[r] > best ? gain[r] : best;                                   \
    }                                                                           \
  }
#define FORM_Q                                   \
  double g = F[r] + gp[r], t = a[r] - g * ih[r]; \
  t = t < lo[r] ? lo[r] : t;                     \
  t = t > hi[r] ? hi[r] : t;                     \
  double dt = t - a[r];                          \
  gain[r] = -dt * (g + 0.5 * dt / ih[r]);
#define FORM_V                                                   \
  double g = F[r] + gp[r], z = a[r] - g * ih[r], th = p * ih[r]; \
  double t = z > th ? z - th : 0.0;                              \
  t = z < -th ? z + th : t;                                      \
  t = t < lo[r] ? lo[r] : t;                                     \
  t = t > hi[r] ? hi[r] : t;                                     \
  double dt = t - a[r];                                          \
  gain[r] = -(dt * (g + 0.5 * dt / ih[r]) + p * (fabs(t) - fabs(a[r])));

static double sweep(const void *K, size_t es, int svr, double p, int64_t n, int64_t j, double delta,
                    const double *restrict a, double *restrict F, const double *restrict gp,
                    const double *restrict ih, const double *restrict lo, const double *restrict hi,
                    double *restrict gain) {
  double best = 0;
  if (j < 0) j = 0, delta = 0.0;
  BY_PREC(es, KT, if (svr) SWEEP_BODY(KT, FORM_V) else SWEEP_BODY(KT, FORM_Q));
  return best;
}

/* the logistic step in u = lambda y t in [e, 1 - e]: the root of the
 * increasing h(u) = q (u / lambda - y a) + y F + log(u / (1 - u)) by Newton's
 * method kept inside a bisection bracket */
static double logistic_step(double q, double lambda, double e, double y, double a, double F) {
  double sy = y >= 0 ? 1.0 : -1.0, ul = e, uh = 1.0 - e;
#define H(u) (q * ((u) / lambda - sy * a) + sy * F + log(u) - log1p(-(u)))
  if (H(ul) >= 0) return sy * ul / lambda;
  if (H(uh) <= 0) return sy * uh / lambda;
  double u = krr_lm_clamp(lambda * sy * a, ul, uh);
  for (int it = 0; it < 100; it++) {
    double h = H(u);
    if (h == 0) break;
    if (h > 0) uh = u;
    else ul = u;
    double un = u - h / (q / lambda + 1.0 / (u * (1.0 - u)));
    if (!(un > ul && un < uh)) un = 0.5 * (ul + uh);
    double done = fabs(un - u) <= 4e-16 * fmin(un, 1.0 - un);
    u = un;
    if (done || uh - ul <= 4e-16 * fmin(ul, 1.0 - uh)) break;
  }
#undef H
  return sy * u / lambda;
}

/* the exact minimiser over the box of variable r's one-variable problem */
static double step_to(const krr_solver *s, double q, double y, double a, double F, double lo,
                      double hi) {
  const krr_objective *o = s->obj;
  double l = o->lambda, p = o->param, g = F - y, t;
  switch (o->loss->code) {
    case KRR_LOSS_LOGISTIC: return logistic_step(q, l, krr_precision_eps(s->prec), y, a, F);
    case KRR_LOSS_HINGE: t = q > 0 ? a - g / q : (g > 0 ? lo : (g < 0 ? hi : a)); break;
    case KRR_LOSS_SVR:
      if (q > 0) {
        double z = a - g / q, th = p / q;
        t = z > th ? z - th : (z < -th ? z + th : 0.0);
      } else {
        t = fabs(g) <= p ? 0.0 : (g > 0 ? lo : hi);
      }
      break;
    default: t = (q * a - g) / (q + l); break; /* f = lambda t^2 / 2 - t y */
  }
  return krr_lm_clamp(t, lo, hi);
}

/* variable i (an index into a, lo, hi) is held at its bound: at lo or hi,
 * or for SVR at zero (the kink of its |a|) */
static int held(const dcd_t *d, int64_t i, int svr) {
  return d->a[i] <= d->lo[i] || d->a[i] >= d->hi[i] || (svr && d->a[i] == 0);
}

/* One column's problem as the greedy loop sees it: K (n x n, element size
 * es) and the per-variable arrays, either the column's own (all n rows) or
 * its active variables gathered (shrunk_steps) */
typedef struct {
  const void *K;
  size_t es;
  int64_t n;
  double *a, *F, *gp, *ih, *lo, *hi, *q, *gain;
  const double *y;
} cd_view;

/* up to `steps` greedy steps on the view; *done: the steps taken (fewer
 * when no variable decreases D) */
static krr_status greedy(krr_solver *s, const cd_view *v, int64_t steps, int64_t *done) {
  int64_t n = v->n, j = -1, k;
  double delta = 0;
  int svr = s->obj->loss->code == KRR_LOSS_SVR;
  for (k = 0; k < steps; k++) {
    if ((k & 255) == 255) KTRY(krr_poll(s->ctx));
    double bg = sweep(v->K, v->es, svr, s->obj->param, n, j, delta, v->a, v->F, v->gp, v->ih, v->lo,
                      v->hi, v->gain);
    int64_t best = 0;
    j = -1;
    if (!(bg > 0)) break; /* no variable decreases D: the column is solved */
    while (best < n - 1 && v->gain[best] != bg) best++; /* the first row of the largest */
    double t = step_to(s, v->q[best], v->y[best], v->a[best], v->F[best], v->lo[best], v->hi[best]);
    if (!isfinite(t))
      return krr_fail(s->ctx, KRR_ERR_NUMERIC, "the iterate diverged (non-finite step)");
    delta = t - v->a[best];
    if (delta == 0) break; /* the estimate saw a decrease the exact step does not */
    v->a[best] = t;
    curv_of(s, v->q[best], v->y[best], t, &v->gp[best], &v->ih[best]);
    j = best;
  }
  if (j >= 0) add_column(v->K, v->es, n, v->F, j, delta); /* the last step's column */
  *done = k;
  return KRR_OK;
}

/* The shrunk problem of column c (LIBSVM's shrinking, redone at every
 * iteration): the variables that can move now (a positive decrease) or
 * are off their bounds, gathered with their block of K into the face
 * steps' buffers, solved by `steps` greedy steps there, and the changes of
 * their weights added to F over all rows at the end.  The others (at a
 * bound, pushed outward: most points of a hinge or SVR fit) are held for
 * the iteration; the next one sees them again.  A step there costs na / nu
 * of a full one (nu: the rows the column uses), so the shrunk problem takes
 * steps * nu / na of them; *done: their cost in steps over all n rows (0
 * only when none was taken), or -1 when the active variables are too many
 * to pay (more than nu / 2 or the buffers' cap). */
static krr_status shrunk_steps(krr_solver *s, int c, int64_t steps, int64_t *done) {
  dcd_t *d = D(s);
  int64_t n = s->n, nu = d->used[c], off = (int64_t)c * n, na = 0;
  int64_t cap = d->cap < nu / 2 ? d->cap : nu / 2;
  double *a = d->a + off;
  int svr = s->obj->loss->code == KRR_LOSS_SVR;
  *done = -1;
  sweep(d->K, s->es, svr, s->obj->param, n, -1, 0.0, a, d->F + off, d->gp + off, d->ih + off,
        d->lo + off, d->hi + off, d->gain);
  for (int64_t i = 0; i < n; i++) {
    if (held(d, off + i, svr) && !(d->gain[i] > 0)) continue;
    if (na == cap) return KRR_OK;
    d->idx[na++] = i;
  }
  cd_view v = {.K = d->H,
               .es = sizeof(double),
               .n = na,
               .a = d->g,
               .F = d->cv,
               .gp = d->sv,
               .ih = d->cr,
               .lo = d->cp,
               .hi = d->cq,
               .q = d->sa,
               .gain = d->sb,
               .y = d->sy};
  gather_block(d->K, s->es, n, d->idx, na, d->H);
  for (int64_t k = 0; k < na; k++) {
    int64_t i = d->idx[k];
    v.a[k] = a[i], v.F[k] = d->F[off + i], v.gp[k] = d->gp[off + i], v.ih[k] = d->ih[off + i];
    v.lo[k] = d->lo[off + i], v.hi[k] = d->hi[off + i], v.q[k] = d->q[i];
    d->sy[k] = d->y[off + i];
  }
  /* as many steps as `steps` full-length ones cost; *done counts them so */
  int64_t raw = 0;
  KTRY(greedy(s, &v, (int64_t)fmin((double)steps * (double)nu / (double)na, 1e15), &raw));
  *done = raw == 0 ? 0 : (int64_t)ceil((double)raw * (double)na / (double)n);
  for (int64_t k = 0; k < na; k++) {
    int64_t i = d->idx[k];
    if (v.a[k] == a[i]) continue;
    add_column(d->K, s->es, n, d->F + off, i, v.a[k] - a[i]);
    a[i] = v.a[k], d->gp[off + i] = v.gp[k], d->ih[off + i] = v.ih[k];
  }
  return KRR_OK;
}

/* up to `steps` greedy steps on column c, on its shrunk problem when that
 * pays; *done: the steps taken */
static krr_status column_steps(krr_solver *s, int c, int64_t steps, int64_t *done) {
  dcd_t *d = D(s);
  int64_t off = (int64_t)c * s->n;
  KTRY(shrunk_steps(s, c, steps, done));
  if (*done >= 0) return KRR_OK;
  cd_view v = {.K = d->K,
               .es = s->es,
               .n = s->n,
               .a = d->a + off,
               .F = d->F + off,
               .gp = d->gp + off,
               .ih = d->ih + off,
               .lo = d->lo + off,
               .hi = d->hi + off,
               .q = d->q,
               .gain = d->gain,
               .y = d->y + off};
  return greedy(s, &v, steps, done);
}

/* keys (curvature / q) with their rows, ordered by key then row */
static int by_key(const void *x, const void *y) {
  const double *a = (const double *)x, *b = (const double *)y;
  return a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : (a[1] < b[1] ? -1 : a[1] > b[1]);
}

/* The logistic loss's face: its dual variables never reach their box (the
 * log barrier), so "free" says nothing; what makes coordinate descent crawl
 * are the variables coupled through K, those whose curvature f''(a_i) =
 * lambda / (u (1 - u)) is at most LOGISTIC_FACE q_i (the points near the
 * decision boundary; the others are nearly decoupled by their own
 * curvature), at most the cap of them, the most coupled first. */
#define LOGISTIC_FACE 0.3
static int64_t logistic_face(krr_solver *s, int c) {
  dcd_t *d = D(s);
  int64_t n = s->n, off = (int64_t)c * n, m = 0;
  double e = krr_precision_eps(s->prec), *kv = d->keys;
  for (int64_t i = 0; i < n; i++) {
    if (d->lo[off + i] == d->hi[off + i]) continue; /* a held-out row */
    double cv = krr_loss_elem(KRR_LOSS_LOGISTIC, KRR_MAP_CURV, s->obj->lambda, s->obj->param, e,
                              d->y[off + i], d->a[off + i], 0.0);
    if (!(cv <= LOGISTIC_FACE * d->q[i])) continue;
    kv[2 * m] = cv / d->q[i];
    kv[2 * m + 1] = (double)i;
    m++;
  }
  if (m > d->cap) {
    qsort(kv, (size_t)m, 2 * sizeof(double), by_key);
    m = d->cap;
  }
  for (int64_t k = 0; k < m; k++) d->idx[k] = (int64_t)kv[2 * k + 1];
  return m;
}

/* the free variables of column c: off their bounds (SVR: and off zero;
 * logistic: logistic_face); their number, or -1 when there are more than
 * the cap */
static int64_t free_set(krr_solver *s, int c) {
  dcd_t *d = D(s);
  int64_t n = s->n, off = (int64_t)c * n, nf = 0;
  int svr = s->obj->loss->code == KRR_LOSS_SVR;
  if (s->obj->loss->code == KRR_LOSS_LOGISTIC) return logistic_face(s, c);
  for (int64_t i = 0; i < n; i++) {
    if (held(d, off + i, svr)) continue;
    if (nf == d->cap) return -1;
    d->idx[nf++] = i;
  }
  return nf;
}

/* H = K_FF + diag f''(a_F) (curvatures into cv) and g = F_F + f'(a_F) on
 * the free set idx[0 .. nf) */
static void face_system(krr_solver *s, int c, int64_t nf) {
  dcd_t *d = D(s);
  const krr_objective *o = s->obj;
  int64_t n = s->n, off = (int64_t)c * n;
  double e = krr_precision_eps(s->prec);
  gather_block(d->K, s->es, n, d->idx, nf, d->H);
  for (int64_t k = 0; k < nf; k++) {
    int64_t i = d->idx[k];
    double ai = d->a[off + i], yi = d->y[off + i];
    d->cv[k] = krr_loss_elem(o->loss->code, KRR_MAP_CURV, o->lambda, o->param, e, yi, ai, 0.0);
    d->H[k + k * nf] += d->cv[k];
    d->g[k] = d->F[off + i] +
              krr_loss_elem(o->loss->code, KRR_MAP_GRAD, o->lambda, o->param, e, yi, ai, 0.0);
  }
}

/* out = H in on the free set (nf variables), on the host */
static krr_status face_mv(krr_solver *s, int64_t nf, const double *in, double *out) {
  dcd_t *d = D(s);
  krr_ctx *hc = d->host ? &d->hctx : s->ctx;
  return krr_ctx_forward(s->ctx, hc,
                         hc->ops->gemm_d(hc, 0, 0, nf, 1, nf, 1.0, d->H, nf, in, nf, 0.0, out, nf));
}

/* CG on H x = -g from x = 0 (into sv), at most `its` steps or to a
 * relative residual of 1e-12.  Its long directions (into the small
 * eigenvalues of an ill-conditioned K_FF) are what the projected search
 * needs: they put many variables on their bounds at once.  There rounding
 * can cost x its descent (g.x < 0, which exact CG keeps); CG stops at the
 * last iterate that has it.  *ok: x is a descent direction. */
static krr_status face_cg(krr_solver *s, int64_t nf, int64_t its, int *ok) {
  dcd_t *d = D(s);
  double *x = d->sv, *r = d->cr, *p = d->cp, *q = d->cq, rr = 0, r0;
  for (int64_t k = 0; k < nf; k++) x[k] = 0, r[k] = p[k] = -d->g[k], rr += r[k] * r[k];
  r0 = rr;
  *ok = 0;
  for (int64_t it = 0; it < its && rr > 1e-24 * r0; it++) {
    KTRY(face_mv(s, nf, p, q));
    double pq = 0, rn = 0, gx = 0;
    for (int64_t k = 0; k < nf; k++) pq += p[k] * q[k];
    if (!(pq > 0)) break;
    double al = rr / pq;
    for (int64_t k = 0; k < nf; k++) x[k] += al * p[k], gx += d->g[k] * x[k];
    if (!(gx < 0)) { /* back to the last descent direction */
      for (int64_t k = 0; k < nf; k++) x[k] -= al * p[k];
      break;
    }
    *ok = 1;
    for (int64_t k = 0; k < nf; k++) r[k] -= al * q[k], rn += r[k] * r[k];
    for (int64_t k = 0; k < nf; k++) p[k] = r[k] + rn / rr * p[k];
    rr = rn;
  }
  return KRR_OK;
}

/* The damped Newton direction on the free set, x = -(H + mu h I)^{-1} g
 * (into sv; h the mean of diag(H), mu the column's damping), by a Cholesky
 * factor: near the solution's face a step close to Newton's solves the
 * column's problem, which CG on an ill-conditioned K_FF (a large C) takes
 * hundreds of products to approach.  Undamped, the step's components along
 * the smallest eigenvalues are so long that the projection sends the
 * variables to their bounds and no t of the projected search decreases D;
 * the damping (Levenberg-Marquardt, adapted in face_step) keeps them to the
 * scale of the box.  A jitter (from 1e-14 h, krr_chol_jitter) where H +
 * mu h I is still singular in working precision; x stays a descent
 * direction.  *ok: x is one. */
static krr_status face_newton(krr_solver *s, int c, int64_t nf, int *ok) {
  dcd_t *d = D(s);
  krr_ctx *hc = d->host ? &d->hctx : s->ctx;
  double used = NAN, tr = 0, gx = 0;
  *ok = 0;
  for (int64_t k = 0; k < nf; k++) tr += d->H[k + k * nf];
  double mu = d->mu[c] * tr / nf, *dg = d->cp; /* cp (CG's) keeps diag(H) meanwhile */
  for (int64_t k = 0; k < nf; k++) dg[k] = d->H[k + k * nf], d->H[k + k * nf] += mu;
  krr_status st = krr_chol_jitter(hc, nf, d->H, d->R, 1e-14 * tr / nf, &used);
  for (int64_t k = 0; k < nf; k++) d->H[k + k * nf] = dg[k]; /* exactly restored */
  KTRY(krr_ctx_forward(s->ctx, hc, st));
  if (!isfinite(used)) return KRR_OK;
  for (int64_t k = 0; k < nf; k++) d->sv[k] = -d->g[k];
  KTRY(krr_ctx_forward(s->ctx, hc, krr_chol_solve(hc, nf, d->R, 1, d->sv, nf)));
  for (int64_t k = 0; k < nf; k++) gx += d->g[k] * d->sv[k];
  *ok = gx < 0;
  return KRR_OK;
}

/* P(a_i + t x) for variable i (x a step of it): the projection on its box,
 * for SVR also on its orthant (the |a| of its f is linear there) */
static double projected(const krr_solver *s, int64_t i, double t, double x) {
  const dcd_t *d = D(s);
  double a = d->a[i], lo = d->lo[i], hi = d->hi[i];
  if (s->obj->loss->code == KRR_LOSS_SVR) {
    if (a > 0) lo = fmax(lo, 0.0);
    if (a < 0) hi = fmin(hi, 0.0);
  }
  return krr_lm_clamp(a + t * x, lo, hi);
}

/* the step st = P(a + t x) - a on the face (x: sv) and D(a + st) - D(a) =
 * F.st + st^T K_FF st / 2 + the changes of the f_i, exactly (K_FF = H -
 * diag(cv); cq: H st) */
static krr_status projected_change(krr_solver *s, int c, int64_t nf, double t, double *dD) {
  dcd_t *d = D(s);
  const krr_objective *o = s->obj;
  int64_t off = (int64_t)c * s->n;
  double e = krr_precision_eps(s->prec), *st = d->cr, fx = 0, sHs = 0, cs = 0, df = 0;
  for (int64_t k = 0; k < nf; k++) {
    int64_t i = d->idx[k] + off;
    st[k] = projected(s, i, t, d->sv[k]) - d->a[i];
  }
  KTRY(face_mv(s, nf, st, d->cq));
  for (int64_t k = 0; k < nf; k++) {
    int64_t i = d->idx[k] + off;
    fx += d->F[i] * st[k];
    sHs += st[k] * d->cq[k];
    cs += d->cv[k] * st[k] * st[k];
    df += krr_loss_elem(o->loss->code, KRR_MAP_DF, o->lambda, o->param, e, d->y[i], d->a[i], st[k]);
  }
  *dD = fx + 0.5 * (sHs - cs) + df;
  return KRR_OK;
}

/* A step on column c's face (free_set: the variables off their bounds, for
 * SVR off zero, for the logistic loss the coupled ones; the others held):
 * the damped Newton direction of D there (newton: face_newton, whose
 * damping this adapts as Levenberg and Marquardt do: a tenth after a full
 * step, ten times after a shortened one, a hundred after none), or
 * truncated CG on the Newton system (face_cg, its steps; also when the
 * factor fails), then a projected search along it, t = 1,
 * 1/2, 1/4, ... until D decreases (Bertsekas, "Projected Newton methods for
 * optimization problems with simple constraints", SIAM J. Control Optim.
 * 1982; in the spirit of Moré and Toraldo's GPCG, SIAM J. Optim. 1991, with
 * coordinate descent as the face-finding phase).  The projection lets the
 * step put many variables on their bounds at once, where stopping at the
 * first crossing moved one. */
static krr_status face_step(krr_solver *s, int c, int64_t nf, int newton, int64_t its) {
  dcd_t *d = D(s);
  int64_t n = s->n, off = (int64_t)c * n;
  int ok = 0;
  face_system(s, c, nf);
  if (newton) KTRY(face_newton(s, c, nf, &ok));
  int by_newton = ok; /* a Newton direction: its damping adapts below */
  if (!ok) KTRY(face_cg(s, nf, its, &ok));
  if (!ok) return KRR_OK;
  double t = 1.0, dD = 0;
  for (int k = 0; k < 30; k++, t *= 0.5) {
    KTRY(projected_change(s, c, nf, t, &dD));
    if (dD < 0) break;
  }
  if (by_newton) { /* less damping after a full step, more after a shortened or failed one */
    double mu = d->mu[c];
    d->mu[c] = !(dD < 0)  ? fmin(100 * mu, MU_MAX)
               : t == 1.0 ? fmax(mu / 10, MU_MIN)
                          : fmin(10 * mu, MU_MAX);
  }
  if (!(dD < 0)) return KRR_OK;
  for (int64_t k = 0; k < nf; k++) {
    int64_t i = d->idx[k];
    double a1 = projected(s, off + i, t, d->sv[k]); /* bounds and zero exactly */
    if (a1 == d->a[off + i]) continue;
    add_column(d->K, s->es, n, d->F + off, i, a1 - d->a[off + i]);
    d->a[off + i] = a1;
    curv_of(s, d->q[i], d->y[off + i], a1, &d->gp[off + i], &d->ih[off + i]);
    if ((k & 63) == 63) KTRY(krr_poll(s->ctx));
  }
  d->faces += 1;
  return KRR_OK;
}

/* F (device, the fit's precision) and the weights from the host copies */
static krr_status sync_out(krr_solver *s) {
  dcd_t *d = D(s);
  int64_t nm = s->n * (int64_t)s->m;
  KTRY(krr_upload_vec_into(s->ctx, s->prec, d->a, nm, s->w));
  return krr_upload_vec_into(s->ctx, s->prec, d->F, nm, d->Fd);
}

/* each column's relative duality gap (P_c + D_c) / max(|P_c|, |D_c|), P_c = a_c^T F_c / 2 +
 * (1/lambda) sum_i xi(F_ic) and D_c = a_c^T F_c / 2 + (1/lambda) sum_i xi*(a_ic) over the rows
 * the column uses (loss/loss.h; held out: an empty box), into d->gap, and the loss's
 * criterion into *crit: the gap of their sums, or with rows held out the worst column's
 * (krr_objective_criterion) */
static void column_gaps(krr_solver *s, double *crit) {
  dcd_t *d = D(s);
  const krr_objective *o = s->obj;
  int code = o->loss->code;
  double e = krr_precision_eps(s->prec), l = o->lambda, P = 0, Dv = 0, worst = 0;
  for (int c = 0; c < s->m; c++) {
    int64_t off = (int64_t)c * s->n;
    double aF = 0, ls = 0, cs = 0;
    for (int64_t k = off; k < off + s->n; k++) {
      if (d->lo[k] == d->hi[k]) continue;
      aF += d->a[k] * d->F[k];
      ls += krr_loss_elem(code, KRR_MAP_LOSS, l, o->param, e, d->y[k], d->F[k], 0.0);
      cs += krr_loss_elem(code, KRR_MAP_CONJ, l, o->param, e, d->y[k], d->a[k], 0.0);
    }
    d->gap[c] = krr_duality_gap(0.5 * aF + ls / l, 0.5 * aF + cs / l);
    P += 0.5 * aF + ls / l;
    Dv += 0.5 * aF + cs / l;
    if (!(d->gap[c] <= worst)) worst = d->gap[c]; /* NaN wins */
  }
  *crit = s->obj->rows ? worst : krr_duality_gap(P, Dv);
}

/* The criterion at the host iterate (the weights synced) and each column's
 * gap (d->gap): with several columns and a duality gap on the host from the
 * columns' sums, else the loss's criterion (one column: its gap) */
static krr_status criterion(krr_solver *s, double *crit) {
  dcd_t *d = D(s);
  KTRY(sync_out(s));
  if (s->m > 1 && s->obj->loss->crit == KRR_CRIT_GAP) {
    column_gaps(s, crit);
    if (!isfinite(*crit))
      return krr_fail(s->ctx, KRR_ERR_NUMERIC, "the iterate diverged (non-finite criterion)");
    return KRR_OK;
  }
  KTRY(krr_objective_criterion(s->op, s->obj, s->w, d->Fd, d->work, crit));
  for (int c = 0; c < s->m; c++) d->gap[c] = *crit;
  return KRR_OK;
}

/* Face steps on the free sets of the columns whose gap the last iteration's
 * coordinate steps cut by less than half: a Newton step when its factor
 * costs at most three times the memory traffic of the coordinate steps
 * since the previous face steps (FLOPS_PER_READ converts), else as many CG
 * steps (at most FACE_CG_MAX and the number of free variables, at least 5)
 * as that budget pays for: the face steps at most triple the work of the
 * coordinate steps */
static krr_status maybe_faces(krr_solver *s, double *crit) {
  dcd_t *d = D(s);
  int any = 0;
  for (int c = 0; c < s->m; c++) {
    if (!d->ran[c]) continue;
    int stalled = isfinite(d->last[c]) && d->gap[c] > 0.5 * d->last[c];
    d->last[c] = d->gap[c];
    int64_t nf = stalled ? free_set(s, c) : 0;
    if (nf <= 0) continue;
    /* in memory traffic (doubles read): forming H and updating F read nf^2 + n nf,
     * each CG step nf^2 (a coordinate step 8 n: work_since) */
    double f = (double)nf, left = 3.0 * d->work_since / s->m - f * f - f * (double)s->n;
    double its = fmin(fmin(f, FACE_CG_MAX), left / (f * f));
    /* the Newton step where its factor (f^3 / 3 flops at BLAS-3 speed) fits the
     * budget, with CG's steps as its fallback; else CG */
    int newton = f * f * f / (3.0 * FLOPS_PER_READ) <= left;
    if (!newton && its < 5) continue;
    KTRY(face_step(s, c, nf, newton, (int64_t)fmax(its, 5)));
    any = 1;
  }
  if (!any) return KRR_OK;
  d->work_since = 0;
  KTRY(criterion(s, crit));
  memcpy(d->last, d->gap, sizeof(double) * (size_t)s->m);
  return KRR_OK;
}

/* Whether column c waits this iteration: with several columns (the outputs
 * of one-vs-rest, the folds of a cross-validation) the largest gaps hold the
 * criterion up (the gap of their sums, or the worst one), so a column whose
 * gap is below half their mean waits; the largest never does */
static int column_waits(const krr_solver *s, int c) {
  const dcd_t *d = D(s);
  double sum = 0;
  for (int j = 0; j < s->m; j++) sum += d->last[j];
  return s->m > 1 && isfinite(sum) && d->last[c] < 0.5 * sum / s->m;
}

static krr_status dcd_iterate(krr_solver *s) {
  dcd_t *d = D(s);
  int64_t steps = O(s)->steps, total = 0;
  int waited = 0;
  d->kept = 0; /* until the iteration ends: an interrupted step leaves F behind a */
  for (int c = 0; c < s->m; c++) {
    /* a column holding rows out takes the steps of its own size (nu / n of them; on
     * its shrunk problem each over nu rows' worth of work), as a fit on its rows alone
     * would; k counts steps over all n rows */
    double part = (double)d->used[c] / (double)s->n;
    int64_t k = 0;
    d->ran[c] = !column_waits(s, c);
    waited |= !d->ran[c];
    if (d->ran[c]) KTRY(column_steps(s, c, (int64_t)fmax(1.0, round((double)steps * part)), &k));
    total += k;
  }
  d->steps += (double)total;
  d->work_since += 8.0 * (double)total * (double)s->n;
  double crit = 0;
  KTRY(criterion(s, &crit));
  KTRY(maybe_faces(s, &crit));
  krr_solver_tick(s);
  s->diag.passes = d->steps / ((double)s->n * (double)s->m);
  s->diag.resid_est = crit;
  /* every column at its solution: no step decreases D; when the columns that ran took
   * none, the waiting ones run next */
  if (total == 0 && !waited) s->diag.done = 1;
  if (total == 0 && waited)
    for (int c = 0; c < s->m; c++) d->last[c] = NAN;
  krr_solver_set_extra(s, "steps", d->steps);
  krr_solver_set_extra(s, "face_steps", d->faces);
  d->kept = 1;
  return KRR_OK;
}

/* F = K a for the generic criterion: kept, no kernel pass */
static krr_status dcd_apply_k(krr_solver *s, void *F) {
  KTRY(sync_out(s));
  return s->ctx->ops->copy(s->ctx, F, D(s)->Fd, s->es * (size_t)(s->n * (int64_t)s->m));
}

const krr_solver_def krr_solver_dcd = {
    .name = "dcd",
    .title = "greedy dual coordinate descent on the kernel matrix",
    .losses = "squared huber svr hinge squared_hinge logistic",
    .options = {optdefs, KRR_NOPTS(optdefs), sizeof(opts_t)},
    .extras = extras,
    .state_size = sizeof(dcd_t),
    .holdout = 1,
    .exact_est = 1,
    .mem_advice =
        "the dual coordinate descent holds the n x n kernel matrix; use solver = "
        "joker()",
    .resolve = dcd_resolve,
    .memory = dcd_memory,
    .init = dcd_init,
    .prepare = dcd_prepare,
    .start = dcd_start,
    .iterate = dcd_iterate,
    .apply_k = dcd_apply_k,
    .release = dcd_release,
};
