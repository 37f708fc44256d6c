import ControlCore
import Cycle
import Foundation
import IEEE2030_5
@testable import Sep2Link
import Synchronization
import TestSupport
import Testing

/// The configured droop inside the worker: a control that sets only `opModFreqDroop` while it is
/// disabled is journalled once, and a reload (`Sep2Worker.useFrequencyDroop`) moves both what
/// DERCapability/DERSettings claim (bit 8) and how such a control is answered.
@Suite("2030.5 worker and the configured droop")
struct Sep2DroopWorkerTests {
    static let t0 = Sep2Fixture.t0

    /// A DERControl asking for every response: only `opModFreqDroop`, or with an export limit beside it.
    static func control(_ mRID: String, start: Int64, limit: Bool = false) -> String {
        #"<DERControl replyTo="/rsps/1/rsp" responseRequired="03"><mRID>\#(mRID)</mRID><description>c</description>"#
            + "<creationTime>\(t0 - 1000)</creationTime><EventStatus><currentStatus>0</currentStatus><dateTime>\(t0 - 1000)</dateTime>"
            + "<potentiallySuperseded>false</potentiallySuperseded></EventStatus><interval><duration>60</duration><start>\(start)</start></interval>"
            + "<DERControlBase>" + (limit ? Sep2Fixture.exportLimit(3000) : "")
            + "<opModFreqDroop><dBOF>36</dBOF><dBUF>36</dBUF><kOF>50</kOF><kUF>50</kUF><openLoopTms>500</openLoopTms></opModFreqDroop>"
            + "</DERControlBase></DERControl>"
    }

    static func list(_ controls: [String]) -> String {
        #"<DERControlList \#(Sep2Fixture.ns) href="/derp/1/derc" all="\#(controls.count)" results="\#(controls.count)">"#
            + controls.joined() + "</DERControlList>"
    }

    /// The reporting chain (Sep2ReporterWorkerTests) with the DER's capability and settings links and `controls`.
    /// `listPoll`: the program list's `pollRate` (its control list follows it).
    static func server(_ controls: [String], serverTime: Int64 = t0, listPoll: Int = 30) -> FakeSep2Server {
        var chain = Sep2ReporterWorkerTests.documents()
        chain["/tm"] = Sep2Fixture.time(serverTime)
        chain["/derp"] = chain["/derp"]?.replacingOccurrences(of: #"pollRate="30""#, with: #"pollRate="\#(listPoll)""#)
        chain["/edev/1/der"] = #"<DERList \#(Sep2Fixture.ns) href="/edev/1/der" all="1" results="1"><DER href="/edev/1/der/1">"#
            + #"<DERCapabilityLink href="/edev/1/der/1/dercap"/><DERSettingsLink href="/edev/1/der/1/derg"/><DERStatusLink href="/edev/1/der/1/ders"/></DER></DERList>"#
        chain["/edev/1/der/1/dercap"] = ""
        chain["/edev/1/der/1/derg"] = ""
        chain["/derp/1/derc"] = list(controls)
        return FakeSep2Server(chain)
    }

    /// The text of `element` in each body PUT to `path`, in order.
    static func sent(_ server: FakeSep2Server, _ path: String, _ element: String) -> [String] {
        server.posted.withLock { $0 }.filter { $0.path == path }.compactMap { (try? XMLDocument.parse($0.body)).flatMap { Sep2ReporterTests.text($0, element) } }
    }

    /// SEP2_CONTROL_REFUSED, quoted; enabled, nothing is said.
    @Test("droop disabled: a droop-only control is refused 252 and journalled once; one with a limit is not")
    func droopOnlyJournalled() throws {
        for enabled in [false, true] {
            let server = Self.server([Self.control("F1", start: Self.t0 + 100), Self.control("F2", start: Self.t0 + 200, limit: true)])
            let rig = Sep2WorkerTests.Rig(server: server)
            let fixed = Sep2SiteSample()
            rig.client.reporting = Sep2Reporting(reporter: Sep2Reporter(settings: Sep2ReporterDroopTests.settings(droop: enabled)), sample: { fixed })
            rig.settle()
            for _ in 0..<10 {
                rig.advance(31)  // past F1's window and into F2's, the list read again each time
                rig.settle()
            }
            let lines = rig.log.codes("SEP2_CONTROL_REFUSED")
            let responses = Sep2ReporterWorkerTests.responses(server)
            let droopTaken = rig.log.codes("SEP2_CONTROL_TAKEN").filter { $0.contains("opModFreqDroop") }
            guard !enabled else {
                #expect(lines.isEmpty, "\(lines)")
                #expect(responses.contains("2 F1") && !responses.contains("252 F1"), "\(responses)")
                #expect(!droopTaken.isEmpty, "enabled, the droop in force is said taken: \(rig.log.all)")
                continue
            }
            #expect(droopTaken.isEmpty, "disabled, no droop is said taken (the cycle applies none): \(droopTaken)")
            #expect(lines.count == 1, "\(lines)")
            #expect(lines.first?.hasPrefix("SEP2_CONTROL_REFUSED: control \"F1\" of program \"B1\" sets only opModFreqDroop and the configured droop is disabled") == true
                    && lines.first?.contains("test:443") == true && lines.first?.contains("answered 252") == true, "\(lines)")
            #expect(responses.filter { $0.hasSuffix(" F1") } == ["252 F1"], "answered 252 once, never started: \(responses)")
            #expect(responses.contains("2 F2"), "the one with a limit runs: \(responses)")
        }
    }

