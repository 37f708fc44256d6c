import BessBase
import ControlCore
import IEEE2030_5
import TestSupport
import Testing

/// The discovery resources' readers: on documents envoy-schema's models wrote (field by field against
/// the values they were given), and on documents written here for what they refuse.
@Suite("IEEE 2030.5 discovery resources", .serialized)
struct ResourceTests {
    static let sep = "urn:ieee:std:2030.5:ns"

    /// DeviceCapability, Time, EndDeviceList pages, Registration, FunctionSetAssignmentsList and DERList.
    @Test("envoy-schema documents decode: DeviceCapability through DERList")
    func envoyDocuments() throws {
        let fixture = try DiscoveryFixture.load()
        let int = DiscoveryFixture.int
        let capability = try DeviceCapability.read(try fixture.document("A", "/dcap")).resource
        let dcap = fixture.section("dcap")
        #expect(capability.href == dcap["href"] as? String && capability.pollRate.map(Int.init) == int(dcap["pollRate"]))
        #expect(capability.timeLink == dcap["timeLink"] as? String && capability.endDeviceListLink == dcap["endDeviceListLink"] as? String)
        #expect(capability.mirrorUsagePointListLink == dcap["mirrorUsagePointListLink"] as? String)

        let time = try SEP2Time.read(try fixture.document("A", "/tm")).resource
        let givenTime = fixture.section("time")
        #expect(Int(time.currentTime) == int(givenTime["currentTime"]) && Int(time.quality) == int(givenTime["quality"]))
        #expect(Int(time.tzOffset) == int(givenTime["tzOffset"]) && Int(time.dstOffset) == int(givenTime["dstOffset"]))

        let devices = try #require(fixture.given["devices"] as? [[String: Any]])
        var read: [EndDevice] = []
        for (start, results) in [(0, 3), (3, 3), (6, 1)] {
            let page = try EndDeviceList.read(try fixture.document("A", "/edev?s=\(start)&l=3")).resource
            #expect(page.all == 7 && Int(page.results) == results && page.endDevices.count == results)
            #expect(page.pollRate.map(Int.init) == int(fixture.given["edevPollRate"]))
            read += page.endDevices
        }
        #expect(read.map(\.href) == devices.map { $0["href"] as? String })
        #expect(read.map(\.lFDI) == devices.map { $0["lFDI"] as? String })
        #expect(read.map { Int($0.sFDI) } == devices.compactMap { int($0["sFDI"]) })
        let mine = try #require(read.last)
        let given = fixture.section("mine")
        #expect(mine.identifies(lfdi: DiscoveryFixture.lfdi.lowercased(), sfdi: 0) && !read[0].identifies(lfdi: DiscoveryFixture.lfdi, sfdi: DiscoveryFixture.sfdi))
        #expect(mine.registrationLink == given["registrationLink"] as? String && mine.functionSetAssignmentsListLink == given["fsaListLink"] as? String)
        #expect(mine.derListLink == given["derListLink"] as? String && mine.postRate.map(Int.init) == int(given["postRate"]))
        #expect(mine.connectionPointLink == given["connectionPointLink"] as? String)

        let registration = try Registration.read(try fixture.document("A", "/edev/7/rg")).resource
        let givenRegistration = fixture.section("registration")
        #expect(Int(registration.pIN) == int(givenRegistration["pIN"]) && registration.pollRate.map(Int.init) == int(givenRegistration["pollRate"]))
        #expect(registration.dateTimeRegistered.map { Int($0) } == int(givenRegistration["dateTimeRegistered"]))

        let assignments = try FunctionSetAssignmentsList.read(try fixture.document("A", "/edev/7/fsa?s=0&l=3")).resource
        let fsa = fixture.section("fsa")
        #expect(assignments.all == 1 && assignments.results == 1 && assignments.pollRate.map(Int.init) == int(fsa["pollRate"]))
        let assignment = try #require(assignments.assignments.first)
        #expect(assignment.href == fsa["href"] as? String && assignment.mRID == fsa["mRID"] as? String)
        #expect(assignment.derProgramListLink == fsa["derProgramListLink"] as? String && assignment.timeLink == fsa["timeLink"] as? String)

        let ders = try DERList.read(try fixture.document("A", "/edev/7/der?s=0&l=3")).resource
        let der = fixture.section("der")
        #expect(ders.all == 1 && ders.ders.count == 1)
        let first = try #require(ders.ders.first)
        #expect(first.href == der["href"] as? String && first.capabilityLink == der["capabilityLink"] as? String)
        #expect(first.settingsLink == der["settingsLink"] as? String && first.statusLink == der["statusLink"] as? String)
        #expect(first.availabilityLink == der["availabilityLink"] as? String)
    }

    /// A DeviceCapability whose TimeLink has `href`.
    static func capability(timeLink href: String, pollRate: String = "60") -> [UInt8] {
        Array("<DeviceCapability xmlns=\"\(sep)\" href=\"/dcap\" pollRate=\"\(pollRate)\"><TimeLink href=\"\(href)\"/></DeviceCapability>".utf8)
    }

    @Test("an href that is not an absolute path of printable ASCII is SEP2_HREF_INVALID, its text escaped", arguments: [
        "https://elsewhere.example/tm", "//elsewhere.example/tm", "tm", "", "/t m", "/tm#x", "/t\\m", "/t&#10;m", "/t&#xE9;m",
        "/" + String(repeating: "a", count: 255),
    ])
    func hrefRefused(_ href: String) {
        do {
            _ = try DeviceCapability.read(Self.capability(timeLink: href))
            Issue.record("\(href) was read")
        } catch {
            #expect(error.code == .hrefInvalid, "\(error)")
            #expect(error.message.unicodeScalars.allSatisfy { $0.value >= 0x20 && $0.value < 0x7F || $0 == "…" }, "\(error)")
        }
    }

