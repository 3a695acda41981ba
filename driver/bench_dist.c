/* bench_dist: time per ASkotch (or PCG) iteration on the MPI-sharded operator, split
 * into communication (time inside the communicator's collectives, waiting
 * included) and the rest, with the bytes each rank contributes per
 * iteration.  Run under mpirun (np = 1..P):
 *   mpirun -np P build/mpi/bench_dist --n N [--p 3] [--b 0] [--iters 5] [--threads 1]
 *        [--solver askotch|nsap|pcg]   (pcg: Nystrom preconditioner of rank 100)
 * Each rank generates the same global data (seeded) and keeps its rows.  One
 * line, printed by rank 0: np n p b iters t_iter t_comm bytes_rank bytes_total */
#include "test_common.h"
#include "../src/core/dist/dist.h"
#include "../src/core/op/op.h"

int main(int argc, char **argv) {
  int64_t n = 20000, b = 0;
  int p = 3, iters = 5, threads = 1;
  const char *solver = "askotch";
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!strcmp(argv[i], "--n")) n = atoll(argv[i + 1]);
    else if (!strcmp(argv[i], "--p")) p = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--b")) b = atoll(argv[i + 1]);
    else if (!strcmp(argv[i], "--iters")) iters = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--threads")) threads = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--solver")) solver = argv[i + 1];
  }
  krr_ctx ctx;
  krr_comm *comm = NULL;
  if (krr_ctx_init(&ctx, krr_cpu_ops(), krr_cpu_ops(), threads, 0) != KRR_OK) return 1;
  if (krr_comm_mpi_built()) {
    if (krr_comm_mpi_create(&ctx, &comm) != KRR_OK) { printf("mpi: %s\n", ctx.msg); return 1; }
  } else {
    comm = krr_comm_serial();
  }
  int P = comm->size, r = comm->rank;
  int64_t r0 = n / P * r + (r < n % P ? r : n % P), nl = n / P + (r < n % P);
  double *X = malloc(sizeof(double) * nl * p), *y = malloc(sizeof(double) * nl);
  for (int j = 0; j < p; j++)
    for (int64_t i = 0; i < nl; i++) X[i + j * nl] = krr_rng_normal(42, (uint64_t)((r0 + i) * p + j));
  for (int64_t i = 0; i < nl; i++) y[i] = sin(X[i]) + 0.1 * krr_rng_normal(43, (uint64_t)(r0 + i));
  krr_kernel k = {.type = KRR_RBF, .bandwidth = 1.0};
  tfit f;
  memset(&f, 0, sizeof f);
  f.ctx = &ctx;
  krr_op *loc = NULL;
  krr_status st = krr_problem_create(&ctx, KRR_DOUBLE, X, nl, p, &f.pb);
  if (st == KRR_OK) st = krr_op_exact_create(&ctx, &f.pb, k, &loc);
  if (st == KRR_OK) st = krr_op_sharded_create(loc, comm, &f.op);
  if (st == KRR_OK) st = krr_objective_init(&ctx, f.op, krr_loss_lookup("squared"), 1e-6 * n, y, 1, &f.obj);
  char spec[256];
  snprintf(spec, sizeof spec, "seed=1%s%s", !strcmp(solver, "nsap") ? " block_solve=exact" : "", "");
  if (b > 0) snprintf(spec + strlen(spec), sizeof spec - strlen(spec), " block_size=%lld", (long long)b);
  krr_solver *s = NULL;
  const int pcg = !strcmp(solver, "pcg");
  if (st == KRR_OK) st = pcg ? tinit(&f, "pcg", "seed=1 preconditioner=nystrom rank=100", &s)
                             : tinit(&f, "askotch", spec, &s);
  if (st == KRR_OK) st = krr_solver_step(s, 1); /* setup and a first iteration */
  krr_comm_barrier(comm, &ctx);
  double c0 = comm->seconds, b0 = comm->bytes, t0 = krr_now();
  if (st == KRR_OK) st = krr_solver_step(s, iters);
  krr_comm_barrier(comm, &ctx);
  double t = (krr_now() - t0) / iters, tc = (comm->seconds - c0) / iters;
  double by[2] = {(comm->bytes - b0) / iters, (comm->bytes - b0) / iters};
  krr_comm_allreduce(comm, &ctx, by + 1, 1, KRR_DT_DOUBLE, KRR_RED_SUM);
  double tcm = tc;
  krr_comm_allreduce(comm, &ctx, &tcm, 1, KRR_DT_DOUBLE, KRR_RED_MAX);
  if (st != KRR_OK) printf("rank %d: %s\n", r, ctx.msg);
  else if (r == 0)
    printf("np %d n %lld p %d b %lld iters %d t_iter %.4f t_comm %.4f bytes_rank %.0f bytes_total %.0f\n",
           P, (long long)n, p, pcg ? 0LL : (long long)topt(s, "block_size"), iters, t, tcm, by[0],
           by[1]);
  krr_solver_free(s);
  tfit_free(&f);
  free(X); free(y);
  if (comm != krr_comm_serial()) krr_comm_free(comm);
  krr_comm_mpi_finalize();
  krr_ctx_free(&ctx);
  return st != KRR_OK;
}
