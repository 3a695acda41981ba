/* Random Fourier features as a kernel operator (Rahimi and Recht 2007; the
 * "inexact" mode of Joker, Zhang et al., ALGORITHMS.md section 6):
 *
 *   K(x, x') ~ psi(x)^T psi(x'),  psi(x) = sqrt(2/M) cos(W x + c),
 *
 * W (M x p) drawn from the kernel's spectral density, c ~ U[0, 2 pi).  With
 * u = a sqrt(t) or a t the statistic of kernel_math.h (a = krr_kparams.a):
 *  - rbf, exp(-||d||^2 / (2 s^2)), a = 1/(2 s^2):  w ~ N(0, I / s^2),
 *    i.e. w = z sqrt(2 a) (ALGORITHMS.md: the paper's N(0, sigma^2) is a typo);
 *  - laplace, exp(-||d||_1 / s) = prod_l exp(-|d_l| / s), a = 1/s: the
 *    coordinates of w are independent Cauchy(0, a) (E cos(w d) = exp(-a |d|));
 *  - matern nu = 1/2, 3/2, 5/2 in L2 distance, u = a ||d|| with
 *    a = sqrt(2 nu) / s (length scale l = s): the spectral density is
 *    proportional to (2 nu / l^2 + ||w||^2)^-(nu + p/2), a multivariate t
 *    with 2 nu degrees of freedom and scale 1/l:
 *    w = z / (l sqrt(g / (2 nu))), z ~ N(0, I), g ~ chi^2_{2 nu} (the sum
 *    of 2 nu squared normals; one g per frequency).
 * A composite kernel (krr.h, krr_kspec) K = sum_t amp_t prod_c k_c of
 * stationary components: its spectral measure is the mixture of its terms'
 * with weights amp_t / A, A = sum_t amp_t = K(x, x), and a term's is the
 * convolution of its components' (Bochner; Rasmussen and Williams 2006,
 * sec. 4.2.1), so a frequency is a term drawn by its weight and the sum of
 * independent draws of its components, each on its own columns, and psi is
 * scaled by sqrt(A) (krr_features_variance).  The components' measures:
 * the listed kernels' above; the Matern of any smoothness nu, the
 * multivariate t with g ~ 2 Gamma(nu) (Marsaglia and Tsang 2000); the
 * periodic kernel on one column, exp(-2 sin^2(pi d / P) / l^2) = sum_k
 * e^(-2 mu) I_|k|(2 mu) cos(2 pi k d / P) with 2 mu = 1 / l^2, so
 * w = 2 pi k / P with k the difference of two Poisson(mu) draws.  Linear,
 * polynomial and great-circle components are not stationary in x: no
 * features.
 * Draws are counter-based (rng.h) from streams of the seed, on the host, so W
 * and c do not depend on the device or on the thread count; they are
 * uploaded once in the operator's precision.
 *
 * Memory beyond the points: W, c and 2c (M p + 2 M), a ones vector (M), and
 * scratch grown on demand: feature chunks of `chunk` rows (chunk x M; two
 * of them only for K(X, X) materialised), an M x q product and a chunk
 * vector; chunk ~ 2^21 / M rows (16 MiB in double).  Never all of Z: a
 * product K(X_A, X_B) V = Z_A (Z_B^T V) runs over chunks of rows.  A loaded
 * block of b rows holds its points and its features Z_B (b x (p + M)), so a
 * solver's repeated products with the block cost O(b M) each.
 *
 * The diagonal is ||psi(x)||^2 = 1 + (1/M) sum_j cos(2 (w_j x + c_j)) (not
 * 1): evaluated on the device from the points as a feature map with
 * doubled arguments, its rows summed by a GEMM with ones. */
#include <math.h>
#include <string.h>
#include "op.h"
#include "../kernel_math.h"
#include "../rng.h"

#define FEAT_CHUNK_ELEMS ((int64_t)1 << 21)

typedef struct {
  const void *X;     /* n x p points, row-major (the problem's or a block's) */
  void *W, *c, *c2;  /* device: M x p row-major, M, 2c */
  void *ones;        /* device: M ones */
  int own;           /* frees W, c, c2, ones (a subset shares its parent's) */
  int64_t M, chunk;
  double scale; /* sqrt(2 A / M), A = krr_features_variance */
  /* scratch, grown on demand (device unless said) */
  void *Z1, *Z2, *T, *v;
  int64_t Z1cap, Z2cap, Tcap, vcap;
  double *hv;        /* host, chunk */
} feat_t;

