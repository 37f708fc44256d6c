import BessBase
import ControlCore
import Foundation
import IEEE2030_5
import TestSupport
import Testing

/// `opModFreqDroop` read from DERControls envoy-schema's models write (its `FreqDroopType`), and what
/// the site applies of it.
@Suite("opModFreqDroop against envoy-schema", .serialized)
struct FreqDroopTests {
    /// envoy-schema 2.7.0 writes one DERControl per entry of `given` (mRID, the five elements).
    static let writer = """
        import json, sys
        from envoy_schema.server.schema.sep2.der import ActivePower, DERControlBase, DERControlResponse, FreqDroopType
        from envoy_schema.server.schema.sep2.event import EventStatus
        from envoy_schema.server.schema.sep2.types import DateTimeIntervalType
        for g in json.loads(sys.argv[1]):
            base = DERControlBase(opModFreqDroop=FreqDroopType(**g["droop"]))
            if "exp" in g:
                base.opModExpLimW = ActivePower(value=g["exp"], multiplier=0)
            control = DERControlResponse(href="/derp/1/derc/" + g["mRID"], mRID=g["mRID"], creationTime=1760000000,
                EventStatus_=EventStatus(currentStatus=0, dateTime=1760000000, potentiallySuperseded=False),
                interval=DateTimeIntervalType(start=1760000100, duration=600), DERControlBase_=base)
            print(json.dumps(control.to_xml(skip_empty=True).decode()))
        """

    /// The documents envoy-schema writes for `given`, in order.
    static func documents(_ given: [[String: Any]]) throws -> [String] {
        let json = String(decoding: try JSONSerialization.data(withJSONObject: given), as: UTF8.self)
        let run = try Package.tool([try Package.sep2Python(), "-c", writer, json])
        #expect(run.status == 0, "envoy-schema: \(run.err.suffix(800))")
        return run.out.split(separator: "\n").compactMap { (try? JSONSerialization.jsonObject(with: Data($0.utf8), options: .fragmentsAllowed)) as? String }
    }

    static func droop(_ dBOF: Int, _ dBUF: Int, _ kOF: Int, _ kUF: Int, _ openLoopTms: Int) -> [String: Any] {
        ["dBOF": dBOF, "dBUF": dBUF, "kOF": kOF, "kUF": kUF, "openLoopTms": openLoopTms]
    }

