/* solvers/: the solver skeleton every solver file fills.
 *
 * A solver is one file with one registry entry (a krr_solver_def) and one
 * line in registry.c.  The skeleton (common.c) does everything else once:
 * options (resolved by the solver's resolve hook), the memory budget check
 * with its advice, one buffer arena freed in one place, the generic step loop
 * with lazy setup, diagnostics, weights, the exact criterion, and solving
 * again (new targets, new lambda, warm start).
 *
 * Life of a solver (each hook optional unless marked):
 *   resolve   data-dependent defaults of the options, validation (input
 *             errors name the option); no allocation                (required)
 *   memory    bytes beyond the data for the resolved options        (required)
 *   shrink    when the need exceeds the budget: reduce automatic choices to
 *             fit (ASkotch's block size), or refuse with specific advice
 *   init      allocate everything from s->arena (cheap)             (required)
 *   prepare   once, at the first step: what depends on the data only
 *             (sketches, eigensystems, factorisations of K_mm)
 *   tune      at the first step and after each lambda change: what depends
 *             on lambda (damping, step sizes, factorisations with lambda)
 *   start     (re)start the iteration from s->w (zero for a fresh fit)
 *   iterate   one iteration; updates s->diag via the helpers    (required)
 * A failure during setup leaves the solver failed: stepping and the exact
 * criterion replay the error; a change (new lambda, targets or weights) may
 * cure it, so those clear it and the hooks that did not finish run again
 * (they allocate nothing: init did). */
#ifndef KRR_SOLVER_H
#define KRR_SOLVER_H
#include "../linalg/linalg.h"
#include "../sampling/sampling.h"
#include "../rng.h"

#define KRR_MAX_EXTRAS 16

struct krr_solver_def {
  const char *name;        /* registry name (what R's solver specs send) */
  const char *title;       /* one line */
  const char *losses;      /* names of the supported losses, separated by spaces */
  krr_optable options;     /* the solver's own options (the common ones are added) */
  const char *const *extras; /* names of the per-solver diagnostics (NULL-terminated) */
  size_t state_size;       /* bytes of the solver's private state (zeroed), s->st */
  const char *mem_advice;  /* what to try when the memory need is refused */
  int distributed;         /* 1: runs on an operator sharded over several ranks */
  int lambda_path;         /* 1: takes an objective with a lambda per column (obj->lcol) */
  krr_status (*resolve)(krr_solver *s);
  double (*memory)(const krr_solver *s);
  krr_status (*shrink)(krr_solver *s, double avail);
  krr_status (*init)(krr_solver *s);
  krr_status (*prepare)(krr_solver *s);
  krr_status (*tune)(krr_solver *s);
  krr_status (*start)(krr_solver *s);
  krr_status (*iterate)(krr_solver *s);
  /* optional overrides of the generic versions */
  krr_status (*residual)(krr_solver *s, double *crit);
  krr_status (*centers)(krr_solver *s, int64_t *idx);
  krr_status (*theta)(krr_solver *s, double *host); /* primal weights in feature space */
  void (*release)(krr_solver *s); /* what is not in the arena */
};

struct krr_solver {
  const krr_solver_def *def;
  krr_ctx *ctx;
  krr_op *op;
  krr_objective *obj;
  krr_options *opts;      /* the solver's copy, resolved */
  krr_precision prec;
  size_t es;
  int64_t n;              /* training rows */
  int data_free;          /* krr_options_check: n is unknown (huge); check what holds for any n */
  int m;                  /* right-hand sides */
  krr_arena arena;
  double avail;           /* memory budget (bytes) */
  /* the weights: wrows x m in precision wprec (device) */
  void *w;
  int64_t wrows;
  krr_precision wprec;
  int64_t ncenters;       /* inducing-point solvers */
  int w_zero;             /* the weights are known to be zero (fresh fit) */
  int prepared, tuned, started;
  krr_status failed;
  char failed_msg[1024];
  krr_diag diag;
  double extra[KRR_MAX_EXTRAS];
  int n_extras;
  double ema;             /* running estimate of the squared criterion (block methods) */
  void *st;               /* private state (def->state_size bytes) */
};

