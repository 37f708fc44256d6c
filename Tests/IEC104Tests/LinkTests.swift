import BessBase
import ControlCore
import IEC104
import Testing

/// The link state machine with time passed in: STARTDT/STOPDT/TESTFR, sequence numbers and their
/// errors, the k and w windows, and t1/t2/t3, all without a socket or a sleep.
@Suite("IEC 104 link")
struct LinkTests {
    static let asdu = hex("0d 01 03 00 01 00 e9 03 00 00 00 54 41 00")
    static func at(_ seconds: Double) -> MonotonicInstant { .zero + .seconds(fromDouble: seconds) }

    /// A link started by STARTDT act at t = 0.
    func started(_ settings: LinkSettings = .standard) -> Link {
        var link = Link(settings: settings, now: .zero)
        #expect(link.received(.unnumbered(.startDataTransferActivation), at: .zero)
                == [.send(.unnumbered(.startDataTransferConfirmation))])
        return link
    }

    func closeCode(_ actions: [LinkAction]) -> IEC104Error.Code? {
        for case let .close(error) in actions { return error.code }
        return nil
    }

    @Test("STARTDT act is confirmed; before it no I-frame is sent, and a received one closes")
    func start() throws {
        var link = Link(now: .zero)
        #expect(!link.canSend)
        #expect(code { _ = try link.send(Self.asdu, at: .zero) } == .notStarted)
        #expect(closeCode(link.received(.information(send: .zero, receive: .zero, asdu: Self.asdu), at: .zero)) == .notStarted)
        // Closed for good: every later call repeats the reason.
        #expect(closeCode(link.received(.unnumbered(.testFrameActivation), at: .zero)) == .notStarted)
        #expect(closeCode(link.tick(at: Self.at(100))) == .notStarted)
        var fresh = started()
        #expect(fresh.canSend)
        let frame = try fresh.send(Self.asdu, at: .zero)
        #expect(frame == .information(send: .zero, receive: .zero, asdu: Self.asdu))
    }

    @Test("TESTFR act is confirmed when stopped and when started")
    func testFrame() {
        var link = Link(now: .zero)
        #expect(link.received(.unnumbered(.testFrameActivation), at: .zero) == [.send(.unnumbered(.testFrameConfirmation))])
        var running = started()
        #expect(running.received(.unnumbered(.testFrameActivation), at: .zero) == [.send(.unnumbered(.testFrameConfirmation))])
    }

    @Test("a received I-frame is delivered; after w = 8 of them an S-frame acknowledges all")
    func receiveWindow() {
        var link = started()
        for n in 0..<7 {
            let actions = link.received(.information(send: SequenceNumber(UInt16(n)), receive: .zero, asdu: Self.asdu), at: Self.at(0.1))
            #expect(actions == [.deliver(Self.asdu)])
        }
        let eighth = link.received(.information(send: SequenceNumber(7), receive: .zero, asdu: Self.asdu), at: Self.at(0.2))
        #expect(eighth == [.deliver(Self.asdu), .send(.supervisory(receive: SequenceNumber(8)))])
        #expect(link.unacknowledgedReceivedCount == 0)
    }

    @Test("an I-frame sent carries the acknowledgement, so no S-frame follows")
    func piggyback() throws {
        var link = started()
        _ = link.received(.information(send: .zero, receive: .zero, asdu: Self.asdu), at: .zero)
        let frame = try link.send(Self.asdu, at: Self.at(1))
        #expect(frame == .information(send: .zero, receive: SequenceNumber(1), asdu: Self.asdu))
        #expect(link.tick(at: Self.at(11)) == [])
    }

    @Test("at k = 12 unacknowledged I-frames sending stops until an acknowledgement")
    func sendWindow() throws {
        var link = started()
        for _ in 0..<12 { _ = try link.send(Self.asdu, at: .zero) }
        #expect(!link.canSend)
        #expect(code { _ = try link.send(Self.asdu, at: .zero) } == .windowFull)
        #expect(link.received(.supervisory(receive: SequenceNumber(5)), at: Self.at(1)) == [])
        #expect(link.unacknowledgedCount == 7 && link.canSend)
        let next = try link.send(Self.asdu, at: Self.at(1))
        #expect(next == .information(send: SequenceNumber(12), receive: .zero, asdu: Self.asdu))
    }

    @Test("an N(R) acknowledging frames never sent closes with IEC104_BAD_ACK", arguments: [UInt16(4), 100, 32_767])
    func badAcknowledgement(_ nr: UInt16) throws {
        var link = started()
        for _ in 0..<3 { _ = try link.send(Self.asdu, at: .zero) }
        #expect(link.received(.supervisory(receive: SequenceNumber(2)), at: .zero) == [])
        // 2 and 3 are fine (nothing new, or the rest); 1 goes back, anything past 3 was never sent.
        #expect(closeCode(link.received(.supervisory(receive: SequenceNumber(nr)), at: .zero)) == .badAcknowledgement)
        var back = started()
        for _ in 0..<3 { _ = try back.send(Self.asdu, at: .zero) }
        _ = back.received(.supervisory(receive: SequenceNumber(2)), at: .zero)
        #expect(closeCode(back.received(.supervisory(receive: SequenceNumber(1)), at: .zero)) == .badAcknowledgement)
    }

    @Test("an I-frame whose N(S) is not V(R) closes with IEC104_BAD_SEQUENCE", arguments: [UInt16(1), 2, 32_767])
    func badSequence(_ ns: UInt16) {
        var link = started()
        _ = link.received(.information(send: .zero, receive: .zero, asdu: Self.asdu), at: .zero)
        let actions = link.received(.information(send: SequenceNumber(ns == 1 ? 0 : ns), receive: .zero, asdu: Self.asdu), at: .zero)
        #expect(closeCode(actions) == .badSequence)
        #expect(!actions.contains(.deliver(Self.asdu)))
    }

    @Test("sequence numbers wrap at 32767 → 0 on both sides, and acknowledgements across the wrap count")
    func wrap() throws {
        let settings = try #require(LinkSettings(k: 32_767, w: 32_767, t1: .seconds(100_000), t2: .seconds(99_999), t3: .seconds(100_000)))
        var link = started(settings)
        for n in 0..<32_767 {
            let frame = try link.send(Self.asdu, at: .zero)
            guard case let .information(send, _, _) = frame, send.value == UInt16(n) else {
                Issue.record("frame \(n) is \(frame)")
                return
            }
            if n % 1000 == 999 { _ = link.received(.supervisory(receive: link.sendNumber), at: .zero) }
        }
        #expect(link.sendNumber == SequenceNumber(32_767))
        _ = link.received(.supervisory(receive: SequenceNumber(32_767)), at: .zero)
        let last = try link.send(Self.asdu, at: .zero)
        #expect(last == .information(send: SequenceNumber(32_767), receive: .zero, asdu: Self.asdu))
        #expect(link.sendNumber == .zero)
        let first = try link.send(Self.asdu, at: .zero)
        #expect(first == .information(send: .zero, receive: .zero, asdu: Self.asdu))
        // N(R) 1 acknowledges 32767 and 0 across the wrap; N(R) 2 was never sent.
        #expect(link.received(.supervisory(receive: SequenceNumber(1)), at: .zero) == [])
        #expect(link.unacknowledgedCount == 0)
        #expect(closeCode(link.received(.supervisory(receive: SequenceNumber(2)), at: .zero)) == .badAcknowledgement)

        var receiver = started(settings)
        for n in 0..<32_768 {
            _ = receiver.received(.information(send: SequenceNumber(UInt16(n)), receive: .zero, asdu: Self.asdu), at: .zero)
        }
        #expect(receiver.receiveNumber == .zero && receiver.closeReason == nil)
        #expect(receiver.received(.information(send: .zero, receive: .zero, asdu: Self.asdu), at: .zero) == [.deliver(Self.asdu)])
    }

    @Test("t1: an I-frame unacknowledged for 15 s closes with IEC104_T1_EXPIRED; acknowledged in time, nothing")
    func t1() throws {
        var link = started()
        _ = try link.send(Self.asdu, at: Self.at(1))
        #expect(link.nextDeadline == Self.at(16))
        #expect(closeCode(link.tick(at: Self.at(15.9))) == nil)
        #expect(closeCode(link.tick(at: Self.at(16))) == .t1Expired)
        var acknowledged = started()
        _ = try acknowledged.send(Self.asdu, at: Self.at(1))
        _ = acknowledged.received(.supervisory(receive: SequenceNumber(1)), at: Self.at(10))
        #expect(closeCode(acknowledged.tick(at: Self.at(17))) == nil)
    }

    @Test("t2: received I-frames unacknowledged for 10 s get an S-frame")
    func t2() {
        var link = started()
        _ = link.received(.information(send: .zero, receive: .zero, asdu: Self.asdu), at: Self.at(1))
        _ = link.received(.information(send: SequenceNumber(1), receive: .zero, asdu: Self.asdu), at: Self.at(5))
        #expect(link.tick(at: Self.at(10.9)) == [])
        #expect(link.tick(at: Self.at(11)) == [.send(.supervisory(receive: SequenceNumber(2)))])
        #expect(link.tick(at: Self.at(19)) == [])
    }

    @Test("t3: 20 s silent sends TESTFR act; confirmed within t1 the link stays, else it closes")
    func t3() {
        var link = started()
        _ = link.received(.supervisory(receive: .zero), at: Self.at(5))
        #expect(link.tick(at: Self.at(24.9)) == [])
        #expect(link.tick(at: Self.at(25)) == [.send(.unnumbered(.testFrameActivation))])
        #expect(link.tick(at: Self.at(26)) == [])  // one test at a time
        #expect(link.received(.unnumbered(.testFrameConfirmation), at: Self.at(30)) == [])
        #expect(link.tick(at: Self.at(49.9)) == [])
        #expect(link.tick(at: Self.at(50)) == [.send(.unnumbered(.testFrameActivation))])
        #expect(closeCode(link.tick(at: Self.at(65))) == .t1Expired)
    }

    @Test("STOPDT act: received acknowledged, STOPDT con once all sent are acknowledged, then no I-frames")
    func stop() throws {
        var link = started()
        _ = link.received(.information(send: .zero, receive: .zero, asdu: Self.asdu), at: .zero)
        _ = try link.send(Self.asdu, at: .zero)
        _ = try link.send(Self.asdu, at: .zero)
        _ = link.received(.information(send: SequenceNumber(1), receive: .zero, asdu: Self.asdu), at: .zero)
        let stop = link.received(.unnumbered(.stopDataTransferActivation), at: Self.at(1))
        #expect(stop == [.send(.supervisory(receive: SequenceNumber(2)))])
        #expect(!link.canSend)
        #expect(link.received(.supervisory(receive: SequenceNumber(1)), at: Self.at(2)) == [])
        #expect(link.received(.supervisory(receive: SequenceNumber(2)), at: Self.at(3)) == [.send(.unnumbered(.stopDataTransferConfirmation))])
        #expect(closeCode(link.received(.information(send: SequenceNumber(2), receive: SequenceNumber(2), asdu: Self.asdu), at: Self.at(4)))
                == .notStarted)
        var idle = Link(now: .zero)
        #expect(idle.received(.unnumbered(.stopDataTransferActivation), at: .zero) == [.send(.unnumbered(.stopDataTransferConfirmation))])
    }

    @Test("a STARTDT or STOPDT confirmation this station never asked for closes", arguments: [
        UFunction.startDataTransferConfirmation, .stopDataTransferConfirmation,
    ])
    func unexpected(_ function: UFunction) {
        var link = Link(now: .zero)
        #expect(closeCode(link.received(.unnumbered(function), at: .zero)) == .unexpectedFrame)
    }

    @Test("link settings follow the standard's rules")
    func settings() {
        #expect(LinkSettings.standard.k == 12 && LinkSettings.standard.w == 8 && LinkSettings.standard.t1 == .seconds(15))
        #expect(LinkSettings(k: 0) == nil)
        #expect(LinkSettings(k: 4, w: 5) == nil)
        #expect(LinkSettings(t1: .seconds(10), t2: .seconds(10)) == nil)
        #expect(LinkSettings(t3: .zero) == nil)
    }
}
