import BessBase
import ControlCore
import IEEE2030_5
import Testing

/// The writer and the documents the site reports, on their own: escaping, refusals, scaling, signs and the
/// trip-code → alarm table. The same documents against envoy-schema and the XSD: ReportPeerTests.
@Suite("IEEE 2030.5 reports")
struct ReportTests {
    static let lfdi = "3E4F45AB31EDFE5B67E343E5E4562E31984E23E5"

    static func text(_ bytes: [UInt8]) -> String { String(decoding: bytes, as: UTF8.self) }

    /// The first child of `element` named `local`.
    static func child(_ element: XMLElement, _ local: String) -> XMLElement? { element.children.first { $0.name.local == local } }

    @Test("text and attribute values are escaped, names qualified, an empty element closed short")
    func escaping() throws {
        var writer = XMLWriter(root: "R", csipaus: .v1_2, attributes: [(name: "href", value: "a\"b'<c>&\td\ne\rf")])
        writer.element("t", "<&>]]>\r'\"")
        writer.element("u", "", csipaus: true)
        writer.start("empty")
        writer.close()
        let xml = Self.text(try writer.finish())
        #expect(xml == #"<R xmlns="urn:ieee:std:2030.5:ns" xmlns:csipaus="https://csipaus.org/ns" href="a&quot;b&apos;&lt;c&gt;&amp;&#9;d&#10;e&#13;f">"#
            + #"<t>&lt;&amp;&gt;]]&gt;&#13;'"</t><csipaus:u></csipaus:u><empty/></R>"#)
    }

    @Test("hostile mRIDs and hrefs keep the document's structure and come back unchanged through the reader")
    func hostileRoundTrip() throws {
        let subject = "</subject><status>9</status><subject>&amp;\"'\r\n\t Ω"
        let href = "/rsps/1?a=<b>&c=\"d\"'e'\t\n"
        let xml = try ControlResponseReport(endDeviceLFDI: Self.lfdi, status: .started, subject: subject, createdDateTime: 1_760_000_000, href: href).xml()
        let root = try XMLDocument.parse(xml)
        #expect(root.name == XMLName("urn:ieee:std:2030.5:ns", "DERControlResponse"))
        #expect(root.children.map(\.name.local) == ["createdDateTime", "endDeviceLFDI", "status", "subject"])
        #expect(Self.child(root, "status")?.text == "2")
        #expect(Self.child(root, "subject")?.text == subject)
        #expect(root.attributes[XMLName("", "href")] == href)
    }

    @Test("unencodable text, a bad name, a namespace-less CSIP-AUS element and oversize are coded refusals")
    func refusals() throws {
        var control = XMLWriter(root: "R")
        control.element("t", "a\u{1}b")
        #expect { try control.finish() } throws: { error in
            guard let error = error as? SEP2Error, error.code == .valueInvalid else { return false }
            return error.message.contains(#"a\u{1}b"#) && !error.message.unicodeScalars.contains("\u{1}")
        }
        var name = XMLWriter(root: "R")
        name.element("a b", "x")
        #expect { try name.finish() } throws: { ($0 as? SEP2Error)?.code == .valueInvalid }
        var attribute = XMLWriter(root: "R", attributes: [(name: "x=\"1\" y", value: "2")])
        #expect { try attribute.finish() } throws: { ($0 as? SEP2Error)?.code == .valueInvalid }
        var undeclared = XMLWriter(root: "R")
        undeclared.element("doeModesEnabled", "0F", csipaus: true)
        #expect { try undeclared.finish() } throws: { ($0 as? SEP2Error)?.code == .valueInvalid }
        var large = XMLWriter(root: "R", maximumBytes: 100)
        large.element("t", String(repeating: "x", count: 60))
        large.element("t", String(repeating: "x", count: 60))
        #expect { try large.finish() } throws: { ($0 as? SEP2Error)?.code == .xmlOversized }
        var response = ControlResponseReport(endDeviceLFDI: Self.lfdi, status: .received, subject: String(repeating: "A", count: 200), createdDateTime: 0)
        #expect { try response.xml(maximumBytes: 300) } throws: { ($0 as? SEP2Error)?.code == .xmlOversized }
        response.subject = "A1"
        #expect(try response.xml(maximumBytes: 300).count <= 300)
        response.endDeviceLFDI = String(Self.lfdi.dropLast()) + "G"
        #expect { try response.xml() } throws: { ($0 as? SEP2Error)?.code == .valueInvalid }
    }