#define FT(op) ((feat_t *)(op)->impl)
#define XOP(op, name, ...) KOP((op)->ctx, (op)->prec, name, __VA_ARGS__)

/* ---- the spectral draws (host) ------------------------------------------- */

#define FEAT_TWO_PI 6.283185307179586
#define FEAT_PERIODIC_MAX_MU 1e5 /* 1 / (2 l^2): periodic length scales >= 0.0023 */

/* the streams of one seed's draws */
typedef struct {
  uint64_t w, c, g, u, t, k, l; /* normals (and a listed kernel's Laplace uniforms) of w,
                                   phases, chi-square normals and uniforms, a composite's
                                   terms, periodic counts, a composite's Laplace uniforms */
} feat_streams;

static feat_streams feat_streams_of(uint64_t seed) {
  feat_streams r = {krr_rng_stream(seed, 0x52FF, 1), krr_rng_stream(seed, 0x52FF, 2),
                    krr_rng_stream(seed, 0x52FF, 3), krr_rng_stream(seed, 0x52FF, 4),
                    krr_rng_stream(seed, 0x52FF, 5), krr_rng_stream(seed, 0x52FF, 6),
                    krr_rng_stream(seed, 0x52FF, 7)};
  return r;
}

/* 2 nu of a listed Matern kernel, 0 for the others */
static int listed_dof(int type) {
  return type == KRR_MATERN12 ? 1 : type == KRR_MATERN32 ? 3 : type == KRR_MATERN52 ? 5 : 0;
}

/* a frequency of the listed kernel (type, rate a) on n coordinates, added
 * to w[col[l]] (col NULL: w[l]): normals of stream r->w from index i0, or
 * uniforms of stream su (a Laplace kernel; a normal i takes the uniforms
 * 2i and 2i + 1, so a composite keeps them on a stream of their own); a
 * Matern's chi-square from 2 nu normals of r->g from g0 */
static void listed_freq(int type, double a, int n, const int *col, const feat_streams *r,
                        uint64_t su, uint64_t i0, uint64_t g0, double *w) {
  double s = sqrt(2.0 * a); /* RBF: 1 / bandwidth */
  if (type == KRR_LAPLACE) {
    for (int l = 0; l < n; l++)
      w[col ? col[l] : l] += a * tan(3.141592653589793 * (krr_rng_unif(su, i0 + l) - 0.5));
    return;
  }
  const int dof = listed_dof(type);
  if (dof) {
    double g = 0;
    for (int q = 0; q < dof; q++) {
      const double z = krr_rng_normal(r->g, g0 + (uint64_t)q);
      g += z * z;
    }
    /* a / sqrt(2 nu) = 1 / l; divided by sqrt(g / (2 nu)) */
    s = a / sqrt((double)dof) / sqrt(g / (double)dof);
  }
  for (int l = 0; l < n; l++) w[col ? col[l] : l] += s * krr_rng_normal(r->w, i0 + l);
}

/* a chi-square draw with 2 nu degrees of freedom, 2 Gamma(nu): Marsaglia
 * and Tsang (2000) on Gamma(nu + 1) for nu < 1, times U^(1 / nu); attempt
 * q uses normal and uniform g0 + q (acceptance above 95%: 64 attempts) */
static double chisq_draw(double nu, const feat_streams *r, uint64_t g0) {
  const double b = nu < 1 ? nu + 1 : nu, d = b - 1.0 / 3.0, cc = 1.0 / sqrt(9.0 * d);
  double v = d;
  for (int q = 0; q < 64; q++) {
    const double x = krr_rng_normal(r->g, g0 + q), t = 1 + cc * x;
    if (t <= 0) continue;
    const double u = krr_rng_unif(r->u, 2 * (g0 + q)), t3 = t * t * t;
    if (log(u) < 0.5 * x * x + d - d * t3 + d * log(t3)) {
      v = d * t3;
      break;
    }
  }
  if (nu < 1) v *= pow(krr_rng_unif(r->u, 2 * g0 + 1), 1.0 / nu);
  return 2 * v;
}

/* a Poisson(mu) draw, mu <= FEAT_PERIODIC_MAX_MU: the sum of pieces of
 * mean at most 200, each by inversion of uniform k0 + piece */
static double poisson_draw(double mu, uint64_t s, uint64_t k0) {
  const int pieces = (int)ceil(mu / 200.0);
  const double m = mu / (pieces > 0 ? pieces : 1);
  double total = 0;
  for (int i = 0; i < pieces; i++) {
    const double u = krr_rng_unif(s, k0 + i);
    double k = 0, pk = exp(-m), F = pk;
    while (u > F && k < 1e4) {
      k += 1;
      pk *= m / k;
      F += pk;
    }
    total += k;
  }
  return total;
}

