import Outstation
import Synchronization

extension OutstationServer {
    /// The IEC 104 outstation's counters on /metrics (docs/iec104.md).
    func metrics(into m: inout MetricsText) {
        func value(_ counter: borrowing Atomic<UInt64>) -> Double { Double(counter.load(ordering: .relaxed)) }
        m.metric("bessd_iec104_commands_total", "counter", "IEC 104 commands (selects and executes), by result.",
                 [("result=\"accepted\"", value(commandsAccepted)), ("result=\"refused\"", value(commandsRefused))])
        m.metric("bessd_iec104_interrogations_total", "counter", "IEC 104 station interrogations answered.", [("", value(interrogations))])
        m.metric("bessd_iec104_negative_answers_total", "counter", "ASDUs answered with COT 44–47 and P/N = 1.", [("", value(negativeAnswers))])
        m.metric("bessd_iec104_protocol_errors_total", "counter", "IEC 104 connections closed for a malformed frame or a link error.",
                 [("", value(protocolErrors))])
        m.metric("bessd_iec104_connections_refused_total", "counter", "IEC 104 connections closed at accept (groups' allow_from, max_connections).",
                 [("", value(connectionsRefused))])
        m.metric("bessd_iec104_events_total", "counter", "Spontaneous events queued, and dropped from a full group queue (oldest first).",
                 [("outcome=\"queued\"", value(eventsQueued)), ("outcome=\"dropped\"", value(eventsDropped))])
        m.metric("bessd_iec104_connections", "gauge", "IEC 104 connections open now.", [("", Double(connected.load(ordering: .relaxed)))])
    }
}
