import BessBase
import ControlCore
import Foundation
import IEEE2030_5
import TestSupport
import Testing

/// The utility's reactive controls (`opModFixedPFInjectW`, `opModFixedPFAbsorbW`, `opModFixedVar`,
/// `opModTargetVar`) read from a DERControlList envoy-schema's models write (hil/peers/sep2_peer.py
/// `reactive`), and what the site applies of them.
@Suite("IEEE 2030.5 reactive controls against envoy-schema", .serialized)
struct ReactiveControlTests {
    @Test("envoy-schema's reactive controls are taken; a power factor of 0 alone is 252, a refType 4 fixed var not applied")
    func envoyReactiveList() throws {
        let document = try #require(try SEP2PeerTests.peer(["reactive"]).first)
        let given = try #require(document["given"] as? [String: Any])
        let read = try DERControlList.read(Array(try #require(document["xml"] as? String).utf8)).resource
        #expect(read.controls.map(\.mRID) == given["taken"] as? [String])
        let refused = try #require(given["refused"] as? [[Any]])
        #expect(read.refused.map { $0.mRID ?? "" } == refused.compactMap { $0.first as? String })
        #expect(read.refused.map { Int($0.status.rawValue) } == refused.compactMap { SEP2PeerTests.int($0.last) })
        #expect(read.refused.first?.reason.contains("opModFixedPFInjectW not applied") == true, "\(read.refused)")

        let pf = try #require(given["E1"] as? [String: [Any]])
        func excitation(_ values: [Any]?) -> PowerFactorWithExcitation? {
            guard let values, values.count == 3, let d = SEP2PeerTests.int(values[0]), let m = SEP2PeerTests.int(values[2]),
                  let absorbing = values[1] as? Bool else { return nil }
            return PowerFactorWithExcitation(displacement: UInt16(d), absorbing: absorbing, multiplier: Int8(m))
        }
        let e1 = try #require(read.controls.first { $0.mRID == "E1" })
        #expect(e1.base.fixedPFInject == excitation(pf["inject"]) && e1.base.fixedPFInject != nil)
        #expect(e1.base.fixedPFAbsorb == excitation(pf["absorb"]) && e1.base.fixedPFAbsorb != nil)
        #expect(e1.base.notApplied == nil)
        let fixed = try #require(given["E2"] as? [Any])
        let e2 = try #require(read.controls.first { $0.mRID == "E2" })
        #expect(e2.base.fixedVar.map { Int($0.refType) } == SEP2PeerTests.int(fixed[0]))
        #expect(e2.base.fixedVar.map { Int($0.hundredthsPercent) } == SEP2PeerTests.int(fixed[1]))
        let target = try #require(given["E3"] as? [Any])
        let e3 = try #require(read.controls.first { $0.mRID == "E3" })
        #expect(e3.base.targetVar.map { Int($0.value) } == SEP2PeerTests.int(target[0]))
        #expect(e3.base.targetVar.map { Int($0.multiplier) } == SEP2PeerTests.int(target[1]))
        let e5 = try #require(read.controls.first { $0.mRID == "E5" })
        #expect(e5.base.fixedVar == nil && e5.base.exportLimitW == ActivePower(value: 5, multiplier: 3))
        #expect(e5.base.notApplied?.contains("opModFixedVar not applied: refType 4") == true, "\(e5.base.notApplied ?? "nil")")
    }

    @Test("a reactive value outside its type is 253 (SEP2_VALUE_INVALID), the sibling taken")
    func outsideItsType() throws {
        func control(_ id: String, _ base: String) -> String {
            """
            <DERControl><mRID>\(id)</mRID><creationTime>1</creationTime><EventStatus><currentStatus>0</currentStatus>\
            <dateTime>1</dateTime><potentiallySuperseded>false</potentiallySuperseded></EventStatus>\
            <interval><duration>60</duration><start>100</start></interval><DERControlBase>\(base)</DERControlBase></DERControl>
            """
        }
        let xml = "<DERControlList xmlns=\"urn:ieee:std:2030.5:ns\" all=\"4\" results=\"4\">"
            + control("A1", "<opModFixedVar><refType>2</refType><value>10001</value></opModFixedVar>")
            + control("A2", "<opModTargetVar><value>40000</value><multiplier>0</multiplier></opModTargetVar>")
            + control("A3", "<opModFixedPFInjectW><displacement>95</displacement><multiplier>-2</multiplier></opModFixedPFInjectW>")
            + control("A4", "<opModTargetVar><value>-300</value><multiplier>1</multiplier></opModTargetVar>")
            + "</DERControlList>"
        let read = try DERControlList.read(Array(xml.utf8)).resource
        #expect(read.controls.map(\.mRID) == ["A4"])
        #expect(read.refused.map { $0.mRID ?? "" } == ["A1", "A2", "A3"])
        #expect(read.refused.allSatisfy { $0.status == .invalidEvent }, "\(read.refused)")
        #expect(read.controls.first?.base.targetVar?.vars == -3000)
    }

    @Test("the reactive controls as the site applies them: PF signed by excitation, fixed var by refType, target var")
    func conversion() {
        var controls = ActiveControls()
        controls.base.fixedPFInject = PowerFactorWithExcitation(displacement: 95, absorbing: false, multiplier: -2)
        controls.base.fixedPFAbsorb = PowerFactorWithExcitation(displacement: 900, absorbing: true, multiplier: -3)
        controls.base.targetVar = ReactivePower(value: 15, multiplier: 2)
        controls.base.fixedVar = FixedVar(refType: 2, hundredthsPercent: -2500)
        var limits = controls.utilityLimits(siteRatingW: 200_000, varInjecting: 80_000, varAbsorbing: 60_000)
        #expect(limits.powerFactorInjecting == 0.95 && limits.powerFactorAbsorbing.map { abs($0 + 0.9) < 1e-12 } == true)
        #expect(limits.targetVar == 1500)
        #expect(limits.fixedVar == -15_000, "setMaxVarNeg for a negative value")
        controls.base.fixedVar = FixedVar(refType: 2, hundredthsPercent: 5000)
        #expect(controls.utilityLimits(siteRatingW: 200_000, varInjecting: 80_000, varAbsorbing: 60_000).fixedVar == 40_000)
        controls.base.fixedVar = FixedVar(refType: 3, hundredthsPercent: 1000)
        #expect(controls.utilityLimits(siteRatingW: 200_000, varInjecting: 80_000, varAbsorbing: 60_000).fixedVar == 8_000)
        controls.base.fixedVar = FixedVar(refType: 1, hundredthsPercent: 1000)
        #expect(controls.utilityLimits(siteRatingW: 200_000).fixedVar == 20_000, "setMaxW: the site's rating")
        controls.base.fixedVar = FixedVar(refType: 2, hundredthsPercent: 1000)
        limits = controls.utilityLimits(siteRatingW: 200_000)
        #expect(limits.fixedVar == nil, "no unit with var points: no setMaxVar, nothing asked")
        #expect(PowerFactorWithExcitation(displacement: 1001, absorbing: false, multiplier: -3).signed == nil)
        #expect(PowerFactorWithExcitation(displacement: 1, absorbing: true, multiplier: 0).signed == -1)
    }

    @Test("a control setting only a power factor of 1.2 is answered 252 with why; with a limit beside it, taken")
    func powerFactorOutsideRange() throws {
        let pf = "<opModFixedPFAbsorbW><displacement>12</displacement><excitation>true</excitation><multiplier>-1</multiplier></opModFixedPFAbsorbW>"
        func list(_ base: String) -> String {
            "<DERControlList xmlns=\"urn:ieee:std:2030.5:ns\" all=\"1\" results=\"1\"><DERControl><mRID>B1</mRID><creationTime>1</creationTime>"
                + "<EventStatus><currentStatus>0</currentStatus><dateTime>1</dateTime><potentiallySuperseded>false</potentiallySuperseded></EventStatus>"
                + "<interval><duration>60</duration><start>100</start></interval><DERControlBase>\(base)</DERControlBase></DERControl></DERControlList>"
        }
        let alone = try DERControlList.read(Array(list(pf).utf8)).resource
        #expect(alone.controls.isEmpty && alone.refused.first?.status == .notApplicable)
        #expect(alone.refused.first?.reason.contains("opModFixedPFAbsorbW not applied: power factor 1.2") == true, "\(alone.refused)")
        let beside = try DERControlList.read(Array(list(pf + "<opModMaxLimW>5000</opModMaxLimW>").utf8)).resource
        #expect(beside.controls.first?.base.fixedPFAbsorb == nil && beside.controls.first?.base.maxLimWHundredthsPercent == 5000)
        #expect(beside.controls.first?.base.notApplied?.contains("opModFixedPFAbsorbW") == true)
    }
}

extension ReactiveControlTests {
    @Test("a reactive control's rampTms is no part of the active ramp; the event rules take each reactive type on its own")
    func reactiveRampNotCounted() {
        var targetVar = DERControlBase()
        targetVar.targetVar = ReactivePower(value: 10, multiplier: 3)
        targetVar.rampTimeHundredthsSecond = 100
        var fixedW = DERControlBase()
        fixedW.fixedWHundredthsPercent = 5000
        fixedW.rampTimeHundredthsSecond = 3000
        let controls = [DERControl(mRID: "0A", creationTime: 1, status: EventStatus(current: .scheduled, dateTime: 1), start: 100, duration: 60, base: targetVar),
                        DERControl(mRID: "0B", creationTime: 1, status: EventStatus(current: .scheduled, dateTime: 1), start: 100, duration: 60, base: fixedW)]
        let active = EventRules.resolve([ProgramSchedule(mRID: "P", primacy: 1, controls: controls)], now: 120)
        #expect(active.base.targetVar == ReactivePower(value: 10, multiplier: 3) && active.base.fixedWHundredthsPercent == 5000)
        #expect(active.base.rampTimeHundredthsSecond == 3000, "the target var's 1 s ramp is not P's")
        #expect(active.sources[.targetVar] == .event(program: "P", control: "0A", until: 160))
    }

    @Test("volt-var, watt-var and volt-watt are read as their curves' hrefs; another curve is said not applied, alone 252")
    func curveControlsNotApplied() throws {
        func list(_ base: String) -> String {
            "<DERControlList xmlns=\"urn:ieee:std:2030.5:ns\" all=\"1\" results=\"1\"><DERControl><mRID>C1</mRID><creationTime>1</creationTime>"
                + "<EventStatus><currentStatus>0</currentStatus><dateTime>1</dateTime><potentiallySuperseded>false</potentiallySuperseded></EventStatus>"
                + "<interval><duration>60</duration><start>100</start></interval><DERControlBase>\(base)</DERControlBase></DERControl></DERControlList>"
        }
        let curves = "<opModVoltVar href=\"/dc/1\"/><opModVoltWatt href=\"/dc/2\"/><opModWattVar href=\"/dc/3\"/>"
        let taken = try DERControlList.read(Array(list(curves).utf8)).resource
        let base = try #require(taken.controls.first?.base, "\(taken)")
        #expect(base.voltVarCurve == "/dc/1" && base.voltWattCurve == "/dc/2" && base.wattVarCurve == "/dc/3" && base.notApplied == nil)
        #expect(base.sets(.voltVar) && base.sets(.wattVar) && base.sets(.voltWatt) && base.curveHrefs.count == 3)
        let beside = try DERControlList.read(Array(list("<opModFreqWatt href=\"/dc/4\"/><opModMaxLimW>5000</opModMaxLimW>").utf8)).resource
        let why = try #require(beside.controls.first?.base.notApplied, "\(beside)")
        #expect(beside.controls.first?.base.maxLimWHundredthsPercent == 5000)
        #expect(why == "opModFreqWatt not applied: bessd does not carry out 2030.5's curve controls", "\(why)")
        let alone = try DERControlList.read(Array(list("<opModWattPF href=\"/dc/5\"/>").utf8)).resource
        #expect(alone.controls.isEmpty && alone.refused.first?.status == .notApplicable, "\(alone)")
        #expect(alone.refused.first?.reason.contains("sets only controls bessd does not carry out") == true, "\(alone.refused)")
        // A curve link that is not an absolute path refuses the control (253), as any link.
        let bad = try DERControlList.read(Array(list("<opModVoltVar href=\"http://x/dc/1\"/>").utf8)).resource
        #expect(bad.controls.isEmpty && bad.refused.first?.code == "SEP2_HREF_INVALID", "\(bad.refused)")
        let plain = try DERControlList.read(Array(list("<opModMaxLimW>5000</opModMaxLimW>").utf8)).resource
        #expect(plain.controls.first?.base.notApplied == nil)
    }
}
