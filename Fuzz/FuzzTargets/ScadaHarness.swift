import ControlCore
import Fieldbus
import Scada

/// Write requests (start register, values) against the SCADA server's model 704, in sequence, with
/// time passing. Invariants: a refusal is exception 01, 02 or 03 with a reason; what is accepted stays
/// inside 0–100 % and ±the site's rating, holds at most `max_hold_s`, and the image made from it
/// reads back inside the same bounds.
enum ScadaHarness {
    static let site = ScadaSiteDescription(siteID: "FUZZ", version: "0", mode: "simulation", unitID: 1,
                                           ratingsW: [50_000, 100_000], capacitiesWh: [100_000, 200_000], hasMeter: true)

    static func run(_ input: inout FuzzInput) -> [String] {
        var image = ScadaImage(site: site)
        var commands = SiteCommands(maxHold: .seconds(60))
        var nanoseconds: Int64 = 1_000_000_000
        var violations = Violations()
        let rated = image.ratedPower
        var writes = 0
        while !input.isEmpty, writes < 32 {
            writes += 1
            let address = 40000 + Int(input.u16() % 2048)
            let count = Int(input.u8() % 24) + 1
            var values: [UInt16] = []
            for _ in 0..<count { values.append(input.u16()) }
            nanoseconds += Int64(input.u8()) * 500_000_000
            let now = MonotonicInstant(nanoseconds: nanoseconds)
            switch image.decodeWrite(address: address, values: values, commands: commands, now: now) {
            case .failure(let refusal):
                violations.check([1, 2, 3].contains(refusal.exception) && !refusal.reason.isEmpty,
                                 "write at \(address) refused with exception \(refusal.exception) '\(refusal.reason)'")
            case .success(let write):
                violations.check(!write.changes.isEmpty, "write at \(address) accepted with no change")
                commands = write.commands
            }
            let c = commands.settled(at: now)
            for (name, command) in [("limit", c.limit), ("setpoint", c.setpoint)] {
                let bound = name == "limit" ? 0.0...100.0 : -rated...rated
                violations.check(bound.contains(command.value) && bound.contains(command.revertValue),
                                 "\(name) accepted as \(command.value) (revert \(command.revertValue))")
                violations.check(.seconds(Int64(command.timeoutSeconds)) <= commands.maxHold, "\(name) timeout \(command.timeoutSeconds) s")
                if let expires = command.expiresAt {
                    violations.check(expires.nanoseconds - nanoseconds <= commands.maxHold.nanosecondsClamped + 1,
                                     "\(name) holds until \(expires), beyond max_hold_s")
                }
            }
            image.fill(commands: commands, now: now)
            if !violations.list.isEmpty { break }
        }
        return violations.list
    }

    static func seeds() -> [[UInt8]] {
        let image = ScadaImage(site: site)
        guard let m = image.start(of: 704) else { return [] }
        let base = 40000 + m
        func write(_ offset: Int, _ values: [UInt16]) -> [UInt8] {
            let address = base + offset - 40000
            return [UInt8(address >> 8), UInt8(address & 0xFF), UInt8(values.count - 1)] + bytes(of: values) + [2]
        }
        return [
            write(14, [1]) + write(15, [50]),   // WMaxLimPctEna, WMaxLimPct 50 %
            write(22, [1, 1, 0, 20_000]),       // WSetEna, WSetMod, WSet 20 kW
            write(31, [0, 30]) + write(22, [1]) + write(24, [0xFFFF, 0x8000]),  // WSetRvrtTms 30 s, WSet −32768
        ]
    }
}
