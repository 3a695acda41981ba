/* Derivatives of the kernel matrix with respect to the log bandwidth and the
 * log length scales, in double on the host (krr.h, krr_kernel_deriv_host).
 * They are the matrices dK/dtheta of the Gaussian-process likelihood's
 * gradient (Rasmussen and Williams 2006, eq. 5.9) and d^2K/dtheta dtheta' of
 * its Hessian, formed for the exact likelihood at sizes where K itself is
 * formed.  Every formula comes from the kernel list (kernel_math.h:
 * krr_kernel_eval, krr_kernel_dlog_s, krr_kernel_d2log_s and the length
 * scales' forms derived from them); this file only accumulates the
 * statistic t and the coordinates' parts of it. */
#include "data.h"
#include <stdlib.h>
#include "../kderiv_math.h"

/* points of X2 between polls */
#define KDERIV_POLL_COLS 64

/* n x p column-major into n x p row-major (point-contiguous) */
static void to_rows(const double *X, int64_t n, int p, double *R) {
  for (int64_t i = 0; i < n; i++)
    for (int c = 0; c < p; c++) R[i * p + c] = X[(int64_t)c * n + i];
}

/* one derivative code: 0 (none), -1 (log bandwidth) or 1..p (log ell_j) */
static int code_ok(int c, int p) { return c >= -1 && c <= p; }

static krr_status check_args(krr_ctx *ctx, const krr_kernel *k, int64_t n1, int64_t n2, int p,
                             const int *deriv, const int *deriv2, int nd) {
  if (!KRR_KERNEL_LISTED((int)k->type))
    return krr_fail(ctx, KRR_ERR_INPUT, "kernel derivative: unknown kernel code %d", (int)k->type);
  if (!(k->bandwidth > 0) || !isfinite(k->bandwidth))
    return krr_fail(ctx, KRR_ERR_INPUT,
                    "kernel derivative: the bandwidth must be positive and finite");
  if (n1 < 0 || n2 < 0 || p < 0 || nd < 0 || (nd > 0 && !deriv))
    return krr_fail(ctx, KRR_ERR_INPUT, "kernel derivative: invalid sizes");
  for (int c = 0; c < nd; c++)
    if (!code_ok(deriv[c], p) || (deriv2 && !code_ok(deriv2[c], p)))
      return krr_fail(ctx, KRR_ERR_INPUT,
                      "kernel derivative: code %d is not 0 (the kernel), -1 (log bandwidth) or a "
                      "column 1..%d (log length scale)",
                      code_ok(deriv[c], p) ? deriv2[c] : deriv[c], p);
  return KRR_OK;
}

/* coordinate j's part of the statistic (j >= 1) */
static double t_part(const double *a, const double *b, int j, int l1) {
  const double d = a[j - 1] - b[j - 1];
  return l1 ? fabs(d) : d * d;
}

/* the derivative (c1, c2) of one pair of points at statistic t */
static double deriv_at(krr_kparams kp, double t, const double *a, const double *b, int c1, int c2,
                       int l1) {
  if (c1 == 0) c1 = c2, c2 = 0;
  if (c2 == 0) return krr_ddot_deriv(kp, t, c1 > 0 ? a[c1 - 1] - b[c1 - 1] : 0, c1, l1);
  if (c1 < 0 && c2 < 0) return krr_kernel_d2log_s(kp, t);
  if (c1 < 0 || c2 < 0) return krr_kernel_d2log_s_ell(kp, t, t_part(a, b, c1 < 0 ? c2 : c1, l1));
  return krr_kernel_d2log_ell(kp, t, t_part(a, b, c1, l1), t_part(a, b, c2, l1), c1 == c2);
}

