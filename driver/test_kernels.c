/* Standalone test of the CPU kernel primitives (no R):
 *   krr_cpu_kernel_mv_{d,s}, krr_cpu_kernel_block_{d,s}
 * against a naive double reference built from krr_kernel_eval, for all five
 * kernels, both precisions, every instruction-set variant this machine runs
 * (ASKOTCH_CPU_ISA = avx512, avx2, generic) and awkward sizes / leading
 * dimensions.  Also: K(x, x) == 1 exactly, untouched padding of OUT, and
 * the same bits run to run and for every thread count.  Also the kernel
 * list's rate and derivative columns and krr_kernel_deriv_host (run_derivs),
 * and the fused products of composite components krr_cpu_kprod_{mv,block}
 * against krr_kc_eval per component (run_prods).
 *
 * Tolerances (justified in the comments at each check):
 *   block, double: |K - Kref| <= 1e-14 Kref (1 + u) + 1e-300, u the exponent
 *                  argument a t (or a sqrt t); the (1 + u) factor is the
 *                  unavoidable amplification of a relative error in t.
 *   block, float : |K - Kref| <= 4e-6 Kref (1 + u) + 1e-30 (float t is
 *                  rounded to 6e-8 relative; the norm form for 10 <= p <= 32
 *                  and the GEMM form above cost at most a few more ulps of
 *                  |a|^2 + |b|^2, and recompute the pairs where that matters).
 *   mv: norm-wise per column ||out - ref|| / ||ref||: double 1e-13, float 1e-5.
 * Build/run: make -f driver/Makefile.kernels test
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "../src/cpu/cpu.h"
#include "../src/core/kcomp_math.h"

static int n_pass = 0, n_fail = 0;
static void check(int ok, const char *fmt, const char *isa, int kern, int prec, long n1, long n2,
                  int p, int q, double val) {
  if (ok) {
    n_pass++;
  } else {
    n_fail++;
    printf("FAIL %-14s isa=%-7s kernel=%d %s n1=%ld n2=%ld p=%d q=%d value=%.3e\n", fmt, isa, kern,
           prec ? "double" : "float", n1, n2, p, q, val);
  }
}

static uint64_t rng_state = 88172645463325252ULL;
static double urand(void) { /* xorshift64*, uniform (0,1) */
  rng_state ^= rng_state >> 12;
  rng_state ^= rng_state << 25;
  rng_state ^= rng_state >> 27;
  return ((rng_state * 2685821657736338717ULL) >> 11) * (1.0 / 9007199254740992.0) + 1e-17;
}
static double nrand(void) { return sqrt(-2 * log(urand())) * cos(6.283185307179586 * urand()); }

static double bw_for(int type, int p) {
  switch (type) {
    case KRR_RBF: return sqrt((double)p); /* a t ~ 1 on average */
    case KRR_LAPLACE: return (double)p;   /* E|x - y|_1 ~ 1.13 p */
    default: return sqrt(2.0 * p);        /* d ~ sqrt(2 p) */
  }
}

/* t (double) between rows of double copies of the (possibly float) data */
static double tstat(const double *x, const double *y, int p, int l1) {
  double t = 0;
  for (int k = 0; k < p; k++) {
    double d = x[k] - y[k];
    t += l1 ? fabs(d) : d * d;
  }
  return t;
}
static double uarg(krr_kparams kp, double t) {
  return (kp.type == KRR_RBF || kp.type == KRR_LAPLACE) ? kp.a * t : kp.a * sqrt(t);
}

/* every coordinate of a case's points is shifted by this much (run_case):
 * far from the origin, as raw longitudes or years are, the norm form of the
 * distances (tile_norm_t) depends on its centring */
static double g_shift = 0;
/* with g_near > 0 the duplicates of X1 rows in X2 move by g_near N(0, 1) in
 * every coordinate and the bandwidth is 4 g_near: near pairs with kernel
 * values of order 1, the case where distances must come from differences */
static double g_near = 0;

/* One case: data in double (Xd1, Xd2 hold the values actually used, i.e. the
 * float-rounded ones for prec 0). */
