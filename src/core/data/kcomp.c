/* Composite kernels (krr.h, krr_kspec): K = sum_t amp_t prod_{c in t} k_c,
 * each component on its own columns, evaluated through the device table so
 * that every backend and every solver has them.
 *
 * A component's columns are gathered once per call (gather_rows on the
 * points seen as a p x n column-major matrix).  A term that is one listed
 * kernel on Euclidean distances goes through the backend's fused kernel_mv,
 * so a sum of listed kernels costs the sum of their products.  A term of
 * listed (Euclidean or L1), periodic, linear and polynomial components goes
 * through the backend's fused product (kprod_mv / kprod_block), on the
 * term's columns gathered side by side, where the backend has one.  Every
 * other term (the Matern of any smoothness, periodic or Matern components
 * on great-circle distances, or a backend without the fused product) is
 * formed in tiles of at most
 * KC_TILE_R x KC_TILE_C: each component's tile by kernel_block (listed) or
 * kcomp_map, multiplied in place (loss_map's elementwise MUL), the terms
 * added with their amplitudes (axpby), and the tile multiplied into the
 * product by gemm; the context is polled between tiles. */
#include "data.h"
#include <stdlib.h>
#include <string.h>
#include "../kcomp_math.h"

/* 2^21 entries (16 MiB in double): enough work in each primitive for the
 * CPU backend's whole team (src/cpu/cpu.h: about 4e7 work units a thread,
 * 20 + 3 p units a kernel entry) */
#define KC_TILE_R 2048
#define KC_TILE_C 1024
/* device buffers of one call: per component and per fused term an index
 * and the gathered points of X1 and of X2 (4 each), then the tiles and a
 * product */
#define KC_MAX_OWN (8 * KRR_KS_MAXC + 8)

/* NULL when the spec is valid for points of p columns, else the reason */
const char *krr_kspec_invalid(const krr_kspec *s, int p) {
  if (s->nterm < 1 || s->ncomp < s->nterm || s->ncomp > KRR_KS_MAXC)
    return "a composite kernel needs 1 to 8 components in 1 to 8 terms";
  for (int t = 0; t < s->nterm; t++)
    if (!(s->amp[t] > 0) || !isfinite(s->amp[t]))
      return "a composite kernel's amplitudes must be positive and finite";
  for (int i = 0; i < s->ncomp; i++) {
    const krr_kcomp *c = &s->comp[i];
    const int prev = i > 0 ? s->comp[i - 1].term : -1;
    if (c->term != prev && c->term != prev + 1) return "composite components out of term order";
    if (krr_kc_npar(c->family) < 0) return "unknown composite kernel family";
    if (c->family == KRR_KF_LISTED && !KRR_KERNEL_LISTED(c->base))
      return "unknown kernel code in a composite kernel";
    if (c->nd < 0 || c->nd > KRR_KS_MAXD || c->nd > p)
      return "a kernel component reads 1 to 16 columns (or all)";
    for (int d = 0; d < c->nd; d++)
      if (c->dims[d] < 0 || c->dims[d] >= p)
        return "a kernel component's `dims` exceed the columns";
    const int needs_bw =
        c->family == KRR_KF_LISTED || c->family == KRR_KF_MATERN || c->family == KRR_KF_PERIODIC;
    if (needs_bw && (!(c->bw > 0) || !isfinite(c->bw)))
      return "a kernel component's bandwidth must be positive and finite";
    if (c->metric == 1 && (c->nd != 2 || c->family == KRR_KF_LINEAR || c->family == KRR_KF_POLY ||
                           (c->family == KRR_KF_LISTED && krr_kernel_is_l1(c->base))))
      return "great-circle distance needs a stationary L2 kernel on two columns (lon, lat)";
    if (c->metric != 0 && c->metric != 1) return "unknown metric in a composite kernel";
    if (c->family == KRR_KF_MATERN && !(c->par[0] > 0 && c->par[0] <= KRR_KC_MAX_NU))
      return "the Matern smoothness must lie in (0, 20]";
    if (c->family == KRR_KF_PERIODIC && (!(c->par[0] > 0) || !isfinite(c->par[0])))
      return "the period must be positive and finite";
    if (c->family == KRR_KF_POLY &&
        (!(c->par[0] >= 1 && c->par[0] <= 20 && c->par[0] == floor(c->par[0])) ||
         !(c->par[1] > 0) || !isfinite(c->par[1]) || !(c->par[2] >= 0) || !isfinite(c->par[2])))
      return "a polynomial kernel needs degree 1..20, scale > 0 and offset >= 0";
  }
  if (s->comp[s->ncomp - 1].term != s->nterm - 1) return "composite terms without components";
  return NULL;
}

