/* test_dist: the communicator seam (src/core/dist) and the MPI-sharded
 * operator (src/core/op/sharded.c), run under
 *   timeout 120 mpirun --oversubscribe --mca btl self,vader -np P build/mpi/test_dist [--backend cuda]
 * for P = 1..4 (or plainly, one process, with the serial communicator when
 * the build has no MPI).  Every rank builds the same global data (seeded),
 * keeps its contiguous rows, and compares the sharded operator with the
 * one-process exact operator on all rows (double: 1e-12 relative; float:
 * 1e-5).  Communication is counted by the communicator: the bytes of one
 * block step (block load, K_{B:} w, gather, scatter) must be the same at n
 * and 4n.  Prints "N passed, M failed" (rank 0 reports the sum over ranks). */
#include "test_common.h"
#include "../src/core/dist/dist.h"
#include "../src/core/op/op.h"
#include "../src/core/sampling/sampling.h"

static krr_comm *comm;
static int poll_count;
static int poll_stop(void *limit) { return ++poll_count > *(int *)limit; }

/* this rank's rows [r0, r0 + nl) of n split in P contiguous ranges */
static void split(int64_t n, int P, int r, int64_t *r0, int64_t *nl) {
  int64_t base = n / P, extra = n % P;
  *r0 = r * base + (r < extra ? r : extra);
  *nl = base + (r < extra ? 1 : 0);
}

/* rows [r0, r0 + nl) of a column-major n x k matrix */
static double *rows(const double *A, int64_t n, int k, int64_t r0, int64_t nl) {
  double *B = malloc(sizeof(double) * (size_t)(nl * k + 1));
  for (int j = 0; j < k; j++) memcpy(B + j * nl, A + j * n + r0, sizeof(double) * (size_t)nl);
  return B;
}

static void test_collectives(krr_ctx *ctx) {
  const int P = comm->size, r = comm->rank;
  /* the tests run on one machine: every rank shares it (the choice of GPU,
   * local_rank modulo the devices, rests on this) */
  CHECK(comm->local_size == P && comm->local_rank == r, "local rank %d of %d (rank %d of %d)",
        comm->local_rank, comm->local_size, r, P);
  double v[3] = {(double)r, (double)r, (double)r};
  CHECK(krr_comm_allreduce(comm, ctx, v, 1, KRR_DT_DOUBLE, KRR_RED_SUM) == KRR_OK &&
        v[0] == P * (P - 1) / 2.0, "allreduce sum %g", v[0]);
  CHECK(krr_comm_allreduce(comm, ctx, v + 1, 1, KRR_DT_DOUBLE, KRR_RED_MAX) == KRR_OK &&
        v[1] == P - 1, "allreduce max %g", v[1]);
  CHECK(krr_comm_allreduce(comm, ctx, v + 2, 1, KRR_DT_DOUBLE, KRR_RED_MIN) == KRR_OK &&
        v[2] == 0, "allreduce min %g", v[2]);
  float f = 1.5f;
  CHECK(krr_comm_allreduce(comm, ctx, &f, 1, KRR_DT_FLOAT, KRR_RED_SUM) == KRR_OK &&
        f == 1.5f * P, "allreduce float %g", f);
  int64_t x = r == P - 1 ? 77 : 0;
  CHECK(krr_comm_bcast(comm, ctx, &x, sizeof x, P - 1) == KRR_OK && x == 77, "bcast %lld", (long long)x);
  /* allgatherv: rank q sends q + 1 int64 values q */
  int64_t *counts = malloc(sizeof(int64_t) * P), *displs = malloc(sizeof(int64_t) * P), tot = 0;
  for (int q = 0; q < P; q++) { counts[q] = 8 * (q + 1); displs[q] = tot; tot += counts[q]; }
  int64_t *send = malloc(8 * (r + 1)), *recv = malloc(tot);
  for (int i = 0; i <= r; i++) send[i] = r;
  int ok = krr_comm_allgatherv(comm, ctx, send, 8 * (r + 1), recv, counts, displs) == KRR_OK;
  for (int q = 0, k = 0; ok && q < P; q++)
    for (int i = 0; i <= q; i++, k++) ok = recv[k] == q;
  CHECK(ok, "allgatherv");
  free(counts); free(displs); free(send); free(recv);
  CHECK(krr_comm_barrier(comm, ctx) == KRR_OK, "barrier");
  /* status agreement: the last rank fails, every rank gets its error */
  krr_clear(ctx);
  krr_status st = r == P - 1 ? krr_fail(ctx, KRR_ERR_NUMERIC, "block Cholesky failed here") : KRR_OK;
  st = krr_comm_agree(comm, ctx, st);
  CHECK(st == KRR_ERR_NUMERIC && strstr(ctx->msg, "block Cholesky failed here"),
        "agree: status %d msg '%s'", (int)st, ctx->msg);
  if (P > 1 && r != P - 1) CHECK(strstr(ctx->msg, "rank ") != NULL, "agree names the rank: %s", ctx->msg);
  krr_clear(ctx);
  CHECK(krr_comm_agree(comm, ctx, KRR_OK) == KRR_OK, "agree ok");
  /* option hashes */
  int same = 0;
  double opt[2] = {1.0, 2.0};
  CHECK(krr_comm_same(comm, ctx, opt, sizeof opt, &same) == KRR_OK && same, "same options");
  opt[1] = r == 0 ? 3.0 : 2.0;
  CHECK(krr_comm_same(comm, ctx, opt, sizeof opt, &same) == KRR_OK && same == (P == 1),
        "different options detected (same = %d)", same);
}

