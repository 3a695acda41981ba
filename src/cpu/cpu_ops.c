#if defined(__linux__) && !defined(_GNU_SOURCE)
#define _GNU_SOURCE /* dladdr */
#endif
/* The CPU krr_ops table: OpenBLAS (cblas), LAPACKE, OpenMP. */
#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>
#include <cblas.h>
#include <lapacke.h>
#ifdef _OPENMP
#include <omp.h>
#endif
#include "cpu.h"
#include "../core/base/base.h"
#include "../core/rng.h"
#include "../core/loss_math.h"
#include "../core/kcomp_math.h"

/* gemm's slices of C (cpu_ops_t.c.inc): at most KRR_GEMM_PIECES of at least
 * KRR_GEMM_SLICE columns (or rows) each (two of half that where one would
 * be left), the count set by the product's size only.  Each slice repacks
 * the whole other factor, about one copied element per 2 x slice flops, so
 * narrow slices lose much of the BLAS's rate on the tall products of a
 * factorisation (inst/bench/bench_factor.c, RESULTS.md) */
#define KRR_GEMM_PIECES 32
#define KRR_GEMM_SLICE 256
static int64_t krr_cpu_slices(int64_t len, int64_t want) {
  int64_t pieces = len / KRR_GEMM_SLICE < want ? len / KRR_GEMM_SLICE : want;
  if (pieces < 2) pieces = len / (KRR_GEMM_SLICE / 2) >= 2 && want >= 2 ? 2 : 1;
  return pieces;
}
/* the team for `pieces` fixed slices of `work`: never more threads than slices */
static int krr_cpu_team_slices(const krr_ctx *ctx, double work, int64_t pieces) {
  int nt = krr_cpu_team(ctx, work);
  return (int64_t)nt > pieces ? (int)pieces : nt;
}
/* syrk's column blocks of C (cpu_ops_t.c.inc), fixed by the size */
#define KRR_SYRK_BLOCKS 16

#if defined(__linux__) || defined(__APPLE__)
#include <dlfcn.h>
#define KRR_HAVE_DLADDR 1
#endif

/* ---- thread policy: the one place --------------------------------------
 * How many threads a fit may use: krr_cpu_threads_default / _cap below; how
 * many a call wakes: krr_cpu_team (cpu.h, by work size).
 *
 * Waiting threads on a busy machine.  libgomp's idle threads spin (about
 * GOMP_SPINCOUNT = 300000 iterations, milliseconds) before they sleep on a
 * futex, and a region cannot end before a preempted thread has run.  What a
 * package can and cannot change at run time:
 *   - cannot: the wait policy.  R's own libR.so links libgomp, which reads
 *     OMP_WAIT_POLICY / GOMP_SPINCOUNT once when R starts; setting them later
 *     (Sys.setenv, .Renviron, .onLoad) has no effect, and there is no API for
 *     it.  Users set OMP_WAIT_POLICY=passive in the environment that starts R
 *     (documented in ?askotch_threads; its effect on a busy machine is in
 *     inst/bench/RESULTS.md, "Threads").
 *   - not used: omp_set_dynamic (libgomp sizes teams from the 15-minute load
 *     average, which counts our own threads and lags by minutes, and would
 *     make the thread count depend on load); omp_pause_resource_all after a
 *     region (the next region has to re-create the thread, which costs more
 *     than it saves, idle or busy).
 *   - done: a call wakes a thread only for >= ~0.36 ms of work (krr_cpu_team),
 *     so small fits never start the team and the pool's threads sleep; a
 *     team of 1 (GOMP_parallel with 1 thread) leaves the sleeping pool alone
 *     (no thread exits or re-creations when team sizes alternate 1, 2, 1);
 *     kernel_mv / kernel_block schedule their items dynamically, so a
 *     preempted thread holds up at most one item; OpenBLAS runs
 *     single-threaded inside our regions and for every small LAPACK call (its
 *     pthread pool sleeps), and the R glue restores the user's BLAS thread
 *     count after each call. */