/* NULL when the component has a spectral sampler on p columns, else why */
static const char *comp_unsampled(const krr_kcomp *c, int p) {
  if (c->metric != 0 || c->family == KRR_KF_LINEAR || c->family == KRR_KF_POLY)
    return "linear, polynomial and great-circle kernels are not stationary in x and have "
           "none; use the exact kernel (and method = \"exact\" for posterior draws)";
  if (c->family == KRR_KF_PERIODIC && (c->nd > 1 || (c->nd == 0 && p > 1)))
    return "a periodic kernel has them on one column only (`dims`)";
  if (c->family == KRR_KF_PERIODIC && !(0.5 / (c->bw * c->bw) <= FEAT_PERIODIC_MAX_MU))
    return "a periodic kernel has them for length scales of at least 0.0023";
  return NULL;
}

/* component e's frequency added to w, at counters of (j, e) */
static void comp_freq(const krr_kcomp *c, int p, uint64_t j, int e, const feat_streams *r,
                      double *w) {
  int col[KRR_KS_MAXD], *cp = NULL;
  const int n = c->nd ? c->nd : p;
  if (c->nd) {
    for (int l = 0; l < c->nd; l++) col[l] = c->dims[l];
    cp = col;
  }
  const uint64_t base = j * KRR_KS_MAXC + (uint64_t)e;
  if (c->family == KRR_KF_LISTED) {
    listed_freq(c->base, krr_kparams_of(c->base, c->bw).a, n, cp, r, r->l, base * (uint64_t)p,
                base * 64, w);
  } else if (c->family == KRR_KF_MATERN) {
    const double nu = c->par[0], g = chisq_draw(nu, r, base * 64);
    const double s = 1.0 / (c->bw * sqrt(g / (2.0 * nu)));
    for (int l = 0; l < n; l++) w[cp ? cp[l] : l] += s * krr_rng_normal(r->w, base * p + l);
  } else { /* periodic, one column */
    const double mu = 0.5 / (c->bw * c->bw);
    const double k =
        poisson_draw(mu, r->k, base * 2048) - poisson_draw(mu, r->k, base * 2048 + 1024);
    w[cp ? cp[0] : 0] += FEAT_TWO_PI * k / c->par[0];
  }
}

/* a composite's frequency j: a term by its amplitude, its components' sum */
static void composite_freq(const krr_kspec *s, int p, uint64_t j, const feat_streams *r,
                           double *w) {
  double A = 0, acc = 0;
  for (int t = 0; t < s->nterm; t++) A += s->amp[t];
  const double u = krr_rng_unif(r->t, j) * A;
  int t = 0;
  while (t < s->nterm - 1 && u > (acc += s->amp[t])) t++;
  for (int e = 0; e < s->ncomp; e++)
    if (s->comp[e].term == t) comp_freq(&s->comp[e], p, j, e, r, w);
}

double krr_features_variance(const krr_kernel *k) {
  if (k->type != KRR_COMPOSITE) return 1.0;
  double A = 0;
  for (int t = 0; t < k->spec.nterm; t++) A += k->spec.amp[t];
  return A;
}

/* why (kernel, p) has no spectral sampler, or NULL */
static const char *kernel_unsampled(const krr_kernel *k, int p) {
  if (k->type == KRR_COMPOSITE) {
    const char *bad = krr_kspec_invalid(&k->spec, p);
    for (int e = 0; !bad && e < k->spec.ncomp; e++) bad = comp_unsampled(&k->spec.comp[e], p);
    return bad;
  }
  if (!KRR_KERNEL_LISTED((int)k->type)) return "no spectral sampler for this kernel code";
  const double a = krr_kparams_make(k).a;
  return a > 0 && isfinite(a) ? NULL : "`bandwidth` must be positive and finite";
}

