# The small real classification sets of the benchmarks at ordinary sizes
# (bench_small_n.R, bench_cv_path.R, bench_cv_stop.R): kernlab's spam (n =
# 4601, p = 57), mlbench's PimaIndiansDiabetes (768, 8) and Sonar (208, 60);
# for bench_cv_stop.R also mlbench's Ionosphere (351, 33; two classes),
# Vehicle (846, 18; four) and Glass (214, 9; six), and MASS's Boston (506,
# 13; regression, medv).  sets$<name>(seed) draws an 80/20 split, the inputs
# standardised with the training means and sds: list(x, y, xt, yt, lambda = 1).

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
  },
  ionosphere = function(seed) {
    data("Ionosphere", package = "mlbench", envir = environment())
    x <- cbind(V1 = as.numeric(Ionosphere$V1 == "1"), as.matrix(Ionosphere[, 3:34]))
    split_set(x, Ionosphere$Class, seed)
  },
  vehicle = function(seed) {
    data("Vehicle", package = "mlbench", envir = environment())
    split_set(as.matrix(Vehicle[, 1:18]), Vehicle$Class, seed)
  },
  glass = function(seed) {
    data("Glass", package = "mlbench", envir = environment())
    split_set(as.matrix(Glass[, 1:9]), droplevels(Glass$Type), seed)
  },
  boston = function(seed) {
    data("Boston", package = "MASS", envir = environment())
    split_set(as.matrix(Boston[, 1:13]), Boston$medv, seed)
  }
)