static void run_case(const char *isa, int type, int prec, long n1, long n2, int p, int q,
                     int threads) {
  const long ldv = n2 + 3, ldo = n1 + 5, ldb = n1 + 2;
  double *X1 = malloc(sizeof(double) * n1 * p), *X2 = malloc(sizeof(double) * n2 * p);
  double *V = malloc(sizeof(double) * ldv * q);
  for (long i = 0; i < n1 * p; i++) X1[i] = nrand();
  for (long j = 0; j < n2 * p; j++) X2[j] = nrand();
  /* duplicates and near-duplicates of X1 rows inside X2 */
  for (long j = 0; j < n2; j += 3) {
    long i = (j * 7) % n1;
    for (int k = 0; k < p; k++) X2[j * p + k] = X1[i * p + k];
    if (j % 2 == 1 && p > 1) X2[j * p] += 1e-4; /* near pair */
    if (g_near > 0)
      for (int k = 0; k < p; k++) X2[j * p + k] += g_near * nrand();
  }
  for (long i = 0; i < n1 * p; i++) X1[i] += g_shift;
  for (long j = 0; j < n2 * p; j++) X2[j] += g_shift;
  for (long i = 0; i < ldv * q; i++) V[i] = nrand();
  if (prec == 0) { /* round to float so the reference sees the same inputs */
    for (long i = 0; i < n1 * p; i++) X1[i] = (float)X1[i];
    for (long i = 0; i < n2 * p; i++) X2[i] = (float)X2[i];
    for (long i = 0; i < ldv * q; i++) V[i] = (float)V[i];
  }
  krr_kernel kern = {.type = (krr_kernel_type)type,
                     .bandwidth = g_near > 0 ? 4 * g_near : bw_for(type, p)};
  krr_kparams kp = krr_kparams_make(&kern);
  int l1 = krr_kernel_is_l1(type);

  /* reference block and mv */
  double *Kr = malloc(sizeof(double) * n1 * n2), *U = malloc(sizeof(double) * n1 * n2);
  for (long j = 0; j < n2; j++)
    for (long i = 0; i < n1; i++) {
      double t = tstat(X1 + i * p, X2 + j * p, p, l1);
      Kr[j * n1 + i] = krr_kernel_eval(kp, t);
      U[j * n1 + i] = uarg(kp, t);
    }
  double *ref = calloc(n1 * q, sizeof(double));
  for (int c = 0; c < q; c++)
    for (long j = 0; j < n2; j++) {
      double v = V[c * ldv + j];
      for (long i = 0; i < n1; i++) ref[c * n1 + i] += Kr[j * n1 + i] * v;
    }

  krr_ctx ctx;
  memset(&ctx, 0, sizeof ctx);
  ctx.threads = threads;
  const double SENT = 12345.0;
  double *outd = malloc(sizeof(double) * ldo * q), *outd2 = malloc(sizeof(double) * ldo * q);
  double *Kd = malloc(sizeof(double) * ldb * n2);
  krr_status st1, st2, st3, st4;
  if (prec == 1) {
    for (long i = 0; i < ldo * q; i++) outd[i] = outd2[i] = SENT;
    for (long i = 0; i < ldb * n2; i++) Kd[i] = SENT;
    st1 = krr_cpu_kernel_mv_d(&ctx, &kern, X1, n1, X2, n2, p, V, ldv, q, outd, ldo);
    st2 = krr_cpu_kernel_mv_d(&ctx, &kern, X1, n1, X2, n2, p, V, ldv, q, outd2, ldo);
    st3 = krr_cpu_kernel_block_d(&ctx, &kern, X1, n1, X2, n2, p, Kd, ldb);
    st4 = KRR_OK;
  } else {
    float *X1f = malloc(sizeof(float) * n1 * p), *X2f = malloc(sizeof(float) * n2 * p);
    float *Vf = malloc(sizeof(float) * ldv * q), *o1 = malloc(sizeof(float) * ldo * q);
    float *o2 = malloc(sizeof(float) * ldo * q), *Kf = malloc(sizeof(float) * ldb * n2);
    for (long i = 0; i < n1 * p; i++) X1f[i] = (float)X1[i];
    for (long i = 0; i < n2 * p; i++) X2f[i] = (float)X2[i];
    for (long i = 0; i < ldv * q; i++) Vf[i] = (float)V[i];
    for (long i = 0; i < ldo * q; i++) o1[i] = o2[i] = (float)SENT;
    for (long i = 0; i < ldb * n2; i++) Kf[i] = (float)SENT;
    st1 = krr_cpu_kernel_mv_s(&ctx, &kern, X1f, n1, X2f, n2, p, Vf, ldv, q, o1, ldo);
    st2 = krr_cpu_kernel_mv_s(&ctx, &kern, X1f, n1, X2f, n2, p, Vf, ldv, q, o2, ldo);
    st3 = krr_cpu_kernel_block_s(&ctx, &kern, X1f, n1, X2f, n2, p, Kf, ldb);
    st4 = KRR_OK;
    for (long i = 0; i < ldo * q; i++) {
      outd[i] = o1[i];
      outd2[i] = o2[i];
    }
    for (long i = 0; i < ldb * n2; i++) Kd[i] = Kf[i];
    free(X1f);
    free(X2f);
    free(Vf);
    free(o1);
    free(o2);
    free(Kf);
  }
  check(st1 == KRR_OK && st2 == KRR_OK && st3 == KRR_OK && st4 == KRR_OK, "status", isa, type, prec,
        n1, n2, p, q, 0);

  /* block: per-entry accuracy, exact diagonal, untouched padding */
  double worst = 0;
  int diag_ok = 1, pad_ok = 1;
  const double rt = prec ? 1e-14 : 4e-6, at = prec ? 1e-300 : 1e-30;
  for (long j = 0; j < n2; j++) {
    for (long i = 0; i < n1; i++) {
      double k = Kd[j * ldb + i], r = Kr[j * n1 + i];
      double e = fabs(k - r) / (rt * r * (1 + U[j * n1 + i]) + at);
      if (!(e <= worst)) worst = e; /* also catches NaN */
      if (memcmp(X1 + i * p, X2 + j * p, sizeof(double) * p) == 0 && k != 1.0) diag_ok = 0;
    }
    for (long i = n1; i < ldb; i++)
      if (Kd[j * ldb + i] != SENT) pad_ok = 0;
  }
  check(worst <= 1, "block-accuracy", isa, type, prec, n1, n2, p, q, worst);
  check(diag_ok, "K(x,x)==1", isa, type, prec, n1, n2, p, q, 0);
  check(pad_ok, "block-ldo-pad", isa, type, prec, n1, n2, p, q, 0);

  /* mv: norm-wise relative error per column, padding, determinism */
  double mverr = 0;
  int mvpad = 1, det = 1;
  for (int c = 0; c < q; c++) {
    double num = 0, den = 0;
    for (long i = 0; i < n1; i++) {
      double d = outd[c * ldo + i] - ref[c * n1 + i];
      num += d * d;
      den += ref[c * n1 + i] * ref[c * n1 + i];
    }
    double e = sqrt(num) / (sqrt(den) + 1e-300);
    if (!(e <= mverr)) mverr = e;
    for (long i = n1; i < ldo; i++)
      if (outd[c * ldo + i] != SENT) mvpad = 0;
  }
  if (memcmp(outd, outd2, sizeof(double) * ldo * q) != 0) det = 0;
  check(mverr <= (prec ? 1e-13 : 1e-5), "mv-accuracy", isa, type, prec, n1, n2, p, q, mverr);
  check(mvpad, "mv-ldo-pad", isa, type, prec, n1, n2, p, q, 0);
  check(det, "mv-determinism", isa, type, prec, n1, n2, p, q, 0);
  if (getenv("KTEST_VERBOSE"))
    printf(
        "  %-7s k=%d %s n1=%5ld n2=%5ld p=%3d q=%3d thr=%d  block err/tol %.2f  mv rel err %.2e\n",
        isa, type, prec ? "d" : "s", n1, n2, p, q, threads, worst, mverr);

  free(X1);
  free(X2);
  free(V);
  free(Kr);
  free(U);
  free(ref);
  free(outd);
  free(outd2);
  free(Kd);
}

/* Same call with 2 threads, repeated, and with 1 thread: bitwise identical
 * for the same count; also exact-zero distance on a self kernel matrix. */