/* one call's gathered points: component c reads P1[c] (n1 x pc[c]) and
 * P2[c] (n2 x pc[c]), row-major (NULL in a fused term, but for the linear
 * and polynomial components); a fused term t (fz[t]) reads T1[t] and
 * T2[t], its components' columns side by side as pr[t] says */
typedef struct {
  krr_ctx *ctx;
  krr_precision prec;
  size_t es;
  const krr_kspec *s;
  const void *P1[KRR_KS_MAXC], *P2[KRR_KS_MAXC];
  const void *T1[KRR_KS_MAXC], *T2[KRR_KS_MAXC];
  krr_kprod pr[KRR_KS_MAXC];
  int fz[KRR_KS_MAXC];
  void *own[KC_MAX_OWN];
  int pc[KRR_KS_MAXC], nown;
} kc_call;

static void *kc_alloc(kc_call *k, int64_t elems, size_t es) {
  if (k->nown >= KC_MAX_OWN) {
    krr_fail(k->ctx, KRR_ERR_INTERNAL, "kcomp: too many buffers");
    return NULL;
  }
  void *p = k->ctx->ops->alloc(k->ctx, (size_t)(elems > 0 ? elems : 1) * es);
  if (p) k->own[k->nown++] = p;
  return p;
}

static void kc_release(kc_call *k) {
  for (int i = 0; i < k->nown; i++) k->ctx->ops->dealloc(k->ctx, k->own[i]);
  k->nown = 0;
}

static int comp_fast(const krr_kcomp *c) { return c->family == KRR_KF_LISTED && c->metric == 0; }

/* the first component of term t, and one past its last */
static void term_range(const krr_kspec *s, int t, int *c0, int *c1) {
  int a = 0;
  while (s->comp[a].term != t) a++;
  int b = a;
  while (b < s->ncomp && s->comp[b].term == t) b++;
  *c0 = a;
  *c1 = b;
}

static int term_fast(const krr_kspec *s, int t) {
  int c0, c1;
  term_range(s, t, &c0, &c1);
  return c1 == c0 + 1 && comp_fast(&s->comp[c0]);
}

/* the columns idx[0 .. m) of the points X (n x p) as n x m row-major */
static krr_status gather_idx(kc_call *k, const int64_t *idx, int m, const void *X, int64_t n, int p,
                             const void **out) {
  int64_t *didx = (int64_t *)kc_alloc(k, m, sizeof(int64_t));
  void *dst = kc_alloc(k, n * m, k->es);
  if (!didx || !dst) return k->ctx->status;
  KTRY(k->ctx->ops->upload(k->ctx, didx, idx, sizeof(int64_t) * (size_t)m));
  *out = dst;
  /* the points as a p x n column-major matrix: rows idx, n columns */
  return KOP(k->ctx, k->prec, gather_rows, X, p, (int)n, didx, m, dst, m);
}

static krr_status gather_cols(kc_call *k, const krr_kcomp *c, const void *X, int64_t n, int p,
                              const void **out) {
  if (c->nd == 0) {
    *out = X;
    return KRR_OK;
  }
  int64_t idx[KRR_KS_MAXD];
  for (int d = 0; d < c->nd; d++) idx[d] = c->dims[d];
  return gather_idx(k, idx, c->nd, X, n, p, out);
}

/* a component the fused product serves (ops.h kprod_mv; great-circle
 * distances for the listed kernels, which krr_kspec_invalid restricts to L2
 * kernels on two columns) */
static int comp_fusable(const krr_kcomp *c) {
  if (c->metric == 1) return c->family == KRR_KF_LISTED;
  return c->family == KRR_KF_LISTED || c->family == KRR_KF_PERIODIC || c->family == KRR_KF_LINEAR ||
         c->family == KRR_KF_POLY;
}

