# Small helpers used across R/ (no dependency on the rest of the package but
# errors.R): the clock, argument checks of every verb, seeds.

now <- function() proc.time()[["elapsed"]]

# Unknown arguments (in ...) are an error naming them.
check_no_dots <- function(extra, fname, call) {
  if (length(extra) > 0L) {
    nm <- names(extra)
    if (is.null(nm)) nm <- rep("", length(extra))
    un <- which(!nzchar(nm))
    if (length(un) > 0L) {
      # unnamed extras are the last unnamed arguments of the call
      pos <- tryCatch({
        a <- as.list(call)[-1L]
        an <- names(a)
        if (is.null(an)) an <- rep("", length(a))
        utils::tail(which(!nzchar(an) & !vapply(a, identical, TRUE,
                                                quote(...))), length(un))
      }, error = function(e) integer(0))
      if (length(pos) != length(un)) pos <- rep(NA_integer_, length(un))
      nm[un] <- sprintf("unnamed argument%s (%s)",
                        ifelse(is.na(pos), "", paste0(" in position ", pos)),
                        vapply(extra[un], fmt_value, ""))
      nm[-un] <- paste0("`", nm[-un], "`")
    } else {
      nm <- paste0("`", nm, "`")
    }
    abort_askotch(sprintf("Unknown argument(s) to %s(): %s.", fname,
                          paste(nm, collapse = ", ")),
                  "input", call)
  }
}

# Show calls of the methods as calls of the generic krr().
krr_call <- function(call) {
  if (is.call(call) && is.name(call[[1L]]) &&
      as.character(call[[1L]]) %in% c("krr.default", "krr.formula")) {
    call[[1L]] <- as.name("krr")
  } else if (is.call(call) && is.name(call[[1L]]) &&
             as.character(call[[1L]]) %in% c("kernel_machine.default",
                                             "kernel_machine.formula")) {
    call[[1L]] <- as.name("kernel_machine")
  }
  call
}

# Evaluate expr with R's RNG seeded, restoring the caller's RNG state.
with_seed <- function(seed, expr) {
  genv <- globalenv()
  had <- exists(".Random.seed", envir = genv, inherits = FALSE)
  if (had) old <- get(".Random.seed", envir = genv, inherits = FALSE)
  on.exit({
    if (had) assign(".Random.seed", old, envir = genv) else
      if (exists(".Random.seed", envir = genv, inherits = FALSE))
        rm(".Random.seed", envir = genv)
  })
  # R's generator takes a 31-bit seed: the seed's high part is mixed in
  # (seeds below 2^31 - 1 are used as they are)
  big <- .Machine$integer.max
  set.seed(seed %% big)
  hi <- floor(seed / big)
  if (hi > 0) set.seed(bitwXor(sample.int(big, 1L), as.integer(hi %% big)))
  expr
}

`%||%` <- function(a, b) if (is.null(a)) b else a

# A numeric option: one number with ok(v) TRUE (what: the condition, for the
# classed error naming the option), else `default`
number_option <- function(name, default, ok, what) {
  v <- getOption(name, default)
  if (!is.numeric(v) || length(v) != 1L || !isTRUE(ok(v))) {
    abort_askotch(sprintf("option `%s` must be one number %s.", name, what), "input")
  }
  v
}

# A logical option: TRUE or FALSE (else the classed error naming it), or
# `default` when unset
flag_option <- function(name, default) {
  v <- getOption(name, default)
  if (!is.logical(v) || length(v) != 1L || is.na(v)) {
    abort_askotch(sprintf("option `%s` must be TRUE or FALSE.", name), "input")
  }
  v
}
