/* libsocketcan and the SocketCAN kernel headers bessd uses. */
#ifndef BESSD_CSOCKETCAN_SHIM_H
#define BESSD_CSOCKETCAN_SHIM_H
#include <linux/can.h>
#include <linux/can/raw.h>
#include <linux/can/error.h>
#include <libsocketcan.h>
#endif