/* Bitwise the same result run to run and for every thread count 1..4: a
 * product's work items and its column groups are fixed by the sizes alone,
 * and every item is summed whole by one thread (kernels_t.c.inc, mv). */
static void run_determinism(const char *isa, int prec) {
  const long n = 1500;
  const int ps[2] = {10, 200};
  for (int pi = 0; pi < 2; pi++) {
    int p = ps[pi];
    for (int q = 1; q <= 100; q += 99) {
      double *X = malloc(sizeof(double) * n * p), *V = malloc(sizeof(double) * n * q);
      for (long i = 0; i < n * p; i++) X[i] = nrand();
      for (long i = 0; i < n * q; i++) V[i] = nrand();
      krr_kernel kern = {.type = KRR_MATERN32, .bandwidth = bw_for(KRR_MATERN32, p)};
      krr_ctx ctx;
      memset(&ctx, 0, sizeof ctx);
      int same = 1, selfdiag = 1;
      /* the full product (n1 = n) and the small-n1 path (columns split) */
      const size_t es = prec ? sizeof(double) : sizeof(float);
      void *ref = malloc(es * n * q), *ref5 = malloc(es * 5 * q), *out = malloc(es * n * q);
      float *Xf = malloc(sizeof(float) * n * p), *Vf = malloc(sizeof(float) * n * q);
      for (long i = 0; i < n * p; i++) Xf[i] = (float)X[i];
      for (long i = 0; i < n * q; i++) Vf[i] = (float)V[i];
      for (int thr = 1; thr <= 4; thr++) {
        ctx.threads = thr;
        for (int rep = 0; rep < 2; rep++)
          for (long n1 = 5; n1 <= n; n1 += n - 5) {
            void *dst = thr == 1 && rep == 0 ? (n1 == 5 ? ref5 : ref) : out;
            if (prec) krr_cpu_kernel_mv_d(&ctx, &kern, X, n1, X, n, p, V, n, q, dst, n1);
            else krr_cpu_kernel_mv_s(&ctx, &kern, Xf, n1, Xf, n, p, Vf, n, q, dst, n1);
            if (dst == out && memcmp(out, n1 == 5 ? ref5 : ref, es * n1 * q)) same = 0;
          }
      }
      if (!prec) {
        float *K = malloc(sizeof(float) * 300 * 300);
        krr_cpu_kernel_block_s(&ctx, &kern, Xf, 300, Xf, 300, p, K, 300);
        for (long i = 0; i < 300; i++)
          if (K[i * 300 + i] != 1.0f) selfdiag = 0;
        free(K);
      }
      check(same, "thread-determinism", isa, KRR_MATERN32, prec, n, n, p, q, 0);
      check(selfdiag, "self-diag==1", isa, KRR_MATERN32, prec, n, n, p, q, 0);
      free(ref);
      free(ref5);
      free(out);
      free(Xf);
      free(Vf);
      free(X);
      free(V);
    }
  }
}

/* The thread policy: teams grow with the work, one thread per
 * KRR_WORK_PER_THREAD, capped by ctx->threads; and a call that gets a
 * 2-thread team on the split-column path (n1 = 5 rows, long rows) is bitwise
 * reproducible and gives 1 thread's bits. */
static void run_team(void) {
  krr_ctx ctx;
  memset(&ctx, 0, sizeof ctx);
  const double W = KRR_WORK_PER_THREAD;
  if (W > 0) {
    ctx.threads = 2;
    int ok = krr_cpu_team(&ctx, 0) == 1 && krr_cpu_team(&ctx, W) == 1 &&
             krr_cpu_team(&ctx, 1.5 * W) == 2 && krr_cpu_team(&ctx, 1e30) == 2;
    ctx.threads = 8;
    ok = ok && krr_cpu_team(&ctx, 3.5 * W) == 4 && krr_cpu_team(&ctx, 100 * W) == 8;
    ctx.threads = 1;
    ok = ok && krr_cpu_team(&ctx, 1e30) == 1;
    /* the mtcars-sized calls of a fit never wake a second thread */
    ctx.threads = 2;
    ok = ok && krr_cpu_team(&ctx, krr_cpu_work_kernel(32, 32, 10, 1)) == 1 &&
         krr_cpu_team(&ctx, krr_cpu_work_gemm(32, 32, 32, sizeof(double))) == 1;
    check(ok, "team-policy", "-", 0, 1, 0, 0, 0, 0, W);
  }
  const long n1 = 5, n2 = 200000;
  const int p = 10;
  krr_kernel kern = {.type = KRR_RBF, .bandwidth = bw_for(KRR_RBF, p)};
  double *X2 = malloc(sizeof(double) * n2 * p), *V = malloc(sizeof(double) * n2);
  for (long i = 0; i < n2 * p; i++) X2[i] = nrand();
  for (long i = 0; i < n2; i++) V[i] = nrand();
  double o1[5], a[5], b[5];
  ctx.threads = 1;
  krr_cpu_kernel_mv_d(&ctx, &kern, X2, n1, X2, n2, p, V, n2, 1, o1, n1);
  ctx.threads = 2;
  int same = 1;
  double err = 0, nrm = 0;
  for (int rep = 0; rep < 3; rep++) {
    krr_cpu_kernel_mv_d(&ctx, &kern, X2, n1, X2, n2, p, V, n2, 1, rep ? b : a, n1);
    if (rep && memcmp(a, b, sizeof a)) same = 0;
  }
  for (int i = 0; i < 5; i++) {
    err += (a[i] - o1[i]) * (a[i] - o1[i]);
    nrm += o1[i] * o1[i];
  }
  check(W <= 0 || krr_cpu_team(&ctx, krr_cpu_work_kernel(n1, n2, p, 1)) == 2, "team-2-threads", "-",
        KRR_RBF, 1, n1, n2, p, 1, 0);
  check(same, "team-determinism", "-", KRR_RBF, 1, n1, n2, p, 1, 0);
  /* the same bits as one thread (the column groups do not depend on the team) */
  check(memcmp(a, o1, sizeof a) == 0, "team-vs-1-thread", "-", KRR_RBF, 1, n1, n2, p, 1,
        sqrt(err / nrm));
  free(X2);
  free(V);
}

