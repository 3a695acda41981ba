/* Option tables: defaults, setting by name with validation, copies, and the
 * description the info entry point reports.  Generic: a solver's table is
 * data (see base.h); nothing here knows a solver. */
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include "base.h"

typedef krr_common_opts opts_t;
#define COMMON_OPTIONS(X)                                                                     \
  X(seed, REAL, 0, 0, 9007199254740991.0, 0, NULL,                                            \
    "seed of the solver's random streams (a whole number; same seed, same result)")           \
  X(mem_limit, REAL, 0, 0, INFINITY, 1, NULL,                                                 \
    "bytes the solver may allocate beyond the data (0: 90% of the free device memory)")
static const krr_optdef common_defs[] = {KRR_OPT_DEFS(COMMON_OPTIONS)};
#define N_COMMON KRR_NOPTS(common_defs)

int krr_optable_count(const krr_optable *t) { return N_COMMON + (t ? t->count : 0); }

const krr_optdef *krr_optable_entry(const krr_optable *t, int i) {
  if (i < 0) return NULL;
  if (i < N_COMMON) return &common_defs[i];
  i -= N_COMMON;
  return t && i < t->count ? &t->defs[i] : NULL;
}

static int find(const krr_optable *t, const char *name) {
  for (int i = 0; i < krr_optable_count(t); i++)
    if (strcmp(krr_optable_entry(t, i)->info.name, name) == 0) return i;
  return -1;
}

static void *field(const krr_options *o, const krr_optdef *d) {
  return (char *)o->data + d->offset;
}

/* index of name in "a|b|c", -1 if absent */
static int choice_index(const char *choices, const char *name) {
  int k = 0;
  size_t len = strlen(name);
  for (const char *c = choices; c && *c; k++) {
    const char *e = strchr(c, '|');
    size_t l = e ? (size_t)(e - c) : strlen(c);
    if (l == len && strncmp(c, name, l) == 0) return k;
    c = e ? e + 1 : NULL;
  }
  return -1;
}

static int choice_count(const char *choices) {
  int k = choices && *choices ? 1 : 0;
  for (const char *c = choices; c && *c; c++) k += *c == '|';
  return k;
}

static void set_default(krr_options *o, const krr_optdef *d) {
  void *f = field(o, d);
  switch (d->info.type) {
    case KRR_OPT_INT: *(int64_t *)f = (int64_t)d->info.def; break;
    case KRR_OPT_REAL: *(double *)f = d->info.def; break;
    case KRR_OPT_FLAG:
    case KRR_OPT_CHOICE: *(int *)f = (int)d->info.def; break;
    case KRR_OPT_RHO: ((krr_rho *)f)->mode = (int)d->info.def; ((krr_rho *)f)->value = 0; break;
    case KRR_OPT_INDICES: break; /* zeroed: none */
  }
}

krr_status krr_options_make(krr_ctx *ctx, const krr_optable *t, const krr_solver_def *owner,
                            krr_options **out) {
  *out = NULL;
  krr_options *o = (krr_options *)calloc(1, sizeof *o);
  size_t size = t && t->size > sizeof(krr_common_opts) ? t->size : sizeof(krr_common_opts);
  void *data = calloc(1, size);
  if (!o || !data) {
    free(o); free(data);
    return krr_fail(ctx, KRR_ERR_MEMORY, "out of host memory");
  }
  o->table = t;
  o->owner = owner;
  o->data = data;
  for (int i = 0; i < krr_optable_count(t); i++) set_default(o, krr_optable_entry(t, i));
  *out = o;
  return KRR_OK;
}

void krr_options_free(krr_options *o) {
  if (!o) return;
  for (int i = 0; i < krr_optable_count(o->table); i++) {
    const krr_optdef *d = krr_optable_entry(o->table, i);
    if (d->info.type == KRR_OPT_INDICES) free(((krr_indices *)field(o, d))->idx);
  }
  free(o->data);
  free(o);
}

