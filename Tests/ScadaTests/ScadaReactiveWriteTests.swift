import BessSystem
import Config
import ControlCore
import Foundation
import GridSupport
@testable import Cycle
@testable import Scada
import Synchronization
import TestSupport
import Testing

/// SCADA's reactive commands over model 704 (issue 59, slice 4): `VarSet…` into
/// `SiteCommands.reactive` (var, + = injecting), `PFWInj…` / `PFWAbs…` into the power factors
/// (signed by excitation), each judged against the site's reactive capability as the published
/// `SiteView` states it, expiring and reverting like `WSet…`.
@Suite("SCADA: var and power-factor writes to model 704")
struct ScadaReactiveWriteTests {
    typealias M = SunSpecTables.M704
    static let site = ScadaWriteTests.site
    static let now = MonotonicInstant(nanoseconds: 5_000_000_000)

    /// 200 kW of ratings (W_SF and VarSet_SF 1) that can inject 100 kvar and absorb 60 kvar: it
    /// holds a power factor down to 200/√(200² + 100²) = 0.894 over-excited and
    /// 200/√(200² + 60²) = 0.958 under-excited.
    static var capable: SiteView {
        var view = SiteView()
        view.ratedPowerW = 200_000
        view.varMaxInjecting = 100_000
        view.varMaxAbsorbing = 60_000
        return view
    }

    static func write(_ point: SunSpecPoint, _ values: [UInt16], commands: SiteCommands = SiteCommands(maxHold: .seconds(60)),
                      view: SiteView? = ScadaReactiveWriteTests.capable,
                      at now: MonotonicInstant = ScadaReactiveWriteTests.now) -> Result<ScadaWrite, ScadaWriteRefusal> {
        ScadaImage(site: site).decodeWrite(address: ScadaWriteTests.address(point), values: values, commands: commands, now: now,
                                           view: view)
    }

    static func exception(_ result: Result<ScadaWrite, ScadaWriteRefusal>) -> UInt8? {
        if case .failure(let refusal) = result { return refusal.exception }
        return nil
    }

    /// An int32's two registers.
    static func int32(_ value: Int32) -> [UInt16] {
        let raw = UInt32(bitPattern: value)
        return [UInt16(raw >> 16), UInt16(raw & 0xFFFF)]
    }

    static func word(_ image: ScadaImage, _ point: SunSpecPoint, _ register: Int = 0) -> UInt16 {
        image.words[image.start(of: 704)! + point.offset + register]
    }

    static func int32(_ image: ScadaImage, _ point: SunSpecPoint) -> Int32 {
        Int32(bitPattern: UInt32(word(image, point)) << 16 | UInt32(word(image, point, 1)))
    }

    @Test("704 lays the var and power-factor points out as the model's JSON does")
    func layout() {
        // Offsets from the ID register, as pysunspec2's model_704.json has them (SunSpecTables is
        // generated from it; this pins the points the writes use).
        let expected: [(SunSpecPoint, Int, Int)] = [
            (M.PFWInjEna, 2, 1), (M.PFWInjEnaRvrt, 3, 1), (M.PFWInjRvrtTms, 4, 2), (M.PFWInjRvrtRem, 6, 2),
            (M.PFWAbsEna, 8, 1), (M.PFWAbsEnaRvrt, 9, 1), (M.PFWAbsRvrtTms, 10, 2), (M.PFWAbsRvrtRem, 12, 2),
            (M.VarSetEna, 35, 1), (M.VarSetMod, 36, 1), (M.VarSetPri, 37, 1), (M.VarSet, 38, 2), (M.VarSetRvrt, 40, 2),
            (M.VarSetEnaRvrt, 44, 1), (M.VarSetRvrtTms, 45, 2), (M.VarSetRvrtRem, 47, 2), (M.PF_SF, 53, 1), (M.VarSet_SF, 57, 1),
            (M.PFWInj_PF, 59, 1), (M.PFWInj_Ext, 60, 1), (M.PFWInjRvrt_PF, 61, 1), (M.PFWInjRvrt_Ext, 62, 1),
            (M.PFWAbs_PF, 63, 1), (M.PFWAbs_Ext, 64, 1), (M.PFWAbsRvrt_PF, 65, 1), (M.PFWAbsRvrt_Ext, 66, 1),
        ]
        for (point, offset, size) in expected {
            #expect(point.offset == offset && point.size == size, "\(point.name)")
        }
        #expect(ScadaImage.writablePoints.contains(M.VarSetPri) && !ScadaImage.writablePoints.contains(M.VarSetRvrtRem))
        #expect(!ScadaImage.writablePoints.contains(M.PFWInjRvrtRem) && !ScadaImage.writablePoints.contains(M.VarSetPct))
    }

