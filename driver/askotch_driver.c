/* Standalone driver for the askotch core (no R): runs the solvers on
 * synthetic data through the same init/step/diag/weights/free loop as R,
 * checks them against exact solutions, and times them.  The CUDA backend is
 * verified on GPU machines (which have no R) through this program.
 *
 *   askotch_driver test  [--backend cpu|cuda] [--threads T]
 *   askotch_driver parity --backend cuda   (every solver: device vs CPU vs exact)
 *   askotch_driver bench [--backend cpu|cuda] [--n N] [--p P] [--b B] [--r R]
 *                        [--precision single|double] [--kernel K] [--iters I]
 *   askotch_driver fit   (same options as bench; runs to --tol and reports the
 *                        exact residual and time)
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "../src/core/ops.h"
#include "../src/core/kernel_math.h"
#include "../src/core/rng.h"

#include "test_common.h"

static const char *kernel_names[] = {"rbf", "laplace", "matern12", "matern32", "matern52"};

typedef struct {
  const char *cmd, *backend;
  int64_t n, b;
  int p, r, threads, iters, prec, kernel, m, solver;
  double tol, lambda_unsc, bandwidth;
  uint64_t seed;
} args_t;



/* Runs a solver to tol (exact residual checked every pass) or max_iters. */
static krr_status run_solver(krr_ctx *ctx, const krr_problem *pb, krr_solver_opts *o, double tol,
                             int64_t max_iters, double *w, double *relres, krr_diag *dg,
                             double *secs) {
  krr_solver *s = NULL;
  double t0 = krr_now();
  krr_status st = krr_solver_init(ctx, pb, o, &s);
  if (st != KRR_OK) return st;
  int64_t done = 0;
  *relres = INFINITY;
  while (done < max_iters) {
    krr_diag d;
    krr_solver_diag(s, &d);
    int64_t chunk = d.block_size > 0 ? (pb->n + d.block_size - 1) / d.block_size : 1;
    if (chunk > max_iters - done) chunk = max_iters - done;
    if ((st = krr_solver_step(s, chunk)) != KRR_OK) break;
    done += chunk;
    krr_solver_diag(s, &d);
    if ((st = krr_solver_residual(s, relres)) != KRR_OK) break;
    if (*relres <= tol || d.done) break;
  }
  *secs = krr_now() - t0;
  if (st == KRR_OK) st = krr_solver_weights(s, w);
  krr_solver_diag(s, dg);
  krr_solver_free(s);
  return st;
}