    /// As Hz, percent and seconds (envoy-schema's types); the rest is taken.
    @Test("FreqDroopType read field by field; in-type values bessd cannot apply are not applied")
    func readAndBounded() throws {
        let given: [(String, [String: Any])] = [
            ("A1", Self.droop(36, 36, 50, 50, 500)),  // IEEE 1547-2018's defaults
            ("B2", Self.droop(0, 1000, 10, 200, 0)),  // the edges of the ranges
            ("B3", Self.droop(1000, 0, 200, 10, 6000)),  // the other edges
            ("C3", Self.droop(36, 36, 0, 50, 500)),  // kOF 0: an infinite gain
            ("D4", Self.droop(1001, 36, 50, 50, 500)),  // dead-band past 1 Hz
            ("D5", Self.droop(36, 36, 9, 50, 500)),  // kOF under 1 %
            ("D6", Self.droop(36, 36, 50, 201, 500)),  // kUF over 20 %
            ("E5", Self.droop(36, 36, 50, 50, 6001)),  // more than a minute to respond
        ]
        let applies = ["A1", "B2", "B3"]
        let documents = try Self.documents(given.map { ["mRID": $0.0, "droop": $0.1] })
        try #require(documents.count == given.count, "\(documents)")
        for (document, (mRID, droop)) in zip(documents, given) {
            let read = try DERControl.read(Array(document.utf8)).resource
            guard applies.contains(mRID) else {
                #expect(read.base.freqDroop == nil && !read.base.sets(.freqDroop), "\(mRID) applied")
                let why = try #require(read.base.notApplied, "\(mRID)")
                #expect(why.hasPrefix("opModFreqDroop not applied: "), "\(why)")
                continue
            }
            let d = try #require(read.base.freqDroop, "\(mRID)")
            #expect(Int(d.deadbandOverMilliHz) == droop["dBOF"] as? Int && Int(d.deadbandUnderMilliHz) == droop["dBUF"] as? Int
                    && Int(d.droopOverThousandths) == droop["kOF"] as? Int && Int(d.droopUnderThousandths) == droop["kUF"] as? Int
                    && Int(d.openLoopHundredthsSecond) == droop["openLoopTms"] as? Int, "\(mRID): \(d)")
            #expect(read.base.sets(.freqDroop) && read.base.notApplied == nil)
        }
        var active = ActiveControls()
        active.base.freqDroop = try DERControl.read(Array(documents[0].utf8)).resource.base.freqDroop
        let applied = try #require(active.utilityLimits(siteRatingW: 100_000).droop)
        #expect(applied == UtilityDroop(deadbandOverHz: 0.036, deadbandUnderHz: 0.036, droopOverPercent: 5, droopUnderPercent: 5,
                                        responseTime: .seconds(5)), "\(applied)")
        let settings = applied.applied(to: .seedDefault)
        #expect(abs(settings.deadbandLow.value - 49.964) < 1e-9 && abs(settings.deadbandHigh.value - 50.036) < 1e-9
                && settings.droopOverPercent == 5 && settings.responseTime == .seconds(5) && settings.enabled, "\(settings)")
        // Outside the type (kOF is UInt16, dBOF UInt32): SEP2_VALUE_INVALID, the control refused.
        for (from, to) in [("<kOF>50</kOF>", "<kOF>65536</kOF>"), ("<dBOF>36</dBOF>", "<dBOF>4294967296</dBOF>"), ("<kUF>50</kUF>", "<kUF>-1</kUF>")] {
            let bad = documents[0].replacingOccurrences(of: from, with: to)
            #expect(bad != documents[0])
            do throws(SEP2Error) {
                _ = try DERControl.read(Array(bad.utf8))
                Issue.record("\(to) was read")
            } catch {
                #expect(error.code == .valueInvalid, "\(to): \(error)")
            }
        }
        // An element missing: refused, not half read.
        let missing = documents[0].replacingOccurrences(of: "<kUF>50</kUF>", with: "")
        #expect(throws: SEP2Error.self) { try DERControl.read(Array(missing.utf8)) }
    }

    /// The droop has kOF 250.
    @Test("export limit 0 with an unapplicable opModFreqDroop: the limit in force, no droop, said")
    func limitTakenDroopNotApplied() throws {
        let documents = try Self.documents([["mRID": "F1", "droop": Self.droop(36, 36, 250, 50, 500), "exp": 0]])
        let document = try #require(documents.first)
        let control = try DERControl.read(Array(document.utf8)).resource
        #expect(control.base.exportLimitW?.watts == 0 && control.base.freqDroop == nil, "\(control.base)")
        #expect(control.base.notApplied?.contains("kOF 250") == true, "\(String(describing: control.base.notApplied))")
        let list = "<DERControlList xmlns=\"urn:ieee:std:2030.5:ns\" all=\"1\" results=\"1\">"
            + document.replacingOccurrences(of: " xmlns=\"urn:ieee:std:2030.5:ns\"", with: "") + "</DERControlList>"
        let read = try DERControlList.read(Array(list.utf8)).resource
        #expect(read.controls.count == 1 && read.refused.isEmpty, "taken, not refused: \(read.refused)")
        var active = ActiveControls()
        active.base = control.base
        let limits = active.utilityLimits(siteRatingW: 100_000)
        #expect(limits.exportLimitW == 0 && limits.droop == nil, "\(limits)")
        // A control that sets only a droop bessd does not apply: 252 not applicable, with the reason.
        let only = try Self.documents([["mRID": "F2", "droop": Self.droop(36, 36, 250, 50, 500)]])
        let onlyList = "<DERControlList xmlns=\"urn:ieee:std:2030.5:ns\" all=\"1\" results=\"1\">"
            + (only.first ?? "").replacingOccurrences(of: " xmlns=\"urn:ieee:std:2030.5:ns\"", with: "") + "</DERControlList>"
        let refused = try DERControlList.read(Array(onlyList.utf8)).resource
        #expect(refused.controls.isEmpty && refused.refused.first?.status == .notApplicable, "\(refused)")
        #expect(refused.refused.first?.reason.contains("opModFreqDroop not applied") == true, "\(refused.refused)")
        // The same in a DefaultDERControl: its other controls taken, the droop not.
        let base = document.range(of: "<DERControlBase>").map { document[$0.lowerBound...] }.flatMap { rest in
            rest.range(of: "</DERControlBase>").map { String(rest[..<$0.upperBound]) } } ?? ""
        let fallback = "<DefaultDERControl xmlns=\"urn:ieee:std:2030.5:ns\" xmlns:csipaus=\"https://csipaus.org/ns/v1.3\"><mRID>AB</mRID>"
            + base + "</DefaultDERControl>"
        let d = try DefaultDERControl.read(Array(fallback.utf8)).resource
        #expect(d.base.exportLimitW?.watts == 0 && d.base.freqDroop == nil && d.base.notApplied != nil, "\(d.base)")
    }
}
