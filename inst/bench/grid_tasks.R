# The benchmark grid of the solver and stopping-rule studies
# (bench_auto_solver.R, bench_early_stop.R): gen(data, n) draws n training
# and 2000 test points of a data set (Friedman 1, a smooth p = 3 function,
# or Fashion-MNIST's class 0 against the rest as 0/1 targets, p = 784, or
# its ten classes), and
# `tasks` names the grid's problems: data, n, lambda rule ("ml" or a multiple
# of n), kernel, precision. Fashion-MNIST comes from Debian's
# dataset-fashion-mnist (or ASKOTCH_FASHION_DIR).
# (the idx reader of Fashion-MNIST's files)
source(system.file("scripts", "read_idx.R", package = "askotch"))
fashion_dir <- Sys.getenv("ASKOTCH_FASHION_DIR", "/usr/share/datasets/fashion-mnist")
fashion <- NULL
gen <- function(data, n, nt = 2000) {
  set.seed(1)
  m <- n + nt
  if (data == "friedman") { # Friedman 1: p = 10, noise sd 1
    x <- matrix(runif(m * 10), m, 10)
    y <- 10 * sin(pi * x[, 1] * x[, 2]) + 20 * (x[, 3] - 0.5)^2 + 10 * x[, 4] +
      5 * x[, 5] + rnorm(m)
  } else if (data == "smooth3") { # p = 3, smooth, noise sd 0.1
    x <- matrix(runif(m * 3), m, 3)
    y <- sin(4 * x[, 1]) * cos(3 * x[, 2]) + x[, 3]^2 + 0.1 * rnorm(m)
  } else if (data %in% c("fashion", "fashion10")) {
    # Fashion-MNIST, p = 784: class 0 against the rest as 0/1, or the ten
    # classes (a factor)
    if (is.null(fashion)) {
      X <- read_idx(file.path(fashion_dir, "train-images-idx3-ubyte.gz")) / 255
      lab <- read_idx(file.path(fashion_dir, "train-labels-idx1-ubyte.gz"))
      fashion <<- list(X = X, lab = lab)
    }
    i <- sample(nrow(fashion$X), m)
    x <- fashion$X[i, ]
    y <- if (data == "fashion") as.numeric(fashion$lab[i] == 0) else
      factor(fashion$lab[i], levels = 0:9)
  }
  list(x = x[1:n, , drop = FALSE], y = y[1:n], xt = x[-(1:n), , drop = FALSE],
       yt = y[-(1:n)])
}

# name = data, n, lambda rule ("ml" or a multiple of n), kernel, precision
tasks <- list(
  friedman_1e4_ml       = list("friedman", 1e4, "ml", "rbf", "double"),
  friedman_2e4_ml       = list("friedman", 2e4, "ml", "rbf", "double"),
  friedman_1e4_paper    = list("friedman", 1e4, 1e-6, "rbf", "double"),
  friedman_1e4_big      = list("friedman", 1e4, 1e-1, "rbf", "double"),
  friedman_1e4_matern   = list("friedman", 1e4, "ml", "matern52", "double"),
  friedman_1e4_single   = list("friedman", 1e4, "ml", "rbf", "single"),
  smooth3_2e4_ml        = list("smooth3", 2e4, "ml", "rbf", "double"),
  smooth3_2e4_paper     = list("smooth3", 2e4, 1e-6, "rbf", "double"),
  smooth3_1e4_laplace   = list("smooth3", 1e4, "ml", "laplace", "double"),
  fashion_1e4_ml        = list("fashion", 1e4, "ml", "rbf", "double"),
  fashion_1e4_paper     = list("fashion", 1e4, 1e-6, "rbf", "double"),
  fashion_1e4_single    = list("fashion", 1e4, 1e-5, "rbf", "single"))

# Save a study's results with the date and the machine (its CPU, cores and
# load at the end of the run), and print them.
save_results <- function(res, out) {
  attr(res, "machine") <- sprintf("%s, %s cores; %s", sub(".*: *", "", grep("Model name",
    system("lscpu", intern = TRUE), value = TRUE)), system("nproc", intern = TRUE),
    system("uptime", intern = TRUE))
  attr(res, "date") <- format(Sys.time(), "%Y-%m-%d %H:%M UTC", tz = "UTC")
  saveRDS(res, out)
  cat("\n", attr(res, "date"), "; ", attr(res, "machine"), "\n", sep = "")
}