static int cmd_test(const args_t *a) {
  const krr_ops *ops = backend(a->backend);
  krr_ctx ctx;
  if (krr_ctx_init(&ctx, ops, a->threads, 0) != KRR_OK) { printf("ctx: %s\n", ctx.msg); return 1; }
  int64_t n = 600;
  int p = 4, m = 2;
  double *X = malloc(sizeof(double) * n * p), *y = malloc(sizeof(double) * n * m);
  double *w_ref = malloc(sizeof(double) * n * m), *w = malloc(sizeof(double) * n * m);
  make_data(n, p, m, 42, X, y);

  /* kernel values: K(x, x) == 1 exactly and agreement with the reference */
  for (int kt = 0; kt < KRR_N_KERNELS; kt++)
    for (int pr = 0; pr < 2; pr++) {
      krr_kernel k = {(krr_kernel_type)kt, 1.5};
      int64_t nn = 50;
      double *Km = malloc(sizeof(double) * nn * nn);
      krr_status st = krr_kernel_matrix_host(&ctx, pr ? KRR_DOUBLE : KRR_FLOAT, &k, X, n > nn ? nn : n,
                                             X, nn, p, Km);
      /* X is column-major n x p: the first nn rows as a column-major view need ld n;
       * krr_kernel_matrix_host takes contiguous column-major, so build a copy */
      (void)st;
      double *Xs = malloc(sizeof(double) * nn * p);
      for (int j = 0; j < p; j++)
        for (int64_t i = 0; i < nn; i++) Xs[i + j * nn] = X[i + (int64_t)j * n];
      st = krr_kernel_matrix_host(&ctx, pr ? KRR_DOUBLE : KRR_FLOAT, &k, Xs, nn, Xs, nn, p, Km);
      CHECK(st == KRR_OK, "kernel_matrix %s: %s", kernel_names[kt], ctx.msg);
      krr_kparams kp = krr_kparams_make(&k);
      double maxerr = 0;
      int diag_ok = 1;
      for (int64_t i = 0; i < nn; i++)
        for (int64_t j = 0; j < nn; j++) {
          double t = 0;
          for (int c = 0; c < p; c++) {
            double dd = Xs[i + c * nn] - Xs[j + c * nn];
            t += krr_kernel_is_l1(kt) ? fabs(dd) : dd * dd;
          }
          double e = fabs(Km[i + j * nn] - krr_kernel_eval(kp, t));
          if (e > maxerr) maxerr = e;
          if (i == j && Km[i + j * nn] != 1.0) diag_ok = 0;
        }
      double tolk = pr ? 1e-13 : 2e-6;
      CHECK(maxerr <= tolk, "kernel %s %s: max abs error %.3g > %.3g", kernel_names[kt],
            pr ? "double" : "single", maxerr, tolk);
      CHECK(diag_ok, "kernel %s %s: K(x, x) != 1", kernel_names[kt], pr ? "double" : "single");
      free(Km); free(Xs);
    }

  /* solvers vs the double Cholesky solution, each kernel x precision */
  for (int kt = 0; kt < KRR_N_KERNELS; kt++) {
    krr_kernel k = {(krr_kernel_type)kt, 2.0};
    double lambda = 1e-3 * n;
    krr_problem pbd;
    if (krr_problem_create(&ctx, KRR_DOUBLE, X, n, p, y, m, k, lambda, &pbd) != KRR_OK) {
      printf("problem: %s\n", ctx.msg); return 1;
    }
    krr_solver_opts o;
    krr_solver_opts_default(&o);
    o.kind = KRR_SOLVER_CHOLESKY;
    double rr, secs;
    krr_diag dg;
    krr_status st = run_solver(&ctx, &pbd, &o, 1e-12, 1, w_ref, &rr, &dg, &secs);
    CHECK(st == KRR_OK && rr < 1e-12, "cholesky %s double: status %d relres %.3g %s",
          kernel_names[kt], st, rr, ctx.msg);
    krr_problem_free(&ctx, &pbd);
    for (int pr = 0; pr < 2; pr++) {
      krr_problem pb;
      krr_precision prec = pr ? KRR_DOUBLE : KRR_FLOAT;
      krr_problem_create(&ctx, prec, X, n, p, y, m, k, lambda, &pb);
      for (int kind = 0; kind < 5; kind++) {
        krr_solver_opts_default(&o);
        o.kind = (krr_solver_kind)kind;
        o.block_size = 150;
        o.rank = 50;
        o.seed = 1;
        double tol = pr ? 1e-10 : 1e-5;
        st = run_solver(&ctx, &pb, &o, tol, 4000, w, &rr, &dg, &secs);
        double err = rel_diff(w, w_ref, n * m);
        double werr = pr ? 1e-8 : 1e-3;
        static const char *kn[] = {"askotch", "skotch", "cholesky", "sap", "nsap"};
        if (getenv("KRR_VERBOSE")) printf("%s %s %s: %lld iters %.2fs relres %.2e err %.2e\n", kn[kind], kernel_names[kt], pr ? "double" : "single", (long long)dg.iter, secs, rr, err);
        CHECK(st == KRR_OK && rr <= tol * 1.0001 && err <= werr,
              "%s %s %s: status %d (%s) relres %.3g (tol %.1g) weights rel err %.3g after %lld iters",
              kn[kind], kernel_names[kt], pr ? "double" : "single", st, st ? ctx.msg : "", rr, tol,
              err, (long long)dg.iter);
      }
      krr_problem_free(&ctx, &pb);
    }
  }

  /* determinism: same seed, same result */
  {
    krr_kernel k = {KRR_RBF, 2.0};
    krr_problem pb;
    krr_problem_create(&ctx, KRR_DOUBLE, X, n, p, y, m, k, 1e-3 * n, &pb);
    krr_solver_opts o;
    krr_solver_opts_default(&o);
    o.block_size = 100; o.rank = 20; o.seed = 9;
    double rr, secs;
    krr_diag dg;
    run_solver(&ctx, &pb, &o, 0, 30, w, &rr, &dg, &secs);
    run_solver(&ctx, &pb, &o, 0, 30, w_ref, &rr, &dg, &secs);
    CHECK(memcmp(w, w_ref, sizeof(double) * n * m) == 0, "determinism: same seed gave different weights");
    /* errors are reported, not crashed on */
    o.block_size = n + 1;
    krr_solver *s = NULL;
    krr_status st;
    CHECK(krr_solver_init(&ctx, &pb, &o, &s) == KRR_ERR_INPUT && s == NULL,
          "block_size > n must be an input error");
    o.block_size = 100; o.rank = 101;
    ctx.status = KRR_OK;
    CHECK(krr_solver_init(&ctx, &pb, &o, &s) == KRR_ERR_INPUT, "rank > block_size must be an input error");
    o.rank = 20; o.mem_limit = 1000;
    ctx.status = KRR_OK;
    st = krr_solver_init(&ctx, &pb, &o, &s);
    CHECK(st == KRR_ERR_MEMORY && strstr(ctx.msg, "block_size"), "memory refusal must suggest block_size: %s", ctx.msg);
    krr_problem_free(&ctx, &pb);
  }
  free(X); free(y); free(w); free(w_ref);
  krr_ctx_free(&ctx);
  printf("%d passed, %d failed\n", n_pass, n_fail);
  return n_fail ? 1 : 0;
}