    @Test("702 serves the site's reactive capability, VarSet's bound, from the published view at Var_SF")
    func capabilityServed() throws {
        var image = ScadaImage(site: Self.site)
        image.fill(units: [UnitStatus(), UnitStatus()], site: SiteStatus(), view: Self.capable, frequency: 50)
        let m = try #require(image.start(of: SunSpecTables.M702.id))
        func word(_ point: SunSpecPoint) -> UInt16 { image.words[m + point.offset] }
        #expect(Int16(bitPattern: word(SunSpecTables.M702.Var_SF)) == 1)
        #expect(word(SunSpecTables.M702.VarMaxInjRtg) == 10_000 && word(SunSpecTables.M702.VarMaxInj) == 10_000)
        #expect(word(SunSpecTables.M702.VarMaxAbsRtg) == 6_000 && word(SunSpecTables.M702.VarMaxAbs) == 6_000)
    }

    @Test("VarSet within the capability is taken (+ injecting), served back at VarSet_SF; beyond it, 03")
    func varSetpoint() throws {
        let enabled = try Self.write(M.VarSetEna, [1, 4]).get()
        #expect(enabled.written == [.reactive])
        #expect(enabled.changes == [.init(point: "VarSetEna", old: 0, new: 1), .init(point: "VarSetMod", old: 4, new: 4)])
        // VarSet_SF 1: 10,000 × 10 = 100 kvar injecting, the capability; −6,000 = 60 kvar absorbing.
        let injecting = try Self.write(M.VarSet, Self.int32(10_000), commands: enabled.commands).get()
        #expect(injecting.commands.reactive.active(at: Self.now) == 100_000)
        #expect(injecting.commands.reactive.remaining(at: Self.now) == .seconds(60), "VarSetRvrtTms 0: max_hold_s")
        #expect(injecting.changes == [.init(point: "VarSet", old: 0, new: 100_000)])
        let absorbing = try Self.write(M.VarSet, Self.int32(-6_000), commands: enabled.commands).get()
        #expect(absorbing.commands.reactive.active(at: Self.now) == -60_000)
        #expect(absorbing.commands.setpoint == enabled.commands.setpoint && absorbing.commands.limit == enabled.commands.limit)
        // One step beyond either way, the reversion value too: 03, nothing applied.
        #expect(Self.exception(Self.write(M.VarSet, Self.int32(10_001))) == 3)
        #expect(Self.exception(Self.write(M.VarSet, Self.int32(-6_001))) == 3)
        #expect(Self.exception(Self.write(M.VarSetRvrt, Self.int32(-6_001))) == 3)
        #expect(Self.exception(Self.write(M.VarSetEna, [1, 4, 0])) == 3, "VarSetPri is reactive_priority's (REACTIVE served)")
        #expect((try? Self.write(M.VarSetEna, [1, 4, 1]).get()) != nil, "VarSetEna…VarSetPri with the priority served")
        // No capability published (nil view: a site with none): only 0 var.
        #expect(Self.exception(Self.write(M.VarSet, Self.int32(1), view: nil)) == 3)
        #expect((try? Self.write(M.VarSet, Self.int32(0), view: nil).get())?.commands.reactive.value == 0)
        // Served back: VarSetEna 1, VarSetMod 4 (VARS), VarSet 10,000 at VarSet_SF 1, VarSetPri REACTIVE.
        var image = ScadaImage(site: Self.site)
        image.fill(commands: injecting.commands, now: Self.now + .seconds(4))
        #expect(Self.word(image, M.VarSetEna) == 1 && Self.word(image, M.VarSetMod) == 4)
        #expect(Self.int32(image, M.VarSet) == 10_000 && Int16(bitPattern: Self.word(image, M.VarSet_SF)) == 1)
        #expect(Self.word(image, M.VarSetPri) == 1)
        #expect(Self.int32(image, M.VarSetRvrtRem) == 56, "RvrtRem counts down from max_hold_s")
    }