int krr_cpu_threads_default(void) {
  int n = 1;
  const char *env = getenv("ASKOTCH_THREADS");
#ifdef _OPENMP
  n = omp_get_num_procs();
  if (env && atoi(env) > 0) n = atoi(env);
  /* never more threads than processors: a larger team only oversubscribes
   * the cores (and a huge one exhausts memory in the OpenMP runtime) */
  int lim = omp_get_thread_limit(), procs = omp_get_num_procs();
  if (lim > 0 && n > lim) n = lim;
  if (procs > 0 && n > procs) n = procs;
#else
  (void)env;
#endif
  return n < 1 ? 1 : n;
}

int krr_cpu_threads_cap(int n) {
  if (n < 1) return krr_cpu_threads_default();
#ifdef _OPENMP
  /* never more threads than processors: a larger team only oversubscribes
   * the cores (and a huge one exhausts memory in the OpenMP runtime) */
  int lim = omp_get_thread_limit(), procs = omp_get_num_procs();
  if (lim > 0 && n > lim) n = lim;
  if (procs > 0 && n > procs) n = procs;
#else
  n = 1;
#endif
  return n;
}

/* The BLAS that serves our cblas calls is not always the one we linked: inside
 * R, cblas_dgemm binds to R's own libblas.so.3 when that library exports it
 * (OpenBLAS does).  So the thread-count setter (and its getter) is looked up
 * in the library that actually provides cblas_dgemm, and a BLAS without one
 * (reference BLAS, single-threaded) is left alone.  BLIS counts in dim_t
 * (64-bit), OpenBLAS/GotoBLAS in int. */
typedef struct {
  void (*set_i)(int);
  int (*get_i)(void);
  void (*set_l)(long);
  long (*get_l)(void);
} krr_blas_fns;
static const krr_blas_fns *blas_fns(void) {
  static int looked = 0;
  static krr_blas_fns f;
  if (looked) return &f;
  looked = 1;
  memset(&f, 0, sizeof f);
#ifdef KRR_HAVE_DLADDR
  Dl_info info;
  if (dladdr((void *)&cblas_dgemm, &info) && info.dli_fname) {
    void *h = dlopen(info.dli_fname, RTLD_NOW | RTLD_NOLOAD);
    if (h) {
      static const char *names[][2] = {{"openblas_set_num_threads", "openblas_get_num_threads"},
                                       {"goto_set_num_threads", "goto_get_num_threads"}};
      for (size_t i = 0; i < sizeof names / sizeof names[0] && !f.set_i; i++) {
        *(void **)(&f.set_i) = dlsym(h, names[i][0]);
        if (f.set_i) *(void **)(&f.get_i) = dlsym(h, names[i][1]);
      }
      if (!f.set_i) {
        *(void **)(&f.set_l) = dlsym(h, "bli_thread_set_num_threads");
        if (f.set_l) *(void **)(&f.get_l) = dlsym(h, "bli_thread_get_num_threads");
      }
      dlclose(h); /* RTLD_NOLOAD: the library stays loaded (it serves cblas) */
    }
  }
#endif
  return &f;
}

/* the count last set by krr_cpu_blas_threads (-1: unknown, set next time) */
static int blas_current = -1;

void krr_cpu_blas_threads(int n) {
  if (n < 1) n = 1;
  if (n == blas_current) return;
  const krr_blas_fns *f = blas_fns();
  if (f->set_i) f->set_i(n);
  else if (f->set_l) f->set_l((long)n);
  blas_current = n;
}

int krr_cpu_blas_threads_get(void) {
  const krr_blas_fns *f = blas_fns();
  long n = -1;
  if (f->set_i && f->get_i) n = f->get_i();
  else if (f->set_l && f->get_l) n = f->get_l();
  return n >= 1 && n <= INT_MAX ? (int)n : -1;
}

void krr_cpu_blas_threads_restore(int n) {
  if (n >= 1) {
    const krr_blas_fns *f = blas_fns();
    if (f->set_i) f->set_i(n);
    else if (f->set_l) f->set_l((long)n);
  }
  blas_current = -1; /* whatever it is now, the next krr_cpu_blas_threads() sets it */
}