static double rel(const double *a, const double *b, int64_t len) { return rel_diff(a, b, len); }

/* the sharded operator against the exact one on all rows; bytes of a block step */
static void test_operator(krr_ctx *ctx, krr_precision prec, int64_t n, double *bytes_step) {
  const int p = 3, m = 2, P = comm->size, r = comm->rank;
  const double tol = prec == KRR_DOUBLE ? 1e-12 : 1e-5;
  const char *pn = prec == KRR_DOUBLE ? "double" : "float";
  double *X = malloc(sizeof(double) * n * p), *y = malloc(sizeof(double) * n * m);
  make_data(n, p, m, 42, X, y);
  int64_t r0, nl;
  split(n, P, r, &r0, &nl);
  double *Xl = rows(X, n, p, r0, nl), *yl = rows(y, n, m, r0, nl);
  krr_kernel k = {.type = KRR_MATERN52, .bandwidth = 1.3};
  krr_problem pbf = {0}, pbl = {0};
  krr_op *full = NULL, *loc = NULL, *sh = NULL;
  krr_status st = krr_problem_create(ctx, prec, X, n, p, &pbf);
  if (st == KRR_OK) st = krr_op_exact_create(ctx, &pbf, k, &full);
  if (st == KRR_OK) st = krr_problem_create(ctx, prec, Xl, nl, p, &pbl);
  if (st == KRR_OK) st = krr_op_exact_create(ctx, &pbl, k, &loc);
  if (st == KRR_OK) st = krr_op_sharded_create(loc, comm, &sh);
  CHECK(st == KRR_OK, "%s setup: %s", pn, ctx->msg);
  if (st != KRR_OK) goto done;
  CHECK(sh->n == n && sh->nloc == nl, "sharded n %lld nloc %lld", (long long)sh->n, (long long)sh->nloc);
  int64_t b = 37;
  krr_arena ar;
  krr_arena_init(&ar, ctx);
  krr_block bf, bs;
  uint64_t *mark = calloc((size_t)(n / 64 + 1), 8);
  int64_t *idx = malloc(sizeof(int64_t) * b);
  krr_sample_uniform(krr_rng_stream(7, 3, 0), n, b, mark, idx);
  size_t es = krr_sizeof(prec);
  int64_t cap = KRR_MAX(n * m, b * b);
  void *wf = NULL, *wl = NULL, *outf = krr_dalloc(ctx, cap, es), *outs = krr_dalloc(ctx, cap, es);
  double *hf = malloc(sizeof(double) * cap), *hs = malloc(sizeof(double) * cap);
  krr_upload_vec(ctx, prec, y, n * m, &wf);
  krr_upload_vec(ctx, prec, yl, nl * m, &wl);
  st = krr_block_alloc(full, &ar, b, &bf);
  if (st == KRR_OK) st = krr_block_alloc(sh, &ar, b, &bs);
  if (st == KRR_OK) st = krr_block_set(full, &bf, idx, b);
  double c0 = comm->bytes;
  if (st == KRR_OK) st = krr_block_set(sh, &bs, idx, b);
  /* K_{B:} w */
  if (st == KRR_OK) st = krr_op_mv(full, &bf, NULL, wf, n, m, outf, b);
  if (st == KRR_OK) st = krr_op_mv(sh, &bs, NULL, wl, nl, m, outs, b);
  if (st == KRR_OK) st = krr_download_vec(ctx, prec, outf, b * m, hf);
  if (st == KRR_OK) st = krr_download_vec(ctx, prec, outs, b * m, hs);
  CHECK(st == KRR_OK && rel(hs, hf, b * m) <= tol, "%s K_B: w rel %.3g (%s)", pn, rel(hs, hf, b * m), ctx->msg);
  /* gather y_B */
  if (st == KRR_OK) st = krr_op_gather(full, &bf, wf, m, outf, b);
  if (st == KRR_OK) st = krr_op_gather(sh, &bs, wl, m, outs, b);
  if (st == KRR_OK) st = krr_download_vec(ctx, prec, outf, b * m, hf);
  if (st == KRR_OK) st = krr_download_vec(ctx, prec, outs, b * m, hs);
  CHECK(st == KRR_OK && rel(hs, hf, b * m) == 0, "%s gather rel %.3g", pn, rel(hs, hf, b * m));
  /* w[B, ] -= 0.5 y_B: then the local rows of both agree */
  if (st == KRR_OK) st = krr_op_scatter_axpy(full, -0.5, outf, b, m, &bf, wf);
  if (st == KRR_OK) st = krr_op_scatter_axpy(sh, -0.5, outs, b, m, &bs, wl);
  *bytes_step = comm->bytes - c0;
  if (st == KRR_OK) st = krr_download_vec(ctx, prec, wf, n * m, hf);
  if (st == KRR_OK) st = krr_download_vec(ctx, prec, wl, nl * m, hs);
  {
    double *loc_f = rows(hf, n, m, r0, nl);
    CHECK(st == KRR_OK && rel(hs, loc_f, nl * m) == 0, "%s scatter rel %.3g", pn, rel(hs, loc_f, nl * m));
    free(loc_f);
  }
  /* K_{:B} V (local rows), K_BB, the full product K w (local rows) */
  if (st == KRR_OK) st = krr_op_mv(full, NULL, &bf, wf, b, m, outf, n);
  if (st == KRR_OK) st = krr_op_mv(sh, NULL, &bs, wf, b, m, outs, nl);
  if (st == KRR_OK) st = krr_download_vec(ctx, prec, outf, n * m, hf);
  if (st == KRR_OK) st = krr_download_vec(ctx, prec, outs, nl * m, hs);
  {
    double *loc_f = rows(hf, n, m, r0, nl);
    CHECK(st == KRR_OK && rel(hs, loc_f, nl * m) <= tol, "%s K_:B V rel %.3g", pn, rel(hs, loc_f, nl * m));
    free(loc_f);
  }
  if (st == KRR_OK) st = krr_op_mat(full, &bf, &bf, outf, b);
  if (st == KRR_OK) st = krr_op_mat(sh, &bs, &bs, outs, b);
  if (st == KRR_OK) st = krr_download_vec(ctx, prec, outf, b * b, hf);
  if (st == KRR_OK) st = krr_download_vec(ctx, prec, outs, b * b, hs);
  CHECK(st == KRR_OK && rel(hs, hf, b * b) <= tol, "%s K_BB rel %.3g", pn, rel(hs, hf, b * b));
  if (st == KRR_OK) st = krr_op_mv(full, NULL, NULL, wf, n, m, outf, n);
  if (st == KRR_OK) st = krr_op_mv(sh, NULL, NULL, wl, nl, m, outs, nl);
  if (st == KRR_OK) st = krr_download_vec(ctx, prec, outf, n * m, hf);
  if (st == KRR_OK) st = krr_download_vec(ctx, prec, outs, nl * m, hs);
  {
    double *loc_f = rows(hf, n, m, r0, nl);
    CHECK(st == KRR_OK && rel(hs, loc_f, nl * m) <= tol, "%s K w rel %.3g (%s)", pn, rel(hs, loc_f, nl * m), ctx->msg);
    free(loc_f);
  }
  /* dot and norm of the n-vector */
  double df = 0, ds = 0, nf = 0, ns = 0;
  if (st == KRR_OK) st = krr_op_dot(full, n * m, wf, outf, &df);
  if (st == KRR_OK) st = krr_op_dot(sh, nl * m, wl, outs, &ds);
  if (st == KRR_OK) st = krr_op_nrm2(full, n * m, wf, &nf);
  if (st == KRR_OK) st = krr_op_nrm2(sh, nl * m, wl, &ns);
  CHECK(st == KRR_OK && fabs(ds - df) <= tol * fabs(df) && fabs(ns - nf) <= tol * nf,
        "%s dot %.17g vs %.17g, nrm2 %.17g vs %.17g", pn, ds, df, ns, nf);
  /* the full kernel matrix is refused by name when distributed */
  if (P > 1) {
    krr_clear(ctx);
    CHECK(krr_op_mat(sh, &bs, NULL, outs, b) == KRR_ERR_INPUT && strstr(ctx->msg, "distributed"),
          "K(X_B, X) refused: %s", ctx->msg);
    krr_clear(ctx);
  }
  krr_arena_free(&ar);
  krr_dfree(ctx, &wf); krr_dfree(ctx, &wl); krr_dfree(ctx, &outf); krr_dfree(ctx, &outs);
  free(hf); free(hs); free(mark); free(idx);
done:
  krr_op_free(sh);
  krr_op_free(full);
  krr_problem_free(ctx, &pbf);
  krr_problem_free(ctx, &pbl);
  free(X); free(y); free(Xl); free(yl);
}