static void run_errors(void) {
  krr_ctx ctx;
  memset(&ctx, 0, sizeof ctx);
  ctx.threads = 1;
  krr_kernel bad = {.type = KRR_RBF, .bandwidth = -1.0};
  double x[4] = {0, 1, 2, 3}, out[4];
  krr_status st = krr_cpu_kernel_mv_d(&ctx, &bad, x, 2, x, 2, 2, x, 2, 1, out, 2);
  check(st == KRR_ERR_INPUT && ctx.msg[0], "bad-bandwidth", "-", 0, 1, 2, 2, 2, 1, 0);
  krr_kernel ok = {.type = KRR_RBF, .bandwidth = 1.0};
  out[0] = out[1] = 5;
  st = krr_cpu_kernel_mv_d(&ctx, &ok, x, 2, x, 0, 2, x, 1, 1, out, 2);
  check(st == KRR_OK && out[0] == 0 && out[1] == 0, "n2=0-zeroes", "-", 0, 1, 2, 0, 2, 1, 0);
  /* a code outside KRR_KERNEL_LIST is an input error, never another kernel */
  const int codes[2] = {-1, KRR_N_KERNELS};
  for (int c = 0; c < 2; c++) {
    krr_kernel unk = {.type = (krr_kernel_type)codes[c], .bandwidth = 1.0};
    double K[4] = {7, 7, 7, 7};
    float xf[4] = {0, 1, 2, 3}, of[4] = {7, 7, 7, 7};
    ctx.msg[0] = 0;
    st = krr_cpu_kernel_mv_d(&ctx, &unk, x, 2, x, 2, 2, x, 2, 1, out, 2);
    check(st == KRR_ERR_INPUT && strstr(ctx.msg, "unknown kernel code"), "unknown-kernel-mv", "-",
          codes[c], 1, 2, 2, 2, 1, 0);
    ctx.msg[0] = 0;
    st = krr_cpu_kernel_block_d(&ctx, &unk, x, 2, x, 2, 2, K, 2);
    check(st == KRR_ERR_INPUT && strstr(ctx.msg, "unknown kernel code") && K[0] == 7,
          "unknown-kernel-block", "-", codes[c], 1, 2, 2, 2, 0, 0);
    ctx.msg[0] = 0;
    st = krr_cpu_kernel_mv_s(&ctx, &unk, xf, 2, xf, 2, 2, xf, 2, 1, of, 2);
    check(st == KRR_ERR_INPUT && strstr(ctx.msg, "unknown kernel code") && of[0] == 7,
          "unknown-kernel-mv", "-", codes[c], 0, 2, 2, 2, 1, 0);
  }
  /* the reference never falls back to another kernel either */
  krr_kernel unk = {.type = (krr_kernel_type)KRR_N_KERNELS, .bandwidth = 1.0};
  krr_kparams kp = krr_kparams_make(&unk);
  check(isnan(kp.a) && isnan(krr_kernel_eval(kp, 1.0)), "unknown-kernel-ref", "-", KRR_N_KERNELS, 1,
        1, 1, 1, 1, 0);
}

/* A product of components (krr_kprod) against the product of krr_kc_eval
 * on double statistics: block entry-wise within 1e-13 (1 + |K|) in double
 * and 2e-5 (1 + |K|) in float (the statistics are summed in REAL, the data
 * spans a few length scales and periods), mv norm-wise (1e-12, 2e-5); OUT's
 * padding rows untouched. */
static double prod_ref(const krr_kprod *pr, const double *x, const double *y) {
  double v = 1;
  for (int e = 0; e < pr->ncomp; e++) {
    const int k0 = pr->off[e], kind = krr_kc_stat_kind(&pr->comp[e]);
    v *= krr_kc_eval(&pr->comp[e], krr_kc_stat_d(kind, x + k0, 1, y + k0, 1, pr->off[e + 1] - k0),
                     -1);
  }
  return v;
}

