import BessSystem
import ControlCore
import Foundation
import Glibc
@testable import Config
@testable import Cycle
@testable import Scada
import Synchronization
import TestSupport
import Testing

/// SCADA writes (issue 12, part 2): only the grid operator limit and the site setpoint of model
/// 704, inside the interlocks, expiring unless refreshed, every one logged.
@Suite("SCADA: writes to model 704", .serialized)
struct ScadaWriteTests {
    static let site = ScadaSiteDescription(siteID: "SITE_W", version: "0.0.0", mode: "simulation", unitID: 1,
                                           ratingsW: [100_000, 100_000], capacitiesWh: [250_000, 250_000], hasMeter: false)
    typealias M = SunSpecTables.M704

    /// The absolute register of a 704 point.
    static func address(_ point: SunSpecPoint) -> Int {
        ScadaImage.base + ScadaImage(site: site).start(of: 704)! + point.offset
    }

    /// 02 also for half a 32-bit point; the reversion time is RvrtTms, or max_hold_s for 0.
    @Test("a write is applied or refused whole (02 not writable, 03 out of range) and starts its reversion time")
    func decode() throws {
        let image = ScadaImage(site: Self.site)
        let now = MonotonicInstant(nanoseconds: 5_000_000_000)
        let commands = SiteCommands(maxHold: .seconds(60))
        func write(_ point: SunSpecPoint, _ values: [UInt16]) -> Result<ScadaWrite, ScadaWriteRefusal> {
            image.decodeWrite(address: Self.address(point), values: values, commands: commands, now: now)
        }
        func exception(_ result: Result<ScadaWrite, ScadaWriteRefusal>) -> UInt8? {
            if case .failure(let refusal) = result { return refusal.exception }
            return nil
        }
        // WMaxLimPctEna and WMaxLimPct in one request.
        let limit = try write(M.WMaxLimPctEna, [1, 30]).get()
        #expect(limit.commands.limit.active(at: now) == 30 && limit.limitWritten && !limit.setpointWritten)
        #expect(limit.commands.limit.remaining(at: now) == .seconds(60), "RvrtTms 0: max_hold_s")
        #expect(limit.changes == [.init(point: "WMaxLimPctEna", old: 0, new: 1), .init(point: "WMaxLimPct", old: 100, new: 30)])
        let timed = try write(M.WMaxLimPctRvrtTms, [0, 10]).get()
        #expect(timed.commands.limit.remaining(at: now) == .seconds(10))
        // WSet at W_SF (200 kW of ratings → SF 1): 15,000 × 10 = 150 kW.
        let wsf = image.wSF
        let raw = UInt32(bitPattern: Int32(-150_000 / Int(pow(10, Double(wsf)))))
        let setpoint = try write(M.WSetEna, [1, 1, UInt16(raw >> 16), UInt16(raw & 0xFFFF)]).get()
        #expect(setpoint.commands.setpoint.active(at: now) == -150_000)
        // Refusals.
        #expect(exception(write(M.WMaxLimPctRvrtRem, [0, 5])) == 2, "read-only point")
        #expect(exception(write(M.VarSetPri, [0])) == 3, "VarSetPri is reactive_priority's: only the value served")
        #expect(exception(write(M.WSetPct, [50])) == 2, "WSetPct is not served")
        #expect(exception(write(M.WSet, [0])) == 2, "half of WSet")
        #expect(exception(write(M.WMaxLimPctRvrtTms, [0, 10, 0])) == 2, "runs on into WMaxLimPctRvrtRem")
        #expect(exception(write(M.WMaxLimPct, [101])) == 3)
        #expect(exception(write(M.WMaxLimPctEna, [2])) == 3)
        #expect(exception(write(M.WMaxLimPctRvrtTms, [0, 61])) == 3, "beyond max_hold_s")
        #expect(exception(write(M.WSetMod, [0])) == 3, "percent mode is not served")
        let beyond = UInt32(bitPattern: Int32(250_000 / Int(pow(10, Double(wsf)))))
        #expect(exception(write(M.WSet, [UInt16(beyond >> 16), UInt16(beyond & 0xFFFF)])) == 3, "beyond Σ ratings")
        // A refused register in a request refuses it all, the good part too.
        #expect(exception(write(M.WMaxLimPctEna, [1, 30, 100, 0, 0, 10, 0])) == 2)
    }

    /// What the server logged: code and fields.
    final class Said: Sendable {
        let entries = Mutex<[(String, [String: String])]>([])
        func withLock<R>(_ body: ([(String, [String: String])]) -> R) -> R { entries.withLock { body($0) } }
    }

    /// A server with writes on, on a free loopback port, over a SharedState the test owns.
    func server(_ settings: ScadaConfiguration, said: Said) throws -> (ScadaServer, SharedState) {
        let shared = SharedState(units: 2)
        var generation: UInt64 = 0
        _ = shared.commands(generation: &generation)
        _ = shared.commit(SiteCommands(maxHold: settings.maxHold), ifGeneration: generation)
        let server = try ScadaServer(configuration: settings, site: Self.site, shared: shared) { notice in
            let fields = Dictionary(uniqueKeysWithValues: notice.fields.map { ($0.key.rawValue, $0.value) })
            said.entries.withLock { $0.append((notice.code ?? "", fields)) }
        }
        try server.start()
        return (server, shared)
    }