    /// Bit 8 set, then cleared; a droop-only control learned while enabled is answered received.
    @Test("a reload of droop_settings.enabled reaches the worker: DERCapability and DERSettings PUT again")
    func reloadMovesTheDroop() throws {
        let now = Int64(Date().timeIntervalSince1970)
        let server = Self.server([Self.control("F1", start: now + 3600)], serverTime: now, listPoll: 1)
        let log = LogLines()
        let worker = Sep2Worker(settings: Sep2WorkerSettings(entryPath: "/dcap", pin: 111_115, pollSeconds: 30, siteRatingW: 10_000,
                                                             timeout: .seconds(2), serverName: "test:443"),
                                identity: Sep2Fixture.identity, transport: server, slot: UtilityLimitSlot(), store: nil, log: log.sink)
        let fixed = Sep2SiteSample()
        worker.report(Sep2Reporter(settings: Sep2ReporterDroopTests.settings(droop: false)), sample: { fixed })
        #expect(worker.frequencyDroopEnabled == nil, "the reporter's own setting until one is given")
        worker.useFrequencyDroop(false)
        #expect(worker.frequencyDroopEnabled == false)
        worker.start()
        defer { worker.stop() }
        let capability = "/edev/1/der/1/dercap"
        #expect(waitFor(seconds: 10) { Self.sent(server, capability, "modesSupported").last == "0050008F" }, "\(log.all)")
        #expect(waitFor(seconds: 5) { Sep2ReporterWorkerTests.responses(server) == ["252 F1"] }, "\(Sep2ReporterWorkerTests.responses(server))")
        #expect(log.codes("SEP2_CONTROL_REFUSED").count == 1, "\(log.all)")
        #expect(waitFor(seconds: 5) { !Self.sent(server, "/edev/1/der/1/derg", "modesEnabled").isEmpty })
        let settingsBefore = try #require(Self.sent(server, "/edev/1/der/1/derg", "modesEnabled").last.flatMap { UInt32($0, radix: 16) })

        worker.useFrequencyDroop(true)
        #expect(waitFor(seconds: 5) { Self.sent(server, capability, "modesSupported").last == "0050018F" }, "\(Self.sent(server, capability, "modesSupported"))")
        #expect(waitFor(seconds: 5) { Self.sent(server, "/edev/1/der/1/derg", "modesEnabled").last.flatMap { UInt32($0, radix: 16) } == settingsBefore | 1 << 8 },
                "\(Self.sent(server, "/edev/1/der/1/derg", "modesEnabled"))")
        // A droop-only control the server publishes now is answered as any other (received), not 252.
        server.set("/derp/1/derc", Self.list([Self.control("F1", start: now + 3600), Self.control("F3", start: now + 3600)]))
        #expect(waitFor(seconds: 10) { Sep2ReporterWorkerTests.responses(server).contains("1 F3") }, "\(Sep2ReporterWorkerTests.responses(server))")
        #expect(!Sep2ReporterWorkerTests.responses(server).contains("252 F3") && log.codes("SEP2_CONTROL_REFUSED").count == 1, "\(log.all)")

        worker.useFrequencyDroop(false)
        #expect(waitFor(seconds: 5) { Self.sent(server, capability, "modesSupported").last == "0050008F" }, "\(Self.sent(server, capability, "modesSupported"))")
        // F3, only received, is refused now (its 252 goes at its start: Sep2ReporterDroopTests) and said;
        // F1's refusal stood throughout and is not said twice.
        #expect(waitFor(seconds: 5) { log.codes("SEP2_CONTROL_REFUSED").count == 2 }, "disabled again: F3 said: \(log.codes("SEP2_CONTROL_REFUSED"))")
    }
}