/* ---- memory --------------------------------------------------------------*/
static krr_status cpu_ctx_init(krr_ctx *ctx) {
  if (ctx->threads < 1) ctx->threads = krr_cpu_threads_default();
  return KRR_OK;
}
static void cpu_ctx_free(krr_ctx *ctx) { (void)ctx; }

/* ---- the memory limit of the process's cgroup ----------------------------
 * In a container or under a batch scheduler (Slurm, Kubernetes, systemd) the
 * process may use far less memory than /proc/meminfo reports: the kernel
 * kills it at its cgroup's limit.  Cgroup v2 keeps memory.max / .current /
 * .stat in the group's directory, v1 memory.limit_in_bytes / .usage_in_bytes
 * / .stat under the memory controller's mount; the group's path comes from
 * /proc/self/cgroup and, inside a container (cgroup namespace), is "/". The
 * page cache that could be reclaimed (inactive_file) is not counted as used. */
static int read_u64(const char *path, unsigned long long *v) {
  FILE *f = fopen(path, "r");
  if (!f) return 0;
  char buf[64];
  int ok = fgets(buf, sizeof buf, f) != NULL && sscanf(buf, "%llu", v) == 1;
  fclose(f);
  return ok;
}

static unsigned long long read_stat(const char *path, const char *key) {
  FILE *f = fopen(path, "r");
  if (!f) return 0;
  char line[256], name[128];
  unsigned long long v, out = 0;
  while (fgets(line, sizeof line, f))
    if (sscanf(line, "%127s %llu", name, &v) == 2 && strcmp(name, key) == 0) out = v;
  fclose(f);
  return out;
}