    func pysunspec2(_ port: Int, _ args: [String]) throws -> [String: Any] {
        let run = try Package.tool(["python3", "hil/peers/sunspec_write.py", "127.0.0.1", String(port), "1", "704"] + args)
        #expect(run.status == 0, "\(run.err)")
        return (try? JSONSerialization.jsonObject(with: Data(run.out.utf8)) as? [String: Any]) ?? [:]
    }

    /// pysunspec2 writes WMaxLimPct 30 % with RvrtTms 10 and a WSet, read back with RvrtRem; 150 % answers 03; each write logged with peer, point, old → new and expiry.
    @Test("SunSpec writes reach the cycle and read back; read-only points answer 02, out of range 03; logged")
    func pysunspec2Writes() throws {
        let said = Said()
        let (server, shared) = try server(ScadaConfiguration(host: "127.0.0.1", port: 0, writes: true), said: said)
        defer { server.stop() }
        let answer = try pysunspec2(server.port, ["WMaxLimPctEna=1", "WMaxLimPct=30", "--", "WMaxLimPctRvrtTms=10", "--",
                                                   "WSetEna=1", "WSetMod=1", "WSet=-120000", "--", "WMaxLimPctRvrtRem=5", "--",
                                                   "WMaxLimPct=150", "--", "WMaxLimPct=30", "--", "WMaxLimPct=30"])
        let results = answer["results"] as? [[String: Any]] ?? []
        #expect(results.map { $0["ok"] as? Bool } == [true, true, true, false, false, true, true], "\(results)")
        let errors = results.compactMap { $0["error"] as? String }.joined(separator: " | ")
        #expect(errors.contains("exception: 2") && errors.contains("exception: 3"), "\(errors)")
        let commands = shared.commands
        let now = SystemClock.shared.now()
        #expect(commands.limit.active(at: now) == 30)
        #expect(commands.limit.remaining(at: now) > .seconds(8) && commands.limit.remaining(at: now) <= .seconds(10))
        #expect(commands.setpoint.active(at: now) == -120_000)
        let points = answer["points"] as? [String: Any] ?? [:]
        #expect((points["WMaxLimPct"] as? NSNumber)?.doubleValue == 30)
        #expect((points["WMaxLimPctRvrtTms"] as? NSNumber)?.doubleValue == 10)
        #expect(((points["WMaxLimPctRvrtRem"] as? NSNumber)?.doubleValue).map { $0 > 0 && $0 <= 10 } == true, "\(points)")
        #expect((points["WSet"] as? NSNumber)?.doubleValue == -120_000)
        // Two refreshes of WMaxLimPct with the value it holds: counted, not logged (once a minute).
        #expect(server.writesAccepted.load(ordering: .relaxed) == 5)
        #expect(server.refusedIllegalAddress.load(ordering: .relaxed) == 1 && server.refusedIllegalValue.load(ordering: .relaxed) == 1)
        let log = said.withLock { $0 }
        let pct = log.first { $0.0 == "SCADA_WRITE" && $0.1["BESS_POINT"] == "WMaxLimPct" }
        #expect(pct?.1["BESS_OLD"] == "100" && pct?.1["BESS_NEW"] == "30" && pct?.1["BESS_PEER"]?.hasPrefix("127.0.0.1:") == true)
        #expect(pct?.1["BESS_EXPIRES_S"] == "60", "the first write, before RvrtTms, holds max_hold_s")
        #expect(log.filter { $0.0 == "SCADA_WRITE" && $0.1["BESS_POINT"] == "WMaxLimPct" }.count == 1)
        let tms = log.first { $0.1["BESS_POINT"] == "WMaxLimPctRvrtTms" }
        #expect(tms?.1["BESS_EXPIRES_S"] == "10")
        #expect(log.filter { $0.0 == "SCADA_WRITE_REFUSED" }.map { $0.1["BESS_EXCEPTION"] } == ["2", "3"])
    }

    @Test("writes: false answers every write 01 and changes nothing")
    func writesOff() throws {
        let said = Said()
        let (server, shared) = try server(ScadaConfiguration(host: "127.0.0.1", port: 0), said: said)
        defer { server.stop() }
        let answer = try pysunspec2(server.port, ["WMaxLimPctEna=1", "WMaxLimPct=30"])
        let results = answer["results"] as? [[String: Any]] ?? []
        #expect(results.map { $0["ok"] as? Bool } == [false])
        #expect(shared.commands.limit.active(at: SystemClock.shared.now()) == nil)
        #expect(server.refusedIllegalFunction.load(ordering: .relaxed) == 1)
        #expect(said.withLock { $0.map(\.0) } == ["SCADA_WRITE_REFUSED"])
    }
}
