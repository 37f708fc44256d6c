public import ControlCore
public import Fieldbus

// The devices the cycle's workers drive, as the cycle runs on them. Config decodes the YAML into
// these (`bess_units[].modbus`, `.inverter`, `.bms`, `site.meter`, `grid_operator.inputs`); the
// cycle never sees the YAML model itself.

/// Whether devices are real or simulated. The mode is named in every output a person or a remote
/// party reads (start line, `bessctl status`, `/metrics`, every uplink record), so nobody mistakes
/// simulated energy for real energy.
public enum RunMode: String, Sendable, CaseIterable {
    /// Every device is simulated inside bessd (the embedded default).
    case simulation
    /// Hardware-in-loop: real and simulated devices mixed (a device says `simulated: true`).
    case hil
    /// Every device real; nothing simulated may feed the control law.
    case hardware
}

/// How bessd reaches a unit's inverter over Modbus.
public enum ModbusTransport: Sendable, Equatable {
    /// Modbus TCP.
    case tcp(host: String, port: Int)
    /// Modbus RTU on a serial line (RS-485).
    case rtu(SerialSettings)
}

/// Serial line settings for Modbus RTU.
public struct SerialSettings: Sendable, Equatable {
    public enum Parity: String, Sendable { case none, even, odd }
    public var device: String
    public var baud: Int
    public var parity: Parity
    public var dataBits: Int
    public var stopBits: Int
    /// Use the kernel's RS-485 mode (for adapters without automatic direction control).
    public var rs485: Bool

    public init(device: String, baud: Int, parity: Parity, dataBits: Int, stopBits: Int, rs485: Bool) {
        self.device = device
        self.baud = baud
        self.parity = parity
        self.dataBits = dataBits
        self.stopBits = stopBits
        self.rs485 = rs485
    }
}

extension SerialSettings.Parity {
    /// libmodbus's parity letter.
    public var letter: Character { self == .none ? "N" : self == .even ? "E" : "O" }
}

/// A device's Modbus endpoint.
public struct ModbusSettings: Sendable, Equatable {
    /// The endpoint bessd's client connects to.
    public var endpoint: ModbusEndpoint {
        switch transport {
        case .tcp(let host, let port): .tcp(host: host, port: port)
        case .rtu(let s): .rtu(device: s.device, baud: s.baud, parity: s.parity.letter, dataBits: s.dataBits,
                               stopBits: s.stopBits, rs485: s.rs485)
        }
    }

    public var transport: ModbusTransport
    /// Modbus unit (slave) id.
    public var unitID: Int
    /// Per-request response timeout.
    public var timeout: Duration

    public init(transport: ModbusTransport, unitID: Int, timeout: Duration) {
        self.transport = transport
        self.unitID = unitID
        self.timeout = timeout
    }
}

/// The inverter of a unit.
public struct InverterSettings: Sendable, Equatable {
    /// `profile`: the device profile in `profile` (`inverter.profile: NAME`).
    public enum InverterProtocol: String, Sendable { case sunspec, registerMap = "register_map", profile }
    public var simulated: Bool
    public var protocolName: InverterProtocol
    /// The registers of a non-SunSpec inverter (`protocol: register_map`).
    public var registerMap: RegisterMapSpec?
    /// The inverter's device profile (`inverter.profile: NAME`, protocol `.profile`); nil otherwise.
    public var profile: DeviceProfile?

    public init(simulated: Bool, protocolName: InverterProtocol, registerMap: RegisterMapSpec? = nil,
                profile: DeviceProfile? = nil) {
        self.simulated = simulated
        self.protocolName = protocolName
        self.registerMap = registerMap
        self.profile = profile
    }
}

/// How bessd reaches a BMS: its CAN interface, or a Modbus endpoint (`bms.transport`).
public enum BMSTransport: String, Sendable, CaseIterable { case can, modbus }

