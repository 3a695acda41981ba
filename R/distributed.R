# Distributed (SPMD) fits over MPI: every rank of `mpirun -np P Rscript
# fit.R` holds a shard of the rows and calls krr(x_local, y_local,
# distributed = TRUE, ...). The compiled sharded operator (Tu, Roelofs,
# Venkataraman and Recht, "Large scale kernel learning using block coordinate
# descent", 2016) splits the rows over the ranks; here are the session, the
# global statistics (standardisation, bandwidth, tolerance) from reduced
# sums, status agreement, prediction, and gathering a fit to one rank.

#' MPI sessions for distributed fits
#'
#' `askotch_mpi_init()` starts (or joins) the MPI session of an SPMD program
#' run as `mpirun -np P Rscript fit.R`: MPI is initialised unless Rmpi or
#' pbdMPI already did so, and, if askotch initialised it, finalised when R
#' exits (or by `askotch_mpi_finalize()`). [krr()] with `distributed = TRUE`
#' calls it. `askotch_mpi_available()` says whether this build of askotch
#' has MPI (configure: `ASKOTCH_MPI=auto|yes|no`).
#'
#' **With Rmpi** in the same script, load Rmpi first: `library(Rmpi)`
#' initialises MPI and askotch joins that session (ranks and sizes agree
#' with `Rmpi::mpi.comm.rank(0)` and `Rmpi::mpi.comm.size(0)`; both use the
#' same processes), and the script ends with `askotch_mpi_finalize()`
#' then `Rmpi::mpi.finalize()` (Rmpi finalises MPI). Rmpi loaded after
#' askotch has initialised MPI cannot set up its communicators, and its
#' calls crash R; askotch warns (class
#' `askotch_warning_mpi`) when that happens.
#'
#' **A rank that leaves early.** When a rank's R session ends (or it calls
#' `askotch_mpi_finalize()`) while other ranks still wait for it in a
#' distributed computation, it tells them as it leaves: they stop with a
#' classed error (`askotch_error_device`, "rank r left the MPI job ..."), and
#' since the operation they waited in can never complete, askotch ends the
#' whole job with `MPI_Abort` when their R sessions end. A rank killed by a
#' signal makes `mpirun` end the job instead. With Rmpi, end the script with
#' `askotch_mpi_finalize()` before `Rmpi::mpi.finalize()`: MPI finalised by
#' Rmpi first leaves no way to send the notice.
#'
#' @return `askotch_mpi_init()`: a list with the `rank` (from 0) and `size`
#'   (number of ranks), invisibly. `askotch_mpi_available()`: `TRUE` or
#'   `FALSE`. `askotch_mpi_finalize()`: `NULL`, invisibly.
#' @seealso [krr()] (`distributed`), [askotch_mpi_gather()].
#' @examples
#' askotch_mpi_available()
#' \dontrun{
#' # in fit.R, run as: mpirun -np 2 Rscript fit.R
#' s <- askotch_mpi_init()
#' rows <- split(seq_len(nrow(mtcars)), rep(0:1, length.out = nrow(mtcars)))
#' mine <- sort(rows[[s$rank + 1]])
#' fit <- krr(as.matrix(mtcars[mine, -1]), mtcars$mpg[mine], lambda = 1,
#'            distributed = TRUE, threads = 1)
#' }
#' @export
askotch_mpi_init <- function() {
  res <- mpi_result(native_mpi_init())
  if (is.null(mpi_env$finalizer)) {
    mpi_env$finalizer <- TRUE
    reg.finalizer(mpi_env, function(e) native_mpi_finalize(), onexit = TRUE)
  }
  if (res[3L] == 1 && is.null(mpi_env$rmpi_hook)) {
    # Rmpi sets up its communicators only when it initialises MPI itself
    mpi_env$rmpi_hook <- TRUE
    setHook(packageEvent("Rmpi", "onLoad"), function(...) warn_rmpi_after_askotch())
  }
  invisible(list(rank = as.integer(res[1L]), size = as.integer(res[2L])))
}

warn_rmpi_after_askotch <- function() {
  warn_askotch(paste(
    "askotch initialised MPI before Rmpi was loaded, so Rmpi has not set up its",
    "communicators and its calls (mpi.comm.rank(), mpi.allreduce(), ...) would crash R.",
    "Load Rmpi first, before askotch_mpi_init() or the first fit with",
    "`distributed = TRUE`; askotch then uses the MPI session Rmpi started",
    "(end the script with Rmpi::mpi.finalize())."), "mpi")
}