krr_status krr_features_draw(krr_ctx *ctx, const krr_kernel *k, int p, int64_t M, uint64_t seed,
                             double *W, double *c) {
  const char *bad = kernel_unsampled(k, p);
  if (bad) return ctx ? krr_fail(ctx, KRR_ERR_INPUT, "random features: %s", bad) : KRR_ERR_INPUT;
  const feat_streams r = feat_streams_of(seed);
  const double a = k->type == KRR_COMPOSITE ? 0 : krr_kparams_make(k).a;
  for (int64_t j = 0; j < M; j++) {
    c[j] = FEAT_TWO_PI * krr_rng_unif(r.c, (uint64_t)j);
    double *w = W + j * (int64_t)p;
    memset(w, 0, sizeof(double) * (size_t)p);
    if (k->type == KRR_COMPOSITE) composite_freq(&k->spec, p, (uint64_t)j, &r, w);
    else listed_freq(k->type, a, p, NULL, &r, r.w, (uint64_t)j * p, (uint64_t)j * 5, w);
  }
  return KRR_OK;
}

/* ---- device helpers --------------------------------------------------------- */

/* Z(cnt x M, ld ldz) = psi of cnt row-major points Xr: GEMM X W^T, then the
 * map (alpha = 2 and phases 2c, scale 1: the doubled arguments of the
 * diagonal) */
static krr_status feat_eval(krr_ctx *ctx, krr_precision prec, const void *W, const void *c,
                            double alpha, double scale, int64_t M, int p, const void *Xr,
                            int64_t cnt, void *Z, int64_t ldz) {
  if (cnt <= 0) return KRR_OK;
  KTRY(KOP(ctx, prec, gemm, 1, 0, cnt, M, p, alpha, Xr, p, W, p, 0.0, Z, ldz));
  return KOP(ctx, prec, rff_map, cnt, M, c, scale, Z, ldz);
}

/* a device buffer of at least count elements, grown on demand */
static void *grow(krr_op *op, void **buf, int64_t *cap, int64_t count) {
  if (*buf && *cap >= count) return *buf;
  krr_dfree(op->ctx, buf);
  *cap = 0;
  *buf = krr_dalloc(op->ctx, count, op->es);
  if (*buf) *cap = count;
  return *buf;
}

static const void *pts(const krr_op *op, const krr_block *A) {
  return A ? A->pts : FT(op)->X;
}
/* a loaded block's features: after its b x p points (offset cap p), ld b */
static void *zblk(const krr_op *op, const krr_block *A) {
  return KAT(A->pts, A->cap * (int64_t)op->p, op->es);
}

/* rows r0 .. r0 + cnt - 1 of A's features: a view into a loaded block, or
 * computed into the scratch Z1 / Z2 (slot 1 / 2) */
static krr_status rows(krr_op *op, const krr_block *A, int64_t r0, int64_t cnt, int slot,
                       const void **Z, int64_t *ld) {
  feat_t *F = FT(op);
  if (A) {
    *Z = KAT(zblk(op, A), r0, op->es);
    *ld = A->b;
    return KRR_OK;
  }
  void *buf = slot == 1 ? grow(op, &F->Z1, &F->Z1cap, F->chunk * F->M)
                        : grow(op, &F->Z2, &F->Z2cap, F->chunk * F->M);
  if (!buf) return op->ctx->status;
  *Z = buf;
  *ld = cnt;
  return feat_eval(op->ctx, op->prec, F->W, F->c, 1.0, F->scale, F->M, op->p,
                   KAT(F->X, r0 * op->p, op->es), cnt, buf, cnt);
}

/* rows of A go in one piece when loaded, else in chunks */
static int64_t step_of(const krr_op *op, const krr_block *A) {
  return A ? (A->b > 0 ? A->b : 1) : FT(op)->chunk;
}

/* ---- the vtable ----------------------------------------------------------- */

static krr_status ft_block_alloc(krr_op *op, krr_arena *a, krr_block *blk) {
  blk->pts = krr_arena_dev(a, blk->cap * ((int64_t)op->p + FT(op)->M), op->es);
  return blk->pts ? KRR_OK : op->ctx->status;
}

static double ft_block_bytes(const krr_op *op, int64_t cap) {
  return (double)cap * ((double)op->p + (double)FT(op)->M) * (double)op->es;
}

static krr_status ft_block_load(krr_op *op, krr_block *blk) {
  feat_t *F = FT(op);
  KTRY(XOP(op, gather_points, F->X, op->p, blk->idx, blk->b, blk->pts));
  return feat_eval(op->ctx, op->prec, F->W, F->c, 1.0, F->scale, F->M, op->p, blk->pts, blk->b,
                   zblk(op, blk), blk->b);
}

