/* The solver skeleton (see solver.h): creation with resolved options and the
 * memory check, the generic step loop with lazy setup, diagnostics, weights,
 * the exact criterion, solving again, and freeing -- written once for every
 * solver.  Knows no solver (registry.c does). */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include "solver.h"
#include "../dist/dist.h"

static krr_status replay(krr_solver *s);

/* --- the definition's public face ------------------------------------------ */
const char *krr_solver_name(const krr_solver_def *def) { return def->name; }
const char *krr_solver_title(const krr_solver_def *def) { return def->title; }
int krr_solver_distributed(const krr_solver_def *def) { return def->distributed; }
int krr_solver_lambda_path(const krr_solver_def *def) { return def->lambda_path; }
int krr_options_lambda_path(const krr_options *o) {
  const krr_solver_def *def = o->owner;
  return def->lambda_path && (!def->path_options || def->path_options(o));
}
int krr_solver_supports(const krr_solver_def *def, const krr_loss *loss) {
  if (!loss || !def->losses) return 0;
  size_t len = strlen(loss->name);
  for (const char *p = strstr(def->losses, loss->name); p; p = strstr(p + 1, loss->name))
    if ((p == def->losses || p[-1] == ' ') && (p[len] == ' ' || p[len] == '\0')) return 1;
  return 0;
}
int krr_solver_extra_count(const krr_solver_def *def) {
  int k = 0;
  while (def->extras && def->extras[k]) k++;
  return k;
}
const char *krr_solver_extra_name(const krr_solver_def *def, int i) {
  return i >= 0 && i < krr_solver_extra_count(def) ? def->extras[i] : NULL;
}
int krr_solver_vector_count(const krr_solver_def *def) {
  int k = 0;
  while (def->vectors && def->vectors[k]) k++;
  return k;
}
const char *krr_solver_vector_name(const krr_solver_def *def, int i) {
  return i >= 0 && i < krr_solver_vector_count(def) ? def->vectors[i] : NULL;
}
int64_t krr_solver_vector(krr_solver *s, int i, double *out) {
  if (!s || !s->def->vector || i < 0 || i >= krr_solver_vector_count(s->def)) return 0;
  return s->def->vector(s, i, out);
}

krr_status krr_options_new(krr_ctx *ctx, const krr_solver_def *def, krr_options **out) {
  return krr_options_make(ctx, &def->options, def, out);
}
int krr_options_count(const krr_solver_def *def) { return krr_optable_count(&def->options); }
void krr_options_info(const krr_solver_def *def, int i, krr_optinfo *out) {
  const krr_optdef *d = krr_optable_entry(&def->options, i);
  if (d) *out = d->info; else memset(out, 0, sizeof *out);
}
const krr_solver_def *krr_options_solver(const krr_options *o) { return o->owner; }

/* --- helpers for solver files ---------------------------------------------- */
krr_status krr_solver_alloc_weights(krr_solver *s, int64_t rows, krr_precision wprec) {
  s->wrows = rows;
  s->wprec = wprec;
  s->w = krr_arena_dev(&s->arena, rows * s->m, krr_sizeof(wprec));
  if (!s->w) return s->ctx->status;
  s->w_zero = 1;
  return s->ctx->ops->zero(s->ctx, s->w, krr_sizeof(wprec) * (size_t)(rows * s->m));
}

int64_t krr_default_block(int64_t n) {
  int64_t b = (n + 99) / 100;
  if (b < 256) b = 256;
  return b < n ? b : n;
}

void krr_solver_tick(krr_solver *s) { s->diag.iter++; }

void krr_solver_track_block(krr_solver *s, int64_t b, double gn, double ybn) {
  krr_diag *dg = &s->diag;
  double y2 = s->obj->ynorm * s->obj->ynorm > 0 ? s->obj->ynorm * s->obj->ynorm : 1.0;
  double est2 = (double)s->n / (double)b * gn * gn / y2;
  double om = (double)b / (double)s->n;
  if (om < 0.1) om = 0.1;
  s->ema = dg->iter <= 1 ? est2 : (1 - om) * s->ema + om * est2;
  dg->resid_est = sqrt(s->ema);
  dg->block_resid = ybn > 0 ? gn / ybn : gn;
}