/* term t through the backend's fused product: its columns side by side */
static krr_status fuse_term(kc_call *k, int t, const void *X1, int64_t n1, const void *X2,
                            int64_t n2, int p) {
  int c0, c1, m = 0;
  term_range(k->s, t, &c0, &c1);
  krr_kprod *pr = &k->pr[t];
  memset(pr, 0, sizeof *pr);
  pr->ncomp = c1 - c0;
  for (int c = c0; c < c1; c++) {
    pr->comp[c - c0] = k->s->comp[c];
    pr->off[c - c0] = m;
    m += k->pc[c];
  }
  pr->off[pr->ncomp] = m;
  int64_t *idx = (int64_t *)malloc(sizeof(int64_t) * (size_t)m);
  if (!idx) return krr_fail(k->ctx, KRR_ERR_MEMORY, "out of host memory");
  for (int c = c0, j = 0; c < c1; c++) {
    const krr_kcomp *cp = &k->s->comp[c];
    for (int d = 0; d < k->pc[c]; d++) idx[j++] = cp->nd ? cp->dims[d] : d;
  }
  krr_status st = gather_idx(k, idx, m, X1, n1, p, &k->T1[t]);
  if (st == KRR_OK && X2 == X1 && n2 == n1) k->T2[t] = k->T1[t];
  else if (st == KRR_OK) st = gather_idx(k, idx, m, X2, n2, p, &k->T2[t]);
  free(idx);
  k->fz[t] = st == KRR_OK;
  return st;
}

/* whether the backend has the fused product in this precision */
static int kprod_ok(const krr_ctx *ctx, krr_precision prec) {
  const krr_ops *o = ctx->ops;
  return prec == KRR_DOUBLE ? o->kprod_mv_d && o->kprod_block_d : o->kprod_mv_s && o->kprod_block_s;
}

static krr_status kc_setup(kc_call *k, krr_ctx *ctx, krr_precision prec, const krr_kernel *kn,
                           const void *X1, int64_t n1, const void *X2, int64_t n2, int p) {
  memset(k, 0, sizeof *k);
  k->ctx = ctx;
  k->prec = prec;
  k->es = krr_sizeof(prec);
  k->s = &kn->spec;
  const char *bad = krr_kspec_invalid(k->s, p);
  if (bad) return krr_fail(ctx, KRR_ERR_INPUT, "%s", bad);
  for (int c = 0; c < k->s->ncomp; c++) k->pc[c] = k->s->comp[c].nd ? k->s->comp[c].nd : p;
  for (int t = 0; kprod_ok(ctx, prec) && t < k->s->nterm; t++) {
    int c0, c1, all = 1;
    term_range(k->s, t, &c0, &c1);
    for (int c = c0; c < c1; c++) all = all && comp_fusable(&k->s->comp[c]);
    if (all && !term_fast(k->s, t)) KTRY(fuse_term(k, t, X1, n1, X2, n2, p));
  }
  /* a component's own columns: not for a fused term's, but for the linear
   * and polynomial components, whose values on the diagonal kc_diag_run
   * reads from them */
  for (int c = 0; c < k->s->ncomp; c++) {
    const krr_kcomp *cp = &k->s->comp[c];
    if (k->fz[cp->term] && cp->family != KRR_KF_LINEAR && cp->family != KRR_KF_POLY) continue;
    KTRY(gather_cols(k, cp, X1, n1, p, &k->P1[c]));
    if (X2 == X1 && n2 == n1) k->P2[c] = k->P1[c];
    else KTRY(gather_cols(k, cp, X2, n2, p, &k->P2[c]));
  }
  return KRR_OK;
}

static krr_kernel listed_of(const krr_kcomp *c) {
  krr_kernel kk;
  memset(&kk, 0, sizeof kk);
  kk.type = (krr_kernel_type)c->base;
  kk.bandwidth = c->bw;
  return kk;
}

/* dst (r x s, ld ld) = component c between rows i0.. of X1 and j0.. of X2 */
static krr_status comp_tile(kc_call *k, int c, int64_t i0, int64_t r, int64_t j0, int64_t s,
                            void *dst, int64_t ld) {
  const krr_kcomp *cp = &k->s->comp[c];
  const int pc = k->pc[c];
  const void *A = KAT(k->P1[c], i0 * pc, k->es), *B = KAT(k->P2[c], j0 * pc, k->es);
  if (comp_fast(cp)) {
    const krr_kernel kk = listed_of(cp);
    return KOP(k->ctx, k->prec, kernel_block, &kk, A, r, B, s, pc, dst, ld);
  }
  return KOP(k->ctx, k->prec, kcomp_map, cp, A, r, B, s, pc, 0, dst, ld);
}

/* the product of term t's components on the tile into P (r x s,
 * contiguous), Q scratch */
