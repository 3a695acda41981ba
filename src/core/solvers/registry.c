/* The solver registry: the only file that knows every solver.  A new solver
 * is its own file (a krr_solver_def named krr_solver_<name>) plus one line
 * here. */
#include <string.h>
#include "solver.h"

#define SOLVERS(X) \
  X(askotch)       \
  X(askotch_v1)    \
  X(pcg)           \
  X(falkon)        \
  X(eigenpro)      \
  X(eigenpro3)     \
  X(cholesky)      \
  X(joker)         \
  X(dcd)           \
  X(bcd_nystrom)   \
  X(bcd_features)  \
  X(svrg)

#define DECLARE(name) extern const krr_solver_def krr_solver_##name;
SOLVERS(DECLARE)
#define ENTRY(name) &krr_solver_##name,
static const krr_solver_def *const table[] = {SOLVERS(ENTRY)};
#define N_SOLVERS ((int)(sizeof table / sizeof table[0]))

int krr_solver_count(void) { return N_SOLVERS; }

const krr_solver_def *krr_solver_get(int i) { return i >= 0 && i < N_SOLVERS ? table[i] : NULL; }

const krr_solver_def *krr_solver_lookup(const char *name) {
  for (int i = 0; name && i < N_SOLVERS; i++)
    if (strcmp(table[i]->name, name) == 0) return table[i];
  return NULL;
}
