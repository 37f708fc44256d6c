import Config
import Cycle
import PMULink
import Sep2Link

/// What the operator's surface reads (`StatusReport`, `MetricsExporter`): the configuration in
/// force, what the cycle last published, and each service's status and counters. Handles to read,
/// never to start, stop or replace a service.
struct OperatorView {
    let configuration: RunningConfiguration
    let shared: SharedState
    /// The bus and CAN workers' slots (round trips, errors, frames).
    let runner: SiteRunner
    let clock: ClockWatch
    let holds: HoldKeeper
    /// The event journal's counters, dropped notices and stalled threads.
    let journal: JournalFlush
    let uplink: UplinkService?
    let pmu: PMUReader?
    let sep2: Sep2Worker?
    let relayContacts: RelayContactsService?
    let scada: ScadaService?
    let iec104: IEC104Service?

    /// The grid operator's relay contacts' reader, when `grid_operator.inputs` configures one.
    var gridInputs: GridLimitInputReader? { relayContacts?.reader }
}
