import Cycle
import ControlCore
internal import Yams

extension PMUSettings {
    /// The keys of `grid_integration.pmu`.
    static let keys = ConfigKeys("grid_integration.pmu", [
        "host", "port", "transport", "idcode", "pmu_idcode", "max_age_ms", "reconnect_s",
    ])

    /// The port a C37.118 PMU listens on by convention: 4712 for TCP, 4713 for UDP.
    static func defaultPort(_ transport: Transport) -> Int { transport == .tcp ? 4712 : 4713 }

    /// `grid_integration.pmu:` — the PMU bessd takes grid frequency from (docs/pmu.md). `host` and
    /// `idcode` are required; nil when either is missing or wrong (each reported).
    static func decode(_ p: ConfigReader.Fields, _ r: ConfigReader) -> PMUSettings? {
        var host = p.string("host")
        if host == nil, !p.has("host") { r.error(p.node, p.child("host"), "is required (the PMU's address or host name)") }
        if let text = host, let problem = HostAddress.problem(text) {
            r.error(p.mark("host"), p.child("host"), "\(HostAddress.rule); this \(problem)", got: p.mark("host").map(ConfigReader.shown))
            host = nil
        }
        let transport = p.choice("transport", [("tcp", Transport.tcp), ("udp", .udp)], default: .tcp)
        let port = p.int("port", default: Self.defaultPort(transport), range: 1...65535)!
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
        return PMUSettings(host: host, port: UInt16(port), transport: transport, idcode: UInt16(idcode),
                           pmuIdcode: pmuIdcode.map { UInt16($0) }, maxAge: .milliseconds(maxAge),
                           reconnectDelay: .seconds(fromDouble: reconnect))
    }
}