static void prod_case(const char *isa, const krr_kprod *pr, int id, int prec, long n1, long n2,
                      int q) {
  const int p = pr->off[pr->ncomp];
  const long ldo = n1 + 3;
  double *X1 = malloc(sizeof(double) * n1 * p), *X2 = malloc(sizeof(double) * n2 * p);
  double *V = malloc(sizeof(double) * n2 * q), *K = malloc(sizeof(double) * ldo * n2);
  double *O = malloc(sizeof(double) * ldo * q), *R = malloc(sizeof(double) * n1 * n2);
  float *f = malloc(sizeof(float) * (n1 * p + n2 * p + n2 * q + ldo * n2 + ldo * q));
  for (long i = 0; i < n1 * p; i++) X1[i] = 3 * urand();
  for (long i = 0; i < n2 * p; i++) X2[i] = 3 * urand();
  for (long i = 0; i < n2 * q; i++) V[i] = nrand();
  if (!prec) { /* the reference on the float-rounded data */
    for (long i = 0; i < n1 * p; i++) X1[i] = (float)X1[i];
    for (long i = 0; i < n2 * p; i++) X2[i] = (float)X2[i];
    for (long i = 0; i < n2 * q; i++) V[i] = (float)V[i];
  }
  for (long j = 0; j < n2; j++)
    for (long i = 0; i < n1; i++) R[j * n1 + i] = prod_ref(pr, X1 + i * p, X2 + j * p);
  for (long i = 0; i < ldo * n2; i++) K[i] = 7;
  for (long i = 0; i < ldo * q; i++) O[i] = 7;
  krr_ctx ctx;
  memset(&ctx, 0, sizeof ctx);
  ctx.threads = 2;
  krr_status st;
  if (prec) {
    st = krr_cpu_kprod_block_d(&ctx, pr, X1, n1, X2, n2, p, K, ldo);
    if (st == KRR_OK) st = krr_cpu_kprod_mv_d(&ctx, pr, X1, n1, X2, n2, p, V, n2, q, O, ldo);
  } else {
    float *x1 = f, *x2 = x1 + n1 * p, *v = x2 + n2 * p, *k = v + n2 * q, *o = k + ldo * n2;
    for (long i = 0; i < n1 * p; i++) x1[i] = (float)X1[i];
    for (long i = 0; i < n2 * p; i++) x2[i] = (float)X2[i];
    for (long i = 0; i < n2 * q; i++) v[i] = (float)V[i];
    for (long i = 0; i < ldo * n2; i++) k[i] = 7;
    for (long i = 0; i < ldo * q; i++) o[i] = 7;
    st = krr_cpu_kprod_block_s(&ctx, pr, x1, n1, x2, n2, p, k, ldo);
    if (st == KRR_OK) st = krr_cpu_kprod_mv_s(&ctx, pr, x1, n1, x2, n2, p, v, n2, q, o, ldo);
    for (long i = 0; i < ldo * n2; i++) K[i] = k[i];
    for (long i = 0; i < ldo * q; i++) O[i] = o[i];
  }
  check(st == KRR_OK, "prod-status", isa, id, prec, n1, n2, p, q, (double)st);
  const double tol = prec ? 1e-13 : 2e-5;
  double worst = 0;
  int pad = 1;
  for (long j = 0; j < n2; j++) {
    for (long i = 0; i < n1; i++) {
      const double e = fabs(K[j * ldo + i] - R[j * n1 + i]);
      if (!(e <= tol * (1 + fabs(R[j * n1 + i]))) && !(e <= worst)) worst = isnan(e) ? 1e300 : e;
    }
    for (long i = n1; i < ldo; i++) pad = pad && K[j * ldo + i] == 7;
  }
  check(worst == 0, "prod-block", isa, id, prec, n1, n2, p, q, worst);
  double rel = 0;
  for (int c = 0; c < q; c++) {
    double num = 0, den = 0;
    for (long i = 0; i < n1; i++) {
      double r = 0;
      for (long j = 0; j < n2; j++) r += R[j * n1 + i] * V[c * n2 + j];
      num += (O[c * ldo + i] - r) * (O[c * ldo + i] - r);
      den += r * r;
    }
    for (long i = n1; i < ldo; i++) pad = pad && O[c * ldo + i] == 7;
    const double e = sqrt(num / (den > 0 ? den : 1));
    if (!(e <= rel)) rel = isnan(e) ? 1e300 : e;
  }
  check(rel <= (prec ? 1e-12 : 2e-5), "prod-mv", isa, id, prec, n1, n2, p, q, rel);
  check(pad, "prod-padding", isa, id, prec, n1, n2, p, q, 0);
  free(X1);
  free(X2);
  free(V);
  free(K);
  free(O);
  free(R);
  free(f);
}

static krr_kcomp prod_comp(int family, int base, double bw, double p0, double p1, double p2) {
  krr_kcomp c;
  memset(&c, 0, sizeof c);
  c.family = family;
  c.base = base;
  c.bw = bw;
  c.par[0] = p0;
  c.par[1] = p1;
  c.par[2] = p2;
  return c;
}

static void run_prods(void) {
  /* (components, columns each): every family the products serve; the
   * listed L1 kernel; 40 columns (the statistic's 32-column chunks); and
   * eight components */
  krr_kprod pr[5];
  memset(pr, 0, sizeof pr);
  const krr_kcomp all[5] = {prod_comp(KRR_KF_LISTED, KRR_RBF, 1.2, 0, 0, 0),
                            prod_comp(KRR_KF_PERIODIC, 0, 0.8, 0.7, 0, 0),
                            prod_comp(KRR_KF_LISTED, KRR_LAPLACE, 2.0, 0, 0, 0),
                            prod_comp(KRR_KF_LINEAR, 0, 0, 0, 0, 0),
                            prod_comp(KRR_KF_POLY, 0, 0, 3, 0.3, 0.5)};
  const int cols0[5] = {2, 1, 3, 2, 2};
  pr[0].ncomp = 5;
  for (int e = 0; e < 5; e++) {
    pr[0].comp[e] = all[e];
    pr[0].off[e + 1] = pr[0].off[e] + cols0[e];
  }
  pr[1].ncomp = 2;
  pr[1].comp[0] = prod_comp(KRR_KF_LISTED, KRR_MATERN52, 6.0, 0, 0, 0);
  pr[1].comp[1] = prod_comp(KRR_KF_LISTED, KRR_LAPLACE, 30.0, 0, 0, 0);
  pr[1].off[1] = 40;
  pr[1].off[2] = 80;
  pr[2].ncomp = 8;
  for (int e = 0; e < 8; e++) {
    pr[2].comp[e] = prod_comp(KRR_KF_LISTED, e % KRR_N_KERNELS, 0.5 + e, 0, 0, 0);
    pr[2].off[e + 1] = e + 1;
  }
  pr[3].ncomp = 1; /* one periodic component alone */
  pr[3].comp[0] = prod_comp(KRR_KF_PERIODIC, 0, 1.5, 0.2, 0, 0);
  pr[3].off[1] = 1;
  /* great-circle km on (lon, lat) in degrees (the data's 0-3 degrees: up to
   * 470 km) times a kernel on a third column */
  pr[4].ncomp = 2;
  pr[4].comp[0] = prod_comp(KRR_KF_LISTED, KRR_MATERN52, 150.0, 0, 0, 0);
  pr[4].comp[0].metric = 1;
  pr[4].comp[1] = prod_comp(KRR_KF_LISTED, KRR_RBF, 1.0, 0, 0, 0);
  pr[4].off[1] = 2;
  pr[4].off[2] = 3;
  static const long sz[][3] = {{1, 1, 1}, {7, 33, 3}, {65, 777, 1}, {300, 600, 20}, {129, 513, 5}};
  const char *isas[3] = {"avx512", "avx2", "generic"};
  for (int s = 0; s < 3; s++) {
    setenv("ASKOTCH_CPU_ISA", isas[s], 1);
    for (int k = 0; k < 5; k++)
      for (int prec = 0; prec < 2; prec++)
        for (int z = 0; z < 5; z++)
          prod_case(isas[s], &pr[k], k, prec, sz[z][0], sz[z][1], (int)sz[z][2]);
  }
  unsetenv("ASKOTCH_CPU_ISA");
  /* what the products do not serve is an input error, OUT untouched */
  krr_ctx ctx;
  memset(&ctx, 0, sizeof ctx);
  ctx.threads = 1;
  double x[4] = {0, 1, 2, 3}, K[4] = {7, 7, 7, 7};
  krr_kprod bad = pr[3];
  bad.comp[0] = prod_comp(KRR_KF_MATERN, 0, 1.0, 1.3, 0, 0);
  krr_status st = krr_cpu_kprod_block_d(&ctx, &bad, x, 2, x, 2, 1, K, 2);
  check(st == KRR_ERR_INPUT && ctx.msg[0] && K[0] == 7, "prod-unserved", "-", 0, 1, 2, 2, 1, 0, 0);
  bad = pr[3]; /* great-circle distances need two columns and an L2 listed kernel */
  bad.comp[0].metric = 1;
  st = krr_cpu_kprod_mv_d(&ctx, &bad, x, 2, x, 2, 1, x, 2, 1, K, 2);
  check(st == KRR_ERR_INPUT && K[0] == 7, "prod-metric", "-", 0, 1, 2, 2, 1, 1, 0);
  st = krr_cpu_kprod_mv_d(&ctx, &pr[3], x, 2, x, 2, 2, x, 2, 1, K, 2);
  check(st == KRR_ERR_INPUT && K[0] == 7, "prod-columns", "-", 0, 1, 2, 2, 2, 1, 0);
}

