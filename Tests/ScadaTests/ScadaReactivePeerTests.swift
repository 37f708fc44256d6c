import BessSystem
import Config
import ControlCore
import Foundation
@testable import Cycle
@testable import Scada
import Synchronization
import TestSupport
import Testing

/// An independent client: pysunspec2 writes 704's var setpoint and power factors in engineering
/// units (applying `VarSet_SF` and `PF_SF` as it read them) and reads them back.
@Suite("SCADA: pysunspec2 writes VarSet and PFWInj/PFWAbs", .serialized)
struct ScadaReactivePeerTests {
    @Test("pysunspec2 writes VarSet, PFWInj and PFWAbs within the site's capability and reads them back; beyond it 03, a VarSetPri other than served 03")
    func pysunspec2() throws {
        // Two 100 kW units, each able to inject 50 kvar and absorb 30 kvar, as the cycle publishes them.
        let shared = SharedState(units: 2, view: SiteView.Settings(capacitiesWh: [250_000, 250_000], ratingsW: [100_000, 100_000]))
        var generation: UInt64 = 0
        _ = shared.commands(generation: &generation)
        _ = shared.commit(SiteCommands(maxHold: .seconds(60)), ifGeneration: generation)
        shared.contents.withLock { c in
            c.outbox.publishStatus { units, _ in
                for i in units.indices {
                    units[i].varMaxInjecting = 50_000
                    units[i].varMaxAbsorbing = 30_000
                }
            }
        }
        #expect(shared.view.varMaxInjecting == 100_000 && shared.view.varMaxAbsorbing == 60_000)
        let said = ScadaWriteTests.Said()
        let server = try ScadaServer(configuration: ScadaConfiguration(host: "127.0.0.1", port: 0, writes: true),
                                     site: ScadaReactiveWriteTests.site, shared: shared) { notice in
            let fields = Dictionary(uniqueKeysWithValues: notice.fields.map { ($0.key.rawValue, $0.value) })
            said.entries.withLock { $0.append((notice.code ?? "", fields)) }
        }
        try server.start()
        defer { server.stop() }
        let run = try Package.tool(["python3", "hil/peers/sunspec_write.py", "127.0.0.1", String(server.port), "1", "704",
                                    "VarSetEna=1", "VarSetMod=4", "VarSet=-45000", "--", "VarSetRvrtTms=20", "--",
                                    "PFWInjEna=1", "PFWInj.PF=0.92", "PFWInj.Ext=0", "--",
                                    "PFWAbsEna=1", "PFWAbs.PF=0.97", "PFWAbs.Ext=1", "--",
                                    "VarSet=150000", "--", "PFWInj.PF=0.85", "--", "VarSetPri=0", "--", "VarSetMod=1"])
        #expect(run.status == 0, "\(run.err)")
        let answer = (try? JSONSerialization.jsonObject(with: Data(run.out.utf8)) as? [String: Any]) ?? [:]
        let results = answer["results"] as? [[String: Any]] ?? []
        #expect(results.map { $0["ok"] as? Bool } == [true, true, true, true, false, false, false, false], "\(results)")
        let errors = results.compactMap { $0["error"] as? String }
        #expect(errors.count == 4 && errors.allSatisfy { $0.contains("exception: 3") }, "\(errors)")
        // What the cycle takes: −45 kvar (absorbing), 0.92 over-excited discharging, 0.97 under-excited charging.
        let now = SystemClock.shared.now()
        let commands = shared.commands
        #expect(commands.reactive.active(at: now) == -45_000)
        #expect(commands.reactive.remaining(at: now) > .zero && commands.reactive.remaining(at: now) <= .seconds(20), "VarSetRvrtTms 20")
        #expect(commands.powerFactorInjecting.active(at: now) == 0.92)
        #expect(commands.powerFactorAbsorbing.active(at: now) == -0.97)
        // What pysunspec2 reads back, scaled as it read the scale factors.
        let points = answer["points"] as? [String: Any] ?? [:]
        func n(_ name: String) -> Double? { (points[name] as? NSNumber)?.doubleValue }
        #expect(n("VarSet") == -45_000 && n("VarSetEna") == 1 && n("VarSetMod") == 4 && n("VarSetPri") == 1, "\(points)")
        #expect(n("VarSetRvrtTms") == 20 && n("VarSetRvrtRem").map { $0 > 0 && $0 <= 20 } == true, "\(points)")
        #expect(n("PFWInj.PF").map { abs($0 - 0.92) < 1e-9 } == true && n("PFWInj.Ext") == 0, "\(points)")
        #expect(n("PFWAbs.PF").map { abs($0 - 0.97) < 1e-9 } == true && n("PFWAbs.Ext") == 1, "\(points)")
        #expect(n("PFWInjEna") == 1 && n("PFWInjRvrtRem").map { $0 > 0 && $0 <= 60 } == true, "\(points)")
        #expect(server.refusedIllegalValue.load(ordering: .relaxed) == 4 && server.refusedIllegalAddress.load(ordering: .relaxed) == 0)
        // Each accepted point logged with its old and new value as the model states it.
        let log = said.withLock { $0 }
        let varSet = log.first { $0.0 == "SCADA_WRITE" && $0.1["BESS_POINT"] == "VarSet" }
        #expect(varSet?.1["BESS_OLD"] == "0" && varSet?.1["BESS_NEW"] == "-45000", "\(log)")
        let pf = log.first { $0.0 == "SCADA_WRITE" && $0.1["BESS_POINT"] == "PFWAbs_Ext" }
        #expect(pf?.1["BESS_OLD"] == "0" && pf?.1["BESS_NEW"] == "1", "\(log)")
    }
}
