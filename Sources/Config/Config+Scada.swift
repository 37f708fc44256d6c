import BessBase
import BessSystem
import Cycle
import ControlCore
internal import Yams

extension ScadaConfiguration {
    /// The keys of `scada`.
    static let keys = ConfigKeys("scada", [
        "listen", "unit_id", "allow_from", "writes", "max_hold_s", "idle_timeout_s", "max_clients", "serial",
    ])

    /// `scada:` — the site as a SunSpec device on Modbus TCP.
    static func decode(_ fields: ConfigReader.Fields?, _ r: ConfigReader, units: [UnitConfiguration]) -> ScadaConfiguration? {
        guard let fields else { return nil }
        var host = "127.0.0.1", port = 502
        if let listen = fields.string("listen", pattern: { ListenAddress($0) != nil }, rule: "must be IPV4:PORT, e.g. 0.0.0.0:502")
            .flatMap({ ListenAddress($0) }) {
            host = listen.host
            port = Int(listen.port)
        } else if !fields.has("listen") {
            r.error(fields.node, fields.child("listen"), "is required (IPV4:PORT, e.g. 0.0.0.0:502)")
        }
        let unitID = fields.int("unit_id", default: 1, range: 1...247)!
        var allow: [IPv4Network] = []
        if let list = fields.sequence("allow_from") {
            for (index, node) in list.enumerated() {
                guard let text = node.string, let network = IPv4Network(text) else {
                    r.error(node, fields.child("allow_from[\(index)]"), "must be an IPv4 address or network (10.1.2.0/24)",
                            got: ConfigReader.shown(node))
                    continue
                }
                allow.append(network)
            }
        }
        let writes = fields.bool("writes", default: false)
        if writes, let open = allow.first(where: { $0.prefix < 8 }) {
            // A grid operator limit or setpoint from anywhere on the network is no interface.
            r.error(fields.mark("writes"), fields.child("writes"),
                    "needs allow_from to name the SCADA hosts: \(open) lets anyone write the site's limit and setpoint",
                    got: "true")
        }
        let hold = Duration.seconds(fromDouble: fields.double("max_hold_s", default: 60, range: 1...3600, unit: "seconds")!)
        let idle = Duration.seconds(fromDouble: fields.double("idle_timeout_s", default: 60, range: 1...3600, unit: "seconds")!)
        let clients = fields.int("max_clients", default: 32, range: 1...256)!
        var serial: SerialSettings?
        var serialUnit = 1
        if let line = fields.fields("serial") {
            switch ModbusSettings.decode(line, r) {
            case .some(let settings):
                if case .rtu(let s) = settings.transport {
                    serial = s
                    serialUnit = settings.unitID
                    if let i = units.firstIndex(where: {
                        if case .rtu(let u)? = $0.modbus?.transport { return u.device == s.device }
                        return false
                    }) {
                        r.error(line.mark("device"), line.child("device"),
                                "is bess_units[\(i)]'s line; SCADA needs a serial line of its own", got: s.device)
                    }
                } else {
                    r.error(line.mark("host"), line.child("host"), "SCADA's serial line needs device (Modbus RTU); TCP is listen")
                }
            case .none:
                break
            }
        }
        fields.finish(Self.keys)
        var scada = ScadaConfiguration(host: host, port: port, unitID: unitID, allowFrom: allow, writes: writes,
                                       maxHold: hold, idleTimeout: idle, maxClients: clients)
        scada.serial = serial
        scada.serialUnitID = serialUnit
        return scada
    }
}
