/* Linux interfaces Glibc's Swift module leaves out (they need _GNU_SOURCE or live in headers it
   does not import). Header only: nothing to link. */
#ifndef BESSD_CLINUX_SHIM_H
#define BESSD_CLINUX_SHIM_H
#include <sys/eventfd.h>
#endif
