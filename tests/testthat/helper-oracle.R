# Independent oracle written in base R from the kernel formulas (?kernels).
# It does NOT use the package's C kernels, so it checks them.

oracle_kernel <- function(x1, x2, kernel, s) {
  x1 <- as.matrix(x1)
  x2 <- as.matrix(x2)
  if (kernel == "laplace") {
    d1 <- matrix(0, nrow(x1), nrow(x2))
    for (j in seq_len(ncol(x1))) d1 <- d1 + abs(outer(x1[, j], x2[, j], "-"))
    return(exp(-d1 / s))
  }
  d2 <- matrix(0, nrow(x1), nrow(x2))
  for (j in seq_len(ncol(x1))) d2 <- d2 + outer(x1[, j], x2[, j], "-")^2
  d <- sqrt(d2)
  switch(kernel,
         rbf = exp(-d2 / (2 * s^2)),
         matern12 = exp(-d / s),
         matern32 = (1 + sqrt(3) * d / s) * exp(-sqrt(3) * d / s),
         matern52 = (1 + sqrt(5) * d / s + 5 * d2 / (3 * s^2)) *
           exp(-sqrt(5) * d / s),
         stop("unknown kernel ", kernel))
}

# Standardise like krr(): training mean and sd(), constant columns centred only.
oracle_scale <- function(x) {
  ctr <- colMeans(x)
  sds <- apply(x, 2, stats::sd)
  sds[sds == 0] <- 1
  list(center = ctr, scale = sds)
}

# Exact KRR: (K + lambda I) w = y - mean(y); predictions at xnew.
oracle_krr <- function(x, y, xnew, kernel, bandwidth, lambda) {
  sc <- oracle_scale(x)
  xs <- scale(x, sc$center, sc$scale)
  xn <- scale(xnew, sc$center, sc$scale)
  y <- as.matrix(y)
  mu <- colMeans(y)
  K <- oracle_kernel(xs, xs, kernel, bandwidth)
  w <- solve(K + lambda * diag(nrow(x)), sweep(y, 2, mu))
  pred <- sweep(oracle_kernel(xn, xs, kernel, bandwidth) %*% w, 2, mu, "+")
  list(w = w, pred = pred, K = K)
}

# Exact inducing-point KRR on the centres cen (row indices):
# (K_nm^T K_nm + lambda K_mm) a = K_nm^T (y - mean(y)); predictions at xnew.
oracle_inducing <- function(x, y, xnew, kernel, bandwidth, lambda, cen) {
  sc <- oracle_scale(x)
  xs <- scale(x, sc$center, sc$scale)
  xn <- scale(xnew, sc$center, sc$scale)
  Knm <- oracle_kernel(xs, xs[cen, , drop = FALSE], kernel, bandwidth)
  Kmm <- Knm[cen, , drop = FALSE]
  y <- as.matrix(y)
  mu <- colMeans(y)
  a <- solve(crossprod(Knm) + lambda * Kmm, crossprod(Knm, sweep(y, 2, mu)))
  pred <- sweep(oracle_kernel(xn, xs[cen, , drop = FALSE], kernel,
                              bandwidth) %*% a, 2, mu, "+")
  list(a = a, pred = pred)
}

make_regression <- function(n, p = 3, seed = 1) {
  set.seed(seed)
  x <- matrix(stats::runif(n * p, -1, 1), n, p)
  y <- sin(2 * x[, 1]) + x[, 2]^2 - 0.5 * x[, p] + stats::rnorm(n, sd = 0.1)
  list(x = x, y = y)
}

rel_err <- function(a, b) {
  sqrt(sum((as.numeric(a) - as.numeric(b))^2)) / sqrt(sum(as.numeric(b)^2))
}

ffi <- function(name) getFromNamespace(name, "askotch")