static krr_status term_tile(kc_call *k, int t, int64_t i0, int64_t r, int64_t j0, int64_t s,
                            void *P, void *Q) {
  if (k->fz[t]) {
    const krr_kprod *pr = &k->pr[t];
    const int m = pr->off[pr->ncomp];
    return KOP(k->ctx, k->prec, kprod_block, pr, KAT(k->T1[t], i0 * m, k->es), r,
               KAT(k->T2[t], j0 * m, k->es), s, m, P, r);
  }
  int c0, c1;
  term_range(k->s, t, &c0, &c1);
  KTRY(comp_tile(k, c0, i0, r, j0, s, P, r));
  for (int c = c0 + 1; c < c1; c++) {
    KTRY(comp_tile(k, c, i0, r, j0, s, Q, r));
    KTRY(KOP(k->ctx, k->prec, loss_map, 0, KRR_MAP_MUL, r * s, 0.0, 0.0, NULL, Q, P));
  }
  return KRR_OK;
}

/* a term the products take whole (kernel_mv or kprod_mv), not in tiles */
static int term_whole(const kc_call *k, int t) { return k->fz[t] || term_fast(k->s, t); }

/* T (r x s, contiguous) = the sum of the terms (all, or only those not
 * taken whole when skip_fast) on the tile, each times its amplitude except that a
 * single term is left unscaled with *scale its amplitude (the caller's GEMM
 * applies it); P, Q scratch of the same size */
static krr_status kc_tile(kc_call *k, int64_t i0, int64_t r, int64_t j0, int64_t s, int skip_fast,
                          void *T, void *P, void *Q, double *scale) {
  const int64_t len = r * s;
  int nt = 0, last = 0;
  for (int t = 0; t < k->s->nterm; t++)
    if (!(skip_fast && term_whole(k, t))) nt++, last = t;
  *scale = 1.0;
  if (nt == 1) {
    *scale = k->s->amp[last];
    return term_tile(k, last, i0, r, j0, s, T, Q);
  }
  KTRY(k->ctx->ops->zero(k->ctx, T, (size_t)len * k->es));
  for (int t = 0; t < k->s->nterm; t++) {
    if (skip_fast && term_whole(k, t)) continue;
    KTRY(term_tile(k, t, i0, r, j0, s, P, Q));
    KTRY(KOP(k->ctx, k->prec, axpby, len, k->s->amp[t], P, 1.0, T));
  }
  return KRR_OK;
}

/* where the tiles of a product go: OUT (+)= T V, or OUT = T */
typedef struct {
  const void *V;
  int64_t ldv;
  int q;
  void *out;
  int64_t ldo;
} kc_dest;

/* a tile T (r x s) of the terms, times a, into rows i0.. and columns j0.. */
typedef krr_status (*kc_use)(kc_call *k, int64_t i0, int64_t r, int64_t j0, int64_t s, void *T,
                             double a, const kc_dest *d);

static krr_status mv_use(kc_call *k, int64_t i0, int64_t r, int64_t j0, int64_t s, void *T,
                         double a, const kc_dest *d) {
  return KOP(k->ctx, k->prec, gemm, 0, 0, r, d->q, s, a, T, r, KAT(d->V, j0, k->es), d->ldv, 1.0,
             KAT(d->out, i0, k->es), d->ldo);
}

static krr_status block_use(kc_call *k, int64_t i0, int64_t r, int64_t j0, int64_t s, void *T,
                            double a, const kc_dest *d) {
  krr_ctx *ctx = k->ctx;
  if (a != 1.0) KTRY(KOP(ctx, k->prec, axpby, r * s, a - 1.0, T, 1.0, T));
  for (int64_t c = 0; c < s; c++)
    KTRY(ctx->ops->copy(ctx, KAT(d->out, i0 + (j0 + c) * d->ldo, k->es), KAT(T, c * r, k->es),
                        (size_t)r * k->es));
  return KRR_OK;
}

/* every tile of the n1 x n2 product (the terms, without the whole ones when
 * skip_fast), handed to `use`, polling between tiles */
static krr_status kc_tiles(kc_call *k, int64_t n1, int64_t n2, int skip_fast, kc_use use,
                           const kc_dest *d) {
  const int64_t R = n1 < KC_TILE_R ? n1 : KC_TILE_R, C = n2 < KC_TILE_C ? n2 : KC_TILE_C;
  void *T = kc_alloc(k, R * C, k->es), *P = kc_alloc(k, R * C, k->es);
  void *Q = kc_alloc(k, R * C, k->es);
  if (!T || !P || !Q) return k->ctx->status;
  for (int64_t i0 = 0; i0 < n1; i0 += R) {
    const int64_t r = n1 - i0 < R ? n1 - i0 : R;
    for (int64_t j0 = 0; j0 < n2; j0 += C) {
      const int64_t s = n2 - j0 < C ? n2 - j0 : C;
      double a;
      KTRY(krr_poll(k->ctx));
      KTRY(kc_tile(k, i0, r, j0, s, skip_fast, T, P, Q, &a));
      KTRY(use(k, i0, r, j0, s, T, a, d));
    }
  }
  return krr_poll(k->ctx);
}

