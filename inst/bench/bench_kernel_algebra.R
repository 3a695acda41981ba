# The cost of kernel algebra: K V for a composite kernel against the
# products of its kernels computed separately (each on its own columns,
# the listed kernels' fused product), interleaved and repeated, on the CPU:
#   sum      rbf(dims 1:2) + matern32(dims 3)      (target: <= 1.3x the two products)
#   product  rbf(dims 1:2) * matern32(dims 3)      (tiles: kernel blocks, a Hadamard
#                                                   product and a GEMM)
#   periodic periodic(dims 3) * rbf(dims 3)
#   great-circle  matern32(dims 1:2, great-circle km) against the Euclidean
#            matern32 on the same columns (longitude and latitude in degrees)
#
# Rscript inst/bench/bench_kernel_algebra.R [n] [reps]
suppressPackageStartupMessages(library(askotch))
args <- commandArgs(TRUE)
n <- if (length(args) >= 1) as.integer(args[1]) else 20000L
reps <- if (length(args) >= 2) as.integer(args[2]) else 5L
set.seed(1)
x <- cbind(a = runif(n), b = runif(n), c = runif(n))
v <- matrix(rnorm(n), n)
ll <- cbind(lon = runif(n, -125, -65), lat = runif(n, 25, 50))
apply_k <- function(x1, k) askotch:::native_kernel_apply(x1, x1, v, k, threads = 2L)
resolve <- function(k, xk = x) {
  askotch:::composite_resolve(askotch:::as_composite(k), xk, colnames(xk), 1, NULL)
}
rbf <- kernel_rbf(0.3)
m32 <- kernel_matern32(0.4)
cases <- list(
  sum = list(comp = resolve(kernel_rbf(0.3, dims = 1:2) + kernel_matern32(0.4, dims = 3)),
             parts = function() apply_k(x[, 1:2], rbf) + apply_k(x[, 3, drop = FALSE], m32)),
  product = list(comp = resolve(kernel_rbf(0.3, dims = 1:2) * kernel_matern32(0.4, dims = 3)),
                 parts = function() apply_k(x[, 1:2], rbf) + apply_k(x[, 3, drop = FALSE], m32)),
  periodic = list(comp = resolve(kernel_periodic(0.5, 1, dims = 3) * kernel_rbf(0.3, dims = 3)),
                  parts = function() apply_k(x[, 1:2], rbf) + apply_k(x[, 3, drop = FALSE], m32)),
  great_circle = list(
    comp = resolve(kernel_matern32(800, dims = 1:2, distance = "great_circle"), ll),
    x = ll, parts = function() apply_k(ll, kernel_matern32(8))))
tm <- function(f) system.time(f())[["elapsed"]]
rows <- list()
for (nm in names(cases)) {
  cs <- cases[[nm]]
  a <- b <- numeric(reps)
  for (r in seq_len(reps)) {  # interleaved: composite, parts, composite, parts ...
    a[r] <- tm(function() apply_k(if (is.null(cs$x)) x else cs$x, cs$comp))
    b[r] <- tm(cs$parts)
  }
  rows[[nm]] <- data.frame(case = nm, n = n, composite_med = median(a), composite_min = min(a),
                           composite_max = max(a), parts_med = median(b), parts_min = min(b),
                           parts_max = max(b), ratio_med = median(a / b))
}
out <- do.call(rbind, rows)
rownames(out) <- NULL
cat(sprintf("%s, %s, load %s\n", format(Sys.time()), R.version.string,
            paste(readLines("/proc/loadavg", warn = FALSE), collapse = "")))
print(out, digits = 3)
