# Cost model of one epoch (n / b iterations) of distributed ASkotch / NSAP on
# the sharded operator, after Tu et al. (2016), Table 1: per block,
# computation n b (p + k) / M (the kernel block against the local rows and
# its product with the k weight columns) + b^3 (NSAP's block solve; ASkotch:
# b r^2), communication O(b p + b k) numbers per rank in a tree of depth
# log2 M.  Constants: c_kern (seconds per kernel entry at p = 3, one core) is
# fitted to driver/bench_dist.c at np = 1 (n = 1e5, b = 1000, median of 3);
# the rest are stated assumptions for a commodity cluster.
#   Rscript driver/dist_cost_model.R [t_iter_np1]
args <- commandArgs(TRUE)
t1 <- if (length(args)) as.numeric(args[1]) else 0.0696 # s / iteration, n = 1e5, b = 1000, p = 3
c_kern <- t1 / (1000 * 1e5)      # s per kernel entry (p = 3, exp dominated), one core
cores <- 4                       # per node (Tu et al.: r3.2xlarge, 4 physical cores)
flops <- 20e9 * cores            # node rate for the distance and product GEMMs
alpha <- 50e-6                   # s, message latency (TCP over 10 GbE)
beta <- 1 / 1.25e9               # s per byte (10 GbE)
ncoll <- 8                       # collectives per iteration (bench_dist: block points, K_B: w, gathers, status)
epoch <- function(n, p, k, b, M, solve = c("askotch", "nsap"), r = 100) {
  solve <- match.arg(solve)
  comp <- n * b * (c_kern / cores + 2 * (p + k) / flops) / M +
    (if (solve == "nsap") b^3 / 3 else 2 * b * r^2 + 20 * b * r) / flops
  bytes <- 8 * (b * p + 4 * b * k)
  comm <- ceiling(log2(M)) * (ncoll * alpha + bytes * beta)
  c(comp = comp * n / b, comm = comm * n / b, bytes_iter = bytes)
}
cases <- list(
  list(name = "TIMIT-like (n = 2e6, p = 440, k = 147, b = 6144, NSAP)", n = 2e6, p = 440, k = 147, b = 6144, s = "nsap"),
  list(name = "taxi-like (n = 1e8, p = 9, k = 1, b = 16384, ASkotch)", n = 1e8, p = 9, k = 1, b = 16384, s = "askotch"))
for (cs in cases) {
  cat(sprintf("\n%s\n  M   compute(s)  comm(s)  total(h)  comm share  bytes/iter/rank\n", cs$name))
  for (M in c(8, 16, 32, 64, 128)) {
    e <- epoch(cs$n, cs$p, cs$k, cs$b, M, cs$s)
    cat(sprintf("%4d %11.0f %8.0f %9.2f %10.1f%% %12.0f\n", M, e["comp"], e["comm"],
                (e["comp"] + e["comm"]) / 3600, 100 * e["comm"] / (e["comp"] + e["comm"]),
                e["bytes_iter"]))
  }
}