    @Test("VarSet refusals: a mode other than VARS, an enable other than 0/1, not implemented, a time beyond max_hold_s, read-only points")
    func varRefusals() {
        #expect(Self.exception(Self.write(M.VarSetMod, [1])) == 3, "VAR_MAX_PCT is not served")
        #expect(Self.exception(Self.write(M.VarSetMod, [0xFFFF])) == 3)
        #expect(Self.exception(Self.write(M.VarSetEna, [2])) == 3)
        #expect(Self.exception(Self.write(M.VarSetEnaRvrt, [0xFFFF])) == 3)
        #expect(Self.exception(Self.write(M.VarSet, [0x8000, 0])) == 3, "int32 not implemented")
        #expect(Self.exception(Self.write(M.VarSetRvrtTms, [0, 61])) == 3)
        #expect(Self.exception(Self.write(M.VarSet, [0])) == 2, "half of VarSet")
        #expect(Self.exception(Self.write(M.VarSetPri, [0])) == 3)
        #expect(Self.exception(Self.write(M.VarSetPri, [0xFFFF])) == 3)
        #expect(Self.exception(Self.write(M.VarSetRvrtRem, [0, 5])) == 2)
        #expect(Self.exception(Self.write(M.VarSetPct, [50])) == 2)
        #expect(Self.exception(Self.write(M.VarSetPctRvrt, [50])) == 2)
        // A refusal refuses the whole request: the good VarSetEna with a bad VarSetMod.
        #expect(Self.exception(Self.write(M.VarSetEna, [1, 1])) == 3)
    }

    @Test("PFWInj: PF with Ext 0 over-excited (+) or 1 under-excited (−), judged whole against what the site can hold")
    func powerFactorInjecting() throws {
        // 0.9 over-excited (≥ 0.894): taken; PF_SF −3.
        let over = try Self.write(M.PFWInj_PF, [900, 0]).get()
        #expect(over.commands.powerFactorInjecting.value == 0.9 && over.written == [.powerFactorInjecting])
        #expect(over.changes == [.init(point: "PFWInj_PF", old: 1, new: 0.9), .init(point: "PFWInj_Ext", old: 0, new: 0)])
        // 0.96 under-excited (≥ 0.958): −0.96.
        let under = try Self.write(M.PFWInj_PF, [960, 1]).get()
        #expect(under.commands.powerFactorInjecting.value == -0.96)
        // 0.95 under-excited is beyond 60 kvar absorbing at 200 kW; 0.85 over-excited beyond 100 kvar.
        #expect(Self.exception(Self.write(M.PFWInj_PF, [950, 1])) == 3)
        #expect(Self.exception(Self.write(M.PFWInj_PF, [850, 0])) == 3)
        // Ext alone flips the stored value and is judged on the result: +0.9 → −0.9 is refused.
        #expect(Self.exception(Self.write(M.PFWInj_Ext, [1], commands: over.commands)) == 3)
        let flipped = try Self.write(M.PFWInj_Ext, [0], commands: under.commands).get()
        #expect(flipped.commands.powerFactorInjecting.value == 0.96)
        // PF alone keeps the stored excitation.
        let magnitude = try Self.write(M.PFWInj_PF, [970], commands: under.commands).get()
        #expect(magnitude.commands.powerFactorInjecting.value == -0.97)
        // Outside (0, 1], an Ext other than 0/1, not implemented: 03. Unity always holds.
        #expect(Self.exception(Self.write(M.PFWInj_PF, [0, 0])) == 3)
        #expect(Self.exception(Self.write(M.PFWInj_PF, [1_001, 0])) == 3)
        #expect(Self.exception(Self.write(M.PFWInj_PF, [0xFFFF])) == 3)
        #expect(Self.exception(Self.write(M.PFWInj_Ext, [2])) == 3)
        #expect(Self.exception(Self.write(M.PFWInj_PF, [990, 0], view: nil)) == 3, "no capability: only unity")
        #expect((try? Self.write(M.PFWInj_PF, [1_000, 1], view: nil).get())?.commands.powerFactorInjecting.value == -1)
        #expect(Self.exception(Self.write(M.PFWInjRvrtRem, [0, 5])) == 2)
    }

