import ControlCore
import Foundation
import Glibc
import IEC104
import TestSupport
import Testing

/// Who the control centre is (issue 57 §4): a TLS 1.2 control centre that resumes its session is
/// served; a connection's group, and with it its rights, follows its certificate
/// (`iec104.groups[].allow_certificates`); a reload applies groups and rights to the connections
/// already open and closes those that no longer pass (`IEC104_PEER_REVOKED`).
@Suite("IEC 104 over TLS: resumption, rights by certificate, revocation at reload", .serialized)
struct IEC104TLSRightsTests {
    static let startDataTransferConfirmation: [UInt8] = [0x68, 0x04, 0x0B, 0x00, 0x00, 0x00]

    /// `openssl s_client` at TLS 1.2 with the fixture's client certificate, sending STARTDT act;
    /// `session`: `-sess_out` or `-sess_in` and its file. True once STARTDT con came back.
    static func startedOverSClient(port: Int, pki: TLSFixture, _ session: [String]) throws -> (served: Bool, said: String) {
        let client = try PeerProcess(["s_client", "-connect", "127.0.0.1:\(port)", "-tls1_2", "-cert", pki.path("client.pem"),
                                      "-key", pki.path("client.key"), "-CAfile", pki.path("ca.pem"), "-verify_return_error"] + session,
                                     input: String(decoding: Frame.unnumbered(.startDataTransferActivation).encoded(), as: UTF8.self),
                                     keepInputOpen: true, directory: pki.directory)
        defer { client.stop() }
        let served = waitFor(seconds: 10) { client.bytes.firstRange(of: Self.startDataTransferConfirmation) != nil }
        return (served, client.text)
    }

    /// openssl s_client -sess_out, then -sess_in; STARTDT con on both, the second resumed.
    @Test("a TLS 1.2 client resuming its session is served on both connections")
    func resumedSessionServed() throws {
        let pki = try TLSFixture()
        let port = Loopback.freePort()
        let daemon = try RunningDaemon(yaml: IEC104TLSDaemonTests.yaml(port: port, pki: pki))
        #expect(waitFor(seconds: 15) { Loopback.listening(port) }, "bessd listens")
        let session = pki.path("session.pem")
        let first = try Self.startedOverSClient(port: port, pki: pki, ["-sess_out", session])
        #expect(first.served, "the first connection: \(first.said.suffix(600))")
        #expect(FileManager.default.fileExists(atPath: session), "s_client kept the session")
        let second = try Self.startedOverSClient(port: port, pki: pki, ["-sess_in", session])
        #expect(second.served, "the resumed connection: \(second.said.suffix(600))")
        #expect(second.said.contains("Reused, TLSv1.2"), "s_client resumed: \(second.said.suffix(600))")
        daemon.signal(SIGTERM)
        let (_, text) = daemon.finish()
        let connected = IEC104TLSDaemonTests.lines(text, "IEC104_CONNECTED")
        #expect(connected.count == 2 && connected.allSatisfy { $0.contains("CN=scada-client") }, "\(connected)")
        // The listening probe is a refusal of its own (TLS_HANDSHAKE_FAILED); nothing else is refused.
        let refusals = IEC104TLSDaemonTests.lines(text, "IEC104_TLS_REFUSED")
        #expect(refusals.count <= 1 && !refusals.contains { $0.contains("session id context") }, "\(refusals)")
    }

    /// The TLS daemon's configuration with its one group replaced by `groups` (flow mappings).
    static func yaml(port: Int, pki: TLSFixture, groups: [String]) -> String {
        IEC104TLSDaemonTests.yaml(port: port, pki: pki).replacingOccurrences(
            of: "    - {name: sldc, allow_from: [127.0.0.1], commands: [agc, setpoint]}\n",
            with: groups.map { "    - \($0)\n" }.joined())
    }

    static func refused(_ answers: [ASDU]) -> Bool {
        answers.count == 1 && answers[0].cause.cause == .activationConfirmation && answers[0].cause.negative
    }

    static func executed(_ answers: [ASDU]) -> Bool {
        answers.map(\.cause.cause) == [.activationConfirmation, .activationTermination] && !answers.contains { $0.cause.negative }
    }

    static let setpoint = InformationElement.setpointFloat(0.01, SetpointQualifier(select: false))

