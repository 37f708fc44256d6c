import ControlCore
import Foundation
import Glibc
import IEC104
import TestSupport
import Testing

/// Malformed frames over the wire (issue 46 §4): each closes its own connection with a coded journal
/// line, while a started connection beside it keeps being served.
@Suite("IEC 104: hostile frames close their own connection only", .serialized)
struct IEC104HostileFramesTests {
    /// `address:port` of our end of `station`'s socket, as the outstation names its peer.
    static func peerName(_ station: RawControlStation) -> String {
        var address = sockaddr_in()
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(station.fd, $0, &length) }
        }
        let ip = UInt32(bigEndian: address.sin_addr.s_addr)
        return "\(ip >> 24).\(ip >> 16 & 255).\(ip >> 8 & 255).\(ip & 255):\(UInt16(bigEndian: address.sin_port))"
    }

    /// The station still answers: TESTFR act confirmed, and a station interrogation answered from
    /// its ACT_CON to its ACT_TERM.
    static func served(_ station: RawControlStation) throws -> Bool {
        station.send(.unnumbered(.testFrameActivation))
        var confirmed = false
        for _ in 0..<20 where !confirmed && !station.closed {
            confirmed = station.next(seconds: 0.5) == .unnumbered(.testFrameConfirmation)
        }
        try station.send(ASDU(type: .interrogation, cause: CauseOfTransmission(cause: .activation), commonAddress: 7,
                              objects: [InformationObject(address: 0, element: .interrogation(20))]))
        let confirmation = station.asdu { $0.type == .interrogation && $0.cause.cause == .activationConfirmation }
        let termination = station.asdu { $0.type == .interrogation && $0.cause.cause == .activationTermination }
        return confirmed && confirmation?.cause.negative == false && termination != nil && !station.closed
    }

    /// Bad start octet, length 2 and 254, an I-frame with N(R) beyond what was sent, a truncated ASDU: each closed with its code; the started station is served throughout.
    @Test("malformed IEC 104 frames close only their connection; an unknown type answers COT 44")
    func hostileFrames() throws {
        let port = Loopback.freePort()
        // Hostile stations that must start first connect from 127.0.0.2, a group of their own: in
        // the good station's group their STARTDT would close it (switch-over), which is no finding.
        let daemon = try RunningDaemon(yaml: IEC104DaemonTests.yaml(port: port) + "\n    - {name: plant, allow_from: [127.0.0.2]}\n")
        var connected: RawControlStation?
        #expect(waitFor(seconds: 10) { connected = try? RawControlStation(port: port); return connected != nil }, "bessd listens")
        guard let good = connected else { return }
        good.send(.unnumbered(.startDataTransferActivation))
        #expect(good.next() == .unnumbered(.startDataTransferConfirmation))
        #expect(good.asdu { $0.type == .endOfInitialisation } != nil)
        let interrogation = try ASDU(type: .interrogation, cause: CauseOfTransmission(cause: .activation), commonAddress: 7,
                                     objects: [InformationObject(address: 0, element: .interrogation(20))]).encoded()

        // Each case: where it connects from, whether it starts first, the octets, the code expected.
        let cases: [(name: String, source: String, starts: Bool, octets: (RawControlStation) -> [UInt8], code: String)] = [
            ("bad start octet", "127.0.0.1", false, { _ in [0x69, 0x04, 0x07, 0x00, 0x00, 0x00] }, "IEC104_BAD_START"),
            ("length 2", "127.0.0.1", false, { _ in [0x68, 0x02, 0x01, 0x00] }, "IEC104_BAD_LENGTH"),
            ("length 254", "127.0.0.1", false, { _ in [0x68, 0xFE] + [UInt8](repeating: 0, count: 254) }, "IEC104_BAD_LENGTH"),
            // The outstation sent one I-frame (M_EI_NA_1): N(R) 9 acknowledges eight it never sent.
            ("I-frame with N(R) 9", "127.0.0.2", true,
             { Frame.information(send: $0.sendNumber, receive: SequenceNumber(9), asdu: interrogation).encoded() }, "IEC104_BAD_ACK"),
            // C_IC_NA_1 announcing one object, its QOI cut off.
            ("truncated ASDU", "127.0.0.2", true,
             { Frame.information(send: $0.sendNumber, receive: $0.receiveNumber, asdu: Array(interrogation.dropLast())).encoded() },
             "IEC104_BAD_OBJECT_LENGTH"),
        ]
        var peers: [(name: String, peer: String, code: String)] = []
        for item in cases {
            let hostile = try RawControlStation(port: port, from: item.source)
            if item.starts {
                hostile.send(.unnumbered(.startDataTransferActivation))
                #expect(hostile.asdu { $0.type == .endOfInitialisation } != nil, "\(item.name): started")
            }
            peers.append((item.name, Self.peerName(hostile), item.code))
            hostile.send(bytes: item.octets(hostile))
            #expect(hostile.waitClosed(), "\(item.name): the connection is closed")
            #expect(try Self.served(good), "\(item.name): the started station is still served")
        }

        // An unknown type id is no protocol error (docs/iec104.md): answered COT 44, P/N = 1, and the
        // connection carries on.
        let unknown = try RawControlStation(port: port, from: "127.0.0.2")
        unknown.send(.unnumbered(.startDataTransferActivation))
        #expect(unknown.asdu { $0.type == .endOfInitialisation } != nil)
        unknown.send(Frame.information(send: unknown.sendNumber, receive: unknown.receiveNumber, asdu: [0x66, 0x01, 0x06, 0x00, 0x07, 0x00, 0x00, 0x00, 0x00]))
        unknown.sendNumber = unknown.sendNumber.next
        let answer = unknown.asdu { $0.type.rawValue == 0x66 }
        #expect(answer?.cause.cause == .unknownType && answer?.cause.negative == true, "unknown type: \(String(describing: answer))")
        #expect(try Self.served(unknown), "the station that sent an unknown type is still served")
        #expect(try Self.served(good))

        daemon.signal(SIGTERM)
        let (_, text) = daemon.finish()
        let lines = text.split(separator: "\n").filter { $0.contains("BESS_CODE=IEC104_PROTOCOL_ERROR") }
        for item in peers {
            let line = lines.first { $0.contains("BESS_PEER=\(item.peer) ") }
            #expect(line?.contains("BESS_IEC104_ERROR=\(item.code) ") == true, "\(item.name): journal \(String(describing: line))")
        }
        #expect(lines.count == peers.count, "one protocol error line per hostile connection: \(lines)")
        let goodPeer = Self.peerName(good)
        let unknownPeer = Self.peerName(unknown)
        #expect(!text.split(separator: "\n").contains { ($0.contains("BESS_PEER=\(goodPeer) ") || $0.contains("BESS_PEER=\(unknownPeer) ")) && $0.contains("closed") && !$0.contains("bessd stops") },
                "neither served station was closed before bessd stopped")
    }
}
