# Reader of the idx files of (Fashion-)MNIST (Debian's dataset-fashion-mnist),
# shared by inst/scripts/fashion_mnist.R and the benchmark scripts:
#   source(system.file("scripts", "read_idx.R", package = "askotch"))
# A vector for labels, an N x p matrix for images.
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