/* tmp (n1 x q) = term t's fused product times V, in row chunks polled
 * between (as krr_kernel_mv_polled) */
static krr_status kprod_mv_polled(kc_call *k, int t, int64_t n1, int64_t n2, const void *V,
                                  int64_t ldv, int q, void *tmp) {
  const krr_kprod *pr = &k->pr[t];
  const int m = pr->off[pr->ncomp];
  const int64_t ch = krr_kernel_chunk_rows(n2, m + 16 * pr->ncomp, q);
  for (int64_t i0 = 0; i0 < n1; i0 += ch) {
    const int64_t r = n1 - i0 < ch ? n1 - i0 : ch;
    KTRY(krr_poll(k->ctx));
    KTRY(KOP(k->ctx, k->prec, kprod_mv, pr, KAT(k->T1[t], i0 * m, k->es), r, k->T2[t], n2, m, V,
             ldv, q, KAT(tmp, i0, k->es), n1));
  }
  return krr_poll(k->ctx);
}

static krr_status kc_mv_run(kc_call *k, int64_t n1, int64_t n2, const void *V, int64_t ldv, int q,
                            void *out, int64_t ldo) {
  krr_ctx *ctx = k->ctx;
  const size_t es = k->es;
  for (int c = 0; c < q; c++) KTRY(ctx->ops->zero(ctx, KAT(out, c * ldo, es), (size_t)n1 * es));
  int tiles = 0;
  void *tmp = NULL;
  for (int t = 0; t < k->s->nterm; t++) {
    if (!term_whole(k, t)) {
      tiles = 1;
      continue;
    }
    int c0, c1;
    term_range(k->s, t, &c0, &c1);
    if (!tmp && !(tmp = kc_alloc(k, n1 * q, es))) return ctx->status;
    const krr_kernel kk = listed_of(&k->s->comp[c0]);
    if (k->fz[t]) KTRY(kprod_mv_polled(k, t, n1, n2, V, ldv, q, tmp));
    else
      KTRY(krr_kernel_mv_polled(ctx, k->prec, &kk, k->P1[c0], n1, k->P2[c0], n2, k->pc[c0], V, ldv,
                                q, tmp, n1));
    for (int c = 0; c < q; c++)
      KTRY(KOP(ctx, k->prec, axpby, n1, k->s->amp[t], KAT(tmp, c * n1, es), 1.0,
               KAT(out, c * ldo, es)));
  }
  if (!tiles) return KRR_OK;
  kc_dest d = {V, ldv, q, out, ldo};
  return kc_tiles(k, n1, n2, 1, mv_use, &d);
}

krr_status krr_kcomp_mv(krr_ctx *ctx, krr_precision prec, const krr_kernel *kn, const void *X1,
                        int64_t n1, const void *X2, int64_t n2, int p, const void *V, int64_t ldv,
                        int q, void *out, int64_t ldo) {
  if (n1 <= 0 || q <= 0) return KRR_OK;
  kc_call k;
  krr_status st = kc_setup(&k, ctx, prec, kn, X1, n1, X2, n2, p);
  if (st == KRR_OK) st = kc_mv_run(&k, n1, n2, V, ldv, q, out, ldo);
  kc_release(&k);
  return st;
}

static krr_status kc_block_run(kc_call *k, int64_t n1, int64_t n2, void *out, int64_t ldo) {
  kc_dest d = {NULL, 0, 0, out, ldo};
  return kc_tiles(k, n1, n2, 0, block_use, &d);
}

krr_status krr_kcomp_block(krr_ctx *ctx, krr_precision prec, const krr_kernel *kn, const void *X1,
                           int64_t n1, const void *X2, int64_t n2, int p, void *out, int64_t ldo) {
  if (n1 <= 0 || n2 <= 0) return KRR_OK;
  kc_call k;
  krr_status st = kc_setup(&k, ctx, prec, kn, X1, n1, X2, n2, p);
  if (st == KRR_OK) st = kc_block_run(&k, n1, n2, out, ldo);
  kc_release(&k);
  return st;
}

krr_status krr_kernel_mv_any(krr_ctx *ctx, krr_precision prec, const krr_kernel *k, const void *X1,
                             int64_t n1, const void *X2, int64_t n2, int p, const void *V,
                             int64_t ldv, int q, void *out, int64_t ldo) {
  if (k->type == KRR_COMPOSITE)
    return krr_kcomp_mv(ctx, prec, k, X1, n1, X2, n2, p, V, ldv, q, out, ldo);
  return krr_kernel_mv_polled(ctx, prec, k, X1, n1, X2, n2, p, V, ldv, q, out, ldo);
}