#' @rdname askotch_mpi_init
#' @export
askotch_mpi_available <- function() native_mpi_built()

#' @rdname askotch_mpi_init
#' @export
askotch_mpi_finalize <- function() invisible(native_mpi_finalize())

mpi_env <- new.env(parent = emptyenv())

# A compiled collective's result, or its failure c(status, message) raised
mpi_result <- function(res, call = NULL) {
  if (is.character(res)) abort_askotch(res[2L], res[1L], call)
  res
}
mpi_reduce <- function(x, op) {
  mpi_result(native_mpi_allreduce(x, op))
}
mpi_bcast_obj <- function(obj, root) {
  unserialize(mpi_result(native_mpi_bcast(serialize(obj, NULL), root)))
}

# Status agreement in R: evaluates expr on every rank; when it fails on any,
# the lowest failing rank's classed error is raised on every rank (the
# others name the rank), so that no rank waits in a collective for one that
# has left.
mpi_step <- function(expr, rank, call = NULL) {
  err <- tryCatch({
    val <- expr
    NULL
  }, error = function(e) e)
  first <- mpi_reduce(if (is.null(err)) Inf else rank, "min")
  if (is.finite(first)) {
    what <- if (rank == first) {
      cls <- sub("^askotch_error_", "", grep("^askotch_error_", class(err),
                                             value = TRUE)[1L])
      list(class = if (is.na(cls)) "input" else cls,
           message = conditionMessage(err))
    }
    what <- mpi_bcast_obj(what, first)
    if (rank == first && inherits(err, "askotch_error")) stop(err)
    abort_askotch(if (rank == first) what$message else
      sprintf("rank %d: %s", as.integer(first), what$message),
      what$class, call)
  }
  val
}

# krr(distributed = TRUE): the shards' global statistics, then the
# compiled fit on the sharded operator. `args`: the user's arguments
# (fit_args()), the same on every rank.
fit_distributed <- function(x, y, args, call, ecall) {
  if (!askotch_mpi_available()) {
    abort_askotch(paste(
      "`distributed = TRUE` needs askotch built with MPI (reinstall with",
      "libopenmpi-dev installed, or ASKOTCH_MPI=yes)."), "not_built", ecall)
  }
  ses <- askotch_mpi_init()
  dist_same_args(args, ecall)
  # by default the median bandwidth, the Gaussian kernel and per-column
  # scaling: the bandwidth's likelihood and the choice of kernel and scaling
  # by it need the kernel on one process
  if (!isTRUE(args$bandwidth_given)) args$bandwidth <- "median"
  if (identical(args$standardize, "auto")) args$standardize <- TRUE
  args$kernel <- resolve_auto_kernel(args$kernel, args$bandwidth)
  loc <- dist_local_data(x, y, args, ses$rank, ecall)
  g <- dist_global_data(loc, args, ses, ecall)
  set <- dist_settings(g, args, ses$rank, ecall)
  # the compiled fit: the operator of this state is sharded over the ranks
  native_mpi_use(TRUE)
  on.exit(native_mpi_use(FALSE), add = TRUE)
  t0 <- now()
  state <- mpi_step(state_new(g$xs, g$Yc, set), ses$rank, ecall)
  on.exit(native_fit_free(state), add = TRUE)
  res <- drive_solver(state, set, loc$tgt, g$xs, t0)
  dist_new_fit(g, loc, set, res, ses, call)
}

# Every rank's arguments equal rank 0's (only `x` and `y` differ; for
# `validation` and `weights` only whether they are given).
dist_same_args <- function(args, ecall) {
  opts <- args[setdiff(names(args), c("validation", "weights", "progress",
                                      "bandwidth_given", "intercept"))]
  opts$validation <- is.null(args$validation)
  opts$weights <- is.null(args$weights)
  ref <- mpi_bcast_obj(opts, 0L)
  if (mpi_reduce(!identical(ref, opts), "max") > 0) {
    abort_askotch(paste(
      "The ranks called krr(distributed = TRUE) with different options:",
      "every rank must pass the same settings (only `x` and `y` differ)."),
      "input", ecall)
  }
}

