import BessBase
import ControlCore
import IEEE2030_5
import TestSupport
import Testing

/// `DiscoverySession` against a scripted server whose documents envoy-schema's models wrote
/// (DiscoveryFixture): the whole chain with paging, the PIN, a change of assignments, 429 and 5xx
/// back-off, poll-rate changes, a redirect from the entry path and a session rebuilt from its documents.
@Suite("IEEE 2030.5 discovery session", .serialized)
struct DiscoveryTests {
    /// The 13 requests that read server A from scratch, in the order the chain leads to them.
    static let chainA = [
        "/dcap", "/tm", "/edev?s=0&l=3", "/edev?s=3&l=3", "/edev?s=6&l=3", "/edev/7/rg",
        "/edev/7/fsa?s=0&l=3", "/edev/7/der?s=0&l=3", "/edev/7/fsa/1/derp?s=0&l=3",
        "/derp/1/derc?s=0&l=3", "/derp/1/dderc", "/derp/2/derc?s=0&l=3", "/derp/2/dderc",
    ]

    /// Server A read to the end at t = 1000.
    static func walkedA() throws -> Drive {
        let fixture = try DiscoveryFixture.load()
        var drive = Drive(try #require(fixture.servers["A"]))
        drive.settle()
        return drive
    }

    /// DeviceCapability → Time → EndDeviceList in 3 pages → Registration → FSA → programs → controls and defaults.
    @Test("the whole discovery chain from DeviceCapability to controls and defaults")
    func wholeChain() throws {
        let fixture = try DiscoveryFixture.load()
        let drive = try Self.walkedA()
        #expect(drive.server.asked(since: 0) == Self.chainA)
        #expect(drive.errors.isEmpty, "\(drive.errors)")
        let session = drive.session
        #expect(session.complete && session.stopped == nil)
        #expect(session.endDevicePath == "/edev/7" && session.endDevice?.postRate == 60)
        #expect(session.deviceCapability?.mirrorUsagePointListLink == "/mup")
        #expect(session.ders.map(\.statusLink) == ["/edev/7/der/1/ders"])
        #expect(session.assignments.map(\.mRID) == ["F1"])
        // Every program with its controls and default, as the fixture built them.
        let programs = try #require(fixture.given["programs"] as? [[String: Any]])
        #expect(session.programs.map(\.mRID) == programs.compactMap { $0["mRID"] as? String })
        for (read, given) in zip(session.programs, programs) {
            #expect(Int(read.primacy) == DiscoveryFixture.int(given["primacy"]))
            let controls = try #require(given["controls"] as? [[String: Any]])
            #expect(read.controls.map(\.mRID) == controls.compactMap { $0["mRID"] as? String })
            #expect(read.controls.map { Int($0.start) } == controls.compactMap { DiscoveryFixture.int($0["start"]) })
            #expect(read.controls.map { $0.base.exportLimitW?.watts } == controls.map { DiscoveryFixture.int($0["exportW"]).map(Double.init) })
            let fallback = try #require(given["default"] as? [String: Any])
            #expect(read.defaultControl?.mRID == fallback["mRID"] as? String)
            #expect(read.defaultControl?.setGradW.map(Int.init) == DiscoveryFixture.int(fallback["setGradW"]))
            #expect(read.defaultControl?.base.exportLimitW?.watts == DiscoveryFixture.int(fallback["exportW"]).map(Double.init))
        }
        // What the rules make of it: before C11 the primacy-1 default, during it the event.
        let t0 = Int64(try #require(DiscoveryFixture.int(fixture.section("time")["currentTime"])))
        #expect(EventRules.resolve(session.programs, now: t0).base.exportLimitW?.watts == 5000)
        #expect(EventRules.resolve(session.programs, now: t0 + 100).base.exportLimitW?.watts == 1500)
        // Every document read is kept under its request path, and nothing else.
        #expect(Set(session.documents.keys) == Set(Self.chainA))
        #expect(session.documents["/edev?s=6&l=3"] == (try fixture.document("A", "/edev?s=6&l=3")))
    }

    @Test("server time counts on from currentTime by the monotonic clock, offset from the given wall clock")
    func serverTime() throws {
        let fixture = try DiscoveryFixture.load()
        let drive = try Self.walkedA()
        let current = Int64(try #require(DiscoveryFixture.int(fixture.section("time")["currentTime"])))
        #expect(drive.session.serverTime(now: .at(1_000)) == current)
        #expect(drive.session.serverTime(now: .at(1_250)) == current + 250)
        #expect(drive.session.serverTimeOffset == current - (1_000 + drive.wallBase))
        let fresh = Drive.session()
        #expect(fresh.serverTime(now: .at(5)) == nil && fresh.serverTimeOffset == nil)
        // Clocks at their ends saturate instead of trapping.
        var extreme = Drive.session(pin: nil)
        let late = MonotonicInstant(nanoseconds: .max - 100_000_000_000)
        for (path, wall) in [("/dcap", Int64(0)), ("/tm", Int64.min)] {
            let asked = extreme.nextRequest(now: late)
            let request = try #require(asked)
            #expect(request.path == path)
            try extreme.handle(Sep2Reply(status: 200, body: try fixture.document("A", path)), to: request, now: late, wallClock: wall)
        }
        #expect(extreme.serverTimeOffset == .max && extreme.serverTime(now: .at(.min)) == current + Int64.min / 1_000_000_000)
    }

    @Test("each resource is read again at its pollRate; a change of the server's rates is followed")
    func pollRates() throws {
        let fixture = try DiscoveryFixture.load()
        var drive = try Self.walkedA()
        drive.run(until: 1_200)
        func times(_ path: String, from: Int64 = 0) -> [Int64] { drive.server.log.filter { $0.path == path && $0.at >= from }.map(\.at) }
        // The controls inherit the DERProgramList's 30 s, Time the DeviceCapability's 60 s, the EndDeviceList has its own 120 s.
        #expect(times("/derp/1/derc?s=0&l=3") == Array(stride(from: 1_000, through: 1_200, by: 30)))
        #expect(times("/edev/7/fsa/1/derp?s=0&l=3") == Array(stride(from: 1_000, through: 1_200, by: 30)))
        #expect(times("/dcap") == [1_000, 1_060, 1_120, 1_180] && times("/tm") == [1_000, 1_060, 1_120, 1_180])
        #expect(times("/edev?s=6&l=3") == [1_000, 1_120] && times("/edev/7/rg") == [1_000])
        drive.server.documents = try #require(fixture.servers["C"])
        drive.run(until: 1_600)
        // From their first read of C on: the program list's 90 s for it and its controls, the DeviceCapability's 45 s.
        let controls = times("/derp/1/derc?s=0&l=3", from: 1_230)
        #expect(zip(controls, controls.dropFirst()).allSatisfy { $1 - $0 == 90 } && controls.count >= 4, "\(controls)")
        let capability = times("/dcap", from: 1_240)
        #expect(zip(capability, capability.dropFirst()).allSatisfy { $1 - $0 == 45 } && capability.count >= 7, "\(capability)")
        #expect(drive.errors.isEmpty, "\(drive.errors)")
    }

    @Test("a wrong PIN stops all traffic: SEP2_PIN_MISMATCH, nothing below Registration, never again")
    func wrongPIN() throws {
        let fixture = try DiscoveryFixture.load()
        var drive = Drive(try #require(fixture.servers["A"]), pin: 123_450)
        drive.run(until: 100_000)
        #expect(drive.server.asked(since: 0) == Array(Self.chainA.prefix(6)))
        #expect(drive.errors.map(\.code) == [.pinMismatch] && drive.session.stopped?.code == .pinMismatch)
        #expect(drive.session.peek(now: 1_000_000) == nil && drive.session.nextDue == nil)
        #expect(drive.session.programs.isEmpty && !drive.session.complete)
        // Without a PIN configured the Registration is read but not checked, and the rest is asked at once.
        var unchecked = Drive(try #require(fixture.servers["A"]), pin: nil)
        unchecked.settle()
        #expect(unchecked.session.complete && unchecked.session.registration?.pIN == 111_115)
    }

    @Test("a changed FunctionSetAssignmentsList drops every program under it: no old href asked or kept")
    func assignmentsChange() throws {
        let fixture = try DiscoveryFixture.load()
        var drive = try Self.walkedA()
        let before = drive.session.programs.map(\.mRID)
        drive.server.documents = try #require(fixture.servers["B"])
        drive.run(until: 1_060)
        let change = try #require(drive.server.log.lastIndex { $0.path == "/edev/7/fsa?s=0&l=3" })
        #expect(drive.server.log[change].at == 1_060)
        let after = drive.server.asked(since: change + 1)
        #expect(!after.contains { $0.hasPrefix("/derp/1") || $0.hasPrefix("/derp/2") || $0.hasPrefix("/edev/7/fsa/1") }, "\(after)")
        #expect(after.contains("/edev/7/fsa/2/derp?s=0&l=3") && after.contains("/derp/3/derc?s=0&l=3"))
        #expect(before == ["A1", "A2"] && drive.session.programs.map(\.mRID) == ["A3"] && drive.session.complete)
        #expect(!drive.session.documents.keys.contains { $0.hasPrefix("/derp/1") || $0.hasPrefix("/derp/2") || $0.hasPrefix("/edev/7/fsa/1") })
        #expect(drive.session.programs.first?.controls.map(\.mRID) == ["CC31"])
    }

    @Test("an assignment changed under the same links has its programs read afresh at once")
    func sameHrefsReadAfresh() throws {
        let fixture = try DiscoveryFixture.load()
        var server = try #require(fixture.servers["A"])
        // The programs are polled every 600 s here, so only the change of assignments can have them read at 1060.
        let programList = "/edev/7/fsa/1/derp?s=0&l=3"
        server[programList] = try #require(server[programList]).replacing("pollRate=\"30\"", with: "pollRate=\"600\"")
        var drive = Drive(server)
        drive.settle()
        let fsa = "/edev/7/fsa?s=0&l=3"
        drive.server.documents[fsa] = try #require(server[fsa]).replacing("<mRID>F1</mRID>", with: "<mRID>F9</mRID>")
        drive.run(until: 1_060)
        let read = drive.server.log.filter { $0.at > 1_000 }
        #expect(read.filter { $0.path == fsa }.map(\.at) == [1_060])
        for path in Self.chainA.suffix(5) { #expect(read.filter { $0.path == path }.map(\.at) == [1_060], "\(path) in \(read)") }
        #expect(drive.session.assignments.map(\.mRID) == ["F9"] && drive.session.complete)
        #expect(drive.errors.isEmpty, "\(drive.errors)")
    }

    @Test("429 and 503 hold requests for Retry-After (1…3600 s); the failed request goes first after")
    func retryAfter() throws {
        let fixture = try DiscoveryFixture.load()
        for (status, retry, wait) in [(429, UInt32?(120), Int64(120)), (503, 99_999, 3_600), (429, 0, 1), (503, nil, 2)] as [(Int, UInt32?, Int64)] {
            var drive = Drive(try #require(fixture.servers["A"]))
            drive.server.scripted["/tm"] = [Sep2Reply(status: status, retryAfterSeconds: retry)]
            drive.settle()
            #expect(drive.server.asked(since: 0) == ["/dcap", "/tm"], "\(status) \(String(describing: retry))")
            #expect(drive.errors.map(\.code) == [.httpStatus])
            #expect(drive.session.nextDue == .at(1_000 + wait) && drive.session.peek(now: 1_000 + wait - 1) == nil)
            #expect(drive.session.peek(now: 1_000 + wait)?.path == "/tm")
            drive.now = 1_000 + wait
            drive.settle()
            #expect(drive.session.complete, "\(status) \(String(describing: retry))")
        }
    }

    @Test("other 5xx and transport failures back off 2, 4, 8 … 300 s, keeping the last good state")
    func backoffDoubles() throws {
        let fixture = try DiscoveryFixture.load()
        var drive = try Self.walkedA()
        let programs = drive.session.programs
        drive.server.scripted["/derp/1/derc?s=0&l=3"] = Array(repeating: Sep2Reply(status: 500), count: 10)
        drive.run(until: 3_000)
        let asked = drive.server.log.filter { $0.path == "/derp/1/derc?s=0&l=3" }.map(\.at)
        let gaps = zip(asked, asked.dropFirst()).map { $1 - $0 }
        #expect(Array(gaps.prefix(11)) == [30, 2, 4, 8, 16, 32, 64, 128, 256, 300, 300], "\(gaps)")
        #expect(drive.session.programs == programs && drive.session.complete)
        // A transport failure (handleFailure) backs off the same way and the request is asked again after.
        var failing = Drive.session()
        var delays: [Int64] = []
        var now: Int64 = 0
        for _ in 0..<10 {
            let asked = failing.nextRequest(now: .at(now))
            #expect(asked?.path == "/dcap")
            failing.handleFailure(now: .at(now))
            let due = try #require(failing.nextDue?.second)
            delays.append(due - now)
            #expect(failing.peek(now: due - 1) == nil)
            now = due
        }
        #expect(delays == [2, 4, 8, 16, 32, 64, 128, 256, 300, 300])
        // A good reply ends the back-off.
        let next = failing.nextRequest(now: .at(now))
        let request = try #require(next)
        try failing.handle(Sep2Reply(status: 200, body: try fixture.document("A", "/dcap")), to: request, now: .at(now))
        #expect(failing.peek(now: now)?.path == "/tm")
    }

    @Test("a session rebuilt from its documents has the same programs at once and reads everything afresh")
    func restore() throws {
        let drive = try Self.walkedA()
        let documents = drive.session.documents
        let restored = DiscoverySession(entryPath: "/dcap", lfdi: DiscoveryFixture.lfdi, sfdi: DiscoveryFixture.sfdi, pin: DiscoveryFixture.pin,
                                        pollSeconds: 300, limits: DiscoveryFixture.limits, restoring: documents)
        #expect(restored.programs == drive.session.programs && restored.complete)
        #expect(restored.documents.keys.sorted() == documents.keys.sorted())
        #expect(restored.serverTime(now: .at(0)) == nil, "a restored session knows no anchor of the server's clock")
        #expect(restored.peek(now: -5)?.path == "/dcap")
        // A stored Registration that disagrees with the configured PIN stops the rebuilt session.
        let wrong = DiscoverySession(entryPath: "/dcap", lfdi: DiscoveryFixture.lfdi, sfdi: DiscoveryFixture.sfdi, pin: 1,
                                     pollSeconds: 300, limits: DiscoveryFixture.limits, restoring: documents)
        #expect(wrong.stopped?.code == .pinMismatch)
        // Documents missing: what is under them stays unread, the rest is there.
        var partial = documents
        partial["/derp/2/derc?s=0&l=3"] = nil
        let gap = DiscoverySession(entryPath: "/dcap", lfdi: DiscoveryFixture.lfdi, sfdi: DiscoveryFixture.sfdi, pin: DiscoveryFixture.pin,
                                   pollSeconds: 300, limits: DiscoveryFixture.limits, restoring: partial)
        #expect(!gap.complete && gap.programs.map(\.mRID) == ["A1", "A2"] && gap.programs.first?.controls.count == 2)
    }

    /// /.well-known/csipaus → the DeviceCapability.
    @Test("the entry path may redirect to the DeviceCapability; a Location that is not a path is refused")
    func redirect() throws {
        let fixture = try DiscoveryFixture.load()
        var drive = Drive(try #require(fixture.servers["A"]), entry: "/.well-known/csipaus")
        drive.server.scripted["/.well-known/csipaus"] = [Sep2Reply(status: 302, location: "/dcap")]
        drive.settle()
        #expect(drive.server.asked(since: 0) == ["/.well-known/csipaus"] + Self.chainA && drive.session.complete)
        #expect(drive.session.entryPath == "/dcap" && drive.session.documents["/.well-known/csipaus"] == nil)
        var refused = Drive(try #require(fixture.servers["A"]), entry: "/.well-known/csipaus")
        refused.server.scripted["/.well-known/csipaus"] = [Sep2Reply(status: 301, location: "https://elsewhere.example/dcap")]
        refused.settle()
        #expect(refused.errors.map(\.code) == [.hrefInvalid] && refused.session.entryPath == "/.well-known/csipaus")
    }

    @Test("lists past bounds are SEP2_LIST_TOO_LONG; a list without this device is SEP2_END_DEVICE_UNKNOWN")
    func bounds() throws {
        let fixture = try DiscoveryFixture.load()
        var limits = DiscoveryLimits()
        limits.pageSize = 3
        limits.maximumListAll = 6
        var long = Drive(try #require(fixture.servers["A"]), limits: limits)
        long.settle()
        #expect(long.errors.map(\.code) == [.listTooLong] && long.session.endDevicePath == nil)
        limits.maximumListAll = 256
        limits.maximumPages = 2
        var pages = Drive(try #require(fixture.servers["A"]), limits: limits)
        pages.settle()
        #expect(pages.errors.map(\.code) == [.listTooLong] && pages.server.asked(since: 0).last == "/edev?s=6&l=3")
        // A page that ends the list short of its `all`.
        var short = Drive(try #require(fixture.servers["A"]))
        short.server.documents["/edev?s=3&l=3"] = "<EndDeviceList xmlns=\"urn:ieee:std:2030.5:ns\" all=\"7\" results=\"0\"/>"
        short.settle()
        #expect(short.errors.map(\.code) == [.listTooLong])
        // The next pass starts again at s=0, at the list's poll rate (the DeviceCapability's 60 s until it has its own).
        #expect(short.session.nextDue == .at(1_060))
        short.now = 1_060
        short.settle()
        #expect(short.server.log.filter { $0.at == 1_060 }.map(\.path).contains("/edev?s=0&l=3"))
        var stranger = Drive(try #require(fixture.servers["A"]))
        stranger.session = DiscoverySession(entryPath: "/dcap", lfdi: String(repeating: "0", count: 40), sfdi: 5, pin: nil, pollSeconds: 300,
                                            limits: DiscoveryFixture.limits)
        stranger.settle()
        #expect(stranger.errors.map(\.code) == [.endDeviceUnknown] && !stranger.session.complete)
        #expect(!stranger.server.asked(since: 0).contains { $0.hasPrefix("/edev/") })
    }

    @Test("a reply to another request is ignored; the one in flight is asked until answered")
    func oneInFlight() throws {
        let fixture = try DiscoveryFixture.load()
        var session = Drive.session()
        let asked = session.nextRequest(now: .at(0))
        let first = try #require(asked)
        let again = session.nextRequest(now: .at(50))
        #expect(again == first)
        try session.handle(Sep2Reply(status: 200, body: try fixture.document("A", "/tm")), to: Sep2Request(path: "/tm", purpose: .time), now: .at(0))
        #expect(session.peek(now: 0) == first && session.time == nil)
    }
}