    @Test("PFWInj and PFWAbs each with its enable, reversion and time, served back as PF magnitude and Ext")
    func powerFactorRecords() throws {
        var commands = SiteCommands(maxHold: .seconds(60))
        commands = try Self.write(M.PFWInjEna, [1, 1, 0, 20], commands: commands).get().commands
        commands = try Self.write(M.PFWInj_PF, [950, 0, 1_000, 0], commands: commands).get().commands
        commands = try Self.write(M.PFWAbsEna, [1, 0, 0, 30], commands: commands).get().commands
        let absorbingWrite = try Self.write(M.PFWAbs_PF, [970, 1, 980, 1], commands: commands).get()
        commands = absorbingWrite.commands
        #expect(absorbingWrite.written == [.powerFactorAbsorbing])
        let inj = commands.powerFactorInjecting, absorbing = commands.powerFactorAbsorbing
        #expect(inj.active(at: Self.now) == 0.95 && inj.revertEnabled && inj.revertValue == 1 && inj.timeoutSeconds == 20)
        #expect(absorbing.active(at: Self.now) == -0.97 && !absorbing.revertEnabled && absorbing.revertValue == -0.98)
        #expect(absorbing.remaining(at: Self.now) == .seconds(30))
        #expect(commands.reactive == SiteCommands().reactive, "the var setpoint untouched")
        var image = ScadaImage(site: Self.site)
        image.fill(commands: commands, now: Self.now + .seconds(5))
        #expect(Self.word(image, M.PFWInjEna) == 1 && Self.word(image, M.PFWInjEnaRvrt) == 1)
        #expect(Self.word(image, M.PFWInj_PF) == 950 && Self.word(image, M.PFWInj_Ext) == 0)
        #expect(Self.word(image, M.PFWInjRvrt_PF) == 1_000 && Self.word(image, M.PFWInjRvrt_Ext) == 0)
        #expect(Self.int32(image, M.PFWInjRvrtTms) == 20 && Self.int32(image, M.PFWInjRvrtRem) == 15)
        #expect(Self.word(image, M.PFWAbs_PF) == 970 && Self.word(image, M.PFWAbs_Ext) == 1)
        #expect(Self.word(image, M.PFWAbsRvrt_PF) == 980 && Self.word(image, M.PFWAbsRvrt_Ext) == 1)
        #expect(Self.int32(image, M.PFWAbsRvrtRem) == 25 && Int16(bitPattern: Self.word(image, M.PF_SF)) == -3)
        // Until written: disabled, unity over-excited.
        let fresh = ScadaImage(site: Self.site)
        #expect(Self.word(fresh, M.PFWAbsEna) == 0 && Self.word(fresh, M.PFWAbs_PF) == 1_000 && Self.word(fresh, M.PFWAbs_Ext) == 0)
        #expect(Self.word(fresh, M.VarSetEna) == 0 && Self.int32(fresh, M.VarSet) == 0)
    }