/* Solver-level parity: every solver on --backend (CUDA on a GPU machine) vs
 * the CPU backend, same data and seed, and both vs the CPU double Cholesky. */
static int cmd_parity(const args_t *a) {
  const krr_ops *dev_ops = backend(a->backend);
  krr_ctx cpu, dev;
  if (krr_ctx_init(&cpu, krr_cpu_ops(), a->threads, 0) != KRR_OK ||
      krr_ctx_init(&dev, dev_ops, a->threads, 0) != KRR_OK) {
    printf("ctx: %s %s\n", cpu.msg, dev.msg);
    return 1;
  }
  int64_t n = 2000;
  int p = 6, m = 2;
  double *X = malloc(sizeof(double) * n * p), *y = malloc(sizeof(double) * n * m);
  double *w_ref = malloc(sizeof(double) * n * m), *w_cpu = malloc(sizeof(double) * n * m),
         *w_dev = malloc(sizeof(double) * n * m);
  make_data(n, p, m, 5, X, y);
  static const char *kn[] = {"askotch", "skotch", "cholesky", "sap", "nsap", "pcg"};
  static const krr_solver_kind kinds[] = {KRR_SOLVER_ASKOTCH, KRR_SOLVER_SKOTCH, KRR_SOLVER_CHOLESKY,
                                          KRR_SOLVER_SAP, KRR_SOLVER_NSAP, KRR_SOLVER_PCG};
  for (int kt = 0; kt < KRR_N_KERNELS; kt++) {
    krr_kernel k = {(krr_kernel_type)kt, 2.5};
    double lambda = 1e-3 * n, rr, secs;
    krr_diag dg;
    krr_problem pc, pd;
    krr_solver_opts o;
    krr_problem_create(&cpu, KRR_DOUBLE, X, n, p, y, m, k, lambda, &pc);
    krr_solver_opts_default(&o);
    o.kind = KRR_SOLVER_CHOLESKY;
    run_solver(&cpu, &pc, &o, 0, 1, w_ref, &rr, &dg, &secs);
    krr_problem_free(&cpu, &pc);
    for (int pr = 0; pr < 2; pr++) {
      krr_precision prec = pr ? KRR_DOUBLE : KRR_FLOAT;
      krr_problem_create(&cpu, prec, X, n, p, y, m, k, lambda, &pc);
      krr_status st = krr_problem_create(&dev, prec, X, n, p, y, m, k, lambda, &pd);
      CHECK(st == KRR_OK, "device problem: %s", dev.msg);
      for (size_t si = 0; si < sizeof kinds / sizeof kinds[0]; si++) {
        krr_solver_opts_default(&o);
        o.kind = kinds[si];
        o.block_size = 400; o.rank = 50; o.seed = 3;
        double tol = pr ? 1e-10 : 1e-5, rc, rd, sc, sd;
        krr_status s1 = run_solver(&cpu, &pc, &o, tol, 3000, w_cpu, &rc, &dg, &sc);
        krr_status s2 = run_solver(&dev, &pd, &o, tol, 3000, w_dev, &rd, &dg, &sd);
        double e_cd = rel_diff(w_dev, w_cpu, n * m), e_ref = rel_diff(w_dev, w_ref, n * m);
        double tw = pr ? 1e-8 : 2e-3;
        CHECK(s1 == KRR_OK && s2 == KRR_OK && rd <= tol * 1.0001 && e_ref <= tw,
              "%s %s %s: device status %d (%s) relres %.3g, vs CPU %.3g, vs exact %.3g",
              kn[si], kernel_names[kt], pr ? "double" : "single", s2, s2 ? dev.msg : "", rd, e_cd,
              e_ref);
        if (getenv("KRR_VERBOSE"))
          printf("%-8s %-8s %s: cpu %.2fs dev %.2fs, relres %.2e, |dev-cpu| %.2e, |dev-exact| %.2e\n",
                 kn[si], kernel_names[kt], pr ? "double" : "single", sc, sd, rd, e_cd, e_ref);
      }
      krr_problem_free(&cpu, &pc);
      krr_problem_free(&dev, &pd);
    }
  }
  free(X); free(y); free(w_ref); free(w_cpu); free(w_dev);
  krr_ctx_free(&cpu);
  krr_ctx_free(&dev);
  printf("%d passed, %d failed\n", n_pass, n_fail);
  return n_fail ? 1 : 0;
}

