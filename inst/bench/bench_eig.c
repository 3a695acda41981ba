/* The CPU backend's symmetric eigensolver in one LAPACK call against its
 * polled route (cpu_ops_t.c.inc: dsyevr's steps with krr_poll between
 * 32-column panels and back-transform pieces); RESULTS.md, "Interrupts".
 *   make -C inst/bench eig     then   inst/bench/build/bench_eig THREADS REPS N...
 * For each n: an RBF kernel matrix of n standard normal points in p = 10
 * (bandwidth 3.2), all eigenpairs (syev; one call = LAPACK syevd) and the
 * top 101 (syev_top; one call = syevr on the index range), double and
 * single, seconds of REPS runs each; then the polled route interrupted
 * 0.3 s in (a poll callback that answers "stop" from then on, asked at
 * most every 0.1 s as the R glue's): seconds from 0.3 s to the return;
 * then the polled route once more with a callback asked at every poll,
 * which records the longest time between two polls (from the call to the
 * first, between polls, from the last to the return): the worst latency
 * an interrupt can meet anywhere in the call ("max_poll_gap"). */
#include <time.h>
#include "../../driver/test_common.h"
#include "../../src/core/base/base.h"

static double t_stop, t_last, gap;
static int stop_after(void *data) { (void)data; return krr_now() >= t_stop; }
static int record_gap(void *data) {
  (void)data;
  const double t = krr_now();
  if (t - t_last > gap) gap = t - t_last;
  t_last = t;
  return 0;
}

int main(int argc, char **argv) {
  if (argc < 4) { fprintf(stderr, "usage: bench_eig THREADS REPS N...\n"); return 2; }
  const int threads = atoi(argv[1]), reps = atoi(argv[2]);
  krr_ctx c, *ctx = &c;
  if (krr_ctx_init(ctx, krr_cpu_ops(), krr_cpu_ops(), threads, 0) != KRR_OK) return 1;
  printf("n,precision,what,route,rep,seconds,status\n");
  for (int a = 3; a < argc; a++) {
    const int64_t n = atoll(argv[a]), k = 101;
    const int p = 10;
    double *X = malloc(sizeof(double) * n * p), *K = malloc(sizeof(double) * n * n);
    for (int64_t i = 0; i < n * p; i++) X[i] = krr_rng_normal(7, (uint64_t)i);
    krr_kernel kr = {.type = KRR_RBF, .bandwidth = 3.2};
    if (krr_kernel_matrix_host(ctx, KRR_DOUBLE, &kr, X, n, X, n, p, K) != KRR_OK) return 1;
    for (int pr = 1; pr >= 0; pr--) {
      const krr_precision prec = pr ? KRR_DOUBLE : KRR_FLOAT;
      const size_t es = krr_sizeof(prec);
      void *A = NULL, *W = malloc(es * n), *Z = malloc(es * n * k);
      for (int what = 0; what < 2; what++)
        for (int route = 0; route < 4; route++)
          for (int r = 0; r < (route >= 2 ? 1 : reps); r++) {
            if (krr_upload_vec(ctx, prec, K, n * n, &A) != KRR_OK) return 1;
            ctx->piece_flops = route == 0 ? 1e300 : 0; /* one call / the default pieces */
            const double t0 = krr_now();
            if (route == 2) { t_stop = t0 + 0.3; ctx->poll = stop_after; ctx->poll_next = 0; }
            if (route == 3) {
              t_last = t0;
              gap = 0;
              ctx->poll = record_gap;
              ctx->poll_next = 0;
              ctx->poll_every = 1e-12;
            }
            krr_status st = what ? KOP(ctx, prec, syev_top, n, A, n, k, W, Z, n)
                                 : KOP(ctx, prec, syev, n, A, n, W);
            if (route == 3) record_gap(NULL);
            const double t = route == 3 ? gap : krr_now() - (route == 2 ? t_stop : t0);
            printf("%lld,%s,%s,%s,%d,%.3f,%s\n", (long long)n, pr ? "double" : "single",
                   what ? "top101" : "all", route == 0   ? "one_call"
                   : route == 1 ? "polled"
                   : route == 2 ? "interrupt_latency"
                                : "max_poll_gap",
                   r + 1, t, krr_status_name(st));
            fflush(stdout);
            ctx->poll = NULL;
            ctx->poll_every = 0;
            krr_clear(ctx);
            ctx->interrupted = 0;
            krr_dfree(ctx, &A);
          }
      free(W);
      free(Z);
    }
    free(X);
    free(K);
  }
  krr_ctx_free(ctx);
  return 0;
}