/* the group's path for controller `ctrl` ("" = v2) from a /proc/self/cgroup file */
static int cgroup_path(const char *self, const char *ctrl, char *path, size_t len) {
  FILE *f = fopen(self, "r");
  if (!f) return 0;
  char line[1024];
  int found = 0;
  while (!found && fgets(line, sizeof line, f)) {
    char *c1 = strchr(line, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
    if (!c2) continue;
    *c2 = '\0';
    const char *ctrls = c1 + 1;
    int match = *ctrl ? strstr(ctrls, ctrl) != NULL : *ctrls == '\0';
    if (match) {
      snprintf(path, len, "%s", c2 + 1);
      path[strcspn(path, "\n")] = '\0';
      found = 1;
    }
  }
  fclose(f);
  return found;
}

int krr_cpu_cgroup_memory(const char *root, const char *self, size_t *limit, size_t *used) {
  static const struct {
    const char *ctrl, *dir, *max, *cur, *inactive;
  } v[2] = {{"", "", "memory.max", "memory.current", "inactive_file"},
            {"memory", "/memory", "memory.limit_in_bytes", "memory.usage_in_bytes",
             "total_inactive_file"}};
  for (int k = 0; k < 2; k++) {
    char grp[512] = "", base[1024], p[1200];
    if (!cgroup_path(self, v[k].ctrl, grp, sizeof grp)) continue;
    /* the group's own directory, else the namespace's root (a container) */
    for (int tryroot = 0; tryroot < 2; tryroot++) {
      snprintf(base, sizeof base, "%s%s%s", root, v[k].dir, tryroot ? "" : grp);
      unsigned long long lim, cur;
      snprintf(p, sizeof p, "%s/%s", base, v[k].max);
      if (!read_u64(p, &lim)) continue; /* absent, or "max": no limit here */
      snprintf(p, sizeof p, "%s/%s", base, v[k].cur);
      if (!read_u64(p, &cur)) cur = 0;
      snprintf(p, sizeof p, "%s/memory.stat", base);
      unsigned long long inact = read_stat(p, v[k].inactive);
      if (lim >= (1ULL << 60)) return 0; /* v1's "no limit" */
      *limit = (size_t)lim;
      *used = (size_t)(cur > inact ? cur - inact : 0);
      return 1;
    }
  }
  return 0;
}

static krr_status cpu_mem_info(krr_ctx *ctx, size_t *free_b, size_t *total_b) {
  (void)ctx;
  size_t avail = 0, total = 0;
  FILE *f = fopen("/proc/meminfo", "r");
  if (f) {
    char line[256];
    unsigned long long v;
    while (fgets(line, sizeof line, f)) {
      if (sscanf(line, "MemAvailable: %llu kB", &v) == 1) avail = (size_t)v * 1024;
      else if (sscanf(line, "MemTotal: %llu kB", &v) == 1) total = (size_t)v * 1024;
    }
    fclose(f);
  }
#if defined(_SC_PHYS_PAGES) && defined(_SC_PAGESIZE)
  if (total == 0) {
    long pages = sysconf(_SC_PHYS_PAGES), psz = sysconf(_SC_PAGESIZE);
    if (pages > 0 && psz > 0) total = (size_t)pages * (size_t)psz;
  }
#endif
  if (avail == 0) avail = total / 2;
  if (total == 0) { total = (size_t)8 << 30; avail = total / 2; }
  size_t cg_limit, cg_used;
  if (krr_cpu_cgroup_memory("/sys/fs/cgroup", "/proc/self/cgroup", &cg_limit, &cg_used) &&
      cg_limit < total) {
    total = cg_limit;
    size_t cg_avail = cg_limit > cg_used ? cg_limit - cg_used : 0;
    if (cg_avail < avail) avail = cg_avail;
  }
  /* an address-space limit (ulimit -v, RLIMIT_AS; some batch systems set
   * it): what is left of it, given the process's virtual size now */
  struct rlimit rl;
  if (getrlimit(RLIMIT_AS, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY) {
    size_t lim = (size_t)rl.rlim_cur, vm = 0;
    unsigned long long pages = 0;
    FILE *sf = fopen("/proc/self/statm", "r");
    if (sf) {
      if (fscanf(sf, "%llu", &pages) == 1) vm = (size_t)pages * (size_t)sysconf(_SC_PAGESIZE);
      fclose(sf);
    }
    size_t left = lim > vm ? lim - vm : 0;
    if (lim < total) total = lim;
    if (left < avail) avail = left;
  }
  *free_b = avail;
  *total_b = total;
  return KRR_OK;
}

static void *cpu_alloc(krr_ctx *ctx, size_t bytes) {
  void *p = malloc(bytes ? bytes : 1);
  if (!p) krr_fail(ctx, KRR_ERR_MEMORY, "out of host memory allocating %.1f MiB",
                   (double)bytes / 1048576.0);
  return p;
}
static void cpu_dealloc(krr_ctx *ctx, void *p) { (void)ctx; free(p); }
static krr_status cpu_memcpy(krr_ctx *ctx, void *dst, const void *src, size_t bytes) {
  (void)ctx;
  if (bytes) memcpy(dst, src, bytes);
  return KRR_OK;
}
static krr_status cpu_zero(krr_ctx *ctx, void *dst, size_t bytes) {
  (void)ctx;
  if (bytes) memset(dst, 0, bytes);
  return KRR_OK;
}
static krr_status cpu_sync(krr_ctx *ctx) { (void)ctx; return KRR_OK; }

/* LAPACK's auxiliary routines of Cuppen's divide and conquer (dstedc's
 * dlaed2: deflation; dlaed4: one root of the secular equation; dlamrg: the
 * merge of two sorted lists), called by the polled tridiagonal eigensolver
 * (cpu_ops_t.c.inc).  They are not in LAPACKE: the Fortran symbols, which
 * every full LAPACK (OpenBLAS's included) exports; no character arguments. */
#define KRR_LAED_DECL(real, x)                                                                    \
  void x##laed2_(lapack_int *k, const lapack_int *n, const lapack_int *n1, real *d, real *q,      \
                 const lapack_int *ldq, lapack_int *indxq, real *rho, real *z, real *dlamda,       \
                 real *w, real *q2, lapack_int *indx, lapack_int *indxc, lapack_int *indxp,       \
                 lapack_int *coltyp, lapack_int *info);                                           \
  void x##laed4_(const lapack_int *n, const lapack_int *i, const real *d, const real *z,          \
                 real *delta, const real *rho, real *dlam, lapack_int *info);                     \
  void x##lamrg_(const lapack_int *n1, const lapack_int *n2, const real *a,                       \
                 const lapack_int *dtrd1, const lapack_int *dtrd2, lapack_int *index);