/* shards that disagree: every rank gets the same classed error */
static void test_bad_shards(krr_ctx *ctx) {
  const int P = comm->size, r = comm->rank;
  if (P < 2) return;
  int p = r == P - 1 ? 4 : 3;
  double X[8 * 4];
  for (int i = 0; i < 32; i++) X[i] = krr_rng_normal(5, (uint64_t)i);
  krr_kernel k = {.type = KRR_RBF, .bandwidth = 1.0};
  krr_problem pb = {0};
  krr_op *loc = NULL, *sh = NULL;
  krr_clear(ctx);
  krr_status st = krr_problem_create(ctx, KRR_DOUBLE, X, 8, p, &pb);
  if (st == KRR_OK) st = krr_op_exact_create(ctx, &pb, k, &loc);
  if (st == KRR_OK) st = krr_op_sharded_create(loc, comm, &sh);
  CHECK(st == KRR_ERR_INPUT && strstr(ctx->msg, "`p`"), "different p: %d %s", (int)st, ctx->msg);
  krr_problem_free(ctx, &pb);
  /* a different bandwidth on rank 0 */
  krr_clear(ctx);
  k.bandwidth = r == 0 ? 2.0 : 1.0;
  st = krr_problem_create(ctx, KRR_DOUBLE, X, 8, 3, &pb);
  if (st == KRR_OK) st = krr_op_exact_create(ctx, &pb, k, &loc);
  if (st == KRR_OK) st = krr_op_sharded_create(loc, comm, &sh);
  CHECK(st == KRR_ERR_INPUT && strstr(ctx->msg, "bandwidth"), "different kernels: %d %s", (int)st, ctx->msg);
  krr_problem_free(ctx, &pb);
  krr_clear(ctx);
  /* 8 rows per rank: distributed PCG's default rank is min(100, n / 2) (the
   * sketch's Cholesky QR needs rank <= n / 2), and it runs */
  k.bandwidth = 1.0;
  tfit f;
  memset(&f, 0, sizeof f);
  f.ctx = ctx;
  double yv[8];
  for (int i = 0; i < 8; i++) yv[i] = X[i];
  st = krr_problem_create(ctx, KRR_DOUBLE, X, 8, 3, &f.pb);
  if (st == KRR_OK) st = krr_op_exact_create(ctx, &f.pb, k, &loc);
  if (st == KRR_OK) st = krr_op_sharded_create(loc, comm, &f.op);
  if (st == KRR_OK) st = krr_objective_init(ctx, f.op, krr_loss_lookup("squared"), 0.1, yv, 1, &f.obj);
  krr_solver *s = NULL;
  if (st == KRR_OK) st = tinit(&f, "pcg", "preconditioner=nystrom seed=2", &s);
  if (st == KRR_OK) st = krr_solver_step(s, 3);
  CHECK(st == KRR_OK && topt(s, "rank") == 4.0 * P, "distributed PCG, n = %d: default rank %g (%s)",
        8 * P, s ? topt(s, "rank") : -1.0, ctx->msg);
  krr_solver_free(s);
  tfit_free(&f);
  krr_clear(ctx);
}

