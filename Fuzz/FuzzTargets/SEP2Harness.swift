import BessBase
import ControlCore
import IEEE2030_5
import GridSupport

/// A document as a 2030.5 server (or anyone answering in its place) sends it: the first input byte
/// picks the resource asked for (DERControl, DERControlList, DefaultDERControl, DERProgram,
/// DERProgramList, DERCurve), the rest is the XML, read by `XMLDocument` and then by the resource's reader.
/// A first byte of 0xC0 or more goes to `SEP2DiscoveryHarness` (the discovery readers and session).
///
/// Invariants: a refusal carries one of the five document codes and a message of printable ASCII
/// only (nothing from the document unescaped); a tree read stays within `XMLLimits` (depth and
/// elements); a resource read has every value inside its type's range (multiplier −9…9,
/// start 0…2^40 s, randomization ±3600 s, opModFixedW ±10000, opModMaxLimW 0…10000, opModFreqDroop in its ranges, status 0–4) and its mRIDs are
/// 1–32 hex digits; reading twice gives the same resource; `EventRules.resolve` on the controls read
/// never traps and always yields a limit (an event's or the default's).
enum SEP2Harness {
    static let codes: [SEP2ErrorCode] = [.xmlMalformed, .xmlOversized, .namespaceUnknown, .documentUnexpected, .valueInvalid]

    static func run(_ input: inout FuzzInput) -> [String] {
        var violations = Violations()
        let pick = input.u8()
        if pick >= SEP2DiscoveryHarness.firstPick { return SEP2DiscoveryHarness.run(pick, &input) }
        let bytes = input.rest()
        let limits = XMLLimits()
        do {
            let root = try XMLDocument.parse(bytes)
            var pending = [(root, 1)], elements = 0
            while let next = pending.popLast() {
                let (element, depth) = next
                elements += 1
                violations.check(depth <= limits.maximumDepth, "an element at depth \(depth)")
                violations.check(element.text.utf8.count <= limits.maximumTextBytes, "\(element.text.utf8.count) bytes of text")
                pending += element.children.map { ($0, depth + 1) }
            }
            violations.check(elements <= limits.maximumElements, "\(elements) elements")
        } catch {
            check(error, &violations)
        }
        do {
            switch pick % 6 {
            case 0:
                let control = try DERControl.read(bytes).resource
                check(control, &violations)
                let again = try DERControl.read(bytes).resource
                violations.check(again == control, "a second read differs")
                resolve([control], seed: UInt64(pick), &violations)
            case 1:
                let list = try DERControlList.read(bytes).resource
                let controls = list.controls
                for control in controls { check(control, &violations) }
                // A control refused alone: 252 or 253, its reason escaped, its mRID (when read) a valid one.
                for refused in list.refused {
                    violations.check(refused.status == .invalidEvent || refused.status == .notApplicable, "refused with \(refused.status)")
                    violations.check(refused.reason.unicodeScalars.allSatisfy { $0.value >= 0x20 && $0.value < 0x7F || $0 == "…" },
                                     "a refusal with unescaped text")
                    if let mRID = refused.mRID { checkMRID(mRID, &violations) }
                }
                // Against the document: every DERControl child of the root is either taken or refused.
                let written = (try? XMLDocument.parse(bytes))?.children
                    .filter { $0.name.local == "DERControl" && $0.name.namespace == SEP2Namespace.sep }.count
                violations.check(written == controls.count + list.refused.count,
                                 "\(String(describing: written)) DERControl elements, \(controls.count) taken and \(list.refused.count) refused")
                resolve(controls, seed: UInt64(pick), &violations)
            case 2:
                let fallback = try DefaultDERControl.read(bytes).resource
                check(fallback.base, &violations)
                checkMRID(fallback.mRID, &violations)
            case 3:
                checkMRID(try DERProgram.read(bytes).resource.mRID, &violations)
            case 4:
                for program in try DERProgramList.read(bytes).resource.programs { checkMRID(program.mRID, &violations) }
            default:
                check(try DERCurve.read(bytes).resource, &violations)
            }
        } catch {
            check(error, &violations)
        }
        return violations.list
    }

    static func check(_ error: SEP2Error, _ violations: inout Violations) {
        violations.check(codes.contains(error.code), "refused with \(error.code)")
        violations.check(error.message.unicodeScalars.allSatisfy { $0.value >= 0x20 && $0.value < 0x7F || $0 == "…" },
                         "a message with unescaped text: \(error.message.unicodeScalars.map { String($0.value, radix: 16) }.prefix(40))")
    }