/* The kernel list's rate and derivative columns (kernel_math.h: A, DLOGS,
 * krr_kernel_dlog_ell) against the reference kernel value, and
 * krr_kernel_deriv_host (src/core/data/kernel_deriv.c) against them.
 * Tolerances:
 *   rate a(s) s^m vs a(1): 1e-14 relative (a few roundings of s*s, one
 *     division and the product back);
 *   derivatives vs central differences in log s (log ell_j) with step
 *     h = 1e-4: truncation h^2/6 |d^3k/dlog s^3| <= 2e-9 |d^3k/dlog s^3|,
 *     the third derivative a polynomial in u times exp(-u) of at most a few
 *     units here, rounding 1e-16 / h = 1e-12; so 1e-7 absolute (values are
 *     at most about 1);
 *   the ARD derivatives summed over coordinates vs dK/dlog s: 1e-14
 *     relative (the shares t_j / t sum to 1 up to rounding);
 *   krr_kernel_deriv_host vs the reference functions: bitwise (the same
 *     statistic summed in the same order, the same inline formulas). */
static double k_at(int type, double s, double t) {
  krr_kernel k = {.type = (krr_kernel_type)type, .bandwidth = s};
  return krr_kernel_eval(krr_kparams_make(&k), t);
}
/* The second derivatives (kernel_math.h: DDLOGS, krr_kernel_d2log_ell,
 * krr_kernel_d2log_s_ell; krr_kernel_deriv2_host).  Tolerances as for the
 * first derivatives: central differences of the first derivative in log s
 * (log ell_i) with step h, 1e-7 absolute; the ARD second derivatives summed
 * over i, j vs d^2K/dlog s^2, and over i vs d^2K/dlog s dlog ell_j: 1e-13
 * relative; the host routine bitwise against the reference functions. */
static void run_derivs2(int type, krr_kparams kp, krr_kernel ks, double h) {
  const double ts[] = {0.0, 1e-9, 0.04, 0.3, 1.0, 2.5, 7.0, 40.0};
  const double s = ks.bandwidth;
  for (int i = 0; i < (int)(sizeof ts / sizeof *ts); i++) {
    krr_kernel kp1 = {.type = (krr_kernel_type)type, .bandwidth = s * exp(h)},
               km1 = {.type = (krr_kernel_type)type, .bandwidth = s * exp(-h)};
    const double fd = (krr_kernel_dlog_s(krr_kparams_make(&kp1), ts[i]) -
                       krr_kernel_dlog_s(krr_kparams_make(&km1), ts[i])) /
                      (2 * h);
    const double e = fabs(krr_kernel_d2log_s(kp, ts[i]) - fd);
    check(e <= 1e-7, "d2log-s", "-", type, 1, i, 0, 0, 0, e);
  }
  check(krr_kernel_d2log_s(kp, 0.0) == 0 && krr_kernel_d2log_s(kp, INFINITY) == 0, "d2log-s-limits",
        "-", type, 1, 0, 0, 0, 0, 0);
  const int l1 = krr_kernel_is_l1(type), p = 3;
  for (int rep = 0; rep < 20; rep++) {
    double x[3], y[3], xp[3], yp[3], xm[3], ym[3], tp[3], tot = 0, err = 0;
    for (int c = 0; c < p; c++) x[c] = nrand(), y[c] = nrand();
    const double t = tstat(x, y, p, l1);
    for (int c = 0; c < p; c++) tp[c] = l1 ? fabs(x[c] - y[c]) : (x[c] - y[c]) * (x[c] - y[c]);
    for (int i = 0; i < p; i++) {
      memcpy(xp, x, sizeof x), memcpy(yp, y, sizeof y);
      memcpy(xm, x, sizeof x), memcpy(ym, y, sizeof y);
      xp[i] *= exp(-h), yp[i] *= exp(-h), xm[i] *= exp(h), ym[i] *= exp(h);
      double row = 0;
      for (int j = 0; j < p; j++) {
        const double dp = xp[j] - yp[j], dm = xm[j] - ym[j];
        const double fd = (krr_kernel_dlog_ell(kp, tstat(xp, yp, p, l1), l1 ? fabs(dp) : dp * dp) -
                           krr_kernel_dlog_ell(kp, tstat(xm, ym, p, l1), l1 ? fabs(dm) : dm * dm)) /
                          (2 * h);
        const double g = krr_kernel_d2log_ell(kp, t, tp[i], tp[j], i == j);
        err = fmax(err, fabs(g - fd));
        row += g;
      }
      const double sj = krr_kernel_d2log_s_ell(kp, t, tp[i]);
      check(fabs(row - sj) <= 1e-13 * fmax(fabs(sj), 1e-300) + 1e-300, "d2log-s-ell-sum", "-", type,
            1, rep, i, p, 0, fabs(row - sj));
      tot += row;
    }
    check(err <= 1e-7, "d2log-ell", "-", type, 1, rep, 0, p, 0, err);
    const double hs = krr_kernel_d2log_s(kp, t);
    check(fabs(tot - hs) <= 1e-13 * fmax(fabs(hs), 1e-300) + 1e-300, "d2log-ell-sum", "-", type, 1,
          rep, 0, p, 0, fabs(tot - hs));
  }
  /* the host routine on pairs of codes */
  enum { N1 = 6, N2 = 4, ND = 6 };
  double X1[N1 * 3], X2[N2 * 3], out[N1 * N2 * ND];
  const int c1[ND] = {0, -1, -1, 1, 2, 0}, c2[ND] = {0, 0, -1, 1, 3, 2};
  for (int i = 0; i < N1 * p; i++) X1[i] = nrand();
  for (int i = 0; i < N2 * p; i++) X2[i] = nrand();
  krr_ctx ctx;
  memset(&ctx, 0, sizeof ctx);
  krr_status st = krr_kernel_deriv2_host(&ctx, &ks, X1, N1, X2, N2, p, c1, c2, ND, out);
  int same = st == KRR_OK;
  for (int l = 0; same && l < N2; l++)
    for (int i = 0; i < N1; i++) {
      double a[3], b[3], tq[3];
      for (int c = 0; c < p; c++) {
        a[c] = X1[c * N1 + i], b[c] = X2[c * N2 + l];
        tq[c] = l1 ? fabs(a[c] - b[c]) : (a[c] - b[c]) * (a[c] - b[c]);
      }
      const double t = tstat(a, b, p, l1);
      const int64_t at = (int64_t)l * N1 + i, nn = N1 * N2;
      same &= out[at] == krr_kernel_eval(kp, t) && out[nn + at] == krr_kernel_dlog_s(kp, t) &&
              out[2 * nn + at] == krr_kernel_d2log_s(kp, t) &&
              out[3 * nn + at] == krr_kernel_d2log_ell(kp, t, tq[0], tq[0], 1) &&
              out[4 * nn + at] == krr_kernel_d2log_ell(kp, t, tq[1], tq[2], 0) &&
              out[5 * nn + at] == krr_kernel_dlog_ell(kp, t, tq[1]);
    }
  check(same, "deriv2-host-ref", "-", type, 1, N1, N2, p, ND, st);
}

