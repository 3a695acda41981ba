# The small real classification sets of the benchmarks at ordinary sizes
# (bench_small_n.R, bench_cv_path.R): kernlab's spam (n = 4601, p = 57),
# mlbench's PimaIndiansDiabetes (768, 8) and Sonar (208, 60).  sets$<name>(seed)
# draws an 80/20 split, the inputs standardised with the training means and
# sds: list(x, y, xt, yt, lambda = 1).

standardise <- function(x, xt) {
  mu <- colMeans(x)
  s <- apply(x, 2, stats::sd)
  s[!(s > 0)] <- 1
  list(x = scale(x, mu, s), xt = scale(xt, mu, s))
}

split_set <- function(x, y, seed) {
  set.seed(seed)
  tr <- sample(nrow(x), round(0.8 * nrow(x)))
  z <- standardise(x[tr, , drop = FALSE], x[-tr, , drop = FALSE])
  list(x = z$x, y = y[tr], xt = z$xt, yt = y[-tr], lambda = 1)
}

sets <- list(
  spam = function(seed) {
    data("spam", package = "kernlab", envir = environment())
    split_set(as.matrix(spam[, 1:57]), spam$type, seed)
  },
  pima = function(seed) {
    data("PimaIndiansDiabetes", package = "mlbench", envir = environment())
    split_set(as.matrix(PimaIndiansDiabetes[, 1:8]), PimaIndiansDiabetes$diabetes, seed)
  },
  sonar = function(seed) {
    data("Sonar", package = "mlbench", envir = environment())
    split_set(as.matrix(Sonar[, 1:60]), Sonar$Class, seed)
  }
)
