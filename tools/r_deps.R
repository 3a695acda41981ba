# The file graph of R/: which file's functions each file calls, its
# dependency circles (strongly connected components of more than one file)
# and the longest functions. Run from the package root:
#   Rscript tools/r_deps.R          (exit status 1 if there is a circle)
files <- sort(list.files("R", pattern = "[.]R$", full.names = TRUE))
defs <- list()     # function name -> file
fun_len <- list()  # "file:name" -> lines
exprs <- list()
for (f in files) {
  ex <- parse(f, keep.source = TRUE)
  exprs[[f]] <- ex
  for (e in ex) {
    if (is.call(e) && (identical(e[[1]], as.name("<-")) || identical(e[[1]], as.name("="))) &&
        is.name(e[[2]])) {
      nm <- as.character(e[[2]])
      defs[[nm]] <- f
      if (is.call(e[[3]]) && identical(e[[3]][[1]], as.name("function"))) {
        sr <- attr(e, "srcref")
        fun_len[[paste0(basename(f), ":", nm)]] <- NA
      }
    }
  }
  sr <- attr(ex, "srcref")
  for (i in seq_along(ex)) {
    e <- ex[[i]]
    if (is.call(e) && (identical(e[[1]], as.name("<-")) || identical(e[[1]], as.name("="))) &&
        is.name(e[[2]]) && is.call(e[[3]]) && identical(e[[3]][[1]], as.name("function"))) {
      fun_len[[paste0(basename(f), ":", as.character(e[[2]]))]] <- sr[[i]][3] - sr[[i]][1] + 1
    }
  }
}
# the functions a definition calls (names in call position, and names
# handed to the apply family, do.call, Filter, Map, Reduce, match.fun)
syms <- function(e) {
  out <- character(0)
  hof <- c("lapply", "sapply", "vapply", "mapply", "Map", "Filter", "Reduce",
           "do.call", "match.fun", "outer", "apply", "tapply")
  walk <- function(x) {
    if (is.call(x)) {
      h <- x[[1]]
      if (is.name(h)) {
        out <<- c(out, as.character(h))
        if (as.character(h) %in% hof)
          for (y in as.list(x)[-1]) if (!missing(y) && is.name(y)) out <<- c(out, as.character(y))
      }
      for (y in as.list(x)) if (!missing(y)) walk(y)
    } else if (is.pairlist(x) || is.expression(x)) for (y in as.list(x)) if (!missing(y)) walk(y)
  }
  walk(e)
  unique(out)
}
edges <- NULL
for (f in files) {
  used <- unique(unlist(lapply(exprs[[f]], syms)))
  used <- used[used %in% names(defs)]
  to <- unique(unlist(defs[used]))
  to <- setdiff(to, f)
  if (length(to)) edges <- rbind(edges, data.frame(from = f, to = to))
}
# strongly connected components (Tarjan)
nodes <- files; index <- 0; stack <- character(0)
idx <- setNames(rep(NA, length(nodes)), nodes); low <- idx; on <- setNames(rep(FALSE, length(nodes)), nodes)
sccs <- list()
strong <- function(v) {
  index <<- index + 1; idx[v] <<- index; low[v] <<- index
  stack <<- c(stack, v); on[v] <<- TRUE
  for (w in edges$to[edges$from == v]) {
    if (is.na(idx[w])) { strong(w); low[v] <<- min(low[v], low[w]) }
    else if (on[w]) low[v] <<- min(low[v], idx[w])
  }
  if (low[v] == idx[v]) {
    comp <- character(0)
    repeat { w <- stack[length(stack)]; stack <<- stack[-length(stack)]; on[w] <<- FALSE
             comp <- c(comp, w); if (w == v) break }
    if (length(comp) > 1) sccs[[length(sccs) + 1]] <<- comp
  }
}
for (v in nodes) if (is.na(idx[v])) strong(v)
cat(sprintf("R/: %d files, %d file dependencies, %d circle(s)\n", length(files),
            if (is.null(edges)) 0L else nrow(edges), length(sccs)))
for (s in sccs) cat("  circle of", length(s), "files:", paste(basename(sort(s)), collapse = " "), "\n")
fl <- unlist(fun_len)
fl <- sort(fl, decreasing = TRUE)
cat("longest functions:\n")
print(head(fl, 12))
if ("--edges" %in% commandArgs(TRUE)) print(edges)
quit(status = if (length(sccs)) 1 else 0)
