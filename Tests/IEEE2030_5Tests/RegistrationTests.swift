import BessBase
import ControlCore
import Foundation
import IEEE2030_5
import TestSupport
import Testing

/// In-band registration (CSIP-AUS ALL-02, ALL-05), the ConnectionPoint PUT (ALL-03, class C) and
/// service discovery through `/.well-known/csipaus` (SDVN-01), against the chain envoy-schema's models
/// write (DiscoveryFixture: server R lacks this device until it is POSTed, N has no RegistrationLink,
/// the well-known documents as SDVN-01 builds them); the documents bessd sends read by envoy-schema's
/// request models and validated with xmllint against the XSDs of wheels fetched at test time.
@Suite("IEEE 2030.5 registration and service discovery", .serialized)
struct RegistrationTests {
    static let nmi = "NMI4102345678"
    static let inBand = DiscoveryOptions(inBandRegistration: true, connectionPointId: nmi)

    /// Server R with the POST answered 201 at `location` and the PUT 204.
    static func registering(location: String? = "/edev/7", options: DiscoveryOptions = inBand, pin: UInt32? = DiscoveryFixture.pin) throws -> Drive {
        let fixture = try DiscoveryFixture.load()
        var drive = Drive(try #require(fixture.servers["R"]), pin: pin, options: options)
        drive.server.scripted["/edev"] = [Sep2Reply(status: 201, location: location)]
        drive.server.scripted["/edev/7/cp"] = [Sep2Reply(status: 204)]
        return drive
    }

    @Test("in band: a missing device is POSTed, Location read, Registration agreed, ConnectionPoint PUT")
    func inBandWithLocation() throws {
        let fixture = try DiscoveryFixture.load()
        var drive = try Self.registering()
        drive.settle()
        let head = ["/dcap", "/tm", "/edev?s=0&l=3", "/edev?s=3&l=3", "/edev", "/edev/7", "/edev/7/rg", "/edev/7/cp"]
        #expect(drive.server.asked(since: 0) == head + DiscoveryTests.chainA.dropFirst(6), "\(drive.server.asked(since: 0))")
        #expect(drive.errors.isEmpty, "\(drive.errors)")
        #expect(drive.session.complete && drive.session.endDevicePath == "/edev/7" && drive.session.csipaus == .v1_3)
        #expect(drive.session.programs.map(\.mRID) == ["A1", "A2"])
        let writes = drive.server.writes.map(\.request)
        #expect(writes.map(\.method) == [.post, .put] && writes.map(\.purpose) == [.registerEndDevice, .connectionPoint])
        // The POST carries the server's time (read from /tm at the same second), the PUT the v1.3 namespace the server uses.
        let t0 = Int64(try #require(DiscoveryFixture.int(fixture.section("time")["currentTime"])))
        #expect(String(decoding: writes[0].body, as: UTF8.self).contains("<changedTime>\(t0)</changedTime>"))
        #expect(String(decoding: writes[1].body, as: UTF8.self).contains("xmlns:csipaus=\"https://csipaus.org/ns/v1.3\""))
        // The list read again at its 120 s still lacks it: nothing POSTed again, the Location followed.
        drive.run(until: 1_400)
        #expect(drive.server.writes.count == 2 && drive.errors.isEmpty, "\(drive.server.writes.map(\.request.path)) \(drive.errors)")
        #expect(drive.server.log.filter { $0.path == "/edev/7" }.count >= 3)
        // The server lists it now (and keeps the ConnectionPoint PUT): the list gives it, the Location is no
        // longer read, nothing is written again.
        let point = drive.server.documents["/edev/7/cp"]
        drive.server.documents = try #require(fixture.servers["A"])
        drive.server.documents["/edev/7/cp"] = point
        let switched = drive.server.log.count
        drive.run(until: 1_800)
        let listedAt = try #require(drive.server.log[switched...].first { $0.path == "/edev?s=6&l=3" }?.at)
        #expect(!drive.server.log[switched...].contains { $0.path == "/edev/7" && $0.at > listedAt })
        #expect(drive.server.writes.count == 2 && drive.session.complete && drive.session.endDevicePath == "/edev/7")
        #expect(drive.errors.isEmpty, "\(drive.errors)")
    }

    @Test("in band without a Location: list read again; still missing → SEP2_END_DEVICE_UNKNOWN, POST again")
    func inBandWithoutLocation() throws {
        let fixture = try DiscoveryFixture.load()
        var drive = try Self.registering(location: nil)
        while drive.session.peek(now: drive.now)?.method == .get { _ = drive.step() }
        // The server lists the device from the POST on.
        drive.server.documents = try #require(fixture.servers["A"])
        let posted = drive.server.log.count
        drive.settle()
        #expect(Array(drive.server.asked(since: posted).prefix(5)) == ["/edev", "/edev?s=0&l=3", "/edev?s=3&l=3", "/edev?s=6&l=3", "/edev/7/rg"])
        #expect(drive.session.complete && drive.errors.isEmpty && drive.server.writes.count == 2, "\(drive.errors)")

        // A server that answers 201 but never lists it: one error, and the next POST only at the list's next read.
        var unlisted = try Self.registering(location: nil)
        unlisted.server.scripted["/edev"] = [Sep2Reply(status: 201), Sep2Reply(status: 201), Sep2Reply(status: 201)]
        unlisted.run(until: 1_250)
        #expect(unlisted.server.writes.map(\.at) == [1_000, 1_120, 1_240], "\(unlisted.server.writes.map(\.at))")
        #expect(unlisted.errors.map(\.code) == [.endDeviceUnknown, .endDeviceUnknown, .endDeviceUnknown], "\(unlisted.errors)")
        #expect(!unlisted.session.complete && unlisted.session.stopped == nil)
    }

    @Test("EndDevice gone from its Location (404): POSTed again at the next list read, ConnectionPoint again")
    func registeredDeviceGone() throws {
        var drive = try Self.registering()
        drive.settle()
        drive.server.scripted["/edev/7"] = [Sep2Reply(status: 404)]
        drive.server.scripted["/edev"] = [Sep2Reply(status: 201, location: "/edev/7")]
        drive.server.scripted["/edev/7/cp"] = [Sep2Reply(status: 204)]
        drive.run(until: 1_300)
        #expect(drive.server.writes.map { "\($0.request.method.rawValue) \($0.at)" } == ["POST 1000", "PUT 1000", "POST 1240", "PUT 1240"],
                "\(drive.server.writes.map { "\($0.request.method) \($0.request.path) \($0.at)" })")
        #expect(drive.errors.map(\.code) == [.httpStatus] && drive.session.complete, "\(drive.errors)")
    }

    @Test("a Location serving another device's EndDevice: SEP2_END_DEVICE_UNKNOWN once, POSTed again")
    func locationNamesAnotherDevice() throws {
        var drive = try Self.registering()
        drive.settle()
        let mine = try #require(drive.server.documents["/edev/7"])
        let other = mine.replacingOccurrences(of: DiscoveryFixture.lfdi, with: String(repeating: "0", count: 40), options: .caseInsensitive)
            .replacingOccurrences(of: ">\(DiscoveryFixture.sfdi)<", with: ">5<")
        try #require(other != mine && !other.contains(">\(DiscoveryFixture.sfdi)<"))
        drive.server.documents["/edev/7"] = other
        drive.server.documents["/edev/9"] = mine.replacingOccurrences(of: "href=\"/edev/7\"", with: "href=\"/edev/9\"")
        drive.server.scripted["/edev"] = [Sep2Reply(status: 201, location: "/edev/9")]
        drive.server.scripted["/edev/7/cp"] = [Sep2Reply(status: 204)]
        drive.run(until: 1_600)
        #expect(drive.server.writes.map { "\($0.request.method.rawValue) \($0.request.path) \($0.at)" }
                == ["POST /edev 1000", "PUT /edev/7/cp 1000", "POST /edev 1240", "PUT /edev/7/cp 1240"],
                "\(drive.server.writes.map { "\($0.request.method) \($0.request.path) \($0.at)" })")
        #expect(drive.errors.map(\.code) == [.endDeviceUnknown] && drive.session.complete && drive.session.endDevicePath == "/edev/9",
                "\(drive.errors)")
        #expect(!drive.server.log.contains { $0.path == "/edev/7" && $0.at > 1_240 }, "the other device's Location is no longer read")
    }

    /// PUT when the server's id differs, is missing or gone; not when it matches.
    @Test("ALL-03: ConnectionPoint read back with the EndDevice, PUT again only when the server's id differs")
    func connectionPointReadBack() throws {
        var drive = try Self.registering()
        drive.settle()
        // The server keeps what was PUT (FakeServer): read back at the EndDevice's next read, nothing written.
        drive.run(until: 1_130)
        let readBack = drive.server.log.filter { $0.path == "/edev/7/cp" && $0.at > 1_000 }.map(\.at)
        #expect(!readBack.isEmpty && drive.server.writes.count == 2, "\(readBack) \(drive.server.writes.map(\.at))")
        let other = try ConnectionPointReport(connectionPointId: "NMI9999999999").xml(csipaus: .v1_3)
        let lost = Array("<csipaus:ConnectionPoint xmlns:csipaus=\"https://csipaus.org/ns/v1.3\" xmlns=\"urn:ieee:std:2030.5:ns\"/>".utf8)
        for (reply, label, until) in [(Sep2Reply(status: 200, body: other), "another id", Int64(1_250)), (Sep2Reply(status: 200, body: lost), "no id", 1_370),
                                      (Sep2Reply(status: 404), "gone", 1_490)] {
            let before = drive.server.writes.count
            let asked = drive.server.log.count
            drive.server.scripted["/edev/7/cp"] = [reply]
            drive.run(until: until)
            let writes = drive.server.writes.dropFirst(before).map { "\($0.request.method.rawValue) \($0.request.path)" }
            #expect(writes == ["PUT /edev/7/cp"], "\(label): \(writes)")
            #expect(drive.server.log[asked...].contains { $0.path == "/edev/7/cp" }, "\(label)")
        }
        // Back to the configured id, nothing more is written; no error was journalled on the way.
        let settled = drive.server.writes.count
        drive.run(until: 1_850)
        #expect(drive.server.writes.count == settled && drive.errors.isEmpty && drive.session.complete, "\(drive.errors)")
        #expect(try ConnectionPointReport.readID(try ConnectionPointReport(connectionPointId: Self.nmi).xml(csipaus: .v1_2)) == Self.nmi)
        #expect(try ConnectionPointReport.readID(lost) == nil)
        #expect(throws: SEP2Error.self) { try ConnectionPointReport.readID(Array("<EndDevice xmlns=\"urn:ieee:std:2030.5:ns\"/>".utf8)) }
    }

    /// 5xx is SEP2_HTTP_STATUS with the same words each time; the reads go on during the back-off.
    @Test("ALL-03: a 5xx read-back backs off 2 to 64 s until a 200; a 405 stops read-backs, said once")
    func connectionPointReadBackRefused() throws {
        var drive = try Self.registering()
        drive.settle()
        let puts = drive.server.writes.count
        drive.server.scripted["/edev/7/cp"] = [Sep2Reply](repeating: Sep2Reply(status: 500), count: 6)
        drive.run(until: 1_400)
        func gets(after: Int64) -> [Int64] {
            drive.server.log.filter { $0.path == "/edev/7/cp" && $0.at > after }.map(\.at).filter { at in
                !drive.server.writes.contains { $0.at == at && $0.request.path == "/edev/7/cp" }
            }
        }
        let first = try #require(gets(after: 1_000).first)
        #expect(Array(gets(after: 1_000).prefix(7)) == [0, 2, 6, 14, 30, 62, 126].map { first + $0 }, "\(gets(after: 1_000))")
        #expect(drive.errors.count == 6 && drive.errors.allSatisfy { $0.code == .httpStatus }, "\(drive.errors)")
        #expect(Set(drive.errors.map(\.description)).count == 1, "one line, so the worker journals it once: \(drive.errors)")
        #expect(drive.errors.first?.description.contains("HTTP 500 for the ConnectionPoint read back from \"/edev/7/cp\"") == true)
        #expect(drive.server.log.contains { $0.path != "/edev/7/cp" && $0.at > first && $0.at < first + 62 }, "the reads go on meanwhile")
        #expect(drive.session.complete && drive.server.writes.count == puts, "the server's id matched: nothing PUT again")
        // Taken: the next 5xx (at the EndDevice's next read) starts the back-off at 2 s again.
        let taken = drive.now
        drive.server.scripted["/edev/7/cp"] = [Sep2Reply(status: 503)]
        drive.run(until: taken + 200)
        let again = gets(after: taken)
        #expect(again.count >= 2 && again[1] == again[0] + 2, "\(again)")
        // 405: the server offers no read-back; said once, never asked again this session, the PUT stands.
        let errors = drive.errors.count
        drive.server.scripted["/edev/7/cp"] = [Sep2Reply(status: 405)]
        let refusedAt = try #require(again.last)
        drive.run(until: refusedAt + 1_000)
        let afterRefusal = gets(after: refusedAt)
        #expect(afterRefusal.count == 1, "\(afterRefusal)")
        #expect(drive.errors.dropFirst(errors).map(\.description) == ["SEP2_HTTP_STATUS: HTTP 405 for the ConnectionPoint read back from \"/edev/7/cp\": the server does not offer it; not read back again this session, the PUT stands"],
                "\(drive.errors.dropFirst(errors))")
        #expect(drive.server.log.filter { $0.path == "/edev/7" && $0.at > refusedAt + 200 }.count >= 2, "the EndDevice is still read")
        #expect(drive.server.writes.count == puts && drive.session.complete)
        // The server moves the ConnectionPoint: another resource, so the 405 of the old one says nothing
        // of it; PUT there and read back there.
        let endDevice = try #require(drive.server.documents["/edev/7"])
        drive.server.documents["/edev/7"] = endDevice.replacingOccurrences(of: "\"/edev/7/cp\"", with: "\"/edev/7/cq\"")
        drive.server.scripted["/edev/7/cq"] = [Sep2Reply(status: 204)]
        let movedAt = drive.now
        drive.run(until: movedAt + 1_000)
        #expect(drive.server.writes.contains { $0.request.path == "/edev/7/cq" }, "PUT at the new link")
        let movedGets = drive.server.log.filter { $0.path == "/edev/7/cq" && $0.at > movedAt }.map(\.at).filter { at in
            !drive.server.writes.contains { $0.at == at && $0.request.path == "/edev/7/cq" }
        }
        #expect(!movedGets.isEmpty, "read back at the new link: \(drive.server.log.filter { $0.path.hasPrefix("/edev/7/c") })")
    }

    @Test("a refused POST is SEP2_REGISTRATION_REFUSED and sent again after 2, 4, 8 s; then the chain goes on")
    func refusedRegistration() throws {
        var drive = try Self.registering()
        drive.server.scripted["/edev"] = [Sep2Reply(status: 403), Sep2Reply(status: 400), Sep2Reply(status: 409), Sep2Reply(status: 201, location: "/edev/7")]
        drive.run(until: 1_020)
        #expect(drive.server.writes.filter { $0.request.method == .post }.map(\.at) == [1_000, 1_002, 1_006, 1_014])
        #expect(drive.errors.map(\.code) == [.registrationRefused, .registrationRefused, .registrationRefused], "\(drive.errors)")
        #expect(drive.errors.first?.description.contains("HTTP 403 for the EndDevice POSTed to \"/edev\"") == true, "\(drive.errors)")
        #expect(drive.session.complete)
        // A refused PUT likewise, and the schedule is read meanwhile.
        var put = try Self.registering()
        put.server.scripted["/edev/7/cp"] = [Sep2Reply(status: 400), Sep2Reply(status: 204)]
        put.run(until: 1_010)
        #expect(put.server.writes.filter { $0.request.method == .put }.map(\.at) == [1_000, 1_002] && put.session.complete)
        #expect(put.errors.map(\.code) == [.registrationRefused])
    }

    @Test("in band with a wrong PIN: registered, then SEP2_PIN_MISMATCH; nothing more, ever")
    func inBandWrongPIN() throws {
        var drive = try Self.registering(pin: 123_450)
        drive.run(until: 100_000)
        #expect(drive.server.asked(since: 0) == ["/dcap", "/tm", "/edev?s=0&l=3", "/edev?s=3&l=3", "/edev", "/edev/7", "/edev/7/rg"])
        #expect(drive.errors.map(\.code) == [.pinMismatch] && drive.session.stopped?.code == .pinMismatch)
        #expect(drive.session.peek(now: 1_000_000) == nil && drive.session.nextDue == nil)
    }

    @Test("out of band stays: a device the list lacks is SEP2_END_DEVICE_UNKNOWN and nothing is written")
    func outOfBandUnchanged() throws {
        var drive = try Self.registering(options: DiscoveryOptions(connectionPointId: Self.nmi))
        drive.run(until: 2_000)
        #expect(drive.server.writes.isEmpty && !drive.session.complete)
        #expect(!drive.errors.isEmpty && drive.errors.allSatisfy { $0.code == .endDeviceUnknown }, "\(drive.errors)")
    }

    /// FSA, DER.
    @Test("ALL-05: without RegistrationLink discovery goes on with a PIN set; the ConnectionPoint PUT")
    func noRegistrationLink() throws {
        let fixture = try DiscoveryFixture.load()
        var drive = Drive(try #require(fixture.servers["N"]), options: Self.inBand)
        drive.server.scripted["/edev/7/cp"] = [Sep2Reply(status: 201)]
        drive.settle()
        let asked = drive.server.asked(since: 0)
        #expect(!asked.contains("/edev/7/rg") && asked.contains("/edev/7/fsa?s=0&l=3") && asked.contains("/edev/7/der?s=0&l=3"))
        #expect(drive.session.complete && drive.session.registration == nil && drive.errors.isEmpty, "\(drive.errors)")
        #expect(drive.server.writes.map(\.request.path) == ["/edev/7/cp"])
    }

    /// Never /dcap, v99.99's or null's; restored from its documents.
    @Test("SDVN-01: /.well-known/csipaus leads to v1.3's DeviceCapability, never /dcap or the others")
    func wellKnown() throws {
        let fixture = try DiscoveryFixture.load()
        let wellKnown = try #require(fixture.given["wellKnown"] as? [String: String])
        var documents = try #require(fixture.servers["A"])
        documents["/.well-known/csipaus"] = wellKnown["sdvn01"]
        documents["/a1b2c3/dcap"] = documents["/dcap"]
        documents["/x9999/dcap"] = documents["/dcap"]
        documents["/xnull/dcap"] = documents["/dcap"]
        var drive = Drive(documents, entry: "/.well-known/csipaus")
        drive.run(until: 1_400)
        let asked = Set(drive.server.asked(since: 0))
        #expect(drive.server.asked(since: 0).prefix(2) == ["/.well-known/csipaus", "/a1b2c3/dcap"])
        #expect(asked.isDisjoint(with: ["/dcap", "/x9999/dcap", "/xnull/dcap"]), "\(asked)")
        #expect(drive.session.entryPath == "/a1b2c3/dcap" && drive.session.complete && drive.errors.isEmpty, "\(drive.errors)")
        // Rebuilt from its documents (the well-known one among them) from the configured entry path.
        let rebuilt = DiscoverySession(entryPath: "/.well-known/csipaus", lfdi: DiscoveryFixture.lfdi, sfdi: DiscoveryFixture.sfdi,
                                       pin: DiscoveryFixture.pin, pollSeconds: 300, limits: DiscoveryFixture.limits,
                                       restoring: drive.session.documents)
        #expect(rebuilt.programs == drive.session.programs && rebuilt.entryPath == "/a1b2c3/dcap")

        // v1.2 alone is chosen; a document naming no version bessd reads is refused and nothing else asked.
        let v12 = try WellKnownCSIPAUS.read(Array(try #require(wellKnown["v12"]).utf8))
        #expect(v12.version == .v1_2 && v12.deviceCapabilityPath == "/dcap")
        // Both usable: v1.3, wherever it stands in the document.
        let both = try WellKnownCSIPAUS.read(Array(#"{"supportedSchemaVersions": {"https://csipaus.org/ns/v1.2": {"dcap": ["/v12"]}, "https://csipaus.org/ns/v1.3": {"dcap": ["/v13", "/v13b"]}}}"#.utf8))
        #expect(both.version == .v1_3 && both.deviceCapabilityPath == "/v13" && both.named.count == 2)
        documents["/.well-known/csipaus"] = wellKnown["none"]
        var none = Drive(documents, entry: "/.well-known/csipaus")
        none.run(until: 1_700)
        #expect(Set(none.server.asked(since: 0)) == ["/.well-known/csipaus"] && none.server.log.map(\.at) == [1_000, 1_300, 1_600])
        #expect(none.errors.map(\.code) == [.wellKnownInvalid, .wellKnownInvalid, .wellKnownInvalid])
        #expect(none.errors.first?.message.contains("\"https://csipaus.org/ns/v99.99\"") == true, "\(none.errors)")
    }

    @Test("the well-known reader refuses what is not the document, coded, its message printable",
          arguments: [
              "", "[]", "{", "{\"supportedSchemaVersions\": []}", "{\"supportedSchemaVersions\": {}}", "<DeviceCapability/>",
              "{\"supportedSchemaVersions\": {\"https://csipaus.org/ns/v1.3\": {\"dcap\": [\"dcap\", \"//h/dcap\", 7]}}}",
              "{\"supportedSchemaVersions\": {\"https://csipaus.org/ns/v1.3\": {\"dcap\": \"/dcap\"}}}",
          ])
    func wellKnownRefusals(_ text: String) throws {
        #expect(throws: SEP2Error.self) { try WellKnownCSIPAUS.read(Array(text.utf8)) }
        do { _ = try WellKnownCSIPAUS.read(Array(text.utf8)) } catch {
            #expect(error.code == .wellKnownInvalid)
            #expect(error.message.unicodeScalars.allSatisfy { $0.value >= 0x20 && $0.value < 0x7F || $0 == "…" }, "\(error.message)")
        }
        // Escapes, a byte order mark and the bare v1.2 namespace are read.
        let escaped = try WellKnownCSIPAUS.read([0xEF, 0xBB, 0xBF] + Array("{\"supportedSchemaVersions\": {\"https:\\/\\/csipaus.org\\/ns\": {\"dcap\": [\"\\/d\\u0063ap\"]}}, \"n\": [true, false, null, -1.5e3]}".utf8))
        #expect(escaped.version == .v1_2 && escaped.deviceCapabilityPath == "/dcap")
        #expect(!WellKnownCSIPAUS.isJSON(Array("<DeviceCapability/>".utf8)) && WellKnownCSIPAUS.isJSON(Array(" \n{".utf8)))
    }

    @Test("each well-known reader bound refuses an SDVN-01 document past it, by name; at the bound it is read")
    func wellKnownBounds() throws {
        let fixture = try DiscoveryFixture.load()
        let base = Array(try #require((fixture.given["wellKnown"] as? [String: String])?["sdvn01"]).utf8)
        try #require(base.first == UInt8(ascii: "{"))
        /// SDVN-01's document with `member` (and a comma) as its first member, then `after` after it.
        func with(_ member: [UInt8], after: [UInt8] = []) -> [UInt8] { [base[0]] + member + Array(", ".utf8) + base.dropFirst() + after }
        func with(_ member: String, after: String = "") -> [UInt8] { with(Array(member.utf8), after: Array(after.utf8)) }
        let nested = { (depth: Int) in "\"x\": " + String(repeating: "[", count: depth) + String(repeating: "]", count: depth) }
        let string = { (count: Int) in "\"x\": \"" + String(repeating: "a", count: count) + "\"" }
        let zeros = { (count: Int) in "\"x\": [" + Array(repeating: "0", count: count).joined(separator: ",") + "]" }
        let valid = [with("\"x\": 1"), with("\"x\": 1", after: " \n"), with(nested(7)), with(string(1_024)), with(zeros(4_000)),
                     with("\"x\": \"\\ud83d\\ude00 \u{7F}\""), base + Array(repeating: 0x20, count: WellKnownCSIPAUS.maximumBytes - base.count)]
        for bytes in valid {
            let chosen = try WellKnownCSIPAUS.read(bytes)
            #expect(chosen.version == .v1_3 && chosen.deviceCapabilityPath == "/a1b2c3/dcap")
        }
        let hazards: [(bytes: [UInt8], reason: String)] = [
            (with("\"a\": 1, \"a\": 2"), "member \"a\" twice"),
            (with("\"supportedSchemaVersions\": {}"), "member \"supportedSchemaVersions\" twice"),
            (with("\"x\": \"\\ud800\""), "a lone surrogate"),
            (with("\"x\": \"\\udc00\\ud800\""), "a lone surrogate"),
            (with("\"x\": \"\u{01}\""), "a control character in a string"),
            (with(Array("\"x\": \"".utf8) + [0xFF] + Array("\"".utf8)), "a string that is not UTF-8"),
            (with(Array("\"x\": \"".utf8) + [0xED, 0xA0, 0x80] + Array("\"".utf8)), "a string that is not UTF-8"),
            (with("\"x\": 01"), "',' or '}' expected"),
            (with("\"x\": 1."), "a digit expected after '.'"),
            (with("\"x\": 1", after: " {}"), "text after the JSON value"),
            (with(nested(8)), "nested deeper than 8"),
            (with(string(1_025)), "a string longer than 1024 bytes"),
            (with(zeros(5_000)), "more than 4096 values"),
            (base + Array(repeating: 0x20, count: WellKnownCSIPAUS.maximumBytes + 1 - base.count), "65537 bytes (at most 65536)"),
        ]
        for (bytes, reason) in hazards {
            do {
                let chosen = try WellKnownCSIPAUS.read(bytes)
                Issue.record("read as \(chosen), not refused for \(reason)")
            } catch {
                #expect(error.code == .wellKnownInvalid && error.message.contains(reason), "\(error) (expected: \(reason))")
                #expect(error.message.unicodeScalars.allSatisfy { $0.value >= 0x20 && $0.value < 0x7F || $0 == "…" }, "\(error.message)")
            }
        }
    }

    /// 20,000 seeded mutations: each SEP2_WELL_KNOWN_INVALID, or v1.3/v1.2 with an absolute printable path of ≤ 255 bytes that the input names.
    @Test("mutations of SDVN-01's document are refused with a printable message or read as a bounded named path")
    func wellKnownMutations() throws {
        let fixture = try DiscoveryFixture.load()
        let wellKnown = try #require(fixture.given["wellKnown"] as? [String: String])
        let bases = try ["sdvn01", "v12", "none"].map { Array(try #require(wellKnown[$0]).utf8) }
        var state: UInt64 = 0x2030_5000_5DF0_0001
        func next() -> Int {
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return Int(truncatingIfNeeded: state >> 33)
        }
        let alphabet = Array("{}[]\",:\"\\/u0aZ \n\u{7F}".utf8) + [0x00, 0xC3, 0xA9, 0xFF, 0xED, 0xA0, 0x80]
        var read = 0, refused = 0
        for round in 0..<20_000 {
            var bytes = bases[round % bases.count]
            for _ in 0...(next() % 3) {
                let at = next() % (bytes.count + 1)
                switch next() % 16 {
                case 0..<5 where at < bytes.count: bytes[at] = alphabet[next() % alphabet.count]
                case 5..<10: bytes.insert(alphabet[next() % alphabet.count], at: at)
                case 10..<15 where at < bytes.count: bytes.remove(at: at)
                default: bytes = Array(bytes.prefix(at))
                }
            }
            do {
                let chosen = try WellKnownCSIPAUS.read(bytes)
                read += 1
                // The path read is an absolute printable path of at most 255 bytes that the input names (perhaps
                // with "\/" for "/"), under a version the input names.
                let path = Array(chosen.deviceCapabilityPath.utf8)
                let input = String(decoding: bytes, as: UTF8.self)
                #expect(CSIPAUSVersion.allCases.contains(chosen.version) && path.count <= 255 && path.first == UInt8(ascii: "/")
                        && path.allSatisfy { $0 > 0x20 && $0 < 0x7F } && path.dropFirst().first != UInt8(ascii: "/")
                        && input.replacingOccurrences(of: "\\/", with: "/").contains(chosen.deviceCapabilityPath)
                        && chosen.named.contains { input.replacingOccurrences(of: "\\/", with: "/").contains($0) }, "\(chosen)")
            } catch {
                refused += 1
                #expect(error.code == .wellKnownInvalid && error.message.unicodeScalars.allSatisfy { $0.value >= 0x20 && $0.value < 0x7F || $0 == "…" },
                        "\(error)")
            }
        }
        #expect(read > 500 && refused > 5_000, "read \(read), refused \(refused)")
    }

    /// The documents bessd sends: the POST and the PUT the session made (v1.3, the fixture server's
    /// namespace) and the PUT in v1.2's.
    static func sent() throws -> [(name: String, root: String, version: CSIPAUSVersion?, xml: [UInt8])] {
        var drive = try registering()
        drive.settle()
        let writes = drive.server.writes.map(\.request)
        try #require(writes.count == 2)
        return [("enddevice", "EndDevice", nil, writes[0].body), ("connectionpoint-v1.3", "ConnectionPoint", .v1_3, writes[1].body),
                ("connectionpoint-v1.2", "ConnectionPoint", .v1_2, try ConnectionPointReport(connectionPointId: nmi).xml(csipaus: .v1_2))]
    }

    @Test("envoy-schema's EndDeviceRequest and ConnectionPointRequest read what bessd sends, field by field")
    func envoyReadsWrites() throws {
        let fixture = try DiscoveryFixture.load()
        let t0 = try #require(DiscoveryFixture.int(fixture.section("time")["currentTime"]))
        let documents = try Self.sent()
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("sep2-writes-\(UUID().uuidString).json")
        defer { try? FileManager.default.removeItem(at: file) }
        try JSONSerialization.data(withJSONObject: documents.map { ["name": $0.name, "root": $0.root, "xml": String(decoding: $0.xml, as: UTF8.self)] })
            .write(to: file)
        let run = try Package.tool([try Package.sep2Python(), "hil/peers/sep2_discovery.py", "parse", file.path])
        #expect(run.status == 0, "\(run.err.suffix(800))")
        let lines = run.out.split(separator: "\n").compactMap { (try? JSONSerialization.jsonObject(with: Data($0.utf8))) as? [String: Any] }
        try #require(lines.count == 3, "\(run.out)")
        for line in lines { #expect(line["error"] == nil, "\(line)") }
        let device = try #require(lines[0]["fields"] as? [String: Any])
        #expect(device["lFDI"] as? String == DiscoveryFixture.lfdi && (device["sFDI"] as? NSNumber)?.uint64Value == DiscoveryFixture.sfdi)
        #expect(DiscoveryFixture.int(device["changedTime"]) == t0 && device["deviceCategory"] as? String == "02000000")
        let nulls = ["ConfigurationLink", "DERListLink", "DeviceInformationLink", "postRate", "href"]
        #expect(nulls.allSatisfy { device[$0] == nil || device[$0] is NSNull }, "\(device)")
        for line in lines.dropFirst() {
            let point = try #require(line["fields"] as? [String: Any])
            #expect(point["id"] as? String == Self.nmi && (point["id_v11"] == nil || point["id_v11"] is NSNull), "\(point)")
        }
        // Written in a third namespace, envoy-schema does not find the id.
        let v9 = String(decoding: documents[1].xml, as: UTF8.self).replacingOccurrences(of: "/ns/v1.3\"", with: "/ns/v9\"")
        try JSONSerialization.data(withJSONObject: [["name": "v9", "root": "ConnectionPoint", "xml": v9]]).write(to: file)
        let other = try Package.tool([try Package.sep2Python(), "hil/peers/sep2_discovery.py", "parse", file.path])
        #expect(other.out.contains("\"error\""), "\(other.out)")
    }

    /// XSDs from wheels fetched at test time.
    @Test("EndDevice and ConnectionPoint validate with xmllint against the 2030.5 and CSIP-AUS XSDs",
          .enabled(if: SchemaLint.xmllint != nil, "xmllint not found (Debian libxml2-utils): schema validation skipped"))
    func schemaValid() throws {
        #expect(try SchemaLint.validate(try Self.sent().map { ($0.name, $0.version, $0.xml) }) == 4)
        // A connection point id past String32 is refused before anything is sent.
        #expect(throws: SEP2Error.self) { try ConnectionPointReport(connectionPointId: String(repeating: "9", count: 33)).xml(csipaus: .v1_2) }
    }
}