void krr_solver_track_coords(krr_solver *s, int64_t p, int64_t len, double gn, double scale) {
  double est2 = (double)p / (double)len * gn * gn, om = (double)len / (double)p;
  if (om < 0.1) om = 0.1;
  s->ema = s->diag.iter <= 1 ? est2 : (1 - om) * s->ema + om * est2;
  s->diag.resid_est = scale > 0 ? sqrt(s->ema) / scale : sqrt(s->ema);
}

void krr_solver_set_extra(krr_solver *s, const char *name, double v) {
  for (int i = 0; i < s->n_extras; i++)
    if (strcmp(s->def->extras[i], name) == 0) { s->extra[i] = v; return; }
}

void krr_solver_add_extra(krr_solver *s, const char *name, double dv) {
  for (int i = 0; i < s->n_extras; i++)
    if (strcmp(s->def->extras[i], name) == 0) {
      s->extra[i] = (isnan(s->extra[i]) ? 0.0 : s->extra[i]) + dv;
      return;
    }
}

krr_status krr_solver_refuse(krr_solver *s, double need, const char *what) {
  return krr_fail(s->ctx, KRR_ERR_MEMORY,
                  "%s needs %.1f MiB beyond the data but only %.1f MiB are available; %s",
                  what ? what : s->def->title, need / 1048576.0, s->avail / 1048576.0,
                  s->def->mem_advice ? s->def->mem_advice : "use a smaller problem");
}

/* --- life cycle --------------------------------------------------------------- */
static void reset_diag(krr_solver *s) {
  double ts = s->diag.t_setup, ti = s->diag.t_iter;
  memset(&s->diag, 0, sizeof s->diag);
  s->diag.t_setup = ts;
  s->diag.t_iter = ti;
  s->diag.resid_est = 1.0;
  s->diag.block_resid = NAN;
  s->ema = 0;
}

static krr_status build(krr_solver *s) {
  krr_ctx *ctx = s->ctx;
  KTRY(s->def->resolve(s));
  KTRY(krr_memory_budget(ctx, ((krr_common_opts *)s->opts->data)->mem_limit, &s->avail));
  double need = s->def->memory(s);
  if (need > s->avail) {
    if (!s->def->shrink) return krr_solver_refuse(s, need, NULL);
    KTRY(s->def->shrink(s, s->avail));
  }
  KTRY(s->def->init(s));
  if (!s->w) return krr_fail(ctx, KRR_ERR_INTERNAL, "%s: no weights allocated", s->def->name);
  reset_diag(s);
  return KRR_OK;
}

void krr_solver_free(krr_solver *s) {
  if (!s) return;
  if (s->def->release && s->st) s->def->release(s);
  krr_arena_free(&s->arena);
  krr_options_free(s->opts);
  free(s->st);
  free(s);
}

