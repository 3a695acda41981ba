/* Context, errors, timing and the memory budget: backend-agnostic. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <math.h>
#include "base.h"

const char *krr_status_name(krr_status st) {
  switch (st) {
    case KRR_OK: return "ok";
    case KRR_ERR_INPUT: return "input";
    case KRR_ERR_MEMORY: return "memory";
    case KRR_ERR_DEVICE: return "device";
    case KRR_ERR_NUMERIC: return "numeric";
    case KRR_ERR_NOT_BUILT: return "not_built";
    case KRR_ERR_INTERRUPT: return "interrupt";
    case KRR_ERR_TIME_LIMIT: return "time_limit";
    default: return "internal";
  }
}

krr_status krr_fail(krr_ctx *ctx, krr_status st, const char *fmt, ...) {
  if (!ctx) return st;
  /* keep the first (root-cause) message of a chain of failures */
  if (ctx->status == KRR_OK || ctx->msg[0] == '\0') {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(ctx->msg, sizeof ctx->msg, fmt, ap);
    va_end(ap);
    ctx->status = st;
  }
  return st;
}

void krr_clear(krr_ctx *ctx) {
  ctx->status = KRR_OK;
  ctx->msg[0] = '\0';
}

krr_status krr_ctx_host_twin(krr_ctx *ctx, krr_ctx *h) {
  if (krr_ctx_init(h, ctx->host_ops, ctx->host_ops, ctx->threads, 0) != KRR_OK) {
    krr_status st = krr_fail(ctx, h->status, "host context: %s", h->msg);
    krr_ctx_free(h);
    return st;
  }
  h->poll = ctx->poll;
  h->poll_data = ctx->poll_data;
  h->poll_every = ctx->poll_every;
  h->deadline = ctx->deadline;
  return KRR_OK;
}

krr_status krr_ctx_forward(krr_ctx *ctx, krr_ctx *h, krr_status st) {
  if (h->interrupted) ctx->interrupted = 1;
  if (st != KRR_OK) krr_fail(ctx, st, "%s", h->msg);
  krr_clear(h);
  return st;
}

krr_status krr_memory_budget(krr_ctx *ctx, double mem_limit, double *avail) {
  size_t fr = 0, tot = 0;
  KTRY(ctx->ops->mem_info(ctx, &fr, &tot));
  *avail = mem_limit > 0 ? mem_limit : 0.9 * (double)fr;
  return KRR_OK;
}

size_t krr_sizeof(krr_precision prec) { return prec == KRR_FLOAT ? sizeof(float) : sizeof(double); }

double krr_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

krr_status krr_poll(krr_ctx *ctx) {
  if (!ctx) return KRR_OK;
  if (ctx->interrupted) return krr_fail(ctx, KRR_ERR_INTERRUPT, "interrupted");
  if (ctx->side_busy) return KRR_OK; /* a side task, maybe inside a parallel region */
  if (!ctx->poll && !(ctx->deadline > 0)) return KRR_OK;
  double t = krr_now();
  if (ctx->poll && t >= ctx->poll_next) {
    ctx->poll_next = t + (ctx->poll_every > 0 ? ctx->poll_every : 0.1);
    if (ctx->poll(ctx->poll_data)) {
      ctx->interrupted = 1;
      return krr_fail(ctx, KRR_ERR_INTERRUPT, "interrupted");
    }
  }
  if (ctx->deadline > 0 && t >= ctx->deadline)
    return krr_fail(ctx, KRR_ERR_TIME_LIMIT, "the time limit was reached");
  return KRR_OK;
}

double krr_time_left(const krr_ctx *ctx) {
  return ctx && ctx->deadline > 0 ? ctx->deadline - krr_now() : INFINITY;
}

void krr_side_run(krr_ctx *ctx) {
  krr_task side = ctx->side;
  if (!side) return;
  ctx->side = NULL;
  int threads = ctx->threads;
  ctx->threads = 1;
  ctx->side_busy = 1;
  ctx->side_status = side(ctx, ctx->side_arg);
  ctx->side_busy = 0;
  ctx->threads = threads;
}

krr_status krr_overlap(krr_ctx *ctx, krr_task side, void *side_arg, double side_flops,
                       krr_task main, void *main_arg) {
  ctx->side = side;
  ctx->side_arg = side_arg;
  ctx->side_flops = side_flops;
  ctx->side_status = KRR_OK;
  krr_status st = main(ctx, main_arg);
  if (st != KRR_OK) {
    ctx->side = NULL;
    return st;
  }
  krr_side_run(ctx); /* not taken by a kernel product: now */
  return ctx->side_status;
}

krr_status krr_ctx_init(krr_ctx *ctx, const krr_ops *ops, const krr_ops *host_ops, int threads,
                        int device_id) {
  memset(ctx, 0, sizeof *ctx);
  ctx->ops = ops;
  ctx->host_ops = host_ops;
  ctx->threads = threads > 0 ? threads : 0; /* 0: the backend's default (its ctx_init) */
  ctx->device_id = device_id;
  if (!ops) return krr_fail(ctx, KRR_ERR_NOT_BUILT, "no backend");
  if (!host_ops)
    return krr_fail(ctx, KRR_ERR_INPUT, "no host backend table (krr_ctx_init's host_ops)");
  return ops->ctx_init ? ops->ctx_init(ctx) : KRR_OK;
}

void krr_ctx_free(krr_ctx *ctx) {
  if (ctx && ctx->ops && ctx->ops->ctx_free) ctx->ops->ctx_free(ctx);
  if (ctx) ctx->dev = NULL;
}