/* solver `name` with `spec` on the one-process fit and on the distributed
 * one, `iters` steps each: *rw the relative difference of the weights over
 * all ranks (this rank's rows wd against rows r0.. of wf; collective), *cf /
 * *cd the exact criteria.  OK when both fits ran. */
static krr_status fit_pair(tfit *full, tfit *dist, const char *name, const char *spec, int iters,
                           int m, int64_t n, int64_t r0, int64_t nl, double *wf, double *wd,
                           double *rw, double *cf, double *cd) {
  krr_solver *sf = NULL, *sd = NULL;
  krr_status a = tinit(full, name, spec, &sf), b = tinit(dist, name, spec, &sd);
  if (a == KRR_OK) a = krr_solver_step(sf, iters);
  if (b == KRR_OK) b = krr_solver_step(sd, iters);
  *cf = *cd = 0;
  if (a == KRR_OK) a = krr_solver_weights(sf, wf);
  if (b == KRR_OK) b = krr_solver_weights(sd, wd);
  if (a == KRR_OK) a = krr_solver_residual(sf, cf);
  if (b == KRR_OK) b = krr_solver_residual(sd, cd);
  double e[2] = {0, 0};
  for (int c = 0; c < m; c++)
    for (int64_t i = 0; i < nl; i++) {
      double d = wd[i + c * nl] - wf[r0 + i + c * n];
      e[0] += d * d;
      e[1] += wf[r0 + i + c * n] * wf[r0 + i + c * n];
    }
  krr_comm_allreduce(comm, dist->ctx, e, 2, KRR_DT_DOUBLE, KRR_RED_SUM);
  *rw = sqrt(e[0] / e[1]);
  krr_solver_free(sf);
  krr_solver_free(sd);
  return a != KRR_OK ? a : b;
}