    static func check(_ control: DERControl, _ violations: inout Violations) {
        checkMRID(control.mRID, &violations)
        violations.check(abs(Int(control.randomizeStart)) <= 3600 && abs(Int(control.randomizeDuration)) <= 3600, "randomization beyond an hour")
        violations.check(DERControl.startRange.contains(control.start), "a start of \(control.start) s")
        check(control.base, &violations)
    }

    /// The event rules over the controls read (one program; a default that sets every limit): no trap
    /// at the edges of time, and every type set by an event or the default, an event's `until` after now.
    static func resolve(_ controls: [DERControl], seed: UInt64, _ violations: inout Violations) {
        var limits = DERControlBase()
        limits.exportLimitW = ActivePower(value: 1, multiplier: 0)
        let programs = [ProgramSchedule(mRID: "F1", primacy: 1, controls: controls, defaultControl: DefaultDERControl(mRID: "D1", base: limits))]
        var times: [Int64] = [.min, 0, .max]
        for control in controls { times += [control.start, control.start &+ Int64(control.duration) &- 1] }
        for randomization in [Randomization.none, Randomization(seed: seed)] {
            for now in times {
                let active = EventRules.resolve(programs, now: now, randomization: randomization)
                violations.check(active.base.exportLimitW != nil, "no export limit at \(now)")
                for source in active.sources.values {
                    if case .event(_, _, let until) = source { violations.check(until > now, "an event in force at \(now) ends at \(until)") }
                }
            }
        }
    }

    static func check(_ base: DERControlBase, _ violations: inout Violations) {
        for power in [base.targetW, base.exportLimitW, base.importLimitW, base.generationLimitW, base.loadLimitW, base.storageTargetW] {
            if let power { violations.check((-9...9).contains(power.multiplier) && power.watts.isFinite, "power \(power)") }
        }
        violations.check(base.fixedWHundredthsPercent.map { abs(Int($0)) <= 10_000 } ?? true, "opModFixedW out of range")
        violations.check(base.maxLimWHundredthsPercent.map { $0 <= 10_000 } ?? true, "opModMaxLimW out of range")
        if let d = base.freqDroop {
            violations.check(FreqDroop.deadbandRange.contains(Int64(d.deadbandOverMilliHz)) && FreqDroop.deadbandRange.contains(Int64(d.deadbandUnderMilliHz))
                             && FreqDroop.droopRange.contains(Int64(d.droopOverThousandths)) && FreqDroop.droopRange.contains(Int64(d.droopUnderThousandths))
                             && FreqDroop.openLoopRange.contains(Int64(d.openLoopHundredthsSecond)), "opModFreqDroop out of range")
        }
        violations.check(base.freqDroop == nil || base.notApplied == nil, "opModFreqDroop both applied and not applied")
    }

    /// A curve read: 1…10 points, multipliers −9…9; as each control, applied only within IEEE 1547-2018's
    /// ranges (its settings validate) or refused with a reason of printable text.
    static func check(_ curve: DERCurve, _ violations: inout Violations) {
        checkMRID(curve.mRID, &violations)
        violations.check((1...DERCurve.maximumPoints).contains(curve.points.count), "a curve of \(curve.points.count) points")
        violations.check((-9...9).contains(curve.xMultiplier) && (-9...9).contains(curve.yMultiplier), "a multiplier outside −9…9")
        for control in DERCurve.Control.allCases {
            switch curve.applied(as: control, varScale: DERCurve.VarScale(injecting: 0.5, absorbing: 1)) {
            case .success(.voltVar(let s)): violations.check((try? s.validate()) != nil, "a volt-var applied outside its ranges")
            case .success(.wattVar(let s)): violations.check((try? s.validate()) != nil, "a watt-var applied outside its ranges")
            case .success(.voltWatt(let s)): violations.check((try? s.validate()) != nil, "a volt-watt applied outside its ranges")
            case .failure(let why):
                violations.check(why.reason.unicodeScalars.allSatisfy { $0.value >= 0x20 && $0.value < 0x7F || $0 == "…" || $0 == "−" },
                                 "a curve refusal with unescaped text")
            }
        }
    }

    static func checkMRID(_ mRID: String, _ violations: inout Violations) {
        violations.check((1...32).contains(mRID.utf8.count) && mRID.utf8.allSatisfy { ($0 >= 0x30 && $0 <= 0x39) || ($0 | 0x20 >= 0x61 && $0 | 0x20 <= 0x66) },
                         "an mRID that is not HexBinary128")
    }