# This rank's rows and targets, checked (every rank agreeing on the status).
dist_local_data <- function(x, y, args, rank, ecall) {
  loc <- mpi_step({
    if (!is.null(args$validation) || !is.null(args$weights) ||
        isTRUE(args$keep_state) || is.finite(args$time_limit)) {
      abort_askotch(paste(
        "A distributed fit takes no `validation`, `weights`, `keep_state`",
        "or finite `time_limit`."), "input", ecall)
    }
    check_choice(args$device, c("auto", "cpu", "cuda"), "device", ecall)
    xl <- as_feature_matrix(x, "x", ecall)
    if (nrow(xl) < 1L) {
      abort_askotch(sprintf(paste(
        "Rank %d holds no rows of `x`: every rank needs at least one row."),
        rank), "input", ecall)
    }
    tgt <- loss_check_targets(loss_squared(), prepare_targets(y, nrow(xl), ecall), ecall)
    if (tgt$task != "regression") {
      abort_askotch("A distributed fit is for one numeric response (regression).",
                    "input", ecall)
    }
    check_standardize(args$standardize, ecall)
    check_flag(args$progress, "progress", ecall)
    list(x = xl, tgt = tgt)
  }, rank, ecall)
  p <- ncol(loc$x)
  pr <- mpi_reduce(c(p, -p), "max")
  if (pr[1L] != p || -pr[2L] != p) {
    abort_askotch(sprintf(paste(
      "The shards have different numbers of columns `p` (between %d and %d):",
      "every rank's `x` must have the same columns."), -pr[2L], pr[1L]),
      "input", ecall)
  }
  loc
}

# The global row count and offsets, the device, the standardisation and
# the centred targets, from reduced sums.
dist_global_data <- function(loc, args, ses, ecall) {
  rank <- ses$rank
  P <- ses$size
  xl <- loc$x
  nl <- nrow(xl)
  counts <- mpi_reduce(replace(numeric(P), rank + 1L, nl), "sum")
  n <- sum(counts)
  row0 <- sum(counts[seq_len(rank)])
  if (n < 2) abort_askotch("`x` must have at least 2 rows in all.", "input", ecall)
  # the backend, the same on every rank: "cuda" needs a device on each (one
  # per rank where the machine has as many: askotch_r_device_id() in C);
  # "auto" takes CUDA when every rank has one and the size calls for it (as
  # a one-process fit)
  device <- mpi_step(resolve_device(args$device, n, ecall), rank, ecall)
  if (mpi_reduce(as.numeric(device == "cuda"), "sum") < P) device <- "cpu"
  # standardisation from reduced sums (two passes, as var())
  scaling <- mpi_step(dist_scaling(xl, n, args$standardize), rank, ecall)
  xs <- apply_scaling(xl, scaling$center, scaling$scale)
  dimnames(xs) <- NULL
  Y <- loc$tgt$Y
  y_center <- mpi_reduce(colSums(Y), "sum") / n
  Yc <- sweep(Y, 2L, y_center)
  list(xs = xs, n = n, nl = nl, p = ncol(xl), row0 = row0, device = device,
       scaling = scaling, standardize = args$standardize, Y = Y, Yc = Yc,
       y_center = y_center, xnames = colnames(xl))
}

# The settings of a distributed fit: rank 0's seed, the median bandwidth on
# the rows a one-process fit samples, lambda and the automatic tolerance of
# the global targets, then settings_from_args() with these resolved.
dist_settings <- function(g, args, rank, ecall) {
  seed <- args$seed
  if (is.null(seed)) seed <- mpi_bcast_obj(floor(stats::runif(1L) * 2^31), 0L)
  kb <- dist_kernel(g, args, seed, rank, ecall)
  lspec <- lambda_spec(args$lambda, loss_squared(), g$n, ecall)
  if (is.na(lspec$value) || length(lspec$value) != 1L) {
    abort_askotch(paste(
      "A distributed fit needs `lambda` as one number or \"paper\"",
      "(the data-driven rules need all rows on one process)."), "input", ecall)
  }
  tol <- args$tol
  rule <- tol_rule(tol, loss_squared(), ecall)
  if (!is.na(rule)) {
    precision <- check_choice(args$precision, c("double", "single"), "precision", ecall)
    tol <- rule_tol(rule, NULL, lspec$value, precision, ts = dist_target_scales(g), n = g$n)
  }
  dargs <- args
  dargs[c("kernel", "bandwidth", "bandwidth_given", "lambda", "tol", "time_limit",
          "progress", "keep_state", "device", "seed")] <-
    list(kb$kernel, kb$bandwidth, TRUE, lspec$value, tol, Inf,
         isTRUE(args$progress) && rank == 0L, FALSE, g$device, seed)
  if (identical(args$solver, "auto")) dargs$solver <- "askotch"
  dargs["validation"] <- list(NULL)
  dat <- list(xs = g$xs, n = g$n, p = g$p, Yc = g$Yc, standardize = args$standardize)
  set <- mpi_step(settings_from_args(dat, loss_squared(), dargs, call = ecall),
                  rank, ecall)
  set$kernel$bandwidth_rule <- kb$rule
  set$lambda_spec <- lspec
  # which solvers run distributed (and which preconditioners a distributed
  # pcg() takes) is the compiled solver's declaration
  if (!isTRUE(askotch_info()$solvers[[solver_c(set$solver)$name]]$distributed)) {
    abort_askotch(paste(
      "A distributed fit runs solver = askotch() (ASkotch, Skotch, SAP, NSAP),",
      "falkon() or pcg(); the other solvers need the whole kernel on one",
      "process."), "input", ecall)
  }
  set
}