krr_status krr_solver_init(krr_ctx *ctx, krr_op *op, krr_objective *obj,
                           const krr_options *opts, krr_solver **out) {
  *out = NULL;
  const krr_solver_def *def = opts ? opts->owner : NULL;
  if (!def) return krr_fail(ctx, KRR_ERR_INPUT, "no solver given");
  if (!krr_solver_supports(def, obj->loss))
    return krr_fail(ctx, KRR_ERR_INPUT, "the solver `%s` does not support the %s loss", def->name,
                    obj->loss ? obj->loss->name : "(none)");
  if (obj->prec != op->prec || obj->n != op->nloc)
    return krr_fail(ctx, KRR_ERR_INPUT, "the objective does not match the operator");
  if (obj->lcol && !def->lambda_path)
    return krr_fail(ctx, KRR_ERR_INPUT, "the solver `%s` does not solve a `lambda` path at once; "
                    "use bcd() or sap()", def->name);
  krr_comm *comm = krr_op_comm(op, NULL);
  if (comm && comm->size > 1 && !def->distributed)
    return krr_fail(ctx, KRR_ERR_INPUT, "the solver `%s` does not run distributed (over %d ranks); "
                    "use askotch (ASkotch, Skotch, SAP, NSAP), falkon or pcg (Nystrom)", def->name,
                    comm->size);
  krr_solver *s = (krr_solver *)calloc(1, sizeof *s);
  if (!s) return krr_fail(ctx, KRR_ERR_MEMORY, "out of host memory");
  s->def = def;
  s->ctx = ctx;
  s->op = op;
  s->obj = obj;
  s->prec = op->prec;
  s->es = op->es;
  s->n = op->n;
  s->m = obj->m;
  s->n_extras = krr_solver_extra_count(def);
  for (int i = 0; i < KRR_MAX_EXTRAS; i++) s->extra[i] = NAN;
  krr_arena_init(&s->arena, ctx);
  krr_status st = krr_options_copy(ctx, opts, &s->opts);
  if (st == KRR_OK && def->state_size && !(s->st = calloc(1, def->state_size)))
    st = krr_fail(ctx, KRR_ERR_MEMORY, "out of host memory");
  if (st == KRR_OK) st = build(s);
  if (st != KRR_OK) {
    krr_solver_free(s);
    return st;
  }
  *out = s;
  return KRR_OK;
}

/* a failed setup poisons the solver: replay its error */
static krr_status fail_state(krr_solver *s, krr_status st) {
  if (s->failed == KRR_OK) {
    s->failed = st;
    memcpy(s->failed_msg, s->ctx->msg, sizeof s->failed_msg);
  }
  return st;
}

static krr_status replay(krr_solver *s) {
  krr_clear(s->ctx);
  return krr_fail(s->ctx, s->failed, "%s", s->failed_msg);
}

static krr_status setup(krr_solver *s) {
  if (s->failed != KRR_OK) return replay(s);
  double t0 = krr_now();
  krr_status st = krr_poll(s->ctx);
  if (st == KRR_OK && !s->prepared && s->def->prepare) st = s->def->prepare(s);
  if (st == KRR_OK) s->prepared = 1;
  if (st == KRR_OK && !s->tuned && s->def->tune) st = s->def->tune(s);
  if (st == KRR_OK) s->tuned = 1;
  if (st == KRR_OK && !s->started && s->def->start) st = s->def->start(s);
  if (st == KRR_OK && !s->started) s->w_rescale = 1.0;
  if (st == KRR_OK) s->started = 1;
  if (st == KRR_OK) st = s->ctx->ops->sync(s->ctx);
  krr_comm *comm = krr_op_comm(s->op, NULL);
  if (comm) st = krr_comm_agree(comm, s->ctx, st); /* every rank the same status */
  s->diag.t_setup += krr_now() - t0;
  return st == KRR_OK ? KRR_OK : fail_state(s, st);
}

krr_status krr_solver_step(krr_solver *s, int64_t iters) {
  return krr_solver_step_until(s, iters, -1.0, 0);
}