KRR_LAED_DECL(double, d)
KRR_LAED_DECL(float, s)

/* ---- typed ops, instantiated twice ---------------------------------------*/
#define real double
#define S(name) cpu_##name##_d
#define CB(name) cblas_d##name
#define LP(name) LAPACKE_d##name
#define FL(name) d##name##_
#define KC_STAT krr_kc_stat_d
#include "cpu_ops_t.c.inc"
#include "features_t.c.inc"
#include "kcomp_t.c.inc"
#undef KC_STAT
#undef real
#undef S
#undef CB
#undef LP
#undef FL

#define real float
#define S(name) cpu_##name##_s
#define CB(name) cblas_s##name
#define LP(name) LAPACKE_s##name
#define FL(name) s##name##_
#define KC_STAT krr_kc_stat_s
#include "cpu_ops_t.c.inc"
#include "features_t.c.inc"
#include "kcomp_t.c.inc"
#undef KC_STAT
#undef real
#undef S
#undef CB
#undef LP
#undef FL

#define KRR_CPU_TYPED(S)                                                                        \
  .kernel_mv_##S = krr_cpu_kernel_mv_##S, .kernel_block_##S = krr_cpu_kernel_block_##S,         \
  .kernel_gram_##S = krr_cpu_kernel_gram_##S, .gather_points_##S = cpu_gather_points_##S,       \
  .gather_rows_##S = cpu_gather_rows_##S, .scatter_axpy_##S = cpu_scatter_axpy_##S,             \
  .axpby_##S = cpu_axpby_##S, .momentum_##S = cpu_momentum_##S, .dot_##S = cpu_dot_##S,         \
  .nrm2_##S = cpu_nrm2_##S, .gemm_##S = cpu_gemm_##S, .syrk_##S = cpu_syrk_##S,                 \
  .potrf_##S = cpu_potrf_##S, .trsm_##S = cpu_trsm_##S, .qr_q_##S = cpu_qr_q_##S,               \
  .svd_thin_##S = cpu_svd_thin_##S, .syev_##S = cpu_syev_##S, .syev_top_##S = cpu_syev_top_##S, \
  .sytrd_##S = cpu_sytrd_##S, .ormtr_##S = cpu_ormtr_##S, .pttrs_##S = cpu_pttrs_##S,           \
  .add_diag_##S = cpu_add_diag_##S, .scale_rows_##S = cpu_scale_rows_##S,                       \
  .randn_##S = cpu_randn_##S, .loss_map_##S = cpu_loss_map_##S

static const krr_ops cpu_ops = {
    .name = "cpu",
    .ctx_init = cpu_ctx_init,
    .ctx_free = cpu_ctx_free,
    .mem_info = cpu_mem_info,
    .alloc = cpu_alloc,
    .dealloc = cpu_dealloc,
    .upload = cpu_memcpy,
    .download = cpu_memcpy,
    .copy = cpu_memcpy,
    .zero = cpu_zero,
    .sync = cpu_sync,
    KRR_CPU_TYPED(d),
    KRR_CPU_TYPED(s),
    /* random features */
    .rff_map_d = cpu_rff_map_d,
    .rff_map_s = cpu_rff_map_s,
    /* composite-kernel components */
    .kcomp_map_d = cpu_kcomp_map_d,
    .kcomp_map_s = cpu_kcomp_map_s,
    .kprod_mv_d = krr_cpu_kprod_mv_d,
    .kprod_mv_s = krr_cpu_kprod_mv_s,
    .kprod_block_d = krr_cpu_kprod_block_d,
    .kprod_block_s = krr_cpu_kprod_block_s,
    /* the likelihood gradient's contraction (host) */
    .kernel_deriv_dot = krr_cpu_kernel_deriv_dot,
};

const krr_ops *krr_cpu_ops(void) { return &cpu_ops; }