/// The BMS of a unit.
public struct BMSSettings: Sendable, Equatable {
    /// `pylontech`: `bms.protocol: pylontech` (the default); `profile`: `bms.profile: NAME`.
    public enum BMSProtocol: String, Sendable { case pylontech, profile }
    public var simulated: Bool
    /// The BMS's device profile: the one `bms.profile` names, or Pylontech LV (`pylontech-lv`) for
    /// protocol pylontech; nil only when that profile did not load and Pylontech's own decoder serves.
    public var profile: DeviceProfile? = nil
    /// CAN (`interface`, `bitrate`) or Modbus (`modbus`).
    public var transport: BMSTransport = .can
    /// The BMS's Modbus endpoint (`bms.modbus`), for transport modbus.
    public var modbus: ModbusSettings? = nil
    /// SocketCAN interface, e.g. `can0`.
    public var interface: String
    public var protocolName: BMSProtocol
    /// CAN bitrate in bit/s.
    public var bitrate: Int
    /// BMS data older than this is stale.
    public var staleAfter: Duration
    /// How long after start the BMS may take to send its first data before BMS_COMM_LOST (power
    /// stays zero meanwhile); from then on `staleAfter` applies.
    public var startupGrace: Duration = .seconds(30)
    /// Cells in series, sizing the pack-voltage interlocks.
    public var cellsInSeries: Int
    /// When true bessd sets bitrate and restart-ms itself and brings the link up (needs
    /// CAP_NET_ADMIN); by default systemd-networkd owns the interface.
    public var manageInterface: Bool = false
    /// Automatic restart after bus-off (zero = off; bessd then restarts a managed interface itself).
    public var restartAfter: Duration = .milliseconds(100)

    public init(simulated: Bool, interface: String, protocolName: BMSProtocol, bitrate: Int, staleAfter: Duration,
                cellsInSeries: Int) {
        self.simulated = simulated
        self.interface = interface
        self.protocolName = protocolName
        self.bitrate = bitrate
        self.staleAfter = staleAfter
        self.cellsInSeries = cellsInSeries
    }
}

/// Where grid frequency comes from.
public enum FrequencySource: String, Sendable {
    /// The built-in simulated grid (simulation and HIL).
    case simulated
    /// The median of the fresh inverters' `Hz` readings.
    case inverter
    /// The site's connection-point meter (`site.meter`).
    case meter
    /// A phasor measurement unit over IEEE C37.118.2 (`grid_integration.pmu`); while its newest
    /// usable sample is older than `max_age_ms` the cycle falls back to the inverters' median.
    case pmu
}

/// `site.meter`: the meter at the grid connection point.
public struct MeterConfiguration: Sendable, Equatable {
    public enum MeterProtocol: String, Sendable { case sunspec, registerMap = "register_map" }
    /// Simulated inside bessd (mode simulation, or `simulated: true` in mode hil).
    public var simulated: Bool
    public var modbus: ModbusSettings?
    public var protocolName: MeterProtocol
    /// The registers of a meter that does not speak SunSpec.
    public var registerMap: MeterRegisterMap?
    /// True (the SunSpec convention): the meter's W is positive for power taken from the grid.
    public var importPositive: Bool
    /// Meter data older than this is stale (`METER_STALE`).
    public var staleAfter: Duration
    /// The longest delay between the meter measuring and bessd reading it.
    public var maxLag: Duration

    public init(simulated: Bool, modbus: ModbusSettings?, protocolName: MeterProtocol, registerMap: MeterRegisterMap?,
                importPositive: Bool, staleAfter: Duration, maxLag: Duration) {
        self.simulated = simulated
        self.modbus = modbus
        self.protocolName = protocolName
        self.registerMap = registerMap
        self.importPositive = importPositive
        self.staleAfter = staleAfter
        self.maxLag = maxLag
    }
}

/// `grid_operator.inputs` — the grid operator's relay contacts (a ripple-control receiver) read
/// through a Modbus I/O module: each contact asks for a percent limit while asserted.
public struct GridLimitInputsConfiguration: Sendable, Equatable {
    public enum Function: String, Sendable { case discreteInputs = "discrete_inputs", coils }
    public var modbus: ModbusSettings
    /// Discrete inputs (function 02) or coils (function 01).
    public var function: Function
    /// True: a contact is asserted when it reads 1.
    public var activeHigh: Bool
    /// How long a contact must hold a new state before it counts.
    public var debounce: Duration
    /// How often the module is read.
    public var poll: Duration
    /// No answer for this long raises GRID_LIMIT_INPUT_LOST (the last limit holds).
    public var lostAfter: Duration
    /// Each contact's input address and the limit it asks for while asserted.
    public var contacts: [RelayContacts.Contact]

    public init(modbus: ModbusSettings, function: Function, activeHigh: Bool, debounce: Duration, poll: Duration,
                lostAfter: Duration, contacts: [RelayContacts.Contact]) {
        self.modbus = modbus
        self.function = function
        self.activeHigh = activeHigh
        self.debounce = debounce
        self.poll = poll
        self.lostAfter = lostAfter
        self.contacts = contacts
    }
}