krr_status krr_solver_step_until(krr_solver *s, int64_t iters, double stop_below,
                                 int64_t from_iter) {
  if (!s) return KRR_ERR_INTERNAL;
  krr_clear(s->ctx);
  krr_comm_reset(krr_op_comm(s->op, NULL)); /* every rank enters here together */
  if (!s->prepared || !s->tuned || !s->started) KTRY(setup(s));
  if (s->failed != KRR_OK) return replay(s);
  double t0 = krr_now();
  krr_status st = KRR_OK;
  /* The deadline ends a slice between iterations (the weights stay those of
   * a whole iteration); inside one only interrupts stop the work. */
  krr_ctx *ctx = s->ctx;
  const double deadline = ctx->deadline;
  ctx->deadline = 0;
  /* distributed: the ranks agree on the deadline, interrupts and every
   * iteration's status (one small allreduce each), so that no rank leaves
   * the loop while another waits in a collective */
  krr_comm *comm = krr_op_comm(s->op, NULL);
  if (comm && comm->size <= 1) comm = NULL;
  for (int64_t i = 0; i < iters && !s->diag.done && st == KRR_OK; i++) {
    int64_t late = i > 0 && deadline > 0 && krr_now() >= deadline;
    if (comm) st = krr_comm_allreduce(comm, ctx, &late, 1, KRR_DT_INT64, KRR_RED_MAX);
    if (st != KRR_OK || late) break;
    if (i > 0) st = krr_poll(ctx);
    if (comm) st = krr_comm_agree(comm, ctx, st);
    if (st == KRR_OK) st = s->def->iterate(s);
    if (comm) st = krr_comm_agree(comm, ctx, st);
    s->w_zero = 0;
    if (st == KRR_OK && stop_below >= 0 && s->diag.iter >= from_iter &&
        s->diag.resid_est <= stop_below)
      break;
  }
  ctx->deadline = deadline;
  /* an iteration cut short leaves the state half-updated: refuse to go on */
  if (st == KRR_ERR_INTERRUPT) fail_state(s, st);
  if (st == KRR_OK) st = ctx->ops->sync(ctx);
  s->diag.t_iter += krr_now() - t0;
  return st;
}

void krr_solver_diag(const krr_solver *s, krr_diag *out) { *out = s->diag; }
double krr_solver_extra(const krr_solver *s, int i) {
  return i >= 0 && i < s->n_extras ? s->extra[i] : NAN;
}
const krr_options *krr_solver_options(const krr_solver *s) { return s->opts; }
int64_t krr_solver_weights_rows(const krr_solver *s) { return s->wrows; }
int64_t krr_solver_ncenters(const krr_solver *s) { return s ? s->ncenters : 0; }
double krr_solver_memory_used(const krr_solver *s) { return s->arena.peak; }
double krr_solver_memory_estimate(const krr_solver *s) { return s->def->memory(s); }

krr_status krr_solver_weights(krr_solver *s, double *w_out) {
  krr_clear(s->ctx);
  if (!s->w) return replay(s); /* a failed rebuild left no weights */
  return krr_download_vec(s->ctx, s->wprec, s->w, s->wrows * s->m, w_out);
}

int krr_solver_has_theta(const krr_solver *s) { return s && s->def->theta != NULL; }

krr_status krr_solver_theta(krr_solver *s, double *theta) {
  if (!s || !s->def->theta) return KRR_ERR_INTERNAL;
  krr_clear(s->ctx);
  if (!s->w) return replay(s);
  return s->def->theta(s, theta);
}

krr_status krr_solver_centers(krr_solver *s, int64_t *idx) {
  if (!s) return KRR_ERR_INTERNAL;
  krr_clear(s->ctx);
  if (!s->w) return replay(s);
  return s->def->centers ? s->def->centers(s, idx) : KRR_OK;
}

/* the loss's criterion at w over the full operator: one kernel pass */
krr_status krr_solver_residual(krr_solver *s, double *crit) {
  krr_clear(s->ctx);
  krr_comm_reset(krr_op_comm(s->op, NULL));
  if (s->failed != KRR_OK) return replay(s);
  if (s->def->residual) {
    if (!s->prepared || !s->tuned || !s->started) KTRY(setup(s));
    return s->def->residual(s, crit);
  }
  krr_ctx *ctx = s->ctx;
  int64_t len = s->op->nloc * (int64_t)s->m;
  void *F = krr_dalloc(ctx, len, s->es), *work = krr_dalloc(ctx, len, s->es);
  krr_status st = F && work ? KRR_OK : ctx->status;
  if (st == KRR_OK)
    st = s->def->apply_k && s->started
             ? s->def->apply_k(s, F)
             : krr_op_mv(s->op, NULL, NULL, s->w, s->op->nloc, s->m, F, s->op->nloc);
  if (st == KRR_OK) st = krr_objective_criterion(s->op, s->obj, s->w, F, work, crit);
  krr_dfree(ctx, &F);
  krr_dfree(ctx, &work);
  return st;
}