# The kernel and its bandwidth: "median" on the rows a one-process fit
# samples, gathered from their ranks.
dist_kernel <- function(g, args, seed, rank, ecall) {
  kern <- mpi_step(as_kernel(args$kernel, args$bandwidth, isTRUE(args$bandwidth_given),
                             ecall), rank, ecall)
  if (!is.character(kern$bandwidth)) {
    return(list(kernel = kern, bandwidth = kern$bandwidth, rule = "fixed"))
  }
  if (kern$bandwidth != "median") {
    abort_askotch(sprintf(
      "`bandwidth = \"%s\"` is not available for a distributed fit (use \"median\" or a number).",
      kern$bandwidth), "input", ecall)
  }
  n <- g$n
  idx <- if (n > 1000) with_seed(seed, sort(sample.int(n, 1000L))) else seq_len(n)
  mine <- idx > g$row0 & idx <= g$row0 + g$nl
  xi <- matrix(0, length(idx), g$p)
  xi[mine, ] <- g$xs[idx[mine] - g$row0, , drop = FALSE]
  xi <- matrix(mpi_reduce(xi, "sum"), length(idx), g$p)
  bw <- mpi_step(median_bandwidth(xi, kern$metric, seed), rank, ecall)
  list(kernel = kern, bandwidth = bw, rule = "median")
}

# target_scales() of the global centred targets, from reduced sums
dist_target_scales <- function(g) {
  Yc <- g$Yc
  nrm <- sqrt(mpi_reduce(colSums(Yc^2), "sum"))
  sdv <- sqrt(mpi_reduce(colSums(sweep(Yc, 2L, mpi_reduce(colSums(Yc), "sum") / g$n)^2),
                         "sum") / g$n)
  list(sd = sdv, norm = nrm)
}

# The fitted object of one rank: its rows, the global counts and, for
# Falkon, the whole model.
dist_new_fit <- function(g, loc, set, res, ses, call) {
  ldat <- list(xs = g$xs, n = g$nl, p = g$p, xnames = g$xnames, scaling = g$scaling,
               standardize = g$standardize, tgt = loc$tgt, Y = g$Y,
               Yc = g$Yc, y_center = g$y_center)
  centers <- res$centers
  res$centers <- integer(0)
  fit <- new_krr(ldat, set, res, call = call)
  fit$distributed <- list(rank = ses$rank, size = ses$size, n = g$n, n_local = g$nl,
                          row0 = g$row0, bytes = native_mpi_bytes()[1L])
  if (length(centers) > 0L) {
    # Falkon: the centres are global rows and the weights the same on every
    # rank; each rank holds the whole model (the centres' points gathered
    # from their owners), its rows and responses only for
    # askotch_mpi_gather()
    mine <- centers > g$row0 & centers <= g$row0 + g$nl
    xc <- matrix(0, length(centers), g$p)
    xc[mine, ] <- g$xs[centers[mine] - g$row0, , drop = FALSE]
    fit$x <- matrix(mpi_reduce(xc, "sum"), length(centers), g$p)
    fit$centers <- centers
    fit$solver$centers <- centers
    fit$n <- g$n
    fit$y <- NULL
    fit$distributed$x_local <- g$xs
    fit$distributed$y_local <- g$Y
  }
  class(fit) <- c("krr_distributed", class(fit))
  fit
}