krr_status krr_kernel_block_any(krr_ctx *ctx, krr_precision prec, const krr_kernel *k,
                                const void *X1, int64_t n1, const void *X2, int64_t n2, int p,
                                void *out, int64_t ldo) {
  if (k->type == KRR_COMPOSITE) return krr_kcomp_block(ctx, prec, k, X1, n1, X2, n2, p, out, ldo);
  return krr_kernel_block_polled(ctx, prec, k, X1, n1, X2, n2, p, out, ldo);
}

/* host out[i] = K(x_i, x_i): 1 for every stationary component; the linear
 * and polynomial ones are evaluated at the pairs (x_i, x_i) */
static krr_status kc_diag_run(kc_call *k, int64_t n, double *out, double *prod, double *hv) {
  void *dv = NULL;
  for (int64_t i = 0; i < n; i++) out[i] = 0;
  for (int t = 0; t < k->s->nterm; t++) {
    int c0, c1;
    term_range(k->s, t, &c0, &c1);
    for (int64_t i = 0; i < n; i++) prod[i] = k->s->amp[t];
    for (int c = c0; c < c1; c++) {
      const krr_kcomp *cp = &k->s->comp[c];
      if (cp->family != KRR_KF_LINEAR && cp->family != KRR_KF_POLY) continue;
      if (!dv && !(dv = kc_alloc(k, n, k->es))) return k->ctx->status;
      KTRY(KOP(k->ctx, k->prec, kcomp_map, cp, k->P1[c], n, k->P1[c], n, k->pc[c], 1, dv, n));
      KTRY(krr_download_vec(k->ctx, k->prec, dv, n, hv));
      for (int64_t i = 0; i < n; i++) prod[i] *= hv[i];
    }
    for (int64_t i = 0; i < n; i++) out[i] += prod[i];
  }
  return KRR_OK;
}

krr_status krr_kcomp_diag(krr_ctx *ctx, krr_precision prec, const krr_kernel *kn, const void *X,
                          int64_t n, int p, double *out) {
  if (n <= 0) return KRR_OK;
  double *prod = (double *)malloc(sizeof(double) * (size_t)n);
  double *hv = (double *)malloc(sizeof(double) * (size_t)n);
  kc_call k;
  krr_status st = kc_setup(&k, ctx, prec, kn, X, n, X, n, p);
  if (st == KRR_OK && (!prod || !hv)) st = krr_fail(ctx, KRR_ERR_MEMORY, "out of host memory");
  if (st == KRR_OK) st = kc_diag_run(&k, n, out, prod, hv);
  kc_release(&k);
  free(prod);
  free(hv);
  return st;
}

/* ---- derivatives on the host (the exact likelihood of a composite) -------
 * codes: 0 the kernel; -(t + 1) d/dlog amp_t; 1 + 4 c + j d/dlog of
 * component c's learnable hyperparameter j (kcomp_math.h) */
static int code_ok(const krr_kspec *s, int code) {
  if (code == 0) return 1;
  if (code < 0) return -code - 1 < s->nterm;
  const int c = (code - 1) / 4, j = (code - 1) % 4;
  return c < s->ncomp && j < krr_kc_npar(s->comp[c].family);
}

/* One derivative code, resolved once per call: the component c and its
 * hyperparameter j (c < 0 for the kernel, code 0, or a term's amplitude),
 * the term t (t < 0: every term, code 0) and the other components of that
 * term, whose values multiply the derivative */
typedef struct {
  int c, j, t, nother;
  int other[KRR_KS_MAXC];
} code_plan;

static void plan_code(const krr_kspec *s, int code, code_plan *pl) {
  pl->c = code > 0 ? (code - 1) / 4 : -1;
  pl->j = code > 0 ? (code - 1) % 4 : -1;
  pl->t = code > 0 ? s->comp[pl->c].term : code < 0 ? -code - 1 : -1;
  pl->nother = 0;
  for (int e = 0; e < s->ncomp; e++)
    if (pl->t >= 0 && e != pl->c && s->comp[e].term == pl->t) pl->other[pl->nother++] = e;
}

/* the plans of codes[0..nd) (freed by the caller), NULL when out of memory */
static code_plan *plan_codes(const krr_kspec *s, const int *codes, int nd) {
  code_plan *pl = (code_plan *)malloc(sizeof(code_plan) * (size_t)(nd > 0 ? nd : 1));
  if (pl)
    for (int d = 0; d < nd; d++) plan_code(s, codes[d], &pl[d]);
  return pl;
}