    /// A raw station through a bridge of its own showing the fixture's `certificate` (the bridge
    /// lives as long as the station is used).
    static func open(as certificate: String, to port: Int, pki: TLSFixture) throws -> (bridge: TLSBridge, station: RawControlStation) {
        let bridge = try TLSBridge(to: port, pki: pki, certificate: certificate)
        return (bridge, try #require(IEC104TLSDaemonTests.station(through: bridge.port), "\(bridge.said.suffix(400))"))
    }

    /// True when `station` answers a test frame: its connection is open.
    static func answersTestFrame(_ station: RawControlStation) -> Bool {
        station.send(.unnumbered(.testFrameActivation))
        return station.frames(seconds: 10) { $0.contains(.unnumbered(.testFrameConfirmation)) }.contains(.unnumbered(.testFrameConfirmation))
    }

    /// The control centre's certificate commands; the monitor's is refused the set-point; a third certificate of the CA is IEC104_PEER_REFUSED.
    @Test("two groups on one address are told apart by certificate; a certificate in no group is refused")
    func groupByCertificate() throws {
        let pki = try TLSFixture()
        let port = Loopback.freePort()
        let control = try pki.fingerprint("server"), monitor = try pki.fingerprint("client")
        let yaml = Self.yaml(port: port, pki: pki, groups: [
            "{name: control, allow_from: [127.0.0.1], commands: [agc, setpoint], allow_certificates: [\"\(control)\"]}",
            "{name: monitor, allow_from: [127.0.0.1], allow_certificates: [\"\(monitor)\"]}",
        ])
        #expect(yaml.contains("name: monitor"), "\(yaml)")
        let daemon = try RunningDaemon(yaml: yaml)
        #expect(waitFor(seconds: 15) { Loopback.listening(port) }, "bessd listens")
        let (controlBridge, controlStation) = try Self.open(as: "server", to: port, pki: pki)
        #expect(IEC104TLSDaemonTests.served(controlStation), "\(controlBridge.said.suffix(400))")
        let (monitorBridge, monitorStation) = try Self.open(as: "client", to: port, pki: pki)
        #expect(IEC104TLSDaemonTests.served(monitorStation), "started in its own group: \(monitorBridge.said.suffix(400))")
        #expect(Self.refused(try IEC104DaemonTests.command(monitorStation, Self.setpoint, at: 3002)), "the monitor may not command")
        #expect(Self.executed(try IEC104DaemonTests.command(controlStation, Self.setpoint, at: 3002)), "the control centre commands")
        // A certificate the CA vouches for and no group names.
        let stranger = try Self.open(as: "revoked", to: port, pki: pki)
        #expect(IEC104TLSDaemonTests.refused(stranger.station), "in no group's list")
        daemon.signal(SIGTERM)
        let (_, text) = daemon.finish()
        let refusals = IEC104TLSDaemonTests.lines(text, "IEC104_PEER_REFUSED")
        #expect(refusals.count == 1 && refusals.allSatisfy { $0.contains("CN=revoked-client") && $0.contains("allow_certificates") }, "\(refusals)")
        let connected = IEC104TLSDaemonTests.lines(text, "IEC104_CONNECTED")
        #expect(connected.contains { $0.contains("BESS_GROUP=control") && $0.contains("CN=bessd-test-server") }, "\(connected)")
        #expect(connected.contains { $0.contains("BESS_GROUP=monitor") && $0.contains("CN=scada-client") }, "\(connected)")
        let commands = IEC104TLSDaemonTests.lines(text, "IEC104_COMMAND_REFUSED")
        #expect(commands.contains { $0.contains("BESS_REASON=COMMAND_NOT_ALLOWED") && $0.contains("BESS_GROUP=monitor") }, "\(commands)")
    }

    /// Taking a certificate off the group's list closes that connection (IEC104_PEER_REVOKED) while the other stays; taking the set-point right refuses the open connection's next set-point.
    @Test("reload revoking a certificate or a right applies to open connections at once, without a restart")
    func revokedAtReload() throws {
        let pki = try TLSFixture()
        let port = Loopback.freePort()
        let kept = try pki.fingerprint("server"), dropped = try pki.fingerprint("client")
        let before = Self.yaml(port: port, pki: pki, groups: [
            "{name: sldc, allow_from: [127.0.0.1], commands: [agc, setpoint], allow_certificates: [\"\(kept)\", \"\(dropped)\"]}",
        ])
        let daemon = try RunningDaemon(yaml: before)
        #expect(!daemon.notify.collect(seconds: 15) { $0.contains("READY=1") }.isEmpty, "bessd is ready")
        #expect(waitFor(seconds: 15) { Loopback.listening(port) }, "bessd listens")
        let (keptBridge, keptStation) = try Self.open(as: "server", to: port, pki: pki)
        #expect(IEC104TLSDaemonTests.served(keptStation), "\(keptBridge.said.suffix(400))")
        // The other stands by in the same group (a STARTDT would switch the first one over).
        let (droppedBridge, droppedStation) = try Self.open(as: "client", to: port, pki: pki)
        #expect(Self.answersTestFrame(droppedStation), "the second connection is open: \(droppedBridge.said.suffix(400))")
        #expect(Self.executed(try IEC104DaemonTests.command(keptStation, Self.setpoint, at: 3002)), "a set-point before the reload")

        /// The running file (with its socket and state directory) with `edit` made, and SIGHUP.
        func reload(_ edit: (String) -> String) throws {
            let text = edit(try String(contentsOfFile: daemon.configPath, encoding: .utf8))
            try text.write(toFile: daemon.configPath, atomically: true, encoding: .utf8)
            let (finished, said) = daemon.reloadAndWait()
            #expect(finished, "the reload finished: \(said)")
        }
        try reload { $0.replacingOccurrences(of: ", \"\(dropped)\"]", with: "]") }
        #expect(droppedStation.waitClosed(seconds: 10), "the connection whose certificate left the list is closed")
        #expect(Self.answersTestFrame(keptStation), "the other connection stays")
        try reload { $0.replacingOccurrences(of: "commands: [agc, setpoint]", with: "commands: [agc]") }
        #expect(Self.refused(try IEC104DaemonTests.command(keptStation, Self.setpoint, at: 3002)), "the right is gone from the open connection")

        daemon.signal(SIGTERM)
        let (_, text) = daemon.finish()
        let revoked = IEC104TLSDaemonTests.lines(text, "IEC104_PEER_REVOKED")
        #expect(revoked.count == 1 && revoked.allSatisfy { $0.contains("CN=scada-client") && $0.contains("BESS_GROUP=sldc") }, "\(revoked)")
        let refused = IEC104TLSDaemonTests.lines(text, "IEC104_COMMAND_REFUSED")
        #expect(refused.count == 1 && refused.allSatisfy { $0.contains("BESS_REASON=COMMAND_NOT_ALLOWED") && $0.contains("bessd-test-server") }, "\(refused)")
        #expect(IEC104TLSDaemonTests.lines(text, "IEC104_GROUPS_RELOADED").count == 2, "\(text.suffix(800))")
        #expect(IEC104TLSDaemonTests.lines(text, "IEC104_RESTART_NEEDED").isEmpty, "\(text.suffix(800))")
    }
}