# center / scale of compute_scaling() from the ranks' sums
dist_scaling <- function(x, n, standardize) {
  p <- ncol(x)
  if (isFALSE(standardize)) return(list(center = rep(0, p), scale = rep(1, p)))
  r <- apply(x, 2L, min_max)
  lo <- mpi_reduce(r[1L, ], "min")
  hi <- mpi_reduce(r[2L, ], "max")
  center <- mpi_reduce(colSums(x), "sum") / n
  ss <- mpi_reduce(colSums(sweep(x, 2L, center)^2), "sum")
  m <- pmax(abs(lo), abs(hi))
  scale <- rep(1, p)
  s <- sqrt(ss / (n - 1))
  ok <- m > 0 & hi - lo > 4 * .Machine$double.eps * m & is.finite(s) & s > 0
  scale[ok] <- s[ok]
  center[m == 0] <- 0
  joint_scaling(list(center = center, scale = scale), ok, standardize)
}

#' @export
predict.krr_distributed <- function(object, newdata = NULL, ...) {
  ecall <- sys.call()
  d <- object$distributed
  dots <- list(...)
  # standard errors and intervals need K + lambda I of all rows on one process
  if (isTRUE(dots$se.fit) || (!is.null(dots$interval) &&
                              !identical(dots$interval[1L], "none"))) {
    abort_askotch(paste(
      "Standard errors and intervals of a distributed fit need the whole",
      "model: gather it with askotch_mpi_gather() (on every rank) and call",
      "predict(se.fit = TRUE) on the result on the root rank."), "input", ecall)
  }
  predict_local <- function() {
    if (is.null(newdata)) {
      abort_askotch(paste(
        "`newdata` is required for a distributed fit (each rank holds only",
        "its rows); use askotch_mpi_gather() for the training fit."),
        "input", ecall)
    }
    local <- object
    class(local) <- setdiff(class(object), "krr_distributed")
    stats::predict(local, newdata, ...)
  }
  # Falkon: the whole model on every rank, which predicts alone
  if (!is.null(object$centers)) return(predict_local())
  f <- mpi_step(predict_local(), d$rank, ecall)
  # each rank: K(x, X_r) W_r + y_center; summed, y_center counted once
  dims <- dim(f)
  tot <- mpi_reduce(f, "sum") - (d$size - 1) *
    (if (is.null(dims)) object$y_center else rep(object$y_center, each = dims[1L]))
  if (!is.null(dims)) {
    dim(tot) <- dims
    dimnames(tot) <- dimnames(f)
  } else {
    names(tot) <- names(f)
  }
  tot
}

#' @export
summary.krr_distributed <- function(object, ...) {
  # collective (every rank calls it): the model statistics and the accuracy
  # bound reduce over ranks
  s <- NextMethod()
  s$n <- object$distributed$n
  s
}

# summary()'s model statistics of a distributed fit, from the ranks' reduced
# sums (collective; regression): the training R^2 -- for Falkon from each
# rank's fitted values at its rows, for ASkotch / SAP / PCG from the residual
# lambda w (exact at the solution, as summary() takes it above option
# askotch.exact_max_n, and labelled so: the fitted values would need every
# rank's points on every rank) -- and the maximum-likelihood signal variance
# of the full kernel.  The GP statistics need the kernel on one process.
dist_model_stats <- function(object) {
  d <- object$distributed
  centres <- !is.null(object$centers)
  # this rank's sums (an error on any rank is raised on every rank)
  loc <- mpi_step({
    Y <- as.matrix(if (centres) d$y_local else object$y)
    Yc <- sweep(Y, 2L, object$y_center, check.margin = FALSE)
    R <- if (centres) Yc - krr_scores(object, d$x_local) else object$lambda * object$weights
    list(res = colSums(R^2), tot = colSums(Yc^2),
         yw = if (!centres) colSums(Yc * object$weights))
  }, d$rank)
  r2 <- 1 - mpi_reduce(loc$res, "sum") / mpi_reduce(loc$tot, "sum")
  names(r2) <- object$y_names
  st <- list()
  if (centres) {
    st[["R-squared (training)"]] <- r2
  } else {
    st[["R-squared (training, lambda w)"]] <- r2
    s2 <- mpi_reduce(loc$yw, "sum") / d$n
    names(s2) <- object$y_names
    st[["Signal variance (s^2, ML)"]] <- s2
    st[["Noise variance (lambda s^2)"]] <- object$lambda * s2
  }
  st[["GP statistics"]] <- "not computed for a distributed fit (askotch_mpi_gather() gives the whole model)"
  st
}