/* OUT = Z_A (Z_B^T V): T (M x q) = Z_B^T V over chunks of B, then Z_A T */
static krr_status ft_mv(krr_op *op, const krr_block *A, const krr_block *B, const void *V,
                        int64_t ldv, int q, void *out, int64_t ldo) {
  feat_t *F = FT(op);
  const int64_t na = krr_block_rows(op, A), nb = krr_block_rows(op, B), M = F->M;
  if (q <= 0 || na <= 0) return KRR_OK;
  if (nb <= 0) { /* an empty sum */
    for (int c = 0; c < q; c++)
      KTRY(op->ctx->ops->zero(op->ctx, KAT(out, c * ldo, op->es), op->es * (size_t)na));
    return KRR_OK;
  }
  if (!grow(op, &F->T, &F->Tcap, M * q)) return op->ctx->status;
  int64_t sb = step_of(op, B), sa = step_of(op, A);
  for (int64_t r0 = 0; r0 < nb; r0 += sb) {
    int64_t cnt = KRR_MIN(sb, nb - r0), ld;
    const void *Z;
    KTRY(krr_poll(op->ctx));
    KTRY(rows(op, B, r0, cnt, 1, &Z, &ld));
    KTRY(XOP(op, gemm, 1, 0, M, q, cnt, 1.0, Z, ld, KAT(V, r0, op->es), ldv, r0 ? 1.0 : 0.0,
             F->T, M));
  }
  for (int64_t r0 = 0; r0 < na; r0 += sa) {
    int64_t cnt = KRR_MIN(sa, na - r0), ld;
    const void *Z;
    KTRY(krr_poll(op->ctx));
    KTRY(rows(op, A, r0, cnt, 1, &Z, &ld));
    KTRY(XOP(op, gemm, 0, 0, cnt, q, M, 1.0, Z, ld, F->T, M, 0.0, KAT(out, r0, op->es), ldo));
  }
  return KRR_OK;
}

/* OUT = Z_A Z_B^T, chunk by chunk */
static krr_status ft_mat(krr_op *op, const krr_block *A, const krr_block *B, void *out,
                         int64_t ldo) {
  feat_t *F = FT(op);
  const int64_t na = krr_block_rows(op, A), nb = krr_block_rows(op, B);
  const int64_t sa = step_of(op, A), sb = step_of(op, B);
  for (int64_t j0 = 0; j0 < nb; j0 += sb) {
    int64_t cb = KRR_MIN(sb, nb - j0), ldb;
    const void *ZB;
    KTRY(rows(op, B, j0, cb, 2, &ZB, &ldb));
    for (int64_t i0 = 0; i0 < na; i0 += sa) {
      int64_t ca = KRR_MIN(sa, na - i0), lda;
      const void *ZA;
      KTRY(krr_poll(op->ctx));
      KTRY(rows(op, A, i0, ca, 1, &ZA, &lda));
      KTRY(XOP(op, gemm, 0, 1, ca, cb, F->M, 1.0, ZA, lda, ZB, ldb, 0.0,
               KAT(out, i0 + j0 * ldo, op->es), ldo));
    }
  }
  return KRR_OK;
}

/* out[i] = ||psi(x_i)||^2 = A (1 + (1/M) sum_j cos(2 (w_j x_i + c_j))), A
 * the kernel's variance (krr_features_variance) */
static krr_status ft_diag(krr_op *op, const krr_block *A, double *out) {
  feat_t *F = FT(op);
  const int64_t n = A ? A->b : op->nloc;
  const void *X = pts(op, A);
  if (!grow(op, &F->Z1, &F->Z1cap, F->chunk * F->M) || !grow(op, &F->v, &F->vcap, F->chunk))
    return op->ctx->status;
  if (!F->hv && !(F->hv = (double *)malloc(sizeof(double) * (size_t)F->chunk)))
    return krr_fail(op->ctx, KRR_ERR_MEMORY, "out of host memory");
  for (int64_t r0 = 0; r0 < n; r0 += F->chunk) {
    int64_t cnt = KRR_MIN(F->chunk, n - r0);
    KTRY(krr_poll(op->ctx));
    KTRY(feat_eval(op->ctx, op->prec, F->W, F->c2, 2.0, 1.0, F->M, op->p,
                   KAT(X, r0 * op->p, op->es), cnt, F->Z1, cnt));
    KTRY(XOP(op, gemm, 0, 0, cnt, 1, F->M, 1.0 / (double)F->M, F->Z1, cnt, F->ones, F->M, 0.0,
             F->v, cnt));
    KTRY(krr_download_vec(op->ctx, op->prec, F->v, cnt, F->hv));
    const double A = krr_features_variance(&op->kernel);
    for (int64_t i = 0; i < cnt; i++) out[r0 + i] = A * (1.0 + F->hv[i]);
  }
  return KRR_OK;
}

