/* libmodbus, as bessd uses it. The include path comes from pkg-config (libmodbus). */
#ifndef BESSD_CMODBUS_SHIM_H
#define BESSD_CMODBUS_SHIM_H
#include <modbus.h>
#endif
