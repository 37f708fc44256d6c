import Cycle
import ControlCore
internal import Yams

extension PMUSettings {
    /// The keys of `grid_integration.pmu`.
    static let keys = ConfigKeys("grid_integration.pmu", [
        "host", "port", "transport", "local_port", "idcode", "pmu_idcode", "max_age_ms", "reconnect_s",
    ])

    /// The port a C37.118 PMU listens on by convention: 4712 for TCP (`tcp`, and `tcp_udp`'s commands),
    /// 4713 for UDP; none for `udp_spontaneous`, which sends no commands.
    static func defaultPort(_ transport: Transport) -> Int {
        switch transport {
        case .tcp, .tcpUDP: 4712
        case .udp: 4713
        case .udpSpontaneous: 0
        }
    }

    /// `grid_integration.pmu:` — the PMU bessd takes grid frequency from (docs/pmu.md). `host` and
    /// `idcode` are required; nil when either is missing or wrong (each reported).
    static func decode(_ p: ConfigReader.Fields, _ r: ConfigReader) -> PMUSettings? {
        var host = p.string("host")
        if host == nil, !p.has("host") { r.error(p.node, p.child("host"), "is required (the PMU's address or host name)") }
        if let text = host, let problem = HostAddress.problem(text) {
            r.error(p.mark("host"), p.child("host"), "\(HostAddress.rule); this \(problem)", got: p.mark("host").map(ConfigReader.shown))
            host = nil
        }
        let transport = p.choice("transport", Transport.allCases.map { ($0.rawValue, $0) }, default: .tcp)
        var port = p.int("port", default: Self.defaultPort(transport), range: 1...65535)!
        if transport == .udpSpontaneous, p.has("port") {
            r.error(p.mark("port"), p.child("port"), "is not used with transport udp_spontaneous: bessd sends the PMU no "
                    + "commands, and its data comes to local_port")
            port = 0
        }
        let localPort = p.int("local_port", range: 1...65535)
        if transport == .tcp, p.has("local_port") {
            r.error(p.mark("local_port"), p.child("local_port"), "has no use with transport tcp: the data comes over the TCP "
                    + "connection (transport tcp_udp takes it on a local port)")
        } else if transport == .tcpUDP || transport == .udpSpontaneous, !p.has("local_port") {
            r.error(p.mark("transport"), p.child("local_port"), "is required with transport \(transport.rawValue) (the port "
                    + "the PMU sends its data to)")
        }
        let idcode = p.int("idcode", range: 1...65535)
        if idcode == nil, !p.has("idcode") {
            r.error(p.node, p.child("idcode"), "is required (the IDCODE of the PMU's data stream, 1–65535)")
        }
        let pmuIdcode = p.int("pmu_idcode", range: 1...65535)
        // At most the controller's `frequencyStaleAfter`: an older sample would keep the cycle off the
        // inverters' frequency while the controller ignores it as stale.
        let maxAge = p.int("max_age_ms", default: 100, range: 20...BessdConfiguration.frequencyStaleAfterMilliseconds,
                           unit: "milliseconds")!
        let reconnect = p.double("reconnect_s", default: 2, range: 0.1...30, unit: "seconds")!
        p.finish(Self.keys)
        guard let host, let idcode else { return nil }
        if localPort == nil, transport == .tcpUDP || transport == .udpSpontaneous { return nil }
        return PMUSettings(host: host, port: UInt16(port), transport: transport,
                           localPort: transport == .tcp ? nil : localPort.map { UInt16($0) }, idcode: UInt16(idcode),
                           pmuIdcode: pmuIdcode.map { UInt16($0) }, maxAge: .milliseconds(maxAge),
                           reconnectDelay: .seconds(fromDouble: reconnect))
    }
}