/* Z_A (|A| x M, ld ldz): a copy of a loaded block's, or computed in chunks */
static krr_status ft_features(krr_op *op, const krr_block *A, void *Z, int64_t ldz) {
  feat_t *F = FT(op);
  if (A) {
    const void *ZA = zblk(op, A);
    if (ldz == A->b) return op->ctx->ops->copy(op->ctx, Z, ZA, op->es * (size_t)(A->b * F->M));
    for (int64_t j = 0; j < F->M; j++)
      KTRY(op->ctx->ops->copy(op->ctx, KAT(Z, j * ldz, op->es), KAT(ZA, j * A->b, op->es),
                              op->es * (size_t)A->b));
    return KRR_OK;
  }
  for (int64_t r0 = 0; r0 < op->n; r0 += F->chunk) {
    int64_t cnt = KRR_MIN(F->chunk, op->n - r0);
    KTRY(krr_poll(op->ctx));
    KTRY(feat_eval(op->ctx, op->prec, F->W, F->c, 1.0, F->scale, F->M, op->p,
                   KAT(F->X, r0 * op->p, op->es), cnt, KAT(Z, r0, op->es), ldz));
  }
  return KRR_OK;
}

/* columns j0 .. j0 + cnt - 1 of Z for all rows: the frequencies and phases
 * j0 .. j0 + cnt - 1, over chunks of rows */
static krr_status ft_feature_cols(krr_op *op, int64_t j0, int64_t cnt, void *Z, int64_t ldz) {
  feat_t *F = FT(op);
  const int64_t step = FEAT_CHUNK_ELEMS / (cnt > 0 ? cnt : 1) > 64 ? FEAT_CHUNK_ELEMS / cnt : 64;
  for (int64_t r0 = 0; cnt > 0 && r0 < op->n; r0 += step) {
    int64_t rows_now = KRR_MIN(step, op->n - r0);
    KTRY(krr_poll(op->ctx));
    KTRY(feat_eval(op->ctx, op->prec, KAT(F->W, j0 * op->p, op->es), KAT(F->c, j0, op->es), 1.0,
                   F->scale, cnt, op->p, KAT(F->X, r0 * op->p, op->es), rows_now,
                   KAT(Z, r0, op->es), ldz));
  }
  return KRR_OK;
}

static krr_status make(krr_ctx *ctx, krr_precision prec, const void *X, int64_t n, int p,
                       krr_kernel kernel, int64_t M, const feat_t *share, krr_op **out);

/* the operator on the rows of A: their points with the parent's W and c */
static krr_status ft_subset(krr_op *op, const krr_block *A, krr_op **out) {
  return make(op->ctx, op->prec, A->pts, A->b, op->p, op->kernel, FT(op)->M, FT(op), out);
}

static void ft_free(krr_op *op) {
  feat_t *F = FT(op);
  krr_ctx *ctx = op->ctx;
  if (F) {
    if (F->own) {
      krr_dfree(ctx, &F->W); krr_dfree(ctx, &F->c); krr_dfree(ctx, &F->c2);
      krr_dfree(ctx, &F->ones);
    }
    krr_dfree(ctx, &F->Z1); krr_dfree(ctx, &F->Z2); krr_dfree(ctx, &F->T);
    krr_dfree(ctx, &F->v);
    free(F->hv);
    free(F);
  }
  free(op);
}

static const krr_op_vt features_vt = {
    .name = "random features",
    .block_alloc = ft_block_alloc,
    .block_bytes = ft_block_bytes,
    .block_load = ft_block_load,
    .mv = ft_mv,
    .mat = ft_mat,
    .diag = ft_diag,
    .dot = krr_op_local_dot,
    .nrm2 = krr_op_local_nrm2,
    .gather = krr_op_local_gather,
    .scatter_axpy = krr_op_local_scatter,
    .subset = ft_subset,
    .free = ft_free,
    .features = ft_features,
    .feature_cols = ft_feature_cols,
};

static int64_t chunk_rows(int64_t n, int64_t M) {
  int64_t r = FEAT_CHUNK_ELEMS / (M > 0 ? M : 1);
  if (r < 64) r = 64;
  return r < n ? r : (n > 0 ? n : 1);
}