krr_status krr_options_copy(krr_ctx *ctx, const krr_options *src, krr_options **out) {
  KTRY(krr_options_make(ctx, src->table, src->owner, out));
  krr_options *o = *out;
  size_t size = src->table && src->table->size > sizeof(krr_common_opts) ? src->table->size
                                                                          : sizeof(krr_common_opts);
  memcpy(o->data, src->data, size);
  /* the copy owns none of src's index vectors until each is duplicated */
  for (int i = 0; i < krr_optable_count(o->table); i++) {
    const krr_optdef *d = krr_optable_entry(o->table, i);
    if (d->info.type != KRR_OPT_INDICES) continue;
    krr_indices *v = (krr_indices *)field(o, d);
    v->idx = NULL;
    v->len = 0;
  }
  for (int i = 0; i < krr_optable_count(o->table); i++) {
    const krr_optdef *d = krr_optable_entry(o->table, i);
    if (d->info.type != KRR_OPT_INDICES) continue;
    const krr_indices *sv = (const krr_indices *)((const char *)src->data + d->offset);
    krr_indices *v = (krr_indices *)field(o, d);
    if (sv->len > 0) {
      int64_t *c = (int64_t *)malloc(sizeof(int64_t) * (size_t)sv->len);
      if (!c) {
        krr_options_free(o);
        *out = NULL;
        return krr_fail(ctx, KRR_ERR_MEMORY, "out of host memory");
      }
      memcpy(c, sv->idx, sizeof(int64_t) * (size_t)sv->len);
      v->idx = c;
      v->len = sv->len;
    }
  }
  return KRR_OK;
}

static krr_status lookup(krr_ctx *ctx, const krr_options *o, const char *name,
                         const krr_optdef **d) {
  int i = find(o->table, name);
  if (i >= 0) { *d = krr_optable_entry(o->table, i); return KRR_OK; }
  char known[600] = "";
  size_t len = 0;
  for (int k = 0; k < krr_optable_count(o->table) && len + 40 < sizeof known; k++)
    len += (size_t)snprintf(known + len, sizeof known - len, "%s`%s`", k ? ", " : "",
                            krr_optable_entry(o->table, k)->info.name);
  return krr_fail(ctx, KRR_ERR_INPUT, "unknown option `%s`; the options of this solver are %s",
                  name, known);
}

static void range_text(const krr_optinfo *in, char *buf, size_t len) {
  if (isinf(in->hi))
    snprintf(buf, len, "%s %g", in->lo_open ? ">" : ">=", in->lo);
  else
    snprintf(buf, len, "in %s%g, %g]", in->lo_open ? "(" : "[", in->lo, in->hi);
}

krr_status krr_options_set_num(krr_ctx *ctx, krr_options *o, const char *name, double v) {
  const krr_optdef *d = NULL;
  KTRY(lookup(ctx, o, name, &d));
  const krr_optinfo *in = &d->info;
  void *f = field(o, d);
  char rng[96];
  switch (in->type) {
    case KRR_OPT_FLAG:
      if (!(v == 0 || v == 1))
        return krr_fail(ctx, KRR_ERR_INPUT, "`%s` must be TRUE or FALSE (1 or 0), not %g", name, v);
      *(int *)f = (int)v;
      return KRR_OK;
    case KRR_OPT_RHO:
      if (!(v > 0) || !isfinite(v))
        return krr_fail(ctx, KRR_ERR_INPUT, "`%s` must be one of \"%s\" or a positive number, not %g",
                        name, in->choices, v);
      ((krr_rho *)f)->mode = choice_count(in->choices);
      ((krr_rho *)f)->value = v;
      return KRR_OK;
    case KRR_OPT_CHOICE:
    case KRR_OPT_INDICES:
      return krr_fail(ctx, KRR_ERR_INPUT, "`%s` must be %s, not a number", name,
                      in->type == KRR_OPT_CHOICE ? "one of the names" : "a vector of row indices");
    case KRR_OPT_INT:
    case KRR_OPT_REAL:
      break;
  }
  range_text(in, rng, sizeof rng);
  int bad = !isfinite(v) || (in->lo_open ? !(v > in->lo) : !(v >= in->lo)) || !(v <= in->hi) ||
            (in->type == KRR_OPT_INT && !(fabs(v) <= 9007199254740992.0)); /* exact in int64 */
  if (!bad && in->type == KRR_OPT_INT && v != floor(v))
    return krr_fail(ctx, KRR_ERR_INPUT, "`%s` must be a whole number %s, not %g", name, rng, v);
  if (bad)
    return krr_fail(ctx, KRR_ERR_INPUT, "`%s` must be a finite %snumber %s, not %g", name,
                    in->type == KRR_OPT_INT ? "whole " : "", rng, v);
  if (in->type == KRR_OPT_INT) *(int64_t *)f = (int64_t)v;
  else *(double *)f = v;
  return KRR_OK;
}

