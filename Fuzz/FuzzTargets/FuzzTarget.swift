import Foundation

/// The decoders strangers feed, each as a libFuzzer target (`bess-fuzz`, built by `make fuzz` with
/// BESS_FUZZ set) and as a replay the ordinary test suite runs over every seed and every input that
/// ever failed (FuzzTests, which compiles these files, over Tests/FuzzRegressions).
///
/// A target returns the invariants its input broke: empty is a pass. The fuzzer aborts on any, so a
/// crash, a sanitizer report, a hang and a broken invariant all end the run with the input saved.
public enum FuzzTarget: String, CaseIterable, Sendable {
    /// Pylontech/SMA CAN frame sequences, decoded and run through the control law.
    case can
    /// SunSpec model-chain discovery, the inverter and meter models, and the setpoint written back.
    case sunspec
    /// The register-map inverter: a device's words read and a setpoint written through a map.
    case registerMap = "register-map"
    /// The configuration loader on YAML text.
    case config
    /// Dispatch commands: the HTTP batch answer and the MQTT command message, validated and applied.
    case dispatch
    /// Control-socket requests from callers of each role.
    case control
    /// The spool's recovery of damaged segments, and that it then loses nothing appended.
    case spool
    /// The SCADA server's write handler (model 704 writes).
    case scada
    /// A record batch as the aggregator receives it: the direct reader against JSONDecoder.
    case uplinkBatch = "uplink-batch"
    /// An IEC 60870-5-104 byte stream: frame splitter, ASDU decoder and the outstation's link.
    case iec104
    /// The outstation's per-connection procedure on any bytes, with a fixed station image and a
    /// manual clock: closes only for protocol errors, answers that decode, numbering mod 32768.
    case iec104Session = "iec104-session"
    /// IEEE C37.118.2 frames as a PMU's stream: the frame check, CFG-1/2/3 and data frames against
    /// the newest configuration.
    case pmu
    /// IEEE 2030.5 documents: the XML reader and the DER control and program resources.
    case sep2
    /// HTTP/1.1 answers into the 2030.5 client's response parser, whole and in pieces.
    case http
    /// A block schedule: the document alone or in the aggregator's command, read, merged through the
    /// revision gate, windowed and checked against a site.
    case schedule
    /// The optimiser's forecast file, and the plan's problem built from its points and a tariff.
    case forecast
    /// A device profile's YAML text into the profile reader, and what it accepts compiled and run.
    case profile
    /// The starter library's compiled decoders on any frames or registers, and its inverters' commands.
    case profileDevices = "profile-devices"

    /// Runs one input; returns the invariants it broke. One input or seed list at a time in a
    /// process: the harnesses share state as libFuzzer's single thread allows (the spool's folder,
    /// the control target's daemon and its mailbox), and the test suite runs targets side by side.
    public func run(_ bytes: [UInt8]) -> [String] {
        FuzzTarget.oneAtATime.withLock { runAlone(bytes) }
    }

    private static let oneAtATime = NSLock()

    private func runAlone(_ bytes: [UInt8]) -> [String] {
        var input = FuzzInput(bytes)
        switch self {
        case .can: return CANHarness.run(&input)
        case .sunspec: return SunSpecHarness.run(&input)
        case .registerMap: return RegisterMapHarness.run(&input)
        case .config: return ConfigHarness.run(&input)
        case .dispatch: return DispatchHarness.run(&input)
        case .control: return ControlHarness.run(&input)
        case .spool: return SpoolHarness.run(&input)
        case .scada: return ScadaHarness.run(&input)
        case .uplinkBatch: return UplinkBatchHarness.run(&input)
        case .iec104: return IEC104Harness.run(&input)
        case .iec104Session: return IEC104SessionHarness.run(&input)
        case .pmu: return PMUHarness.run(&input)
        case .sep2: return SEP2Harness.run(&input)
        case .http: return HTTPHarness.run(&input)
        case .schedule: return ScheduleHarness.run(&input)
        case .forecast: return ForecastHarness.run(&input)
        case .profile: return ProfileHarness.run(&input)
        case .profileDevices: return ProfileDevicesHarness.run(&input)
        }
    }

    /// Starting inputs, made from the same vectors the tests use.
    public func seeds() -> [[UInt8]] {
        FuzzTarget.oneAtATime.withLock { seedsAlone() }
    }

    private func seedsAlone() -> [[UInt8]] {
        switch self {
        case .can: CANHarness.seeds()
        case .sunspec: SunSpecHarness.seeds()
        case .registerMap: RegisterMapHarness.seeds()
        case .config: ConfigHarness.seeds()
        case .dispatch: DispatchHarness.seeds()
        case .control: ControlHarness.seeds()
        case .spool: SpoolHarness.seeds()
        case .scada: ScadaHarness.seeds()
        case .uplinkBatch: UplinkBatchHarness.seeds()
        case .iec104: IEC104Harness.seeds()
        case .iec104Session: IEC104SessionHarness.seeds()
        case .pmu: PMUHarness.seeds()
        case .sep2: SEP2Harness.seeds()
        case .http: HTTPHarness.seeds()
        case .schedule: ScheduleHarness.seeds()
        case .forecast: ForecastHarness.seeds()
        case .profile: ProfileHarness.seeds()
        case .profileDevices: ProfileDevicesHarness.seeds()
        }
    }
}

/// Collects broken invariants with their context.
struct Violations {
    var list: [String] = []
    mutating func check(_ condition: @autoclosure () -> Bool, _ message: @autoclosure () -> String) {
        if !condition() { list.append(message()) }
    }
}
