# The file graph of R/: which file's functions each file calls, its
# dependency circles (strongly connected components of more than one file)
# and the longest functions. Run it with Rscript from the package root (add
# --edges to list the graph); the exit status is 1 if there is a circle.
files <- sort(list.files("R", pattern = "[.]R$", full.names = TRUE))
is_def <- function(e) {
  is.call(e) && (identical(e[[1]], as.name("<-")) || identical(e[[1]], as.name("="))) &&
    is.name(e[[2]])
}
is_fun <- function(e) is.call(e[[3]]) && identical(e[[3]][[1]], as.name("function"))

# defs: the file of each function; fun_len: the lines of each, by file:name
defs <- list()
fun_len <- list()
exprs <- list()
for (f in files) {
  ex <- parse(f, keep.source = TRUE)
  exprs[[f]] <- ex
  sr <- attr(ex, "srcref")
  for (i in seq_along(ex)) {
    e <- ex[[i]]
    if (!is_def(e)) next
    defs[[as.character(e[[2]])]] <- f
    if (is_fun(e)) {
      fun_len[[paste0(basename(f), ":", as.character(e[[2]]))]] <- sr[[i]][3] - sr[[i]][1] + 1
    }
  }
}

# the functions an expression calls: names in call position, and names
# handed to the apply family, do.call, Filter, Map, Reduce, match.fun
calls <- function(e) {
  out <- character(0)
  hof <- c("lapply", "sapply", "vapply", "mapply", "Map", "Filter", "Reduce",
           "do.call", "match.fun", "outer", "apply", "tapply")
  walk <- function(x) {
    if (is.call(x)) {
      h <- x[[1]]
      if (is.name(h)) {
        out <<- c(out, as.character(h))
        if (as.character(h) %in% hof) {
          for (y in as.list(x)[-1]) if (!missing(y) && is.name(y)) out <<- c(out, as.character(y))
        }
      }
      for (y in as.list(x)) if (!missing(y)) walk(y)
    } else if (is.pairlist(x) || is.expression(x)) {
      for (y in as.list(x)) if (!missing(y)) walk(y)
    }
  }
  walk(e)
  unique(out)
}

edges <- data.frame(from = character(0), to = character(0))
for (f in files) {
  used <- unique(unlist(lapply(exprs[[f]], calls)))
  to <- setdiff(unique(unlist(defs[used[used %in% names(defs)]])), f)
  if (length(to)) edges <- rbind(edges, data.frame(from = f, to = to))
}

# strongly connected components (Tarjan)
index <- 0
stack <- character(0)
idx <- setNames(rep(NA_real_, length(files)), files)
low <- idx
on <- setNames(rep(FALSE, length(files)), files)
sccs <- list()
strong <- function(v) {
  index <<- index + 1
  idx[v] <<- index
  low[v] <<- index
  stack <<- c(stack, v)
  on[v] <<- TRUE
  for (w in edges$to[edges$from == v]) {
    if (is.na(idx[w])) {
      strong(w)
      low[v] <<- min(low[v], low[w])
    } else if (on[w]) {
      low[v] <<- min(low[v], idx[w])
    }
  }
  if (low[v] == idx[v]) {
    comp <- character(0)
    repeat {
      w <- stack[length(stack)]
      stack <<- stack[-length(stack)]
      on[w] <<- FALSE
      comp <- c(comp, w)
      if (w == v) break
    }
    if (length(comp) > 1) sccs[[length(sccs) + 1]] <<- comp
  }
}
for (v in files) if (is.na(idx[v])) strong(v)

cat(sprintf("R/: %d files, %d file dependencies, %d circle(s)\n", length(files),
            nrow(edges), length(sccs)))
for (s in sccs) {
  cat("  circle of", length(s), "files:", paste(basename(sort(s)), collapse = " "), "\n")
}
fl <- sort(unlist(fun_len), decreasing = TRUE)
cat("longest functions (lines):\n")
cat(sprintf("  %4d %s\n", head(fl, 10), names(head(fl, 10))), sep = "")
if ("--edges" %in% commandArgs(TRUE)) print(edges)
quit(status = if (length(sccs)) 1 else 0)