    /// One document of each resource, as envoy-schema writes them (hil/peers/sep2_peer.py documents).
    static func seeds() -> [[UInt8]] {
        let sep = "xmlns=\"urn:ieee:std:2030.5:ns\" xmlns:csipaus=\"https://csipaus.org/ns/v1.3\""
        let base = "<DERControlBase><opModConnect>true</opModConnect><opModFixedW>-2500</opModFixedW>"
            + "<opModFreqDroop><dBOF>36</dBOF><dBUF>36</dBUF><kOF>50</kOF><kUF>50</kUF><openLoopTms>500</openLoopTms></opModFreqDroop><csipaus:opModExpLimW><multiplier>2</multiplier>"
            + "<value>15</value></csipaus:opModExpLimW><csipaus:opModLoadLimW><multiplier>-1</multiplier><value>-25</value></csipaus:opModLoadLimW></DERControlBase>"
        let control = "<mRID>A1B2C3D4</mRID><creationTime>1760000000</creationTime><EventStatus><currentStatus>0</currentStatus><dateTime>1760000000</dateTime>"
            + "<potentiallySuperseded>false</potentiallySuperseded></EventStatus><interval><duration>300</duration><start>1760000300</start></interval>"
            + "<randomizeStart>60</randomizeStart>" + base
        let program = "<mRID>AA01</mRID><DefaultDERControlLink href=\"/derp/0/dderc\"/><primacy>1</primacy>"
        let documents = [
            "<DERControl \(sep) replyTo=\"/rsps/1/rsp\" responseRequired=\"03\">\(control)</DERControl>",
            "<DERControlList \(sep) all=\"2\" results=\"1\"><DERControl>\(control)</DERControl></DERControlList>",
            "<DefaultDERControl \(sep)><mRID>DD01</mRID>\(base)<setGradW>27</setGradW></DefaultDERControl>",
            "<DERProgram \(sep)>\(program)</DERProgram>",
            "<DERProgramList \(sep) all=\"1\" results=\"1\" pollRate=\"60\"><DERProgram>\(program)</DERProgram></DERProgramList>",
        ]
        // A list with a control refused alone for a value outside its type (253), one setting only
        // opModFixedVar (252) and the two below beside a taken one (read as a DERControlList: pick 1).
        func event(_ mRID: String, _ base: String) -> String {
            "<mRID>\(mRID)</mRID><creationTime>1760000000</creationTime><EventStatus><currentStatus>0</currentStatus><dateTime>1760000000</dateTime>"
                + "<potentiallySuperseded>false</potentiallySuperseded></EventStatus><interval><duration>300</duration><start>1760000300</start></interval>"
                + "<DERControlBase>\(base)</DERControlBase>"
        }
        let refusals = "<DERControlList \(sep) all=\"5\" results=\"5\"><DERControl>\(control)</DERControl>"
            + "<DERControl>" + event("B2", "<csipaus:opModExpLimW><multiplier>0</multiplier><value>99999</value></csipaus:opModExpLimW>") + "</DERControl>"
            + "<DERControl replyTo=\"/rsp\" responseRequired=\"02\">" + event("C3", "<opModFixedVar><refType>0</refType><value>5</value></opModFixedVar>")
            + "</DERControl>"
            // A vendor element (253, alone) and a CSIP-AUS limit in 2030.5's namespace (252).
            + "<DERControl>" + event("D4", "<opModConnect>true</opModConnect><x:foo xmlns:x=\"urn:vendor\"/>") + "</DERControl>"
            + "<DERControl>" + event("E5", "<opModExpLimW><multiplier>0</multiplier><value>10</value></opModExpLimW>") + "</DERControl></DERControlList>"
        // DERCurves (pick 5): Category B's volt-var in hundredths, a watt-var, and eleven points (refused).
        func curve(_ type: Int, _ points: [(Int, Int)], _ m: Int) -> [UInt8] {
            [5] + Array(("<DERCurve \(sep)><mRID>DC01</mRID><creationTime>1760000000</creationTime>"
                + points.map { "<CurveData><xvalue>\($0.0)</xvalue><yvalue>\($0.1)</yvalue></CurveData>" }.joined()
                + "<curveType>\(type)</curveType><openLoopTms>500</openLoopTms><vRef>10000</vRef><xMultiplier>\(m)</xMultiplier>"
                + "<yMultiplier>\(m)</yMultiplier><yRefType>2</yRefType></DERCurve>").utf8)
        }
        let curves = [curve(11, [(9200, 4400), (9800, 0), (10200, 0), (10800, -4400)], -2), curve(14, [(20, 0), (50, 0), (100, -44)], 0),
                      curve(14, (0..<11).map { ($0 * 10, 0) }, 0)]
        return documents.enumerated().map { [UInt8($0.offset)] + Array($0.element.utf8) } + [[1] + Array(refusals.utf8)] + curves
            + SEP2DiscoveryHarness.seeds()
    }
}
