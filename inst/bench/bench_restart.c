/* Momentum restart study (RESULTS.md, "Momentum restart"); driven by bench_restart.R.
 *   bench_restart FILE KERNEL BANDWIDTH LAMBDA REPS MAX_PASSES THREADS [SOLVERS]
 * FILE: n, p (two doubles), X (n x p, column-major), y (n) as doubles.
 * KERNEL: 0 rbf, 3 matern32, 4 matern52.  For each solver (askotch restart none /
 * auto, skotch, nsap none / auto, sap; default block size and rank, seed 1 +
 * rep) it steps one pass at a time, computes the exact relative residual
 * after each pass (not timed) and prints one CSV line per run:
 *   solver,rep,passes_1e4,sec_1e4,passes_1e6,sec_1e6,passes_1e8,sec_1e8,final,restarts,passes,sec,b,r
 * (NA where the tolerance was not reached within MAX_PASSES).  Seconds are
 * the solver's own (krr_solver_step), setup included.
 *   bench_restart FILE KERNEL BANDWIDTH LAMBDA REPS MAX_PASSES THREADS SPEC...
 * with SPECs that contain '=' (e.g. "block_size=500 rank=200") runs askotch with
 * each of them instead (the block size study: bench_restart.R with
 * ASKOTCH_BENCH_SPECS; label = the SPEC with blanks as '_'). */
#include "../../driver/test_common.h"

int main(int argc, char **argv) {
  if (argc < 8) { fprintf(stderr, "usage: see the header\n"); return 2; }
  FILE *fp = fopen(argv[1], "rb");
  if (!fp) { perror(argv[1]); return 2; }
  double hd[2];
  if (fread(hd, sizeof(double), 2, fp) != 2) return 2;
  int64_t n = (int64_t)hd[0];
  int p = (int)hd[1];
  double *X = malloc(sizeof(double) * n * p), *y = malloc(sizeof(double) * n);
  if (fread(X, sizeof(double), n * p, fp) != (size_t)(n * p) || fread(y, sizeof(double), n, fp) != (size_t)n)
    return 2;
  fclose(fp);
  krr_kernel k = {.type = (krr_kernel_type)atoi(argv[2]), .bandwidth = atof(argv[3])};
  double lambda = atof(argv[4]);
  int reps = atoi(argv[5]), max_passes = atoi(argv[6]), threads = atoi(argv[7]);
  const char *only = argc > 8 && !strchr(argv[8], '=') ? argv[8] : NULL;
  int custom = argc > 8 && !only, nspec = custom ? argc - 8 : 6;
  krr_ctx ctx;
  if (krr_ctx_init(&ctx, krr_cpu_ops(), krr_cpu_ops(), threads, 0) != KRR_OK) {
    printf("ctx: %s\n", ctx.msg);
    return 1;
  }
  tfit f;
  if (tfit_make(&ctx, KRR_DOUBLE, X, n, p, y, 1, k, lambda, &f) != KRR_OK) return 1;
  static const char *lab[] = {"askotch_none", "askotch_auto", "skotch", "nsap_none", "nsap_auto", "sap"};
  static const char *spec[] = {"restart=none", "restart=auto", "accelerated=0",
                               "block_solve=exact restart=none", "block_solve=exact restart=auto",
                               "block_solve=exact accelerated=0"};
  const double tols[3] = {1e-4, 1e-6, 1e-8};
  for (int rep = 0; rep < reps; rep++)
    for (int c = 0; c < nspec; c++) {
      if (only && !strstr(only, lab[c])) continue;
      char sp[256], lb[256];
      const char *sc = custom ? argv[8 + c] : spec[c];
      snprintf(sp, sizeof sp, "%s seed=%d", sc, 1 + rep);
      snprintf(lb, sizeof lb, "%s", custom ? sc : lab[c]);
      for (char *q = lb; *q; q++) if (*q == ' ' || *q == ',') *q = '_';
      krr_solver *s = NULL;
      if (tinit(&f, "askotch", sp, &s) != KRR_OK) { printf("%s,%d,error: %s\n", lb, rep, ctx.msg); continue; }
      int64_t per = (int64_t)ceil((double)n / topt(s, "block_size"));
      double pt[3] = {NAN, NAN, NAN}, st[3] = {NAN, NAN, NAN}, sec = 0, crit = INFINITY;
      int ti = 0;
      krr_diag dg = {0};
      for (int pass = 0; pass < max_passes && ti < 3; pass++) {
        double t0 = krr_now();
        if (krr_solver_step(s, per) != KRR_OK) { printf("# %s: %s\n", lb, ctx.msg); break; }
        sec += krr_now() - t0;
        krr_solver_diag(s, &dg);
        if (krr_solver_residual(s, &crit) != KRR_OK) break;
        while (ti < 3 && crit <= tols[ti]) { pt[ti] = dg.passes; st[ti] = sec; ti++; }
        if (!isfinite(crit)) break;
      }
      printf("%s,%d", lb, rep);
      for (int t = 0; t < 3; t++) {
        if (isnan(pt[t])) printf(",NA,NA"); else printf(",%.2f,%.3f", pt[t], st[t]);
      }
      double r = textra(s, "restarts");
      printf(",%.3e,%s,%.2f,%.3f,%.0f,%.0f\n", crit,
             isnan(r) ? "NA" : (snprintf(sp, sizeof sp, "%.0f", r), sp), dg.passes, sec,
             topt(s, "block_size"), textra(s, "rank_used"));
      fflush(stdout);
      krr_solver_free(s);
    }
  tfit_free(&f);
  krr_ctx_free(&ctx);
  free(X);
  free(y);
  (void)n_pass; (void)n_fail;
  return 0;
}