static int cmd_bench(const args_t *a, int to_tol) {
  const krr_ops *ops = backend(a->backend);
  krr_ctx ctx;
  if (krr_ctx_init(&ctx, ops, a->threads, 0) != KRR_OK) { printf("ctx: %s\n", ctx.msg); return 1; }
  int64_t n = a->n;
  int p = a->p;
  double *X = malloc(sizeof(double) * n * p), *y = malloc(sizeof(double) * n);
  make_data(n, p, 1, a->seed, X, y);
  krr_kernel k = {(krr_kernel_type)a->kernel, a->bandwidth > 0 ? a->bandwidth : sqrt((double)p)};
  krr_problem pb;
  double t0 = krr_now();
  if (krr_problem_create(&ctx, a->prec ? KRR_DOUBLE : KRR_FLOAT, X, n, p, y, 1, k,
                         a->lambda_unsc * n, &pb) != KRR_OK) {
    printf("problem: %s\n", ctx.msg); return 1;
  }
  free(X);
  double t_setup = krr_now() - t0;
  krr_solver_opts o;
  krr_solver_opts_default(&o);
  o.block_size = a->b; o.rank = a->r; o.seed = a->seed; o.kind = (krr_solver_kind)a->solver;
  krr_solver *s = NULL;
  if (krr_solver_init(&ctx, &pb, &o, &s) != KRR_OK) { printf("init: %s\n", ctx.msg); return 1; }
  krr_diag d;
  krr_solver_diag(s, &d);
  printf("backend %s, n %lld, p %d, b %lld, r %d, %s, kernel %s, K_BB %s, threads %d, setup %.2fs\n",
         ops->name, (long long)n, p, (long long)d.block_size, d.rank, a->prec ? "double" : "single",
         kernel_names[a->kernel], d.materialized ? "materialised" : "matrix-free", ctx.threads, t_setup);
  /* warm-up one iteration, then time */
  krr_solver_step(s, 1);
  krr_solver_diag(s, &d);
  krr_diag d0 = d;
  double t1 = krr_now();
  int64_t it = 0;
  double rr = NAN;
  int64_t per_pass = (n + d.block_size - 1) / d.block_size;
  while (it < a->iters) {
    int64_t k2 = to_tol ? per_pass : a->iters - it;
    if (k2 > a->iters - it) k2 = a->iters - it;
    if (krr_solver_step(s, k2) != KRR_OK) { printf("step: %s\n", ctx.msg); return 1; }
    it += k2;
    if (to_tol) {
      krr_solver_residual(s, &rr);
      krr_solver_diag(s, &d);
      printf("  passes %7.2f  relres %.3e  est %.3e  %.2fs\n", d.passes, rr, d.resid_est, krr_now() - t1);
      if (rr <= a->tol) break;
    }
  }
  double el = krr_now() - t1;
  krr_solver_diag(s, &d);
  double tb = d.t_block - d0.t_block, tn = d.t_nystrom - d0.t_nystrom, tp = d.t_power - d0.t_power,
         tu = d.t_update - d0.t_update;
  double tot = tb + tn + tp + tu;
  printf("| iters | s/iter | block product | Nystrom | powering | updates | iteration / block product |\n");
  printf("|---|---|---|---|---|---|---|\n");
  printf("| %lld | %.4f | %.4f (%.0f%%) | %.4f (%.0f%%) | %.4f (%.0f%%) | %.4f (%.0f%%) | %.3f |\n",
         (long long)it, el / it, tb / it, 100 * tb / tot, tn / it, 100 * tn / tot, tp / it,
         100 * tp / tot, tu / it, 100 * tu / tot, tot / tb);
  printf("block product rate: %.3g kernel pairs/s; passes/s %.3g\n",
         (double)d.block_size * n * it / tb, (double)d.block_size * it / n / el);
  krr_solver_free(s);
  krr_problem_free(&ctx, &pb);
  krr_ctx_free(&ctx);
  free(y);
  return 0;
}