/* the value of one derivative code at a pair, from the components' values v
 * and statistics st */
static double pair_deriv(const krr_kspec *s, const code_plan *pl, const double *v,
                         const double *st) {
  if (pl->t < 0) {
    double sum = 0;
    for (int t = 0; t < s->nterm; t++) {
      double g = s->amp[t];
      for (int e = 0; e < s->ncomp; e++)
        if (s->comp[e].term == t) g *= v[e];
      sum += g;
    }
    return sum;
  }
  double g = s->amp[pl->t];
  if (pl->c >= 0) g *= krr_kc_deriv_at(&s->comp[pl->c], st[pl->c], pl->j, v[pl->c]);
  for (int k = 0; k < pl->nother; k++) g *= v[pl->other[k]];
  return g;
}

/* component c's columns of the column-major X (n x p) as n x pc row-major */
static double *host_cols(const krr_kcomp *c, const double *X, int64_t n, int p) {
  const int pc = c->nd ? c->nd : p;
  double *R = (double *)malloc(sizeof(double) * (size_t)(n * pc > 0 ? n * pc : 1));
  if (!R) return NULL;
  for (int64_t i = 0; i < n; i++)
    for (int d = 0; d < pc; d++) R[i * pc + d] = X[(int64_t)(c->nd ? c->dims[d] : d) * n + i];
  return R;
}

/* the components' statistics st and values v at the pair (row i of R1,
 * row j of R2) */
static void pair_values(const krr_kspec *s, double **R1, double **R2, int64_t i, int64_t j, int p,
                        double *v, double *st) {
  for (int c = 0; c < s->ncomp; c++) {
    const krr_kcomp *cp = &s->comp[c];
    const int pc = cp->nd ? cp->nd : p;
    st[c] = krr_kc_stat_d(krr_kc_stat_kind(cp), R1[c] + i * pc, 1, R2[c] + j * pc, 1, pc);
    v[c] = krr_kc_eval(cp, st[c], -1);
  }
}

/* sym (the same points on both sides): the pairs i >= j only, mirrored,
 * the matrices being symmetric */
static krr_status deriv_run(krr_ctx *ctx, const krr_kspec *s, double **R1, double **R2, int64_t n1,
                            int64_t n2, int p, const code_plan *pl, int nd, int sym, double *out) {
  const int64_t mat = n1 * n2;
  for (int64_t j0 = 0; j0 < n2; j0 += 64) {
    KTRY(krr_poll(ctx));
    const int64_t j1 = n2 - j0 < 64 ? n2 : j0 + 64;
    for (int64_t j = j0; j < j1; j++) {
      double v[KRR_KS_MAXC], st[KRR_KS_MAXC];
      for (int64_t i = sym ? j : 0; i < n1; i++) {
        pair_values(s, R1, R2, i, j, p, v, st);
        for (int d = 0; d < nd; d++) {
          const double g = pair_deriv(s, &pl[d], v, st);
          out[d * mat + j * n1 + i] = g;
          if (sym) out[d * mat + i * n1 + j] = g;
        }
      }
    }
  }
  return krr_poll(ctx);
}

/* sum_{i,l} W_il dK_code(x_i, x_l) added to out[d] (zeroed by the caller)
 * over the pairs i >= l, an off-diagonal pair weighted W_il + W_li (the
 * matrices are symmetric) */
static krr_status dot_run(krr_ctx *ctx, const krr_kspec *s, double **R, int64_t n, int p,
                          const code_plan *pl, int nd, const double *W, double *out) {
  for (int64_t l = 0; l < n; l++) {
    if (l % 64 == 0) KTRY(krr_poll(ctx));
    double v[KRR_KS_MAXC], st[KRR_KS_MAXC];
    for (int64_t i = l; i < n; i++) {
      pair_values(s, R, R, i, l, p, v, st);
      const double w = i == l ? W[l * n + i] : W[l * n + i] + W[i * n + l];
      for (int d = 0; d < nd; d++) out[d] += w * pair_deriv(s, &pl[d], v, st);
    }
  }
  return krr_poll(ctx);
}

/* the checks of the derivative entries: a valid composite and codes */
static krr_status deriv_check(krr_ctx *ctx, const krr_kernel *k, int p, const int *codes, int nd) {
  if (k->type != KRR_COMPOSITE)
    return krr_fail(ctx, KRR_ERR_INPUT, "kcomp_deriv: not a composite kernel");
  const char *bad = krr_kspec_invalid(&k->spec, p);
  if (bad) return krr_fail(ctx, KRR_ERR_INPUT, "%s", bad);
  for (int d = 0; d < nd; d++)
    if (!code_ok(&k->spec, codes[d]))
      return krr_fail(ctx, KRR_ERR_INPUT, "composite kernel derivative: bad code %d", codes[d]);
  return KRR_OK;
}