    @Test("past VarSetRvrtTms the cycle reverts the var setpoint to VarSetRvrt, which holds max_hold_s, then ends; PFWInj likewise")
    func expiry() throws {
        // VarSetRvrt −2 kvar enabled, VarSetRvrtTms 10 s, VarSet 50 kvar enabled.
        var commands = SiteCommands(maxHold: .seconds(60))
        commands = try Self.write(M.VarSetRvrt, Self.int32(-200), commands: commands).get().commands
        commands = try Self.write(M.VarSetEnaRvrt, [1, 0, 10], commands: commands).get().commands
        commands = try Self.write(M.VarSetEna, [1, 4], commands: commands).get().commands
        commands = try Self.write(M.VarSet, Self.int32(5_000), commands: commands).get().commands
        commands = try Self.write(M.PFWInjEna, [1, 0, 0, 10], commands: commands).get().commands
        #expect(commands.reactive.active(at: Self.now + .seconds(9)) == 50_000)
        // Past the time, before the cycle settles it: 704 still shows what was written.
        var image = ScadaImage(site: Self.site)
        let late = Self.now + .seconds(11)
        image.fill(commands: commands, now: late)
        #expect(Self.word(image, M.VarSetEna) == 1 && Self.int32(image, M.VarSet) == 5_000 && Self.int32(image, M.VarSetRvrtRem) == 0)
        // The cycle's settling: the reversion in force for max_hold_s.
        let settled = commands.settled(at: late)
        #expect(settled.reactive.active(at: late) == -2_000 && settled.reactive.reverted)
        #expect(settled.powerFactorInjecting.active(at: late) == nil, "PFWInjEnaRvrt 0: it ends")
        image.fill(commands: settled, now: late)
        #expect(Self.word(image, M.VarSetEna) == 1 && Self.int32(image, M.VarSet) == -200 && Self.int32(image, M.VarSetRvrtRem) == 59)
        #expect(Self.word(image, M.PFWInjEna) == 0)
        let ended = settled.settled(at: Self.now + .seconds(70))
        #expect(ended.reactive.active(at: Self.now + .seconds(70)) == nil)
        // A refresh starts the time again from the write.
        let refreshed = try Self.write(M.VarSet, Self.int32(5_000), commands: settled, at: late).get()
        #expect(refreshed.commands.reactive.active(at: late) == 50_000 && refreshed.commands.reactive.remaining(at: late) == .seconds(10))
        #expect(!refreshed.commands.reactive.reverted)
    }

    @Test("a 704 write is SCADA's request on the reactive axis: VarSet alone asks Q only, PFWInj with Ext 1 asks absorbing")
    func reachesTheArbiter() throws {
        var vars = SiteCommands(maxHold: .seconds(60))
        vars = try Self.write(M.VarSetEna, [1, 4], commands: vars).get().commands
        vars = try Self.write(M.VarSet, Self.int32(-4_500), commands: vars).get().commands
        let varRequest = try #require(RequestArbiter.scadaRequest(vars, sitePower: 0))
        #expect(varRequest.activePower == nil, "WSetEna 0: Q only, P is the next party's")
        #expect(varRequest.reactive == ReactiveRequest(.vars(-45_000), expiresAt: Self.now + .seconds(60)))
        var pf = SiteCommands(maxHold: .seconds(60))
        pf = try Self.write(M.PFWInjEna, [1, 0, 0, 30], commands: pf).get().commands
        pf = try Self.write(M.PFWInj_PF, [970, 1], commands: pf).get().commands
        let pfRequest = try #require(RequestArbiter.scadaRequest(pf, sitePower: 0))
        let settings = ConstantPowerFactorSettings(discharging: PowerFactorSetting(0.97, .absorbing), charging: .unity, responseTime: .zero)
        #expect(pfRequest.reactive == ReactiveRequest(.powerFactor(settings), expiresAt: Self.now + .seconds(30)))
    }
}