static void run_derivs(void) {
  const double h = 1e-4, s = 1.3;
  const double ts[] = {0.0, 1e-300, 1e-9, 0.04, 0.3, 1.0, 2.5, 7.0, 40.0};
  for (int type = 0; type < KRR_N_KERNELS; type++) {
    const int m = krr_kernel_rate_power(type);
    check(m == 1 || m == 2, "rate-power", "-", type, 1, 0, 0, 0, 0, m);
    krr_kernel k1 = {.type = (krr_kernel_type)type, .bandwidth = 1.0},
               ks = {.type = (krr_kernel_type)type, .bandwidth = s};
    const double a1 = krr_kparams_make(&k1).a;
    const double sv[] = {1e-3, 0.37, 1.0, 3.3, 1e3};
    for (int i = 0; i < 5; i++) {
      krr_kernel k = {.type = (krr_kernel_type)type, .bandwidth = sv[i]};
      const double e = fabs(krr_kparams_make(&k).a * pow(sv[i], m) / a1 - 1);
      check(e <= 1e-14, "rate-form", "-", type, 1, i, 0, 0, 0, e);
    }
    const krr_kparams kp = krr_kparams_make(&ks);
    for (int i = 0; i < (int)(sizeof ts / sizeof *ts); i++) {
      const double fd = (k_at(type, s * exp(h), ts[i]) - k_at(type, s * exp(-h), ts[i])) / (2 * h);
      const double e = fabs(krr_kernel_dlog_s(kp, ts[i]) - fd);
      check(e <= 1e-7, "dlog-s", "-", type, 1, i, 0, 0, 0, e);
    }
    check(krr_kernel_dlog_s(kp, 0.0) == 0 && krr_kernel_dlog_s(kp, 1e300) == 0 &&
              krr_kernel_dlog_s(kp, INFINITY) == 0,
          "dlog-s-limits", "-", type, 1, 0, 0, 0, 0, 0);
    /* ARD: coordinate j of both points divided by ell_j = exp(+-h) */
    const int l1 = krr_kernel_is_l1(type), p = 3;
    for (int rep = 0; rep < 20; rep++) {
      double x[3], y[3], xp[3], yp[3], xm[3], ym[3], sum = 0;
      for (int c = 0; c < p; c++) x[c] = nrand(), y[c] = nrand();
      const double t = tstat(x, y, p, l1);
      for (int j = 0; j < p; j++) {
        memcpy(xp, x, sizeof x), memcpy(yp, y, sizeof y);
        memcpy(xm, x, sizeof x), memcpy(ym, y, sizeof y);
        xp[j] *= exp(-h), yp[j] *= exp(-h), xm[j] *= exp(h), ym[j] *= exp(h);
        const double fd = (krr_kernel_eval(kp, tstat(xp, yp, p, l1)) -
                           krr_kernel_eval(kp, tstat(xm, ym, p, l1))) /
                          (2 * h);
        const double d = x[j] - y[j];
        const double g = krr_kernel_dlog_ell(kp, t, l1 ? fabs(d) : d * d);
        check(fabs(g - fd) <= 1e-7, "dlog-ell", "-", type, 1, rep, j, p, 0, fabs(g - fd));
        sum += g;
      }
      const double ds = krr_kernel_dlog_s(kp, t);
      check(fabs(sum - ds) <= 1e-14 * fabs(ds), "dlog-ell-sum", "-", type, 1, rep, 0, p, 0,
            fabs(sum - ds));
    }
    /* the host routine: codes 0, -1, 1..p on column-major points */
    enum { N1 = 7, N2 = 5, ND = 5 };
    double X1[N1 * 3], X2[N2 * 3], out[N1 * N2 * ND];
    const int codes[ND] = {0, -1, 1, 2, 3};
    for (int i = 0; i < N1 * p; i++) X1[i] = nrand();
    for (int i = 0; i < N2 * p; i++) X2[i] = nrand();
    for (int c = 0; c < p; c++) X2[c * N2] = X1[c * N1]; /* row 0 of both equal: t = 0 */
    krr_ctx ctx;
    memset(&ctx, 0, sizeof ctx);
    krr_status st = krr_kernel_deriv_host(&ctx, &ks, X1, N1, X2, N2, p, codes, ND, out);
    check(st == KRR_OK, "deriv-host", "-", type, 1, N1, N2, p, ND, st);
    int same = 1;
    for (int l = 0; l < N2; l++)
      for (int i = 0; i < N1; i++) {
        double a[3], b[3];
        for (int c = 0; c < p; c++) a[c] = X1[c * N1 + i], b[c] = X2[c * N2 + l];
        const double t = tstat(a, b, p, l1);
        const int64_t at = (int64_t)l * N1 + i, nn = N1 * N2;
        same &= out[at] == krr_kernel_eval(kp, t) && out[nn + at] == krr_kernel_dlog_s(kp, t);
        for (int j = 0; j < p; j++) {
          const double d = a[j] - b[j];
          same &= out[(2 + j) * nn + at] == krr_kernel_dlog_ell(kp, t, l1 ? fabs(d) : d * d);
        }
      }
    check(same && out[0] == 1 && out[N1 * N2] == 0, "deriv-host-ref", "-", type, 1, N1, N2, p, ND,
          0);
    run_derivs2(type, kp, ks, h);
    /* bad codes, kernel and bandwidth are input errors */
    const int bad[2] = {-2, p + 1};
    for (int b = 0; b < 2; b++) {
      memset(&ctx, 0, sizeof ctx);
      st = krr_kernel_deriv_host(&ctx, &ks, X1, N1, X2, N2, p, &bad[b], 1, out);
      check(st == KRR_ERR_INPUT && ctx.msg[0], "deriv-bad-code", "-", type, 1, 0, 0, p, bad[b], st);
    }
  }
  krr_ctx ctx;
  memset(&ctx, 0, sizeof ctx);
  double x[2] = {0, 1}, o[4];
  const int c0 = 0;
  krr_kernel unk = {.type = (krr_kernel_type)KRR_N_KERNELS, .bandwidth = 1.0},
             neg = {.type = KRR_RBF, .bandwidth = 0.0};
  krr_status st = krr_kernel_deriv_host(&ctx, &unk, x, 2, x, 2, 1, &c0, 1, o);
  check(st == KRR_ERR_INPUT && strstr(ctx.msg, "unknown kernel code"), "deriv-unknown", "-",
        KRR_N_KERNELS, 1, 2, 2, 1, 1, st);
  memset(&ctx, 0, sizeof ctx);
  st = krr_kernel_deriv_host(&ctx, &neg, x, 2, x, 2, 1, &c0, 1, o);
  check(st == KRR_ERR_INPUT, "deriv-bandwidth", "-", 0, 1, 2, 2, 1, 1, st);
  check(krr_kernel_rate_power(KRR_N_KERNELS) == 0, "rate-power-unknown", "-", KRR_N_KERNELS, 1, 0,
        0, 0, 0, 0);
}

