/* libmosquitto (MQTT 5 client): the uplink's second transport and the aggregator's consumer. */
#ifndef BESSD_CMOSQUITTO_SHIM_H
#define BESSD_CMOSQUITTO_SHIM_H
#include <mosquitto.h>
#include <mqtt_protocol.h>
#endif
