#!/usr/bin/env Rscript
# Fashion-MNIST, one class ("T-shirt/top", label 0) against the rest, with
# krr() defaults: ASkotch, RBF kernel, median bandwidth, lambda = 1e-6 n.
#
# Data: Debian's dataset-fashion-mnist (idx files under
# /usr/share/datasets/fashion-mnist, or ASKOTCH_FASHION_DIR).
# Training subset size: first command-line argument, else env ASKOTCH_N, else
# 20000 (the full training set is 60000). Other knobs: ASKOTCH_MAX_PASSES
# (default 100), ASKOTCH_TIME_LIMIT (solver seconds, default 90),
# ASKOTCH_PRECISION ("double"), ASKOTCH_DEVICE ("auto").
#
# With lambda = 1e-6 n the system is very ill-conditioned and solving it to
# tol = 1e-8 takes many passes (each pass costs about one product with the
# 20000 x 20000 kernel matrix: ~6e11 flops at p = 784). Test accuracy
# settles after a few passes, so the demo stops after ASKOTCH_TIME_LIMIT
# seconds; set ASKOTCH_TIME_LIMIT=Inf to run to tol or max_passes.
#
#   Rscript inst/scripts/fashion_mnist.R            # n = 20000
#   Rscript inst/scripts/fashion_mnist.R 60000      # everything

suppressPackageStartupMessages(library(askotch))

dir <- Sys.getenv("ASKOTCH_FASHION_DIR", "/usr/share/datasets/fashion-mnist")
args <- commandArgs(trailingOnly = TRUE)
n_train <- if (length(args) >= 1L) as.numeric(args[1L]) else
  as.numeric(Sys.getenv("ASKOTCH_N", "20000"))
if (!is.finite(n_train) || n_train < 100) stop("training size must be >= 100")
max_passes <- as.numeric(Sys.getenv("ASKOTCH_MAX_PASSES", "100"))
time_limit <- as.numeric(Sys.getenv("ASKOTCH_TIME_LIMIT", "90"))
precision <- Sys.getenv("ASKOTCH_PRECISION", "double")
device <- Sys.getenv("ASKOTCH_DEVICE", "auto")

read_idx <- function(path) {
  if (!file.exists(path)) {
    stop("Cannot find ", path, ". Install the Debian package ",
         "'dataset-fashion-mnist' or set ASKOTCH_FASHION_DIR.", call. = FALSE)
  }
  con <- gzfile(path, "rb")
  on.exit(close(con))
  magic <- readBin(con, "integer", n = 1L, size = 4L, endian = "big")
  ndim <- magic %% 256L
  dims <- readBin(con, "integer", n = ndim, size = 4L, endian = "big")
  total <- prod(dims)
  v <- readBin(con, "integer", n = total, size = 1L, signed = FALSE)
  if (length(v) != total) stop("truncated idx file ", path, call. = FALSE)
  if (ndim == 1L) return(v)
  # idx stores images row after row: read as p x N, then transpose
  t(matrix(v, nrow = prod(dims[-1L]), ncol = dims[1L]))
}

cat("Reading Fashion-MNIST from", dir, "\n")
x_train <- read_idx(file.path(dir, "train-images-idx3-ubyte.gz")) / 255
y_train <- read_idx(file.path(dir, "train-labels-idx1-ubyte.gz"))
x_test <- read_idx(file.path(dir, "t10k-images-idx3-ubyte.gz")) / 255
y_test <- read_idx(file.path(dir, "t10k-labels-idx1-ubyte.gz"))

# one class (0 = "T-shirt/top") vs the rest, as a factor: +1 = "tshirt"
to_label <- function(lab) {
  factor(ifelse(lab == 0L, "tshirt", "other"), levels = c("other", "tshirt"))
}
n_train <- min(as.integer(n_train), nrow(x_train))
set.seed(2026)
idx <- if (n_train < nrow(x_train)) sort(sample.int(nrow(x_train), n_train)) else
  seq_len(nrow(x_train))
x <- x_train[idx, , drop = FALSE]
y <- to_label(y_train[idx])

cat(sprintf("Training on n = %d images (p = %d pixels), testing on %d;",
            nrow(x), ncol(x), nrow(x_test)),
    sprintf("askotch threads = %d\n", askotch_threads()))

t0 <- proc.time()[["elapsed"]]
fit <- krr(x, y, precision = precision, device = device,
           max_passes = max_passes, time_limit = time_limit, seed = 1,
           progress = interactive())
t_fit <- proc.time()[["elapsed"]] - t0
t1 <- proc.time()[["elapsed"]]
pred <- predict(fit, x_test)
t_pred <- proc.time()[["elapsed"]] - t1
acc <- mean(pred == to_label(y_test))

cat("\n")
print(summary(fit))
cat("\n")
cat(sprintf("n (training)        : %d\n", nrow(x)))
cat(sprintf("test accuracy       : %.4f  (T-shirt/top vs rest, %d test images;",
            acc, nrow(x_test)),
    sprintf("majority class: %.4f)\n", mean(to_label(y_test) == "other")))
cat(sprintf("fit seconds         : %.1f (solver %.1f)\n", t_fit, fit$seconds))
cat(sprintf("predict seconds     : %.1f\n", t_pred))
