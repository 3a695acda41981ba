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
  /* 1: holds rows out of each column's fit (obj->rows: krr_solver_set_rows) */
  int holdout;
  /* 1: the running estimate is the criterion computed exactly (up to rounding) at the
   * iterate: the stop rule checks it at the first iteration at tol, not a pass after the
   * last check */
  int exact_est;
  int normal_floor;        /* 1: the criterion is the residual of the inducing-point normal
                            * equations (K_nm^T K_nm + lambda K_mm) a = K_nm^T y, whose
                            * single-precision floor the stop policy measures (stop.c) */
  /* optional: whether these options take a lambda path (NULL: all do) */
  int (*path_options)(const krr_options *o);
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
  /* F = K w (nloc x m, the solver's precision) for the generic criterion of a
   * started solver, where the solver has a cheaper way than the operator's
   * product over all rows (Joker: over the rows with nonzero weights) */
  krr_status (*apply_k)(krr_solver *s, void *F);
  krr_status (*centers)(krr_solver *s, int64_t *idx);
  krr_status (*theta)(krr_solver *s, double *host); /* primal weights in feature space */
  /* optional: result vectors of the solver's own (names NULL-terminated):
   * the length of the i-th, written into out (host) unless out is NULL */
  const char *const *vectors;
  int64_t (*vector)(krr_solver *s, int i, double *out);
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
  double w_rescale;       /* the weights are those the last solve left times this factor (a new
                           * lambda's rescaling, krr_solver_set_lambda); 0: set otherwise */
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

/* block coordinate descent in feature space (Tu et al.): resid_est = the
 * square root of the running average (weight max(len / p, 0.1)) of
 * (p / len) ||g||^2, over scale, for a block of len of p coordinates */
void krr_solver_track_coords(krr_solver *s, int64_t p, int64_t len, double gn, double scale);
#endif
