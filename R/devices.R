# Devices and threads ---------------------------------------------------------

#' CUDA devices available to askotch
#'
#' Lists the CUDA devices the package can use. When there are none (no GPU,
#' or the package was built without CUDA) the result has zero rows and a
#' message says why.
#'
#' @param quiet Suppress the message when no device is available.
#' @return A data frame with columns `id` (device ordinal), `name`,
#'   `memory_gb` (total memory in GiB) and `compute_capability`.
#' @examples
#' askotch_devices()
#' @export
askotch_devices <- function(quiet = FALSE) {
  check_flag(quiet, "quiet")
  info <- native_devices()
  out <- data.frame(
    id = seq_along(info$name) - 1L,
    name = as.character(info$name),
    memory_gb = as.numeric(info$memory) / 2^30,
    compute_capability = as.character(info$cc),
    stringsAsFactors = FALSE
  )
  why <- attr(info, "why")
  if (nrow(out) == 0L && !quiet) {
    message("No CUDA device available",
            if (!is.null(why) && nzchar(why)) paste0(": ", why) else ".")
  }
  attr(out, "why") <- why
  out
}

#' Number of CPU threads used by askotch
#'
#' Gets or sets the default number of threads used by the C core (kernel
#' products and dense linear algebra). The initial default comes from the
#' `ASKOTCH_THREADS` environment variable, else the number of cores. Any
#' count is capped by the number of processors and the OpenMP thread limit. A fit can override it with the `threads` argument
#' of [krr()].
#'
#' @section Reproducibility:
#' On the CPU, a fit with the same data, arguments and `seed` gives the same
#' result bit for bit whatever the number of threads (and run after run):
#' every sum is cut into pieces fixed by the problem's sizes, never by the
#' number of threads, and the pieces are added in a fixed order. This holds
#' for every solver, loss and precision, with random features and for the
#' hyperparameter search. Results can differ in the last digits on a GPU
#' (its own summation order), between a distributed fit and a single-process
#' one (sums over the ranks), and with another BLAS library.
#'
#' @section Busy machines:
#' A call of the C core wakes one more thread per roughly 0.7 ms of work it
#' has (the choice depends on the problem's sizes only, so results stay
#' reproducible), so small fits run on one thread whatever `threads` says. Larger fits with several threads can still be
#' slower than with one when other jobs keep the cores busy: an OpenMP thread
#' that waits for work spins for a few milliseconds before it sleeps, taking
#' CPU time from the other jobs and from the threads doing the work. On a
#' shared machine either use `threads = 1` (or `askotch_threads(1)`), or start
#' R with `OMP_WAIT_POLICY=passive` in its environment, e.g.
#' `OMP_WAIT_POLICY=passive R` or `export OMP_WAIT_POLICY=passive` in the shell
#' profile (`GOMP_SPINCOUNT=10000` shortens the spinning instead). It must be
#' set before R starts: R itself loads the OpenMP runtime, which reads these
#' variables once, so `Sys.setenv()` and `.Renviron` come too late. On a
#' 2-core machine running two other busy processes, a fit at n = 5000 with 2
#' threads took 1.4-2 times the time of 1 thread with the default wait policy
#' and within about 10% of it with passive waiting, which costs a few percent
#' on an idle machine (section "Threads on a busy machine" of
#' `system.file("bench", "RESULTS.md", package = "askotch")`).
#'
#' A fit, and the methods that compute on one (`predict()`, `vcov()`,
#' `confint()`, `tidy()`, `logLik()`, `simulate()`, `refit()`, `plot()`), run R's own
#' matrix algebra inside them (the likelihood searches' inverses) on the
#' fit's thread count too, and leave the BLAS's own thread count (OpenBLAS,
#' used by `%*%`) as they found it. OpenBLAS's threads also spin for a while
#' after each such call, so that `system.time()` of a fit on two threads
#' shows seconds of system time: on an idle machine that is CPU time, not
#' time to the answer (`OPENBLAS_THREAD_TIMEOUT=4` in the environment before
#' R starts shortens the spin; on a busy one, `threads = 1` as above).
#'
#' @param n `NULL` to query, or a positive whole number to set.
#' @return The number of threads now in use (invisibly when setting).
#' @examples
#' askotch_threads()
#' old <- askotch_threads(1)
#' askotch_threads(old)
#' @export
askotch_threads <- function(n = NULL) {
  if (is.null(n)) return(native_threads())
  check_positive(n, "n", integerish = TRUE)
  old <- native_threads()
  native_threads(threads_cap(n))
  invisible(old)
}

# A thread count the compiled code can take as an int: the cores cap it
# there
threads_cap <- function(n) as.integer(min(n, 65536))

# R's own dense algebra in a fit or a method (the likelihood searches'
# crossprod(), chol() and eigen() on the tuning points, the exact GP's
# factorisations) runs on the call's thread count (`threads`, 0: the
# session's), as the compiled code does; the exit of `scope`, the calling
# function's frame, puts the user's BLAS count back.
local_blas_threads <- function(threads, scope = parent.frame()) {
  old <- native_blas_threads()
  if (is.na(old)) return(invisible())
  native_blas_threads(if (threads >= 1) threads else native_threads())
  do.call(on.exit, list(call("native_blas_threads", old), add = TRUE), envir = scope)
  invisible()
}

# The one "auto" device rule: CUDA, when a device is present, for kernel work
# of at least 50 000^2 kernel evaluations (a pass of a fit on 50 000 points,
# a prediction of n_new x n pairs); below that the transfers and the
# device's setup cost more than the CPU's product.
auto_uses_cuda <- function(pairs) pairs >= 2.5e9

# Resolve "auto" | "cpu" | "cuda" into "cpu" or "cuda" (error if unavailable)
# for a fit on n points.
resolve_device <- function(device, n, call = NULL) {
  device <- check_choice(device, c("auto", "cpu", "cuda"), "device", call)
  if (device == "cpu") return("cpu")
  info <- native_devices()
  have <- length(info$name) > 0L
  if (device == "auto") {
    return(if (have && auto_uses_cuda(as.numeric(n)^2)) "cuda" else "cpu")
  }
  if (!have) {
    why <- attr(info, "why")
    # the compiled code's status: "not_built" (its message says how to
    # reinstall) or "device" (no driver or device)
    not_built <- identical(attr(info, "status"), "not_built")
    abort_askotch(sprintf(
      "`device = \"cuda\"` requested but no CUDA device is available%s.%s",
      if (!is.null(why) && nzchar(why)) paste0(": ", why) else "",
      if (not_built) "" else " Use `device = \"cpu\"` or \"auto\"."),
      if (not_built) "not_built" else "device", call)
  }
  "cuda"
}