/* every component's columns of X1 (and X2 unless sym) as host_cols() */
static krr_status cols_all(krr_ctx *ctx, const krr_kspec *s, const double *X1, int64_t n1,
                           const double *X2, int64_t n2, int p, int sym, double **R1, double **R2) {
  for (int c = 0; c < s->ncomp; c++) {
    R1[c] = host_cols(&s->comp[c], X1, n1, p);
    R2[c] = sym ? R1[c] : host_cols(&s->comp[c], X2, n2, p);
    if (!R1[c] || !R2[c]) return krr_fail(ctx, KRR_ERR_MEMORY, "out of host memory");
  }
  return KRR_OK;
}

static void cols_free(const krr_kspec *s, int sym, double **R1, double **R2) {
  for (int c = 0; c < s->ncomp; c++) {
    free(R1[c]);
    if (!sym) free(R2[c]);
  }
}

krr_status krr_kcomp_deriv_host(krr_ctx *ctx, const krr_kernel *k, const double *X1, int64_t n1,
                                const double *X2, int64_t n2, int p, const int *codes, int nd,
                                double *out) {
  KTRY(deriv_check(ctx, k, p, codes, nd));
  const krr_kspec *s = &k->spec;
  double *R1[KRR_KS_MAXC] = {0}, *R2[KRR_KS_MAXC] = {0};
  const int sym = X1 == X2 && n1 == n2;
  code_plan *pl = plan_codes(s, codes, nd);
  krr_status st = pl ? cols_all(ctx, s, X1, n1, X2, n2, p, sym, R1, R2)
                     : krr_fail(ctx, KRR_ERR_MEMORY, "out of host memory");
  if (st == KRR_OK) st = deriv_run(ctx, s, R1, R2, n1, n2, p, pl, nd, sym, out);
  cols_free(s, sym, R1, R2);
  free(pl);
  return st;
}

krr_status krr_kcomp_deriv_dot_host(krr_ctx *ctx, const krr_kernel *k, const double *X, int64_t n,
                                    int p, const int *codes, int nd, const double *W, double *out) {
  KTRY(deriv_check(ctx, k, p, codes, nd));
  for (int d = 0; d < nd; d++) out[d] = 0;
  if (n == 0 || nd == 0) return KRR_OK;
  const krr_kspec *s = &k->spec;
  double *R[KRR_KS_MAXC] = {0};
  code_plan *pl = plan_codes(s, codes, nd);
  krr_status st = pl ? cols_all(ctx, s, X, n, X, n, p, 1, R, R)
                     : krr_fail(ctx, KRR_ERR_MEMORY, "out of host memory");
  if (st == KRR_OK) st = dot_run(ctx, s, R, n, p, pl, nd, W, out);
  cols_free(s, 1, R, R);
  free(pl);
  return st;
}

krr_status krr_kcomp_stat_host(krr_ctx *ctx, const krr_kernel *k, int c, const double *X1,
                               int64_t n1, const double *X2, int64_t n2, int p, double *out) {
  if (k->type != KRR_COMPOSITE || c < 0 || c >= k->spec.ncomp)
    return krr_fail(ctx, KRR_ERR_INPUT, "kcomp_stat: not a component of a composite kernel");
  const char *bad = krr_kspec_invalid(&k->spec, p);
  if (bad) return krr_fail(ctx, KRR_ERR_INPUT, "%s", bad);
  const krr_kcomp *cp = &k->spec.comp[c];
  const int pc = cp->nd ? cp->nd : p, kind = krr_kc_stat_kind(cp);
  double *R1 = host_cols(cp, X1, n1, p), *R2 = host_cols(cp, X2, n2, p);
  krr_status st = R1 && R2 ? KRR_OK : krr_fail(ctx, KRR_ERR_MEMORY, "out of host memory");
  for (int64_t j = 0; j < n2 && st == KRR_OK; j++) {
    if (j % 64 == 0) st = krr_poll(ctx);
    for (int64_t i = 0; i < n1 && st == KRR_OK; i++)
      out[j * n1 + i] = krr_kc_stat_d(kind, R1 + i * pc, 1, R2 + j * pc, 1, pc);
  }
  free(R1);
  free(R2);
  return st;
}