/* Options checked without data: the table's ranges, then the solver's own
 * resolution for an unbounded number of points, so that only the rules
 * that hold for every data size (rank <= block_size, ...) can fail. */
krr_status krr_options_check(krr_ctx *ctx, const krr_options *opts) {
  const krr_solver_def *def = opts->owner;
  krr_solver s;
  memset(&s, 0, sizeof s);
  s.def = def;
  s.ctx = ctx;
  s.n = (int64_t)1 << 50; /* data-free: resolve hooks check only size-independent rules */
  s.data_free = 1;
  s.m = 1;
  krr_status st = krr_options_copy(ctx, opts, &s.opts);
  if (st == KRR_OK && def->state_size && !(s.st = calloc(1, def->state_size)))
    st = krr_fail(ctx, KRR_ERR_MEMORY, "out of host memory");
  if (st == KRR_OK) st = def->resolve(&s);
  krr_options_free(s.opts);
  free(s.st);
  return st;
}

/* --- solving again ------------------------------------------------------------ */
/* A change may cure a failed setup (a new lambda, new targets, other starting
 * weights): the hooks that failed or did not run run again (they allocate
 * nothing: init did). */
static void clear_failure(krr_solver *s) {
  if (s->failed == KRR_OK) return;
  s->w_rescale = 0;
  s->failed = KRR_OK;
  s->tuned = 0;
  s->started = 0;
}

static krr_status restart(krr_solver *s) {
  s->started = 0;
  reset_diag(s);
  return KRR_OK;
}

krr_status krr_solver_set_weights(krr_solver *s, const double *w) {
  krr_clear(s->ctx);
  if (!s->w) return replay(s);
  clear_failure(s);
  for (int64_t i = 0; i < s->wrows * s->m; i++)
    if (!isfinite(w[i])) return krr_fail(s->ctx, KRR_ERR_INPUT, "the starting weights must be finite");
  KTRY(krr_upload_vec_into(s->ctx, s->wprec, w, s->wrows * s->m, s->w));
  s->w_zero = 0;
  s->w_rescale = 0;
  return restart(s);
}

krr_status krr_solver_set_lambda(krr_solver *s, double lambda) {
  krr_clear(s->ctx);
  if (!(lambda > 0) || !isfinite(lambda))
    return krr_fail(s->ctx, KRR_ERR_INPUT, "`lambda` must be positive and finite");
  if (!s->w) return replay(s);
  clear_failure(s);
  if (lambda != s->obj->lambda || s->obj->lcol) { /* the same lambda keeps everything */
    if (!s->obj->loss->linear && !s->obj->lcol && !s->w_zero) { /* keep v = -lambda a */
      KTRY(KOP(s->ctx, s->wprec, axpby, s->wrows * s->m, 0.0, s->w, s->obj->lambda / lambda, s->w));
      s->w_rescale *= s->obj->lambda / lambda;
    }
    free(s->obj->lcol); /* one lambda for every column: the path ends */
    s->obj->lcol = NULL;
    s->obj->lambda = lambda;
    s->tuned = 0;
  }
  return restart(s);
}