krr_status krr_options_set_str(krr_ctx *ctx, krr_options *o, const char *name, const char *v) {
  const krr_optdef *d = NULL;
  KTRY(lookup(ctx, o, name, &d));
  const krr_optinfo *in = &d->info;
  if (in->type != KRR_OPT_CHOICE && in->type != KRR_OPT_RHO)
    return krr_fail(ctx, KRR_ERR_INPUT, "`%s` must be a number, not \"%s\"", name, v);
  int k = choice_index(in->choices, v);
  if (k < 0) {
    char alts[256];
    size_t j = 0;
    for (const char *c = in->choices; *c && j + 8 < sizeof alts; c++) {
      if (*c == '|') { memcpy(alts + j, "\", \"", 4); j += 4; } else alts[j++] = *c;
    }
    alts[j] = '\0';
    return krr_fail(ctx, KRR_ERR_INPUT, "`%s` must be one of \"%s\"%s, not \"%s\"", name, alts,
                    in->type == KRR_OPT_RHO ? " or a positive number" : "", v);
  }
  if (in->type == KRR_OPT_RHO) {
    ((krr_rho *)field(o, d))->mode = k;
    ((krr_rho *)field(o, d))->value = 0;
  } else {
    *(int *)field(o, d) = k;
  }
  return KRR_OK;
}

krr_status krr_options_set_indices(krr_ctx *ctx, krr_options *o, const char *name,
                                   const int64_t *idx, int64_t len) {
  const krr_optdef *d = NULL;
  KTRY(lookup(ctx, o, name, &d));
  if (d->info.type != KRR_OPT_INDICES)
    return krr_fail(ctx, KRR_ERR_INPUT, "`%s` is not a vector of row indices", name);
  if (len < 0) return krr_fail(ctx, KRR_ERR_INPUT, "`%s`: negative length", name);
  for (int64_t i = 0; i < len; i++)
    if (idx[i] < 0)
      return krr_fail(ctx, KRR_ERR_INPUT, "`%s` must hold row indices >= 1, not %lld", name,
                      (long long)idx[i] + 1);
  krr_indices *v = (krr_indices *)field(o, d);
  int64_t *c = NULL;
  if (len > 0) {
    c = (int64_t *)malloc(sizeof(int64_t) * (size_t)len);
    if (!c) return krr_fail(ctx, KRR_ERR_MEMORY, "out of host memory");
    memcpy(c, idx, sizeof(int64_t) * (size_t)len);
  }
  free(v->idx);
  v->idx = c;
  v->len = len;
  return KRR_OK;
}

krr_status krr_options_parse(krr_ctx *ctx, krr_options *o, const char *spec) {
  char buf[1024];
  if (!spec) return KRR_OK;
  if (strlen(spec) >= sizeof buf) return krr_fail(ctx, KRR_ERR_INPUT, "option string too long");
  strcpy(buf, spec);
  for (char *tok = strtok(buf, " \t\n"); tok; tok = strtok(NULL, " \t\n")) {
    char *eq = strchr(tok, '=');
    if (!eq) return krr_fail(ctx, KRR_ERR_INPUT, "option `%s` has no value (name=value)", tok);
    *eq = '\0';
    const char *val = eq + 1;
    char *end = NULL;
    double v = strtod(val, &end);
    if (end != val && *end == '\0') KTRY(krr_options_set_num(ctx, o, tok, v));
    else KTRY(krr_options_set_str(ctx, o, tok, val));
  }
  return KRR_OK;
}

double krr_options_value(const krr_options *o, int i, double *num) {
  const krr_optdef *d = krr_optable_entry(o->table, i);
  if (num) *num = NAN;
  if (!d) return NAN;
  const void *f = field(o, d);
  switch (d->info.type) {
    case KRR_OPT_INT: return (double)*(const int64_t *)f;
    case KRR_OPT_REAL: return *(const double *)f;
    case KRR_OPT_FLAG:
    case KRR_OPT_CHOICE: return (double)*(const int *)f;
    case KRR_OPT_RHO:
      if (num) *num = ((const krr_rho *)f)->value;
      return (double)((const krr_rho *)f)->mode;
    case KRR_OPT_INDICES: return (double)((const krr_indices *)f)->len;
  }
  return NAN;
}

const int64_t *krr_options_indices(const krr_options *o, int i, int64_t *len) {
  const krr_optdef *d = krr_optable_entry(o->table, i);
  *len = 0;
  if (!d || d->info.type != KRR_OPT_INDICES) return NULL;
  const krr_indices *v = (const krr_indices *)field(o, d);
  *len = v->len;
  return v->idx;
}

uint64_t krr_options_seed(const krr_options *o) {
  double s = ((const krr_common_opts *)o->data)->seed;
  return (uint64_t)(s >= 0 && s < 9007199254740992.0 ? s : 0);
}