int main(int argc, char **argv) {
  args_t a = {"test", "cpu", 20000, 0, 10, 100, 0, 20, 1, 0, 1, 0, 1e-6, 1e-6, 0, 0};
  a.seed = 1;
  if (argc > 1) a.cmd = argv[1];
  for (int i = 2; i + 1 < argc; i += 2) {
    const char *k = argv[i], *v = argv[i + 1];
    if (!strcmp(k, "--backend")) a.backend = v;
    else if (!strcmp(k, "--n")) a.n = (int64_t)atof(v);
    else if (!strcmp(k, "--p")) a.p = atoi(v);
    else if (!strcmp(k, "--b")) a.b = (int64_t)atof(v);
    else if (!strcmp(k, "--r")) a.r = atoi(v);
    else if (!strcmp(k, "--threads")) a.threads = atoi(v);
    else if (!strcmp(k, "--iters")) a.iters = atoi(v);
    else if (!strcmp(k, "--tol")) a.tol = atof(v);
    else if (!strcmp(k, "--lambda")) a.lambda_unsc = atof(v);
    else if (!strcmp(k, "--bandwidth")) a.bandwidth = atof(v);
    else if (!strcmp(k, "--solver")) a.solver = !strcmp(v, "skotch") ? 1 : !strcmp(v, "cholesky") ? 2 : 0;
    else if (!strcmp(k, "--precision")) a.prec = strcmp(v, "single") != 0;
    else if (!strcmp(k, "--kernel")) {
      for (int t = 0; t < KRR_N_KERNELS; t++) if (!strcmp(v, kernel_names[t])) a.kernel = t;
    } else { fprintf(stderr, "unknown option %s\n", k); return 2; }
  }
  if (!strcmp(a.cmd, "test")) return cmd_test(&a);
  if (!strcmp(a.cmd, "parity")) return cmd_parity(&a);
  if (!strcmp(a.cmd, "bench")) return cmd_bench(&a, 0);
  if (!strcmp(a.cmd, "fit")) return cmd_bench(&a, 1);
  fprintf(stderr, "usage: askotch_driver test|bench|fit [options]\n");
  return 2;
}