krr_status krr_solver_set_rows(krr_solver *s, const double *rows) {
  krr_ctx *ctx = s->ctx;
  krr_objective *obj = s->obj;
  krr_clear(ctx);
  if (!s->def->holdout)
    return krr_fail(ctx, KRR_ERR_INPUT, "solver %s cannot hold rows out of a fit", s->def->name);
  if (obj->loss->crit != KRR_CRIT_GAP)
    return krr_fail(ctx, KRR_ERR_INPUT, "holding rows out needs a loss with a duality gap, not %s",
                    obj->loss->name);
  if (s->op->nloc != s->op->n || obj->lcol)
    return krr_fail(ctx, KRR_ERR_INPUT, "rows are held out on one process, without a lambda path");
  int64_t len = obj->n * (int64_t)obj->m;
  for (int64_t i = 0; i < len; i++)
    if (rows[i] != 0.0 && rows[i] != 1.0)
      return krr_fail(ctx, KRR_ERR_INPUT, "the rows each column uses must be marked 0 or 1");
  void *dev = NULL;
  KTRY(krr_upload_vec(ctx, obj->prec, rows, len, &dev));
  if (obj->rows) krr_dfree(ctx, &obj->rows);
  obj->rows = dev;
  if (!s->w) return replay(s);
  clear_failure(s);
  s->w_rescale = 0;
  return restart(s);
}

krr_status krr_solver_products(krr_solver *s, double *F_out) {
  krr_ctx *ctx = s->ctx;
  krr_clear(ctx);
  if (s->failed != KRR_OK || !s->w) return replay(s);
  if (s->wrows != s->op->nloc || s->ncenters > 0)
    return krr_fail(ctx, KRR_ERR_INPUT, "solver %s keeps weights on its centres only",
                    s->def->name);
  int64_t len = s->op->nloc * (int64_t)s->m;
  void *F = krr_dalloc(ctx, len, s->es);
  krr_status st = F ? KRR_OK : ctx->status;
  if (st == KRR_OK)
    st = s->def->apply_k && s->started
             ? s->def->apply_k(s, F)
             : krr_op_mv(s->op, NULL, NULL, s->w, s->op->nloc, s->m, F, s->op->nloc);
  if (st == KRR_OK) st = krr_download_vec(ctx, s->prec, F, len, F_out);
  krr_dfree(ctx, &F);
  return st;
}

krr_status krr_solver_set_targets(krr_solver *s, const double *y, int m) {
  krr_ctx *ctx = s->ctx;
  krr_clear(ctx);
  if (m < 1) return krr_fail(ctx, KRR_ERR_INPUT, "need at least one column of targets");
  krr_objective *obj = s->obj;
  krr_objective fresh;
  KTRY(krr_objective_init(ctx, s->op, obj->loss, obj->lambda, y, m, &fresh));
  fresh.param = obj->param;
  if (obj->lcol && m == obj->m) { /* a path keeps its lambdas */
    krr_status st = krr_objective_set_lambdas(ctx, &fresh, obj->lcol);
    if (st != KRR_OK) {
      krr_objective_free(ctx, &fresh);
      return st;
    }
  }
  if (obj->rows && m == obj->m) { /* the held-out rows stay */
    fresh.rows = obj->rows;
    obj->rows = NULL;
  }
  krr_objective_free(ctx, obj);
  *obj = fresh;
  if (m == s->m && s->w) { /* restart from zero: as a fresh fit */
    clear_failure(s);
    KTRY(ctx->ops->zero(ctx, s->w, krr_sizeof(s->wprec) * (size_t)(s->wrows * s->m)));
    s->w_zero = 1;
    s->w_rescale = 0;
    return restart(s);
  }
  /* a different number of columns: rebuild the work space and the setup */
  if (s->def->release) s->def->release(s);
  krr_arena_free(&s->arena);
  if (s->st) memset(s->st, 0, s->def->state_size);
  s->m = m;
  s->w = NULL;
  s->wrows = s->ncenters = 0;
  s->prepared = s->tuned = s->started = 0;
  s->failed = KRR_OK;
  s->diag.t_setup = s->diag.t_iter = 0;
  krr_status st = build(s);
  return st == KRR_OK ? KRR_OK : fail_state(s, st);
}
