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
  double scale;      /* sqrt(2 / M) */
  /* scratch, grown on demand (device unless said) */
  void *Z1, *Z2, *T, *v;
  int64_t Z1cap, Z2cap, Tcap, vcap;
  double *hv;        /* host, chunk */
} feat_t;

#define FT(op) ((feat_t *)(op)->impl)
#define XOP(op, name, ...) KOP((op)->ctx, (op)->prec, name, __VA_ARGS__)

/* ---- the spectral draws (host) ------------------------------------------- */

krr_status krr_features_draw(krr_ctx *ctx, const krr_kernel *k, int p, int64_t M, uint64_t seed,
                             double *W, double *c) {
  krr_kparams kp = krr_kparams_make(k);
  const uint64_t sw = krr_rng_stream(seed, 0x52FF, 1), sc = krr_rng_stream(seed, 0x52FF, 2),
                 sg = krr_rng_stream(seed, 0x52FF, 3);
  int dof = 0; /* Matern: 2 nu */
  switch (k->type) {
    case KRR_RBF: case KRR_LAPLACE: break;
    case KRR_MATERN12: dof = 1; break;
    case KRR_MATERN32: dof = 3; break;
    case KRR_MATERN52: dof = 5; break;
    default:
      return ctx ? krr_fail(ctx, KRR_ERR_INPUT, "random features: no spectral sampler for kernel "
                            "code %d", (int)k->type) : KRR_ERR_INPUT;
  }
  if (!(kp.a > 0) || !isfinite(kp.a))
    return ctx ? krr_fail(ctx, KRR_ERR_INPUT, "`bandwidth` must be positive and finite")
               : KRR_ERR_INPUT;
  const double two_pi = 6.283185307179586;
  for (int64_t j = 0; j < M; j++) {
    c[j] = two_pi * krr_rng_unif(sc, (uint64_t)j);
    double *w = W + j * (int64_t)p;
    uint64_t i0 = (uint64_t)j * (uint64_t)p;
    if (k->type == KRR_RBF) {
      const double s = sqrt(2.0 * kp.a); /* 1 / bandwidth */
      for (int l = 0; l < p; l++) w[l] = s * krr_rng_normal(sw, i0 + (uint64_t)l);
    } else if (k->type == KRR_LAPLACE) {
      for (int l = 0; l < p; l++)
        w[l] = kp.a * tan(3.141592653589793 * (krr_rng_unif(sw, i0 + (uint64_t)l) - 0.5));
    } else {
      double g = 0;
      for (int r = 0; r < dof; r++) {
        double z = krr_rng_normal(sg, (uint64_t)j * 5 + (uint64_t)r);
        g += z * z;
      }
      /* a / sqrt(2 nu) = 1 / l; divided by sqrt(g / (2 nu)) */
      const double s = kp.a / sqrt((double)dof) / sqrt(g / (double)dof);
      for (int l = 0; l < p; l++) w[l] = s * krr_rng_normal(sw, i0 + (uint64_t)l);
    }
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

/* out[i] = ||psi(x_i)||^2 = 1 + (1/M) sum_j cos(2 (w_j x_i + c_j)) */
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
    for (int64_t i = 0; i < cnt; i++) out[r0 + i] = 1.0 + F->hv[i];
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
  F->scale = sqrt(2.0 / (double)M);
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
  if (!krr_kernel_name(k->type))
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
      st = feat_eval(ctx, prec, F.W, F.c, 1.0, sqrt(2.0 / (double)M), M, p, dX, cnt, dZ, cnt);
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