/* distributed ASkotch / Skotch / NSAP / SAP = the one-process fit with the
 * same seed: the weights (this rank's rows) within tol relative over all
 * ranks; the exact criterion too */
static void test_fits(krr_ctx *ctx, krr_precision prec, int64_t n, double tol) {
  const int p = 3, m = 2, P = comm->size, r = comm->rank;
  const char *pn = prec == KRR_DOUBLE ? "double" : "float";
  double *X = malloc(sizeof(double) * n * p), *y = malloc(sizeof(double) * n * m);
  make_data(n, p, m, 11, X, y);
  int64_t r0, nl;
  split(n, P, r, &r0, &nl);
  double *Xl = rows(X, n, p, r0, nl), *yl = rows(y, n, m, r0, nl);
  krr_kernel k = {.type = KRR_RBF, .bandwidth = 1.0};
  const double lambda = 1e-3 * n;
  tfit full, dist;
  memset(&dist, 0, sizeof dist);
  dist.ctx = ctx;
  if (tfit_make(ctx, prec, X, n, p, y, m, k, lambda, &full) != KRR_OK) goto out;
  krr_op *loc = NULL;
  krr_status st = krr_problem_create(ctx, prec, Xl, nl, p, &dist.pb);
  if (st == KRR_OK) st = krr_op_exact_create(ctx, &dist.pb, k, &loc);
  if (st == KRR_OK) st = krr_op_sharded_create(loc, comm, &dist.op);
  if (st == KRR_OK)
    st = krr_objective_init(ctx, dist.op, krr_loss_lookup("squared"), lambda, yl, m, &dist.obj);
  CHECK(st == KRR_OK, "%s distributed setup: %s", pn, ctx->msg);
  const char *specs[5][2] = {{"ASkotch", "block_size=40 rank=10 seed=5"},
                             {"Skotch", "block_size=40 rank=10 seed=5 accelerated=0"},
                             {"NSAP", "block_size=40 seed=5 block_solve=exact"},
                             {"SAP", "block_size=40 seed=5 block_solve=exact accelerated=0"},
                             /* the rank by the spectrum: rank 0's count on every rank */
                             {"ASkotch, rank by the spectrum", "block_size=60 seed=5"}};
  double *wf = malloc(sizeof(double) * n * m), *wd = malloc(sizeof(double) * nl * m);
  for (int t = 0; st == KRR_OK && t < 5; t++) {
    double rw = 0, cf = 0, cd = 0;
    krr_status a = fit_pair(&full, &dist, "askotch", specs[t][1], 25, m, n, r0, nl, wf, wd, &rw,
                            &cf, &cd);
    CHECK(a == KRR_OK && rw <= tol && fabs(cd - cf) <= tol * cf + 1e-15,
          "%s %s np %d: weights rel %.3g (tol %g), criterion %.6g vs %.6g (%s)", pn, specs[t][0], P,
          rw, tol, cd, cf, ctx->msg);
    if (r == 0 && prec == KRR_DOUBLE)
      printf("np %d %s %s: weights rel diff %.2e, criterion %.3e\n", P, pn, specs[t][0], rw, cd);
  }
  /* The stop policy (krr_solver_run) to tol 1e-8: every rank stops at the
   * iteration of the one-process fit, with reason "tol", although each
   * rank's budget per call differs (1 + 3 r iterations: a rank's own clock
   * sets R's slices) -- the ranks agree on each call's budget. */
  if (st == KRR_OK && prec == KRR_DOUBLE) {
    krr_solver *sf = NULL, *sd = NULL;
    const char *spec = "block_size=40 rank=10 seed=5";
    krr_status a = tinit(&full, "askotch", spec, &sf), b = tinit(&dist, "askotch", spec, &sd);
    krr_stop pf, pd;
    krr_stop_init(&pf, 1e-8, 500, INFINITY);
    krr_stop_init(&pd, 1e-8, 500, INFINITY);
    pf.exact_ok = pd.exact_ok = 1;
    krr_stop_result rf = {0}, rd = {0};
    for (int c = 0; a == KRR_OK && c < 100000 && rf.reason == KRR_STOP_NONE; c++)
      a = krr_solver_run(sf, &pf, 1000, &rf);
    for (int c = 0; b == KRR_OK && c < 100000 && rd.reason == KRR_STOP_NONE; c++)
      b = krr_solver_run(sd, &pd, 1 + 3 * r, &rd);
    int64_t it[2] = {rd.diag.iter, -rd.diag.iter};
    krr_comm_allreduce(comm, ctx, it, 2, KRR_DT_INT64, KRR_RED_MAX);
    CHECK(a == KRR_OK && b == KRR_OK && rf.reason == KRR_STOP_TOL && rd.reason == KRR_STOP_TOL &&
              it[0] == -it[1] && rd.diag.iter == rf.diag.iter && rd.exact <= 1e-8,
          "np %d stop policy: one process stops at iteration %lld (%s), ranks at %lld..%lld (%s), "
          "exact %.3g (%s)", P, (long long)rf.diag.iter, krr_stop_reason_name(rf.reason),
          (long long)-it[1], (long long)it[0], krr_stop_reason_name(rd.reason), rd.exact, ctx->msg);
    krr_solver_free(sf);
    krr_solver_free(sd);
  }
  /* Falkon: weights on the centres (replicated), the local K_nm^T K_nm u summed.
   * The sums over ranks round in another order; Falkon's centre weights carry
   * that rounding times the conditioning of the preconditioned centre system
   * (measured: 1.5e-12..3e-12 in double, 1.6e-4..1.8e-4 in single at
   * n_centers = 60, with the criterion equal to 1e-12 / 5e-4): checked at
   * ftol = 1e-10 / 1e-3, the criterion too. */
  const double ftol = prec == KRR_DOUBLE ? 1e-10 : 1e-3, ctol = ftol;
  for (int t = 0; st == KRR_OK && t < 1; t++) {
    krr_solver *sf = NULL, *sd = NULL;
    const char *spec = "n_centers=60 seed=5";
    krr_status a = tinit(&full, "falkon", spec, &sf), b = tinit(&dist, "falkon", spec, &sd);
    if (a == KRR_OK) a = krr_solver_step(sf, 5);
    if (b == KRR_OK) b = krr_solver_step(sd, 5);
    double cf = 0, cd = 0, *af = malloc(sizeof(double) * 60 * m), *ad = malloc(sizeof(double) * 60 * m);
    if (a == KRR_OK) a = krr_solver_weights(sf, af);
    if (b == KRR_OK) b = krr_solver_weights(sd, ad);
    if (a == KRR_OK) a = krr_solver_residual(sf, &cf);
    if (b == KRR_OK) b = krr_solver_residual(sd, &cd);
    double rw = rel_diff(ad, af, 60 * m);
    CHECK(a == KRR_OK && b == KRR_OK && rw <= ftol && fabs(cd - cf) <= ctol * cf + 1e-15,
          "%s Falkon np %d: weights rel %.3g (tol %g), criterion %.6g vs %.6g (%s)", pn, P, rw, ftol,
          cd, cf, ctx->msg);
    if (r == 0 && prec == KRR_DOUBLE)
      printf("np %d %s Falkon: weights rel diff %.2e, criterion %.3e\n", P, pn, rw, cd);
    free(af); free(ad);
    krr_solver_free(sf);
    krr_solver_free(sd);
  }
  /* PCG: the full product with the shards in turn, the Nystrom sketch's
   * Gram matrices and U^T g summed over the ranks (Cholesky QR instead of
   * the one-process Householder QR: the same preconditioner up to
   * rounding).  Both run to convergence (40 iterations with the
   * preconditioner, 300 without): the weights agree to the sums' rounding
   * times the conditioning (measured: 6e-13..1.4e-12 in double with the
   * preconditioner, 9e-7 in single), checked at ptol; the criteria, at the
   * rounding floor in single precision, agree within a factor of 2. */
  const double ptol = prec == KRR_DOUBLE ? 1e-10 : 1e-5;
  const char *pspecs[2] = {"preconditioner=nystrom rank=20 seed=5",
                           "preconditioner=none"};
  for (int t = 0; st == KRR_OK && t < 2; t++) {
    double rw = 0, cf = 0, cd = 0;
    krr_status a = fit_pair(&full, &dist, "pcg", pspecs[t], t == 0 ? 40 : 300, m, n, r0, nl, wf,
                            wd, &rw, &cf, &cd);
    CHECK(a == KRR_OK && rw <= ptol && cd <= 2 * cf + 1e-12 && cf <= 2 * cd + 1e-12,
          "%s PCG %s np %d: weights rel %.3g (tol %g), criterion %.6g vs %.6g (%s)", pn,
          pspecs[t], P, rw, ptol, cd, cf, ctx->msg);
    if (r == 0)
      printf("np %d %s PCG %s: weights rel diff %.2e, criterion %.3e vs %.3e\n", P, pn,
             t == 0 ? "nystrom" : "none", rw, cd, cf);
  }
  if (st == KRR_OK && P > 1) { /* the partial Cholesky preconditioners refuse by name */
    krr_solver *s = NULL;
    krr_status a = tinit(&dist, "pcg", "preconditioner=greedy_cholesky", &s);
    if (a == KRR_OK) a = krr_solver_step(s, 1);
    CHECK(a == KRR_ERR_INPUT && strstr(ctx->msg, "distributed PCG"), "greedy PCG refused: %s",
          ctx->msg);
    krr_solver_free(s);
    krr_clear(ctx);
  }
  /* one rank interrupted inside a kernel product mid-fit (its poll callback
   * fires on the 3rd poll): every rank returns the interrupt, none hangs */
  /* (PCG too: its sketch's sums agree on the status before each collective) */
  const char *isolv[2][2] = {{"askotch", "block_size=40 rank=10 seed=5"},
                             {"pcg", "preconditioner=nystrom rank=20 seed=5"}};
  for (int sv = 0; st == KRR_OK && P > 1 && prec == KRR_DOUBLE && sv < 2; sv++) {
    for (int limit = 1; limit <= 7; limit += 3) {
      krr_solver *sd = NULL;
      krr_status b = tinit(&dist, isolv[sv][0], isolv[sv][1], &sd);
      poll_count = 0;
      if (r == P - 1) { ctx->poll = poll_stop; ctx->poll_data = &limit; ctx->poll_every = 1e-12; }
      if (b == KRR_OK) b = krr_solver_step(sd, 30);
      ctx->poll = NULL;
      ctx->poll_every = 0;
      ctx->interrupted = 0;
      CHECK(b == KRR_ERR_INTERRUPT && (r == P - 1 || strstr(ctx->msg, "rank ")),
            "%s: interrupt on rank %d after %d polls: status %d here (%s)", isolv[sv][0], P - 1,
            limit, (int)b, ctx->msg);
      krr_solver_free(sd);
      krr_clear(ctx);
      /* the ranks are in step again: a fresh fit works */
      b = tinit(&dist, isolv[sv][0], isolv[sv][1], &sd);
      if (b == KRR_OK) b = krr_solver_step(sd, 3);
      CHECK(b == KRR_OK, "a fit after the interrupt: %s", ctx->msg);
      krr_solver_free(sd);
    }
  }
  if (st == KRR_OK && P > 1) { /* the solvers that need the whole kernel refuse by name */
    krr_solver *s = NULL;
    krr_status a = tinit(&dist, "cholesky", "", &s);
    CHECK(a == KRR_ERR_INPUT && strstr(ctx->msg, "does not run distributed"), "cholesky refused: %s", ctx->msg);
    krr_solver_free(s);
    a = tinit(&dist, "askotch", "sampling=rls", &s);
    if (a == KRR_OK) a = krr_solver_step(s, 1);
    CHECK(a == KRR_ERR_INPUT && strstr(ctx->msg, "rls"), "rls refused: %s", ctx->msg);
    krr_solver_free(s);
    krr_clear(ctx);
  }
  free(wf); free(wd);
  tfit_free(&dist);
  tfit_free(&full);
out:
  free(X); free(y); free(Xl); free(yl);
}