    @Test("usage point values are checked: a 40-digit LFDI, descriptions of at most 32 bytes")
    func usagePointChecks() throws {
        let reading = MirrorMeterReadingDefinition(mRID: "01", quantity: .activePowerW, description: String(repeating: "x", count: 32))
        var point = MirrorUsagePointReport(mRID: "0A", location: .site, deviceLFDI: Self.lfdi, readings: [reading])
        point.description = String(repeating: "Ω", count: 16)
        #expect(try XMLDocument.parse(try point.xml()).children.count == 7)
        point.description = String(repeating: "Ω", count: 16) + "x"
        #expect { try point.xml() } throws: { ($0 as? SEP2Error)?.code == .valueInvalid }
        point.description = nil
        point.readings[0].description = String(repeating: "x", count: 33)
        #expect { try point.xml() } throws: { ($0 as? SEP2Error)?.code == .valueInvalid }
        point.readings[0].description = nil
        point.deviceLFDI = String(Self.lfdi.prefix(39))
        #expect { try point.xml() } throws: { ($0 as? SEP2Error)?.code == .valueInvalid }
    }

    @Test("hexBinary keeps leading zeros and an even number of digits")
    func hex() {
        #expect(XMLWriter.hex(3, bytes: 2) == "0003")
        #expect(XMLWriter.hex(0x49, bytes: 1) == "49")
        #expect(XMLWriter.hex(0x50_008F, bytes: 4) == "0050008F")
        #expect(XMLWriter.hex(0x1_0000_0000, bytes: 4) == "0100000000")
    }

    /// `name`'s `{multiplier, value}` in `root`.
    static func power(_ root: XMLElement, _ name: String) -> String? {
        guard let element = child(root, name) else { return nil }
        return "\(child(element, "value")?.text ?? "")e\(child(element, "multiplier")?.text ?? "")"
    }

    @Test("powers take the smallest fitting multiplier; a negative rating, NaN or too much is refused")
    func scaling() throws {
        var capability = DERCapabilityReport(modesSupported: [.charge, .discharge], type: .storage, ratedMaxW: 123_456, doeModesSupported: .all)
        capability.ratedMaxChargeW = 32_767
        capability.ratedMaxDischargeW = 32_768
        capability.ratedMaxWh = 65_535
        capability.ratedMaxVA = 655_360
        let root = try XMLDocument.parse(try capability.xml(csipaus: .v1_3))
        #expect(Self.power(root, "rtgMaxW") == "12346e1")
        #expect(Self.power(root, "rtgMaxChargeRateW") == "32767e0")
        #expect(Self.power(root, "rtgMaxDischargeRateW") == "3277e1")
        #expect(Self.power(root, "rtgMaxWh") == "65535e0")
        #expect(Self.power(root, "rtgMaxVA") == "6554e2", "UInt16: 65 536 does not fit at 10^1")
        for bad in [-5.0, .nan, .infinity, 4e13] {
            capability.ratedMaxW = bad
            #expect(throws: SEP2Error.self, "\(bad)") { try capability.xml(csipaus: .v1_3) }
        }
        var availability = DERAvailabilityReport(readingTime: 0)
        availability.availableW = -40_000
        let read = try XMLDocument.parse(try availability.xml())
        #expect(Self.power(read, "statWAvail") == "-4000e1", "statWAvail is signed")
        availability.reserveChargePercent = 100.5
        #expect(throws: SEP2Error.self) { try availability.xml() }
    }

    @Test("CSIP-AUS elements in the version's namespace; v1.3's VPP modes never in a v1.2 document")
    func namespaces() throws {
        var settings = DERSettingsReport(setMaxW: 5000, setGradW: 27, updatedTime: 1_760_000_000)
        settings.doeModesEnabled = [.exportLimit, .loadLimit]
        settings.vppModesEnabled = .storageTarget
        for version in CSIPAUSVersion.allCases {
            let root = try XMLDocument.parse(try settings.xml(csipaus: version))
            let extensions = root.children.filter { $0.name.namespace != "urn:ieee:std:2030.5:ns" }
            #expect(extensions.allSatisfy { $0.name.namespace == version.namespace })
            #expect(extensions.map(\.name.local) == (version == .v1_3 ? ["doeModesEnabled", "vppModesEnabled"] : ["doeModesEnabled"]))
            #expect(Self.child(root, "doeModesEnabled")?.text == "09")
        }
    }