    @Test("the longest href and a query are accepted")
    func hrefAccepted() throws {
        let longest = "/" + String(repeating: "a", count: 254)
        #expect(try DeviceCapability.read(Self.capability(timeLink: longest)).resource.timeLink == longest)
        #expect(try DeviceCapability.read(Self.capability(timeLink: "/tm?x=1&amp;y=2")).resource.timeLink == "/tm?x=1&y=2")
    }

    @Test("numbers outside their bounds are SEP2_VALUE_INVALID; a link without href is SEP2_DOCUMENT_UNEXPECTED", arguments: [
        ("pollRate 0", "<DeviceCapability xmlns=\"\(sep)\" pollRate=\"0\"/>", "SEP2_VALUE_INVALID"),
        ("pollRate beyond a week", "<DeviceCapability xmlns=\"\(sep)\" pollRate=\"604801\"/>", "SEP2_VALUE_INVALID"),
        ("pollRate not a number", "<DeviceCapability xmlns=\"\(sep)\" pollRate=\"1e3\"/>", "SEP2_VALUE_INVALID"),
        ("link without href", "<DeviceCapability xmlns=\"\(sep)\"><TimeLink/></DeviceCapability>", "SEP2_DOCUMENT_UNEXPECTED"),
        ("currentTime negative", "<Time xmlns=\"\(sep)\"><currentTime>-1</currentTime><quality>7</quality></Time>", "SEP2_VALUE_INVALID"),
        ("quality 8", "<Time xmlns=\"\(sep)\"><currentTime>1</currentTime><quality>8</quality></Time>", "SEP2_VALUE_INVALID"),
        ("tzOffset beyond a day", "<Time xmlns=\"\(sep)\"><currentTime>1</currentTime><quality>7</quality><tzOffset>86401</tzOffset></Time>", "SEP2_VALUE_INVALID"),
        ("no currentTime", "<Time xmlns=\"\(sep)\"><quality>7</quality></Time>", "SEP2_DOCUMENT_UNEXPECTED"),
        ("lFDI not hex", "<EndDeviceList xmlns=\"\(sep)\" all=\"1\"><EndDevice><lFDI>XYZ</lFDI><sFDI>1</sFDI></EndDevice></EndDeviceList>", "SEP2_VALUE_INVALID"),
        ("lFDI of 41 digits", "<EndDeviceList xmlns=\"\(sep)\" all=\"1\"><EndDevice><lFDI>\(String(repeating: "A", count: 41))</lFDI><sFDI>1</sFDI></EndDevice></EndDeviceList>", "SEP2_VALUE_INVALID"),
        ("sFDI of 13 digits", "<EndDeviceList xmlns=\"\(sep)\" all=\"1\"><EndDevice><sFDI>1000000000000</sFDI></EndDevice></EndDeviceList>", "SEP2_VALUE_INVALID"),
        ("no sFDI", "<EndDeviceList xmlns=\"\(sep)\" all=\"1\"><EndDevice/></EndDeviceList>", "SEP2_DOCUMENT_UNEXPECTED"),
        ("all negative", "<EndDeviceList xmlns=\"\(sep)\" all=\"-1\"/>", "SEP2_VALUE_INVALID"),
        ("pIN of 7 digits", "<Registration xmlns=\"\(sep)\"><pIN>1000000</pIN></Registration>", "SEP2_VALUE_INVALID"),
        ("FSA without mRID", "<FunctionSetAssignmentsList xmlns=\"\(sep)\" all=\"1\"><FunctionSetAssignments/></FunctionSetAssignmentsList>", "SEP2_DOCUMENT_UNEXPECTED"),
        ("DER link off the server", "<DERList xmlns=\"\(sep)\" all=\"1\"><DER><DERStatusLink href=\"http://x/s\"/></DER></DERList>", "SEP2_HREF_INVALID"),
    ])
    func refusals(_ name: String, _ text: String, _ code: String) {
        do {
            try Self.read(Array(text.utf8))
            Issue.record("\(name) was read")
        } catch {
            #expect(error.code.description == code, "\(name): \(error)")
        }
    }

    /// The document read by the reader its root names.
    static func read(_ bytes: [UInt8]) throws(SEP2Error) {
        switch try XMLDocument.parse(bytes).name.local {
        case "DeviceCapability": _ = try DeviceCapability.read(bytes)
        case "Time": _ = try SEP2Time.read(bytes)
        case "EndDeviceList": _ = try EndDeviceList.read(bytes)
        case "Registration": _ = try Registration.read(bytes)
        case "FunctionSetAssignmentsList": _ = try FunctionSetAssignmentsList.read(bytes)
        default: _ = try DERList.read(bytes)
        }
    }

    @Test("an EndDevice without lFDI is this device by SFDI; another lFDI is not, whatever its SFDI")
    func identification() throws {
        let list = """
            <EndDeviceList xmlns="\(Self.sep)" all="2" results="2"><EndDevice href="/edev/1"><sFDI>\(DiscoveryFixture.sfdi)</sFDI></EndDevice>
            <EndDevice href="/edev/2"><lFDI>\(String(repeating: "0", count: 40))</lFDI><sFDI>\(DiscoveryFixture.sfdi)</sFDI></EndDevice></EndDeviceList>
            """
        let devices = try EndDeviceList.read(Array(list.utf8)).resource.endDevices
        #expect(devices.map { $0.identifies(lfdi: DiscoveryFixture.lfdi, sfdi: DiscoveryFixture.sfdi) } == [true, false])
        #expect(devices.first?.identifies(lfdi: DiscoveryFixture.lfdi, sfdi: 1) == false)
    }
}