static krr_status deriv_host(krr_ctx *ctx, const krr_kernel *k, const double *X1, int64_t n1,
                             const double *X2, int64_t n2, int p, const int *deriv,
                             const int *deriv2, int nd, double *out) {
  KTRY(check_args(ctx, k, n1, n2, p, deriv, deriv2, nd));
  if (n1 == 0 || n2 == 0 || nd == 0) return KRR_OK;
  const krr_kparams kp = krr_kparams_make(k);
  const int l1 = krr_kernel_is_l1(kp.type);
  const int64_t nn = n1 * n2;
  double *R1 = (double *)malloc(sizeof(double) * (size_t)(n1 * (p > 0 ? p : 1)));
  double *R2 = (double *)malloc(sizeof(double) * (size_t)(n2 * (p > 0 ? p : 1)));
  if (!R1 || !R2) {
    free(R1);
    free(R2);
    return krr_fail(ctx, KRR_ERR_MEMORY, "kernel derivative: out of host memory (%lld x %d points)",
                    (long long)(n1 + n2), p);
  }
  to_rows(X1, n1, p, R1);
  to_rows(X2, n2, p, R2);
  krr_status st = KRR_OK;
  for (int64_t l = 0; l < n2; l++) {
    if (l % KDERIV_POLL_COLS == 0 && (st = krr_poll(ctx)) != KRR_OK) break;
    const double *b = R2 + l * p;
    for (int64_t i = 0; i < n1; i++) {
      const double *a = R1 + i * p;
      double t = 0;
      for (int c = 0; c < p; c++) {
        const double d = a[c] - b[c];
        t += l1 ? fabs(d) : d * d;
      }
      const int64_t at = l * n1 + i;
      for (int c = 0; c < nd; c++)
        out[c * nn + at] = deriv_at(kp, t, a, b, deriv[c], deriv2 ? deriv2[c] : 0, l1);
    }
  }
  free(R1);
  free(R2);
  return st;
}

/* blocks of columns per call of the host backend's kernel_deriv_dot (at
 * least; more with more threads), polled between calls */
#define KDERIV_DOT_BLOCKS 16

krr_status krr_kernel_deriv_dot_host(krr_ctx *ctx, const krr_kernel *k, const double *X, int64_t n,
                                     int p, const int *deriv, int nd, const double *W, double s,
                                     const double *U, int r, const double *T, double *out) {
  KTRY(check_args(ctx, k, n, n, p, deriv, NULL, nd));
  if (r < 0 || (r > 0 && !U) || (n > 0 && !W) || !isfinite(s))
    return krr_fail(ctx, KRR_ERR_INPUT, "kernel derivative: invalid weights");
  for (int c = 0; c < nd; c++) out[c] = 0;
  if (n == 0 || nd == 0) return KRR_OK;
  const int64_t nb = krr_ddot_blocks(n);
  double *part = (double *)malloc(sizeof(double) * (size_t)(nb * nd));
  const krr_ops *h = ctx->host_ops;
  const int own = !(h && h->kernel_deriv_dot); /* the blocks run here */
  double *scratch = own ? (double *)malloc(sizeof(double) * (size_t)krr_ddot_scratch(n)) : NULL;
  if (!part || (own && !scratch)) {
    free(part);
    free(scratch);
    return krr_fail(ctx, KRR_ERR_MEMORY, "kernel derivative: out of host memory");
  }
  const krr_kparams kp = krr_kparams_make(k);
  const krr_ddot d = {kp, krr_kernel_is_l1(kp.type), X, n, p, deriv, nd, W, s, U, r, T};
  const int64_t per = KDERIV_DOT_BLOCKS * (ctx->threads > 1 ? ctx->threads : 1);
  krr_status st = KRR_OK;
  for (int64_t b0 = 0; b0 < nb && st == KRR_OK; b0 += per) {
    const int64_t b1 = b0 + per < nb ? b0 + per : nb;
    if ((st = krr_poll(ctx)) != KRR_OK) break;
    if (own) {
      for (int64_t b = b0; b < b1; b++) krr_ddot_block(&d, b, part + b * nd, scratch);
    } else {
      st = h->kernel_deriv_dot(ctx, &d, b0, b1, part);
    }
  }
  /* the blocks' sums in their order, whoever computed them */
  for (int64_t b = 0; b < nb && st == KRR_OK; b++)
    for (int c = 0; c < nd; c++) out[c] += part[b * nd + c];
  free(part);
  free(scratch);
  return st;
}

krr_status krr_kernel_deriv_host(krr_ctx *ctx, const krr_kernel *k, const double *X1, int64_t n1,
                                 const double *X2, int64_t n2, int p, const int *deriv, int nd,
                                 double *out) {
  return deriv_host(ctx, k, X1, n1, X2, n2, p, deriv, NULL, nd, out);
}

krr_status krr_kernel_deriv2_host(krr_ctx *ctx, const krr_kernel *k, const double *X1, int64_t n1,
                                  const double *X2, int64_t n2, int p, const int *deriv,
                                  const int *deriv2, int nd, double *out) {
  return deriv_host(ctx, k, X1, n1, X2, n2, p, deriv, deriv2, nd, out);
}