/* upload W, c, 2c and M ones in prec */
static krr_status upload_draws(krr_ctx *ctx, krr_precision prec, const krr_kernel *k, int p,
                               int64_t M, uint64_t seed, feat_t *F) {
  double *W = (double *)malloc(sizeof(double) * (size_t)(M * p));
  double *c = (double *)malloc(sizeof(double) * (size_t)M);
  krr_status st = W && c ? KRR_OK : krr_fail(ctx, KRR_ERR_MEMORY, "out of host memory");
  if (st == KRR_OK) st = krr_features_draw(ctx, k, p, M, seed, W, c);
  if (st == KRR_OK) st = krr_upload_vec(ctx, prec, W, M * p, &F->W);
  if (st == KRR_OK) st = krr_upload_vec(ctx, prec, c, M, &F->c);
  for (int64_t j = 0; st == KRR_OK && j < M; j++) c[j] *= 2.0; /* exact */
  if (st == KRR_OK) st = krr_upload_vec(ctx, prec, c, M, &F->c2);
  for (int64_t j = 0; st == KRR_OK && j < M; j++) c[j] = 1.0;
  if (st == KRR_OK) st = krr_upload_vec(ctx, prec, c, M, &F->ones);
  free(W);
  free(c);
  return st;
}

static krr_status make(krr_ctx *ctx, krr_precision prec, const void *X, int64_t n, int p,
                       krr_kernel kernel, int64_t M, const feat_t *share, krr_op **out) {
  krr_op *op = NULL;
  *out = NULL;
  KTRY(krr_op_new(ctx, &features_vt, prec, n, p, kernel, sizeof(feat_t), &op));
  feat_t *F = (feat_t *)op->impl;
  op->nfeat = M;
  F->X = X;
  F->M = M;
  F->scale = sqrt(2.0 * krr_features_variance(&kernel) / (double)M);
  F->chunk = chunk_rows(n, M);
  if (share) { /* a subset: the parent's draws */
    F->W = share->W; F->c = share->c; F->c2 = share->c2; F->ones = share->ones;
  }
  F->own = share == NULL;
  *out = op;
  return KRR_OK;
}

krr_status krr_op_features_create(krr_ctx *ctx, const krr_problem *pb, const krr_kernel *k,
                                  int64_t M, uint64_t seed, krr_op **out) {
  *out = NULL;
  if (!k || !(k->bandwidth > 0) || !(k->bandwidth < INFINITY))
    return krr_fail(ctx, KRR_ERR_INPUT, "`bandwidth` must be positive and finite");
  if (!krr_kernel_name(k->type) && k->type != KRR_COMPOSITE)
    return krr_fail(ctx, KRR_ERR_INPUT, "unknown kernel code %d", (int)k->type);
  if (M < 1 || M > ((int64_t)1 << 31) - 1)
    return krr_fail(ctx, KRR_ERR_INPUT, "the number of random features must be in 1 .. 2^31 - 1, "
                    "got %lld", (long long)M);
  if (!pb || !pb->X || pb->n < 1 || pb->p < 1)
    return krr_fail(ctx, KRR_ERR_INPUT, "random features: no data");
  krr_op *op = NULL;
  KTRY(make(ctx, pb->prec, pb->X, pb->n, pb->p, *k, M, NULL, &op));
  krr_status st = upload_draws(ctx, pb->prec, k, pb->p, M, seed, FT(op));
  if (st != KRR_OK) {
    ft_free(op);
    return st;
  }
  *out = op;
  return KRR_OK;
}

/* ---- theta and prediction ------------------------------------------------------ */

krr_status krr_op_features_theta(krr_op *op, const void *alpha, int m, double *theta_host) {
  krr_ctx *ctx = op->ctx;
  const int64_t nf = op->nfeat, n = op->nloc;
  if (nf <= 0 || !op->vt->features)
    return krr_fail(ctx, KRR_ERR_INPUT, "the %s operator has no finite feature map", op->vt->name);
  if (m < 1) return krr_fail(ctx, KRR_ERR_INPUT, "theta: need m >= 1");
  int64_t chunk = chunk_rows(n, nf);
  krr_arena a;
  krr_arena_init(&a, ctx);
  krr_block blk;
  void *Z = krr_arena_dev(&a, chunk * nf, op->es), *T = krr_arena_dev(&a, nf * m, op->es);
  krr_status st = KRR_ALLOCATED(&a, Z, T);
  if (st == KRR_OK) st = krr_block_alloc(op, &a, chunk, &blk);
  for (int64_t r0 = 0; st == KRR_OK && r0 < n; r0 += chunk) {
    int64_t cnt = KRR_MIN(chunk, n - r0);
    st = krr_poll(ctx);
    if (st == KRR_OK) st = krr_block_range(op, &blk, r0, cnt);
    if (st == KRR_OK) st = op->vt->features(op, &blk, Z, cnt);
    if (st == KRR_OK)
      st = KOP(ctx, op->prec, gemm, 1, 0, nf, m, cnt, 1.0, Z, cnt, KAT(alpha, r0, op->es), n,
               r0 ? 1.0 : 0.0, T, nf);
  }
  if (st == KRR_OK) st = krr_download_vec(ctx, op->prec, T, nf * m, theta_host);
  krr_arena_free(&a);
  return st;
}