int main(int argc, char **argv) {
  (void)argc;
  (void)argv;
  const char *isas[3] = {"avx512", "avx2", "generic"};
  static const long sizes[][4] = {
      /* n1, n2, p, q */
      {1, 1, 1, 1},
      {7, 33, 3, 3},
      {33, 7, 10, 1},
      {1, 1000, 10, 1},
      {1000, 7, 1, 3},
      {33, 1000, 3, 100},
      {1000, 33, 10, 1},
      {7, 1000, 100, 3},
      {33, 33, 784, 1},
      {1000, 7, 784, 100},
      {200, 1000, 100, 1},
      {300, 600, 32, 5},
      {129, 513, 33, 1},
      {7, 7, 784, 3},
      /* tile_dot's four-column blocks with remainder columns and an odd row */
      {65, 777, 10, 10},
      {31, 200, 4, 16},
      /* odd positions run with 2 threads: these two are large enough for a
       * 2-thread team under KRR_WORK_PER_THREAD (cpu.h); the first has 2 row
       * tiles, so its columns are split in 2 groups (fixed-order reduction) */
      {64, 64, 3, 2},
      {128, 8000, 10, 3},
      {3, 3, 2, 1},
      {800, 1500, 5, 1}};
  const int nsizes = (int)(sizeof sizes / sizeof sizes[0]);
  for (int s = 0; s < 3; s++) {
    setenv("ASKOTCH_CPU_ISA", isas[s], 1);
    for (int type = 0; type < KRR_N_KERNELS; type++)
      for (int prec = 0; prec < 2; prec++)
        for (int z = 0; z < nsizes; z++)
          run_case(isas[s], type, prec, sizes[z][0], sizes[z][1], (int)sizes[z][2],
                   (int)sizes[z][3], 1 + (z % 2));
    for (int prec = 0; prec < 2; prec++) run_determinism(isas[s], prec);
    /* points far from the origin (the norm form's centring), p on both sides
     * of KRR_P_NORM, fused and stored products */
    static const long far[][4] = {{300, 600, 10, 1}, {1000, 33, 8, 1}, {65, 777, 12, 20}};
    const uint64_t rng_kept = rng_state; /* the later cases see the same data as without these */
    g_shift = 1e3;
    for (int type = 0; type < KRR_N_KERNELS; type++)
      for (int prec = 0; prec < 2; prec++)
        for (int z = 0; z < 3; z++)
          run_case(isas[s], type, prec, far[z][0], far[z][1], (int)far[z][2], (int)far[z][3],
                   1 + (z % 2));
    g_shift = 0;
    /* near pairs in the norm form's range (its recomputation from the raw
     * points) */
    static const long near[][4] = {{300, 600, 12, 1}, {1000, 33, 16, 3}};
    g_near = 1e-6;
    for (int type = 0; type < KRR_N_KERNELS; type++)
      for (int prec = 0; prec < 2; prec++)
        for (int z = 0; z < 2; z++)
          run_case(isas[s], type, prec, near[z][0], near[z][1], (int)near[z][2], (int)near[z][3],
                   1 + (z % 2));
    g_near = 0;
    rng_state = rng_kept;
  }
  unsetenv("ASKOTCH_CPU_ISA");
  run_team();
  run_errors();
  run_derivs();
  run_prods();
  printf("%d passed, %d failed\n", n_pass, n_fail);
  return n_fail ? 1 : 0;
}