int main(int argc, char **argv) {
  krr_ctx ctx;
  /* --backend cuda: every rank on the CUDA backend (device 0: the ranks of
   * one machine share its GPU); built with CUDA=1 (driver/gpu_check.sh's mpi
   * stage, driver/gpu_r_session.sh) */
  const char *be = "cpu";
  int threads = 1;
  int64_t n_unused = 0;
  parse_test_args(argc, argv, &be, &threads, &n_unused);
  if (krr_ctx_init(&ctx, backend(be), krr_cpu_ops(), threads, 0) != KRR_OK) {
    printf("ctx: %s\n", ctx.msg);
    return 1;
  }
  if (krr_comm_mpi_built()) {
    if (krr_comm_mpi_create(&ctx, &comm) != KRR_OK) { printf("mpi: %s\n", ctx.msg); return 1; }
  } else {
    comm = krr_comm_serial();
  }
  test_collectives(&ctx);
  double by1 = 0, by2 = 0, by3 = 0;
  test_operator(&ctx, KRR_DOUBLE, 203, &by1);
  test_operator(&ctx, KRR_DOUBLE, 812, &by2);
  test_operator(&ctx, KRR_FLOAT, 203, &by3);
  /* bytes of a block step summed over the ranks: independent of n */
  double tb[2] = {by1, by2};
  krr_comm_allreduce(comm, &ctx, tb, 2, KRR_DT_DOUBLE, KRR_RED_SUM);
  CHECK(tb[0] == tb[1], "block-step bytes depend on n: %g at n = 203, %g at n = 812", tb[0], tb[1]);
  if (comm->size > 1) {
    /* b p (points) + b m (K_B: w) per rank + b m (gather) per rank, doubles,
     * and one status integer per rank before each of the 3 data collectives */
    double expect = 8.0 * (37 * 3 + 2 * comm->size * 37 * 2) + 3 * 8.0 * comm->size;
    CHECK(tb[0] == expect, "block-step bytes %g, expected b p + 2 P b m doubles + 3 P ints = %g", tb[0], expect);
  }
  if (comm->rank == 0) printf("ranks %d: bytes per block step (b = 37, p = 3, m = 2) %g\n", comm->size, tb[0]);
  test_bad_shards(&ctx);
  test_fits(&ctx, KRR_DOUBLE, 301, 1e-12);
  test_fits(&ctx, KRR_FLOAT, 301, 1e-5);
  int64_t pf[2] = {n_pass, n_fail};
  krr_comm_allreduce(comm, &ctx, pf, 2, KRR_DT_INT64, KRR_RED_SUM);
  if (comm->rank == 0) printf("%lld passed, %lld failed\n", (long long)pf[0], (long long)pf[1]);
  int failed = pf[1] != 0;
  if (comm != krr_comm_serial()) krr_comm_free(comm);
  krr_comm_mpi_finalize();
  krr_ctx_free(&ctx);
  return failed;
}