    @Test("responses report each control state with the standard's number")
    func responseStates() {
        let states: [(ControlState, UInt8)] = [(.scheduled, 1), (.active, 2), (.completed, 3), (.cancelled, 6), (.superseded, 7)]
        for (state, number) in states { #expect(ResponseStatus(state).rawValue == number, "\(state)") }
        #expect(ResponseStatus.notApplicable.rawValue == 252 && ResponseStatus.invalidEvent.rawValue == 253 && ResponseStatus.receivedLate.rawValue == 254)
    }

    @Test("the trip-code → alarmStatus table")
    func alarms() throws {
        let expected: [TripCode: DERAlarms] = [
            .chargeOvercurrent: .overCurrent, .dischargeOvercurrent: .overCurrent,
            .cellOvervoltage: .overVoltage, .packOvervoltage: .overVoltage, .cellOvervoltageCritical: [.overVoltage, .emergencyLocal],
            .cellUndervoltage: .underVoltage, .packUndervoltage: .underVoltage, .cellUndervoltageCritical: [.underVoltage, .emergencyLocal],
            .acOvervoltage: .overVoltage, .gridOvervoltage: .overVoltage, .acUndervoltage: .underVoltage, .gridUndervoltage: .underVoltage,
            .gridOverfrequency: .overFrequency, .gridUnderfrequency: .underFrequency,
            .overtemperatureCritical: .emergencyLocal, .thermalRunaway: .emergencyLocal, .bmsCritical: .emergencyLocal,
            .latchStateCorrupt: .emergencyLocal,
        ]
        for code in TripCode.allCases { #expect(DERAlarms.of(code) == expected[code] ?? [], "\(code)") }
        var status = DERStatusReport(readingTime: 1_760_000_000)
        #expect(Self.child(try XMLDocument.parse(try status.xml()), "alarmStatus")?.text == "00000000")
        for code in [TripCode.chargeOvercurrent, .thermalRunaway, .gridUnderfrequency, .socLow] { status.trips.insert(code) }
        #expect(Self.child(try XMLDocument.parse(try status.xml()), "alarmStatus")?.text == "00000091")
    }

    @Test("mirror signs: site + = import, DER + = discharge; V and Hz scaled by their multipliers")
    func mirrorSigns() throws {
        let readings = [
            MirrorReading(mRID: "01", location: .site, quantity: .activePowerW, average: 1500, start: 0, durationSeconds: 60),
            MirrorReading(mRID: "02", location: .site, quantity: .reactivePowerVar, average: -300, start: 0, durationSeconds: 60),
            MirrorReading(mRID: "03", location: .der, quantity: .activePowerW, average: 1500, start: 0, durationSeconds: 60),
            MirrorReading(mRID: "04", location: .der, quantity: .reactivePowerVar, average: -300, start: 0, durationSeconds: 60),
            MirrorReading(mRID: "05", location: .site, quantity: .voltageV, average: 230.44, start: 0, durationSeconds: 60),
            MirrorReading(mRID: "06", location: .site, quantity: .frequencyHz, average: 49.987, start: 0, durationSeconds: 60),
            MirrorReading(mRID: "07", location: .der, quantity: .storedEnergyWh, average: 12_345.4, start: 0, durationSeconds: 60),
        ]
        #expect(try readings.map { try $0.wireValue() } == [-1500, 300, 1500, -300, 2304, 4999, 12_345])
        #expect(throws: SEP2Error.self) { try MirrorReading(mRID: "08", location: .der, quantity: .activePowerW, average: 2e14, start: 0, durationSeconds: 60).wireValue() }
        let root = try XMLDocument.parse(try MirrorReadingsReport(readings: readings).xml())
        #expect(root.attributes[XMLName("", "all")] == "7" && root.attributes[XMLName("", "results")] == "7")
        let values = root.children.compactMap { Self.child($0, "Reading").flatMap { Self.child($0, "value")?.text } }
        #expect(values == ["-1500", "300", "1500", "-300", "2304", "4999", "12345"])
    }

    @Test("mirror mRIDs: 32 hex digits, the LFDI's first 20, location and quantity, ending in the PEN")
    func mirrorIDs() {
        var seen = Set<String>()
        for location in MirrorLocation.allCases {
            for quantity in [nil] + MirrorQuantity.allCases.map(Optional.some) {
                let mRID = MirrorMRID.make(lfdi: Self.lfdi.lowercased(), location: location, quantity: quantity, pen: 40732)
                #expect(mRID.count == 32 && mRID.allSatisfy(\.isHexDigit) && mRID.uppercased() == mRID)
                #expect(mRID.hasPrefix(String(Self.lfdi.prefix(20))) && mRID.hasSuffix("00040732"), "the PEN in 8 decimal digits")
                seen.insert(mRID)
            }
        }
        #expect(seen.count == 2 * (MirrorQuantity.allCases.count + 1))
        #expect(MirrorMRID.make(lfdi: Self.lfdi, location: .der, pen: 0).hasSuffix("020000000000"))
        #expect(MirrorMRID.make(lfdi: Self.lfdi, location: .site, quantity: .voltageV, pen: 123_456_789).hasSuffix("010323456789"))
    }
}
