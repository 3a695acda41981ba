#!/usr/bin/env Rscript
# Fashion-MNIST, all ten classes (one-vs-rest, the ten right-hand sides
# solved jointly), with krr()'s defaults: RBF kernel, median bandwidth,
# lambda by maximum likelihood (on a subsample of 2000 images), the
# automatic tolerance (predictions within 0.001 sd of the exact solution's),
# solver "auto" (PCG with a greedy partial-Cholesky preconditioner of
# automatic rank between 5000 and 2e5 points, ASkotch above), double
# precision. (In single
# precision the residual of this problem levels off near 3e-5, the rounding
# floor of float arithmetic here, above the automatic tolerance's 1e-5: the
# fit stops there with reason "precision", accurate to about 0.05 sd.)
#
# Data: Debian's dataset-fashion-mnist (idx files under
# /usr/share/datasets/fashion-mnist, or ASKOTCH_FASHION_DIR).
# Training subset size: first command-line argument, else env ASKOTCH_N, else
# 10000 (the full training set is 60000). Other knobs: ASKOTCH_PRECISION
# ("double"), ASKOTCH_MAX_PASSES (default 300, the one setting that is not
# krr()'s default, 100: a margin only, for ASkotch at n = 60000 and above), ASKOTCH_TIME_LIMIT (solver seconds, default Inf: run to
# the default tolerance), ASKOTCH_DEVICE ("auto").
#
#   Rscript inst/scripts/fashion_mnist.R            # n = 10000
#   Rscript inst/scripts/fashion_mnist.R 60000      # everything

suppressPackageStartupMessages(library(askotch))

dir <- Sys.getenv("ASKOTCH_FASHION_DIR", "/usr/share/datasets/fashion-mnist")
args <- commandArgs(trailingOnly = TRUE)
n_train <- if (length(args) >= 1L) as.numeric(args[1L]) else
  as.numeric(Sys.getenv("ASKOTCH_N", "10000"))
if (!is.finite(n_train) || n_train < 100) stop("training size must be >= 100")
time_limit <- as.numeric(Sys.getenv("ASKOTCH_TIME_LIMIT", "Inf"))
max_passes <- as.numeric(Sys.getenv("ASKOTCH_MAX_PASSES", "300"))
precision <- Sys.getenv("ASKOTCH_PRECISION", "double")
device <- Sys.getenv("ASKOTCH_DEVICE", "auto")

source(system.file("scripts", "read_idx.R", package = "askotch"))  # read_idx()

classes <- c("T-shirt/top", "Trouser", "Pullover", "Dress", "Coat", "Sandal",
             "Shirt", "Sneaker", "Bag", "Ankle boot")
to_label <- function(lab) factor(classes[lab + 1L], levels = classes)

cat("Reading Fashion-MNIST from", dir, "\n")
x_train <- read_idx(file.path(dir, "train-images-idx3-ubyte.gz")) / 255
y_train <- to_label(read_idx(file.path(dir, "train-labels-idx1-ubyte.gz")))
x_test <- read_idx(file.path(dir, "t10k-images-idx3-ubyte.gz")) / 255
y_test <- to_label(read_idx(file.path(dir, "t10k-labels-idx1-ubyte.gz")))

n_train <- min(as.integer(n_train), nrow(x_train))
set.seed(2026)
idx <- if (n_train < nrow(x_train)) sort(sample.int(nrow(x_train), n_train)) else
  seq_len(nrow(x_train))
x <- x_train[idx, , drop = FALSE]
y <- y_train[idx]

cat(sprintf("Training on n = %d images (p = %d pixels, 10 classes), testing on %d;",
            nrow(x), ncol(x), nrow(x_test)),
    sprintf("%s precision, askotch threads = %d\n", precision, askotch_threads()))

t0 <- proc.time()[["elapsed"]]
fit <- krr(x, y, precision = precision, device = device,
           max_passes = max_passes, time_limit = time_limit, seed = 1,
           progress = interactive())
t_fit <- proc.time()[["elapsed"]] - t0
t1 <- proc.time()[["elapsed"]]
pred <- predict(fit, x_test)
t_pred <- proc.time()[["elapsed"]] - t1
acc <- mean(pred == y_test)

cat("\n")
print(summary(fit))
cat("\n")
cat(sprintf("n (training)        : %d\n", nrow(x)))
cat(sprintf("test accuracy       : %.4f  (10 classes, %d test images; chance 0.1)\n",
            acc, nrow(x_test)))
cat(sprintf("fit seconds         : %.1f (solver %.1f; converged: %s)\n", t_fit,
            fit$seconds, if (fit$converged) "yes" else paste("no,", fit$reason)))
cat(sprintf("predict seconds     : %.1f\n", t_pred))
