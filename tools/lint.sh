#!/usr/bin/env bash
# Lints what a change touches: the R lines (lintr, settings in .lintr) and
# the C / CUDA lines (clang-format, style in .clang-format) that differ
# between a base commit and the working tree (committed or not; new
# untracked files count whole).  Untouched code is never linted, so it
# never fails CI.
#   bash tools/lint.sh [base]
# base: a commit; default the merge-base of HEAD with origin/main, else
# HEAD~1.  Without either (a fresh shallow or one-commit clone) it lints
# nothing and says so.  Exit status 1 when a touched line has a lint.
set -u
cd "$(dirname "$0")/.." || exit 2

base="${1:-}"
if [ -n "$base" ]; then
  if ! git rev-parse -q --verify "$base^{commit}" >/dev/null; then
    echo "lint: base '$base' is not a commit" >&2
    exit 2
  fi
else
  if git rev-parse -q --verify origin/main >/dev/null; then
    base=$(git merge-base HEAD origin/main 2>/dev/null || true)
  fi
  if [ -z "$base" ] && git rev-parse -q --verify 'HEAD~1^{commit}' >/dev/null; then
    base=HEAD~1
  fi
  if [ -z "$base" ]; then
    echo "lint: no origin/main and no HEAD~1 (shallow or one-commit clone): nothing to lint"
    exit 0
  fi
fi
echo "lint: lines changed since $(git rev-parse --short "$base")"

fail=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# ---- R: lintr on the changed files, lints reported on changed lines only
# Each line of $tmp/r_lines: FILE<TAB>FIRST<TAB>LAST (LAST 0: the whole file)
{
  git diff --name-only --diff-filter=AMR -M "$base" -- '*.R' '*.r' | while read -r f; do
    [ -f "$f" ] || continue
    git diff -U0 -M "$base" -- "$f" | sed -n 's/^@@ -[0-9,]* +\([0-9]*\)\(,\([0-9]*\)\)\{0,1\} @@.*/\1 \3/p' |
      while read -r start count; do
        [ -z "$count" ] && count=1
        [ "$count" -eq 0 ] && continue
        printf '%s\t%s\t%s\n' "$f" "$start" $((start + count - 1))
      done
  done
  git ls-files --others --exclude-standard -- '*.R' '*.r' | while read -r f; do
    printf '%s\t1\t0\n' "$f"
  done
} > "$tmp/r_lines"

if [ -s "$tmp/r_lines" ]; then
  if Rscript -e 'quit(status = !requireNamespace("lintr", quietly = TRUE))' >/dev/null 2>&1; then
    Rscript - "$tmp/r_lines" <<'REOF' || fail=1
args <- commandArgs(TRUE)
tab <- utils::read.delim(args[1], header = FALSE, col.names = c("file", "first", "last"),
                         stringsAsFactors = FALSE)
settings <- if (file.exists(".lintr")) ".lintr" else NULL
n_bad <- 0L
for (f in unique(tab$file)) {
  rows <- tab[tab$file == f, ]
  lints <- lintr::lint(f, parse_settings = TRUE)
  for (l in lints) {
    ln <- l$line_number
    hit <- any(rows$last == 0L | (ln >= rows$first & ln <= rows$last))
    if (hit) {
      n_bad <- n_bad + 1L
      cat(sprintf("%s:%d:%d: %s [%s]\n", f, ln, l$column_number, l$message, l$linter))
    }
  }
}
cat(sprintf("lint: R: %d file(s), %d lint(s) on changed lines\n", length(unique(tab$file)), n_bad))
quit(status = if (n_bad > 0L) 1L else 0L)
REOF
  else
    echo "lint: R: lintr is not installed (Debian: r-cran-lintr; tools/install_deps.sh): R not linted"
  fi
else
  echo "lint: R: no changed R files"
fi

# ---- C / CUDA: clang-format on the changed lines
c_exts="c,h,cu,cuh,inc"
c_changed=$(git diff --name-only --diff-filter=AMR -M "$base" -- '*.c' '*.h' '*.cu' '*.cuh' '*.inc')
c_new=$(git ls-files --others --exclude-standard -- '*.c' '*.h' '*.cu' '*.cuh' '*.inc')
if [ -z "$c_changed" ] && [ -z "$c_new" ]; then
  echo "lint: C: no changed C files"
elif ! command -v clang-format >/dev/null 2>&1 || ! git clang-format -h >/dev/null 2>&1; then
  echo "lint: C: clang-format / git clang-format not installed (Debian: clang-format): C not linted"
else
  c_fail=0
  if [ -n "$c_changed" ]; then
    # shellcheck disable=SC2086
    git clang-format --diff --style file --extensions "$c_exts" "$base" -- $c_changed > "$tmp/c_diff" 2>&1
    if grep -q '^[-+@]' "$tmp/c_diff"; then
      cat "$tmp/c_diff"
      echo "lint: C: changed lines differ from .clang-format's style (diff above; apply it with"
      echo "      git clang-format --style file --extensions $c_exts $base)"
      c_fail=1
    fi
  fi
  for f in $c_new; do
    if ! clang-format --style=file --dry-run --Werror "$f" 2>"$tmp/c_new"; then
      head -40 "$tmp/c_new"
      echo "lint: C: new file $f differs from .clang-format's style"
      c_fail=1
    fi
  done
  # shellcheck disable=SC2086
  [ "$c_fail" -eq 0 ] && echo "lint: C: $(echo $c_changed $c_new | wc -w) file(s), changed lines formatted"
  [ "$c_fail" -eq 0 ] || fail=1
fi

exit "$fail"