# Methods that need every training point's fitted value, or the whole
# kernel: a classed error pointing to the gathered model (nobs() is global).
dist_needs_gather <- function(what, call) {
  abort_askotch(sprintf(paste(
    "`%s()` of a distributed fit needs the whole model: gather it with",
    "askotch_mpi_gather() (on every rank) and use the result on the root rank."),
    what), "input", call)
}

#' @export
fitted.krr_distributed <- function(object, ...) dist_needs_gather("fitted", sys.call())
#' @export
residuals.krr_distributed <- function(object, ...) dist_needs_gather("residuals", sys.call())
#' @export
logLik.krr_distributed <- function(object, ...) dist_needs_gather("logLik", sys.call())
#' @export
deviance.krr_distributed <- function(object, ...) dist_needs_gather("deviance", sys.call())
#' @export
simulate.krr_distributed <- function(object, nsim = 1, seed = NULL, ...) {
  dist_needs_gather("simulate", sys.call())
}
#' @export
glance.krr_distributed <- function(x, ...) dist_needs_gather("glance", sys.call())
#' @export
augment.krr_distributed <- function(x, ...) dist_needs_gather("augment", sys.call())
#' @export
nobs.krr_distributed <- function(object, ...) object$distributed$n

#' @export
print.krr_distributed <- function(x, ...) {
  d <- x$distributed
  cat(sprintf("Distributed fit: rank %d of %d, %d of n = %d rows here\n",
              d$rank, d$size, d$n_local, d$n))
  NextMethod()
}

#' Gather a distributed fit to one rank
#'
#' Collects the ranks' rows and weights of a fit made with
#' `krr(..., distributed = TRUE)` into a plain single-process `"krr"` model
#' on rank `root`: it predicts, summarises and can be saved with
#' [saveRDS()] and used without MPI. Collective: every rank must call it.
#' (A Falkon fit's centres and weights are already on every rank; its rows
#' and responses are gathered, for `fitted()` and `summary()`.)
#'
#' @param fit A distributed fit (class `"krr_distributed"`).
#' @param root The rank (from 0) that receives the model.
#' @return On `root`, the single-process `"krr"` fit; `NULL` elsewhere.
#' @seealso [askotch_mpi_init()], [krr()].
#' @examples
#' \dontrun{
#' # under mpirun, after fit <- krr(x_local, y_local, distributed = TRUE, ...)
#' whole <- askotch_mpi_gather(fit)
#' if (!is.null(whole)) saveRDS(whole, "fit.rds")
#' }
#' @export
askotch_mpi_gather <- function(fit, root = 0L) {
  ecall <- sys.call()
  if (!inherits(fit, "krr_distributed")) {
    abort_askotch("`fit` must be a distributed fit (krr(..., distributed = TRUE)).",
                  "input", ecall)
  }
  d <- fit$distributed
  root <- as.integer(root)
  if (length(root) != 1L || is.na(root) || root < 0L || root >= d$size) {
    abort_askotch(sprintf("`root` must be a rank in 0..%d.", d$size - 1L),
                  "input", ecall)
  }
  centres <- !is.null(fit$centers) # Falkon: only the rows and responses
  parts <- lapply(seq_len(d$size) - 1L, function(r) {
    mine <- if (r == d$rank) {
      if (centres) list(x = d$x_local, y = d$y_local)
      else list(x = fit$x, w = fit$weights, y = fit$y)
    }
    got <- mpi_bcast_obj(mine, r)
    if (d$rank == root) got
  })
  if (d$rank != root) return(invisible(NULL))
  out <- fit
  X <- do.call(rbind, lapply(parts, `[[`, "x"))
  if (centres) {
    out$x_train <- X
  } else {
    out$x <- X
    out$weights <- do.call(rbind, lapply(parts, `[[`, "w"))
  }
  out$y <- do.call(rbind, lapply(parts, `[[`, "y"))
  out$n <- d$n
  out$distributed <- NULL
  out$state <- NULL
  class(out) <- setdiff(class(fit), "krr_distributed")
  validate_krr(out, ecall, "fit")
}
