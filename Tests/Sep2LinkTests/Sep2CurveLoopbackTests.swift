import BessSystem
import ControlCore
import Cycle
import Foundation
import Glibc
import GridSupport
import IEEE2030_5
@testable import Sep2Link
import TestSupport
import Testing

/// The curve controls over a real loopback 2030.5 server: hil/peers/sep2_server.py (envoy-schema's
/// documents, a hand-written DERCurve) over TLS 1.2 CCM8 with a client certificate, the worker's
/// own HTTPS client (the house's one fetch path) reading the control and the curve it links to.
@Suite("2030.5 curve controls against sep2_server.py over TLS", .serialized)
struct Sep2CurveLoopbackTests {
    init() { signal(SIGPIPE, SIG_IGN) }

    @Test("a volt-var control's DERCurve is fetched over HTTPS and published as the law's curve")
    func voltVarOverTLS() throws {
        let pki = try TLSFixture()
        let identity = Sep2Fixture.identity
        let now = Int(Date().timeIntervalSince1970)
        let input = Pipe()
        let server = try UnitsPeer(arguments: [
            try Package.sep2Python(), "hil/peers/sep2_server.py", "--port", "0", "--cert", pki.path("server.pem"), "--key", pki.path("server.key"),
            "--ca", pki.path("ca.pem"), "--lfdi", identity.lfdi, "--sfdi", String(identity.sfdi),
            "--volt-var", "C1:\(now - 5):3600:92,44,98,0,102,0,108,-44",
        ], input: input)
        defer { server.stop() }
        guard server.port > 0 else { throw FixtureFailure("sep2_server.py did not say its port: \(server.all)") }
        let transport = try HTTPSServerPinTests.client(pki, port: server.port)
        let slot = UtilityLimitSlot()
        let log = LogLines()
        let client = Sep2Client(settings: Sep2WorkerSettings(entryPath: "/dcap", pin: 111_115, pollSeconds: 30, siteRatingW: 200_000,
                                                             timeout: .seconds(10), serverName: "127.0.0.1:\(server.port)"),
                                identity: identity, transport: transport, slot: slot, store: nil, log: log.sink)
        client.reactive.ratings = (200_000, 200_000)
        let published = waitFor(seconds: 30) {
            _ = client.round(now: SystemClock.shared.now(), wall: Date().timeIntervalSince1970)
            return slot.read()?.voltVar != nil
        }
        #expect(published, "\(log.all) \(server.all.suffix(20))")
        #expect(slot.read()?.voltVar == GridSupportProfile.ieee1547_2018_cat_b.voltVar, "\(String(describing: slot.read()?.voltVar))")
        #expect(server.all.contains { $0.contains("\"/derp/1/dc/C1\"") && $0.contains("\"status\": 200") }, "\(server.all)")
        #expect(log.codes("SEP2_CONTROL_NOT_APPLIED").isEmpty, "\(log.all)")
        client.close()
    }
}