#define SOPT(s, T) KRR_OPTS((s)->opts, T)
#define SOP(s, name, ...) KOP((s)->ctx, (s)->prec, name, __VA_ARGS__)

/* the generic weights buffer (wrows x m, wprec) from the arena; zeroed */
krr_status krr_solver_alloc_weights(krr_solver *s, int64_t rows, krr_precision wprec);
/* the iteration count of the current solve moves by one; the passes are
 * set by the caller */
void krr_solver_tick(krr_solver *s);
/* block methods: block criterion and the running estimate of the criterion,
 * (n / b) ||g||^2 / ||y||^2 smoothed by an exponential average with weight
 * max(b / n, 0.1) */
void krr_solver_track_block(krr_solver *s, int64_t b, double gnorm, double ynorm);
/* set, or add to (NaN counts as 0), a per-solver diagnostic by name (must
 * be in def->extras) */
void krr_solver_set_extra(krr_solver *s, const char *name, double v);
void krr_solver_add_extra(krr_solver *s, const char *name, double dv);
/* the default block size of the block methods: min(n, max(256, ceiling(n / 100))) */
int64_t krr_default_block(int64_t n);
/* the memory-refusal message with the solver's advice */
krr_status krr_solver_refuse(krr_solver *s, double need, const char *what);

/* Block coordinate descent in feature space (bcd_common.c; Tu et al. 2016,
 * Algorithms 2 and 3): p coordinates cut once into nb = ceil(p / b)
 * near-equal consecutive pieces, visited each epoch in a fresh random order;
 * the blocks' Cholesky factors (b x b double each, p b in all, per lambda
 * group) cached until lambda changes.  A lambda path (obj->lcol) is solved
 * at once: the columns form ng groups of equal lambda (group q: columns
 * c0[q] .. c0[q + 1] - 1, lambda lam[q]), sharing each block's kernel and
 * Gram products. */
typedef struct krr_bcd {
  int64_t p, b, nb;
  uint64_t seed;
  int ng, ngcap;        /* lambda groups (now, allocated for) */
  int *c0;              /* host ng + 1: first column of each group */
  double *lam;          /* host ng: lambda of each group */
  int64_t *order;       /* host nb: this epoch's order */
  unsigned char *have;  /* host nb: factors cached (every group) */
  void *factors;        /* device double: block k's factor of group q at q p b + off_k b */
} krr_bcd;
int krr_bcd_count_groups(const krr_objective *obj);
double krr_bcd_memory(int64_t p, int64_t b, int ng, int m);
krr_status krr_bcd_alloc(krr_bcd *c, krr_arena *a, int64_t p, int64_t b, uint64_t seed,
                         const krr_objective *obj);
/* the groups of the objective's lambdas again (after a change of lambda);
 * drops the cached factors */
krr_status krr_bcd_regroup(krr_bcd *c, const krr_objective *obj);
/* drop the cached factors */
void krr_bcd_forget(krr_bcd *c);
/* block k: coordinates off .. off + len - 1 */
void krr_bcd_range(const krr_bcd *c, int64_t k, int64_t *off, int64_t *len);
/* the block of iteration iter (0-based) */
int64_t krr_bcd_pick(krr_bcd *c, int64_t iter);
/* block k's cached factor of group g (len x len, ld len) */
void *krr_bcd_slot(const krr_bcd *c, int64_t k, int g);
/* factor G (len x len, double) into block k's slot of group g; Cholesky
 * failures retried with jitter0, 10 jitter0, ... (a proximal step: the fixed
 * point stays); the caller sets have[k] once every group is factored */
krr_status krr_bcd_factor(krr_solver *s, krr_bcd *c, int64_t k, int g, const void *G,
                          double jitter0);
/* g (len x m, ld ldg, double) <- H_kk^{-1} g, each group with its factor */
krr_status krr_bcd_solve(krr_solver *s, const krr_bcd *c, int64_t k, void *g, int64_t ldg);
/* resid_est = sqrt of the running average of (p / len) ||g||^2, over scale */
void krr_bcd_track(krr_solver *s, const krr_bcd *c, int64_t len, double gn, double scale);
#endif