# E sigma(f) for f ~ N(mu, v), elementwise, by base R's adaptive quadrature
# in z = (f - mu) / sqrt(v) over [-40, 40] (the GP classifiers' averaged
# class probability)
oracle_logistic_normal <- function(mu, v) {
  mapply(function(m, s2) {
    stats::integrate(function(z) stats::plogis(m + sqrt(s2) * z) * stats::dnorm(z), -40, 40,
                     rel.tol = 1e-12, subdivisions = 1000L)$value
  }, mu, v)
}

all_kernels <- c("rbf", "laplace", "matern12", "matern32", "matern52")
kernel_code <- c(rbf = 0L, laplace = 1L, matern12 = 2L, matern32 = 3L,
                 matern52 = 4L)

has_cuda <- function() {
  nrow(askotch_devices(quiet = TRUE)) > 0L
}

# Universal kriging (a mean function F beta, R/trend.R) in closed form at
# given hyperparameters: A = K + lambda W^{-1}.
trend_oracle <- function(x, y, Fm, bw, lambda, xn = NULL, Fn = NULL, w = NULL,
                         kernel = "rbf", reml = FALSE) {
  n <- nrow(x)
  K <- oracle_kernel(x, x, kernel, bw)
  A <- K + lambda * diag(if (is.null(w)) rep(1, n) else 1 / w)
  Ai <- solve(A)
  C <- crossprod(Fm, Ai %*% Fm)
  beta <- solve(C, crossprod(Fm, Ai %*% y))
  r <- y - Fm %*% beta
  alpha <- Ai %*% r
  q <- ncol(Fm)
  nn <- if (reml) n - q else n
  s2 <- drop(crossprod(r, alpha)) / nn
  ll <- -nn / 2 * log(2 * pi * s2) - nn / 2 - 0.5 * c(determinant(A)$modulus) -
    if (reml) 0.5 * c(determinant(C)$modulus) else 0
  out <- list(beta = unname(drop(beta)), alpha = drop(alpha), C = C, s2 = s2, ll = ll,
              cov = unname(s2 * solve(C)))
  if (!is.null(xn)) {
    kx <- oracle_kernel(xn, x, kernel, bw)
    u <- Fn - kx %*% Ai %*% Fm
    out$mu <- drop(Fn %*% beta + kx %*% alpha)
    out$var <- s2 * (1 - rowSums((kx %*% Ai) * kx) + rowSums((u %*% solve(C)) * u))
    Kn <- oracle_kernel(xn, xn, kernel, bw)
    out$cov_new <- s2 * (Kn - kx %*% Ai %*% t(kx) + u %*% solve(C, t(u)))
  }
  out
}

# Two-class data for the GP classifiers (test-laplace.R, test-ep.R): a
# wavy boundary in two inputs, labels "a" / "b" and their -1 / +1 codes
gpc_data <- function(n = 120, seed = 1) {
  set.seed(seed)
  x <- matrix(rnorm(2 * n), ncol = 2)
  y <- factor(ifelse(sin(2 * x[, 1]) + x[, 2] + rnorm(n, sd = 0.5) > 0, "b", "a"))
  list(x = x, y = y, s = ifelse(y == "b", 1, -1))
}

# The central-difference gradient of f at th, step h in every coordinate
num_grad <- function(f, th, h) {
  vapply(seq_along(th), function(i) {
    e <- replace(numeric(length(th)), i, h)
    (f(th + e) - f(th - e)) / (2 * h)
  }, 0)
}

# The Hessian of f at th by second differences (step h in each coordinate)
second_differences <- function(f, th, h = 1e-3) {
  d <- length(th)
  H <- matrix(0, d, d)
  for (i in seq_len(d)) for (j in i:d) {
    ei <- replace(numeric(d), i, h)
    ej <- replace(numeric(d), j, h)
    H[i, j] <- H[j, i] <-
      (f(th + ei + ej) - f(th + ei - ej) - f(th - ei + ej) + f(th - ei - ej)) / (4 * h^2)
  }
  H
}