krr_status krr_features_apply(krr_ctx *ctx, const krr_kernel *k, int p, int64_t M, uint64_t seed,
                              const double *xnew, int64_t nnew, const double *theta, int m,
                              double *out) {
  if (p < 1 || M < 1 || m < 1 || nnew < 0)
    return krr_fail(ctx, KRR_ERR_INPUT, "features apply: need p, M, m >= 1 and nnew >= 0");
  if (!k || !(k->bandwidth > 0) || !(k->bandwidth < INFINITY))
    return krr_fail(ctx, KRR_ERR_INPUT, "`bandwidth` must be positive and finite");
  if (nnew == 0) return KRR_OK;
  const krr_precision prec = KRR_DOUBLE;
  const size_t es = sizeof(double);
  feat_t F;
  memset(&F, 0, sizeof F);
  int64_t chunk = chunk_rows(nnew, M);
  krr_status st = upload_draws(ctx, prec, k, p, M, seed, &F);
  void *dth = NULL, *dX = NULL, *dZ = NULL, *dO = NULL;
  double *hx = (double *)malloc(es * (size_t)(chunk * p)), *ho = (double *)malloc(es * (size_t)(chunk * m));
  if (st == KRR_OK && (!hx || !ho)) st = krr_fail(ctx, KRR_ERR_MEMORY, "out of host memory");
  if (st == KRR_OK) st = krr_upload_vec(ctx, prec, theta, M * m, &dth);
  if (st == KRR_OK && !((dX = krr_dalloc(ctx, chunk * p, es)) && (dZ = krr_dalloc(ctx, chunk * M, es)) &&
                        (dO = krr_dalloc(ctx, chunk * m, es))))
    st = ctx->status;
  for (int64_t r0 = 0; st == KRR_OK && r0 < nnew; r0 += chunk) {
    int64_t cnt = KRR_MIN(chunk, nnew - r0);
    krr_points_rows_to_prec(prec, xnew, nnew, r0, cnt, p, hx);
    st = krr_poll(ctx);
    if (st == KRR_OK) st = ctx->ops->upload(ctx, dX, hx, es * (size_t)(cnt * p));
    if (st == KRR_OK)
      st = feat_eval(ctx, prec, F.W, F.c, 1.0, sqrt(2.0 * krr_features_variance(k) / (double)M), M,
                     p, dX, cnt, dZ, cnt);
    if (st == KRR_OK) st = KOP(ctx, prec, gemm, 0, 0, cnt, m, M, 1.0, dZ, cnt, dth, M, 0.0, dO, cnt);
    if (st == KRR_OK) st = ctx->ops->download(ctx, ho, dO, es * (size_t)(cnt * m));
    for (int q = 0; st == KRR_OK && q < m; q++)
      memcpy(out + r0 + (int64_t)q * nnew, ho + (int64_t)q * cnt, es * (size_t)cnt);
  }
  krr_dfree(ctx, &F.W); krr_dfree(ctx, &F.c); krr_dfree(ctx, &F.c2); krr_dfree(ctx, &F.ones);
  krr_dfree(ctx, &dth); krr_dfree(ctx, &dX); krr_dfree(ctx, &dZ); krr_dfree(ctx, &dO);
  free(hx); free(ho);
  return st;
}

krr_status krr_features_draws(krr_ctx *ctx, const krr_kernel *k, int p, int64_t M,
                              const uint64_t *seeds, const double *xnew, int64_t nnew,
                              const double *theta, int m, double *out) {
  if (m < 1 || !seeds) return krr_fail(ctx, KRR_ERR_INPUT, "features draws: need m >= 1 seeds");
  krr_status st = KRR_OK;
  for (int j = 0; st == KRR_OK && j < m; j++)
    st = krr_features_apply(ctx, k, p, M, seeds[j], xnew, nnew, theta + (int64_t)j * M, 1,
                            out + (int64_t)j * nnew);
  return st;
}
