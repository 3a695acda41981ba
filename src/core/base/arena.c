/* The buffer arena: one list of every buffer an object holds, freed in one
 * place (see base.h). */
#include <string.h>
#include "base.h"

struct krr_arena_item {
  void *p;
  double bytes;
  int dev;
  krr_arena_item *next;
};

void krr_arena_init(krr_arena *a, krr_ctx *ctx) {
  memset(a, 0, sizeof *a);
  a->ctx = ctx;
}

static void *track(krr_arena *a, void *p, double bytes, int dev) {
  krr_arena_item *it = (krr_arena_item *)malloc(sizeof *it);
  if (!it) {
    if (dev) a->ctx->ops->dealloc(a->ctx, p); else free(p);
    krr_fail(a->ctx, KRR_ERR_MEMORY, "out of host memory");
    return NULL;
  }
  it->p = p;
  it->bytes = bytes;
  it->dev = dev;
  it->next = a->items;
  a->items = it;
  a->bytes += bytes;
  if (a->bytes > a->peak) a->peak = a->bytes;
  return p;
}

void *krr_arena_dev(krr_arena *a, int64_t count, size_t es) {
  size_t bytes = (size_t)(count > 0 ? count : 1) * es;
  void *p = a->ctx->ops->alloc(a->ctx, bytes);
  return p ? track(a, p, (double)bytes, 1) : NULL;
}

void *krr_arena_host(krr_arena *a, int64_t count, size_t es) {
  size_t n = (size_t)(count > 0 ? count : 1);
  void *p = calloc(n, es);
  if (!p) {
    krr_fail(a->ctx, KRR_ERR_MEMORY, "out of host memory allocating %.1f MiB",
             (double)n * (double)es / 1048576.0);
    return NULL;
  }
  return track(a, p, (double)n * (double)es, 0);
}

static void drop(krr_arena *a, krr_arena_item *it) {
  if (it->dev) a->ctx->ops->dealloc(a->ctx, it->p); else free(it->p);
  a->bytes -= it->bytes;
  free(it);
}

void krr_arena_release(krr_arena *a, void *p) {
  if (!p) return;
  for (krr_arena_item **pp = &a->items; *pp; pp = &(*pp)->next) {
    if ((*pp)->p == p) {
      krr_arena_item *it = *pp;
      *pp = it->next;
      drop(a, it);
      return;
    }
  }
}

void krr_arena_free(krr_arena *a) {
  while (a->items) {
    krr_arena_item *it = a->items;
    a->items = it->next;
    drop(a, it);
  }
  a->bytes = 0;
}

krr_status krr_arena_check(krr_arena *a, const void *const *ptrs, size_t count) {
  for (size_t i = 0; i < count; i++)
    if (!ptrs[i]) return a->ctx->status != KRR_OK ? a->ctx->status
                                                  : krr_fail(a->ctx, KRR_ERR_MEMORY, "allocation failed");
  return KRR_OK;
}
