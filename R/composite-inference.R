# Uncertainty about a composite kernel's hyperparameters: the observed
# information of the full likelihood (the model of R/gp-inference.R), by
# central differences of its exact gradient -----------------------------------

# The names of the estimated hyperparameters of a composite (the rows of
# fit$tuning$composite), as tidy() names them (composite_terms()).
composite_param_names <- function(k, tab) {
  sizes <- vapply(k$terms, function(t) length(t$components), 1L)
  before <- c(0L, cumsum(sizes))
  vapply(seq_len(NROW(tab)), function(i) {
    t <- tab$term[i]
    if (tab$what[i] == "amplitude") return(sprintf("term[%d]:amplitude", t))
    cmp <- k$terms[[t]]$components[[tab$comp[i]]]
    f <- cmp$family %||% "listed"
    sprintf("%s[%d]:%s", if (f == "listed") cmp$name else f, before[t] + tab$comp[i],
            tab$what[i])
  }, "")
}

# Whether tab (fit$tuning$composite, read by vcov()) is the table of the
# fitted composite k's estimated hyperparameters: composite_params()'s rows
# for k with those entries marked "ml", holding k's own values.
composite_table_ok <- function(k, tab) {
  cols <- c("term", "comp", "what", "code", "estimate")
  if (!is.data.frame(tab) || !all(cols %in% names(tab)) || !is.numeric(tab$estimate) ||
      !all(is.finite(tab$estimate) & tab$estimate > 0)) {
    return(FALSE)
  }
  isTRUE(tryCatch({
    want <- composite_params(composite_set(k, tab, rep("ml", NROW(tab))), FALSE)$table
    NROW(want) == NROW(tab) &&
      all(vapply(cols[1:4], function(cl) all(want[[cl]] == tab[[cl]]), TRUE)) &&
      identical(composite_set(k, tab, tab$estimate)$spec, k$spec)
  }, error = function(e) FALSE))
}

# The full log likelihood's gradient in (the log hyperparameters of tab,
# log lambda when estimated, log s_c^2) at given signal variances s2
# (composite_loglik()).
composite_full_grad <- function(k, tab, lambda, s2, est_lambda, xs, Y, threads = 0L) {
  r <- composite_loglik(k, tab, lambda, xs, Y, s2 = s2, threads = threads)
  np <- NROW(tab)
  c(r$grad[seq_len(np)], if (est_lambda) r$grad[np + 1L], r$grad_s2)
}

# The Hessian of the full log likelihood at a composite fit's estimates, in
# the order of gp_hyper()'s names, by central differences (step 1e-4 in
# the logarithms) of the exact gradient, symmetrised.
composite_hessian <- function(object) {
  tab <- object$tuning$composite
  np <- NROW(tab)
  est_lambda <- identical(object$tuning$lambda_rule, "ml")
  Y <- gp_yc(object)
  m <- ncol(Y)
  phi0 <- c(if (np) log(tab$estimate), if (est_lambda) log(object$lambda),
            log(gp_signal_var(object)))
  grad_at <- function(phi) {
    k <- composite_set(object$kernel, tab, exp(phi[seq_len(np)]))
    lam <- if (est_lambda) exp(phi[np + 1L]) else object$lambda
    composite_full_grad(k, tab, lam, exp(phi[length(phi) - m + seq_len(m)]), est_lambda,
                        object$x, Y, gp_threads(object))
  }
  h <- 1e-4
  H <- vapply(seq_along(phi0), function(j) {
    e <- replace(numeric(length(phi0)), j, h)
    (grad_at(phi0 + e) - grad_at(phi0 - e)) / (2 * h)
  }, numeric(length(phi0)))
  (H + t(H)) / 2
}
