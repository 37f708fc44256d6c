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
        from envoy_schema.server.schema.sep2.der import DERControlBase, DERControlResponse, FreqDroopType
        from envoy_schema.server.schema.sep2.event import EventStatus
        from envoy_schema.server.schema.sep2.types import DateTimeIntervalType
        for g in json.loads(sys.argv[1]):
            base = DERControlBase(opModFreqDroop=FreqDroopType(**g["droop"]))
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

    @Test("envoy-schema's FreqDroopType read field by field, as Hz, percent and seconds; values outside bessd's ranges are SEP2_VALUE_INVALID")
    func readAndBounded() throws {
        let given: [(String, [String: Any])] = [
            ("A1", Self.droop(36, 36, 50, 50, 500)),  // IEEE 1547-2018's defaults
            ("B2", Self.droop(17, 1000, 20, 200, 0)),  // the edges of the ranges
            ("C3", Self.droop(36, 36, 0, 50, 500)),  // kOF 0: an infinite gain
            ("D4", Self.droop(5000, 36, 50, 50, 500)),  // a 5 Hz dead-band
            ("E5", Self.droop(36, 36, 50, 50, 60000)),  // ten minutes to respond
        ]
        let documents = try Self.documents(given.map { ["mRID": $0.0, "droop": $0.1] })
        try #require(documents.count == given.count, "\(documents)")
        for (document, (mRID, droop)) in zip(documents, given) where ["A1", "B2"].contains(mRID) {
            let read = try DERControl.read(Array(document.utf8)).resource
            let d = try #require(read.base.freqDroop, "\(mRID)")
            #expect(Int(d.deadbandOverMilliHz) == droop["dBOF"] as? Int && Int(d.deadbandUnderMilliHz) == droop["dBUF"] as? Int
                    && Int(d.droopOverThousandths) == droop["kOF"] as? Int && Int(d.droopUnderThousandths) == droop["kUF"] as? Int
                    && Int(d.openLoopHundredthsSecond) == droop["openLoopTms"] as? Int, "\(mRID): \(d)")
            #expect(read.base.sets(.freqDroop))
        }
        var active = ActiveControls()
        active.base.freqDroop = try DERControl.read(Array(documents[0].utf8)).resource.base.freqDroop
        let applied = try #require(active.utilityLimits(siteRatingW: 100_000).droop)
        #expect(applied == UtilityDroop(deadbandOverHz: 0.036, deadbandUnderHz: 0.036, droopOverPercent: 5, droopUnderPercent: 5,
                                        responseTime: .seconds(5)), "\(applied)")
        let settings = applied.applied(to: .seedDefault)
        #expect(abs(settings.deadbandLow.value - 49.964) < 1e-9 && abs(settings.deadbandHigh.value - 50.036) < 1e-9
                && settings.droopOverPercent == 5 && settings.responseTime == .seconds(5) && settings.enabled, "\(settings)")
        for (document, (mRID, _)) in zip(documents, given) where !["A1", "B2"].contains(mRID) {
            do throws(SEP2Error) {
                _ = try DERControl.read(Array(document.utf8))
                Issue.record("\(mRID) was read")
            } catch {
                #expect(error.code == .valueInvalid, "\(mRID): \(error)")
            }
        }
        // An element missing: refused, not half read.
        let missing = documents[0].replacingOccurrences(of: "<kUF>50</kUF>", with: "")
        #expect(throws: SEP2Error.self) { try DERControl.read(Array(missing.utf8)) }
    }
}
