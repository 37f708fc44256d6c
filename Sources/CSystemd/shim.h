/* libsystemd: readiness/watchdog notification and the structured journal. */
#ifndef BESSD_CSYSTEMD_SHIM_H
#define BESSD_CSYSTEMD_SHIM_H
#include <systemd/sd-daemon.h>
#include <systemd/sd-journal.h>
#include <systemd/sd-id128.h>
#endif
