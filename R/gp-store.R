# The store of what the standard errors reuse (R/gp.R), kept apart so that
# new_krr() (R/model.R) can give a fit its id without depending on gp.R.

# What the standard errors reuse (the pathwise draws, the exact and the
# Nystrom factors) is kept in the session, not in the fit (which stays plain
# data): in gp_store, under the fit's `gp_id` (made by new_krr(), so copies
# of a fit share its entries) and a key of the fields the entry depends on
# (lambda, kernel, tolerance, the points and the observation weights, by
# their sums), so a fit whose fields were changed never reads a stale entry.
# One entry per fit and `what`; all entries together hold at most option
# askotch.gp_cache_max numbers (default 2^24, 128 MiB; size(value)), the
# oldest dropped first.  use(value): whether a kept value serves this call.
# A fit without an id (made some other way) simply calls make().
gp_store <- new.env(parent = emptyenv())

gp_cached <- function(object, what, make, size = function(v) 0,
                      use = function(v) TRUE) {
  id <- object$gp_id
  if (!is.character(id) || length(id) != 1L || is.na(id)) return(make())
  xs <- if (is.null(object$x_train)) object$x else object$x_train
  key <- list(id, what, object$lambda, object$kernel, object$tol, dim(xs),
              sum(xs), sum(xs^2), if (!is.null(object$obs_weights))
                c(sum(object$obs_weights), sum(object$obs_weights^2)))
  entries <- gp_store$entries
  hit <- Filter(function(e) identical(e$key, key), entries)
  if (length(hit) && use(hit[[1L]]$value)) return(hit[[1L]]$value)
  value <- make()
  cap <- getOption("askotch.gp_cache_max", 2^24)
  sz <- size(value)
  if (sz <= cap) {
    # the same fit's entry of this kind is replaced; the oldest go first
    # while the total exceeds the cap
    keep <- Filter(function(e) !(identical(e$key[[1L]], id) &&
                                   identical(e$key[[2L]], what)), entries)
    keep <- c(keep, list(list(key = key, value = value, size = sz)))
    while (sum(vapply(keep, function(e) e$size, 0)) > cap) keep <- keep[-1L]
    gp_store$entries <- keep
  }
  value
}

# The kinds of entry kept for a fit (tests and diagnostics)
gp_cached_kinds <- function(object) {
  mine <- Filter(function(e) identical(e$key[[1L]], object$gp_id), gp_store$entries)
  vapply(mine, function(e) e$key[[2L]][[1L]], "")
}

# A fit's id for gp_cached(): unique in the session and across sessions
# (process, time, counter); drawn without the user's random numbers.
gp_new_id <- function() {
  gp_store$counter <- (if (is.null(gp_store$counter)) 0 else gp_store$counter) + 1
  sprintf("%d-%s-%.0f", Sys.getpid(), format(Sys.time(), "%Y%m%d%H%M%OS6"),
          gp_store$counter)
}
