#!/bin/sh
# The dependency rule of src/core (written at the top of src/core/krr.h),
# checked on the compiled objects: every core file is compiled alone, its
# undefined symbols are matched to the core file that defines them, and
#  - a file may depend only on its own folder and the folders before it in
#    base < dist < data < op < loss < sampling < linalg < solvers;
#  - inside solvers/, solver files may use common.c only; only registry.c
#    uses the solver files; nothing uses registry.c;
#  - there is no dependency circle between files;
#  - no core file includes a backend (src/cpu, src/cuda) or R, and no core
#    object uses a symbol of a backend (krr_cpu_*, krr_cuda_*: the core
#    reaches the host table through ctx->host_ops) or of R's API (Rf_*, R_*,
#    Rprintf, REprintf), defined or not;
#  - only the R glue (src/glue/) and src/init.c include R headers.
# The object checks run twice: on the serial build (gcc) and on the MPI build
# (mpicc -DKRR_HAVE_MPI, where dist/mpi.c has its MPI code), skipped with the
# reason when mpicc is absent.
# Prints the file graph's violations; exit status 1 if any.
set -e
cd "$(dirname "$0")/.."
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
if grep -rnE '#include *[<"](\.\./)*(cpu|cuda)/|#include *<R[.>_]|#include *<Rinternals' src/core; then
  echo "check_deps: a core file includes a backend or R"; fail=1
fi
# R headers: only the glue (src/glue/) and the registration table (src/init.c)
if grep -rnE '#include *<R[.>_]|#include *<Rinternals|#include *<Rmath' src driver \
     --include='*.c' --include='*.h' --include='*.inc' --include='*.cu' --include='*.cuh' |
   grep -vE '^src/glue/|^src/init\.c:'; then
  echo "check_deps: a file outside src/glue/ and src/init.c includes R"; fail=1
fi
# headers: a file includes headers of its own folder, earlier folders and the
# public ones only (types, macros and inline helpers are dependencies too)
order=" base dist data op loss sampling linalg solvers "
for f in $(find src/core -mindepth 2 -name '*.[ch]' | sort); do
  d=$(basename "$(dirname "$f")")
  rd=${order%% $d *}; rd=${#rd}
  for h in $(sed -n 's|^#include *"\.\./\([a-z]*\)/.*|\1|p' "$f"); do
    rh=${order%% $h *}; rh=${#rh}
    if [ "$rh" -gt "$rd" ]; then echo "check_deps: $f includes a header of the later folder $h/"; fail=1; fi
  done
done
# check_objects LABEL CC [FLAGS...]: compile every core file alone with CC
# and check the objects' symbols (the rule above, backend and R symbols)
check_objects() {
  label=$1 cc=$2
  shift 2
  rm -f "$tmp"/*.o
  for f in $(find src/core -name '*.c' | sort); do
    o="$tmp/$(echo "$f" | sed -e 's|^src/core/||' -e 's|/|__|g' -e 's|\.c$|.o|')"
    $cc -std=gnu11 -O0 -fopenmp "$@" -c "$f" -o "$o" || { echo "check_deps ($label): $f does not compile"; return 1; }
  done
  for o in "$tmp"/*.o; do
    b=$(basename "$o" .o)
    nm "$o" | awk -v f="$b" '$2 ~ /^[TDBR]$/ {print "D", $3, f} $1 == "U" {print "U", $2, f}'
  done > "$tmp/syms"
  awk -v fail=0 -v build="$label" '
    function folder(f) { sub(/__.*/, "", f); return f }
    function rank(d) { return index(" base dist data op loss sampling linalg solvers ", " " d " ") }
    function foreign(s) { return s ~ /^(krr_cpu_|krr_cuda_|Rf_|R_)/ || s ~ /^(Rprintf|REprintf|Rvprintf|REvprintf)$/ }
    $1 == "D" { def[$2] = $3; if (foreign($2)) { printf "check_deps (%s): %s defines %s: a backend or R symbol\n", build, $3, $2; fail = 1 } }
    $1 == "U" { use[++nu] = $3 " " $2 }
    END {
      for (i = 1; i <= nu; i++) {
        split(use[i], a, " "); f = a[1]; s = a[2];
        if (foreign(s)) {
          printf "check_deps (%s): %s uses %s: a backend or R symbol (the core reaches the host table through ctx->host_ops)\n", build, f, s
          fail = 1; continue
        }
        if (!(s in def)) continue;          # libc, BLAS, MPI: not core
        g = def[s]; if (g == f) continue;
        edge[f " " g] = s
      }
      for (e in edge) {
        split(e, a, " "); f = a[1]; g = a[2];
        rf = rank(folder(f)); rg = rank(folder(g));
        bad = ""
        if (rg > rf) bad = "uses a later folder";
        if (folder(f) == "solvers" && folder(g) == "solvers") {
          if (f != "solvers__registry" && g != "solvers__common") bad = "a solver file uses another solver file";
        }
        if (g == "solvers__registry") bad = "only the glue may use the registry";
        if (bad != "") { printf "check_deps (%s): %s -> %s (%s): %s\n", build, f, g, edge[e], bad; fail = 1 }
        adj[f] = adj[f] " " g; nodes[f] = 1; nodes[g] = 1
      }
      # cycles: depth-first search with colours
      for (n in nodes) colour[n] = 0
      for (n in nodes) if (colour[n] == 0 && dfs(n)) fail = 1
      n_e = 0; for (e in edge) n_e++
      printf "check_deps (%s): %d core files, %d file dependencies\n", build, length(nodes), n_e
      exit fail
    }
    function dfs(n,   k, parts, m, found) {
      colour[n] = 1; found = 0
      m = split(adj[n], parts, " ")
      for (k = 1; k <= m; k++) {
        if (colour[parts[k]] == 1) { printf "check_deps (%s): circle through %s -> %s\n", build, n, parts[k]; found = 1 }
        else if (colour[parts[k]] == 0 && dfs(parts[k])) found = 1
      }
      colour[n] = 2
      return found
    }' "$tmp/syms"
}
check_objects serial gcc || fail=1
if command -v mpicc >/dev/null 2>&1; then
  check_objects mpi mpicc -DKRR_HAVE_MPI || fail=1
else
  echo "check_deps (mpi): skipped: mpicc not found (apt-get install libopenmpi-dev)"
fi
if [ $fail -eq 0 ]; then echo "check_deps: layering respected, no circles"; else echo "check_deps: VIOLATIONS"; fi
exit $fail
