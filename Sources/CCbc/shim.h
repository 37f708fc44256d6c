// COIN-OR CBC's C interface (Debian's coinor-libcbc-dev, EPL-1.0): the optimiser's MILP solver.
#include <coin/Cbc_C_Interface.h>
