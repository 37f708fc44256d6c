import BessBase
import ControlCore
import IEC104

/// An IEC 60870-5-104 byte stream as a controlling station (or anyone reaching port 2404) sends it,
/// delivered in chunks of any size, through the frame splitter, the ASDU decoder and the outstation's
/// link state machine. Invariants: the frames split from the stream encode back to exactly the octets
/// they were cut from, and decode alike in one piece; a refusal of the stream is a bad start, length
/// or control field; every I-frame's ASDU either decodes to one that encodes back to the same octets
/// or is a typed refusal; every time tag found either decodes and encodes back or is IEC104_BAD_TIME;
/// the link never has more than k frames out, acknowledges only what it received, and once closed
/// says why in every answer.
enum IEC104Harness {
    /// At most this many frames per input (a 4 KiB input holds at most 682 S- or U-frames).
    static let maxFrames = 700

    static func run(_ input: inout FuzzInput) -> [String] {
        var violations = Violations()
        let chunk = Int(input.u8() % 64) + 1
        let stream = input.rest()
        var splitter = FrameSplitter()
        var link = Link(settings: LinkSettings(k: 4, w: 2, t1: .seconds(15), t2: .seconds(10), t3: .seconds(20))!, now: .zero)
        var consumed = 0
        var fed = 0
        var frames = 0
        var now = MonotonicInstant.zero
        feeding: while fed < stream.count || splitter.bufferedCount > 0, frames < maxFrames {
            let end = min(stream.count, fed + chunk)
            splitter.append(stream[fed..<end])
            fed = end
            while frames < maxFrames {
                let frame: Frame?
                do {
                    frame = try splitter.next()
                } catch {
                    violations.check([.badStart, .badLength, .badControl].contains(error.code), "the stream refused with \(error.code)")
                    violations.check(consumed < stream.count, "a refusal with nothing left to refuse")
                    break feeding
                }
                guard let frame else { break }
                frames += 1
                let octets = frame.encoded()
                let original = Array(stream[consumed..<min(stream.count, consumed + octets.count)])
                violations.check(octets == original, "frame \(frames) encodes to \(octets.count) octets other than those it was cut from")
                violations.check((try? Frame(decoding: original)) == frame, "frame \(frames) decodes otherwise in one piece")
                consumed += octets.count
                if case let .information(_, _, asdu) = frame { checkASDU(asdu, &violations) }
                // Time moves on by 0.01…25.5 s per frame (the last octet's worth): t1, t2 and t3 all fire.
                now = now + .milliseconds(Int64(octets[octets.count - 1]) * 100 + 10)
                step(&link, frame, now, &violations)
            }
            if fed >= stream.count { break }
        }
        violations.check(consumed <= stream.count, "more octets split than given")
        return violations.list
    }

    /// An ASDU decodes and encodes back exactly, or is refused with a code; so does each 7-octet window
    /// read as a time tag.
    static func checkASDU(_ octets: [UInt8], _ violations: inout Violations) {
        do throws(IEC104Error) {
            let asdu = try ASDU(decoding: octets)
            let again = try? asdu.encoded()
            violations.check(again == octets, "\(asdu.type) decodes but encodes to \(again?.count ?? -1) other octets")
            if case .unknownType = asdu.information {
                violations.check(!asdu.type.isKnown, "a known type \(asdu.type) kept as unknown octets")
                let answer = try? asdu.negativeAnswer(.unknownType).encoded()
                violations.check(answer?.count == octets.count && answer?[2] == 0x40 | 44 | (octets[2] & 0x80),
                                 "the COT 44 answer to \(asdu.type) is not the mirror")
            }
        } catch {
            violations.check(error.code.isPeerFault, "ASDU refused with \(error.code), a sender's code")
        }
        var start = 0
        while start + 7 <= octets.count, start < 64 {
            if let tag = try? CP56Time2a(decoding: octets[start..<(start + 7)]) {
                violations.check(tag.encoded == Array(octets[start..<(start + 7)]), "a time tag at \(start) encodes otherwise")
                violations.check((try? tag.unixMilliseconds()).flatMap { try? CP56Time2a(unixMilliseconds: $0) }.map {
                    $0.year == tag.year && $0.month == tag.month && $0.day == tag.day && $0.hour == tag.hour
                        && $0.minute == tag.minute && $0.milliseconds == tag.milliseconds
                } == true, "the time tag \(tag) does not survive Unix time")
            }
            start += 7
        }
    }

    /// The link takes the frame; when it may, it sends an ASDU of its own; the timers run.
    static func step(_ link: inout Link, _ frame: Frame, _ now: MonotonicInstant, _ violations: inout Violations) {
        let wasClosed = link.closeReason != nil
        let received = link.receiveNumber
        var actions = link.received(frame, at: now)
        if link.canSend, let sent = try? link.send([100, 1, 7, 0, 1, 0, 0, 0, 0, 20], at: now) {
            if case .information = sent {} else { violations.check(false, "send gave a frame other than an I-frame") }
        }
        actions += link.tick(at: now)
        violations.check(link.unacknowledgedCount <= link.settings.k, "\(link.unacknowledgedCount) frames out with k = \(link.settings.k)")
        for action in actions {
            switch action {
            case let .send(.supervisory(receive)):
                violations.check(receive == link.receiveNumber, "an S-frame acknowledges \(receive), V(R) is \(link.receiveNumber)")
            case .send(.information):
                violations.check(false, "the link sent an I-frame by itself")
            case .deliver:
                violations.check(link.receiveNumber == received.next, "an I-frame delivered without V(R) moving on")
            case let .close(error):
                violations.check(link.closeReason == error, "closed with \(error.code) but remembers \(String(describing: link.closeReason))")
            case .send(.unnumbered): break
            }
        }
        if wasClosed {
            violations.check(actions.allSatisfy { if case .close = $0 { true } else { false } }, "a closed link still acts")
        }
    }

    /// Frames from the standard and grid-interfaces.md §2.2 (every type the codec knows, both
    /// directions), alone and as one stream; the stream again with S-frames and TESTFR between the
    /// I-frames; and the APDUs c104 (lib60870) exchanged in its own session, each side as a stream.
    static func seeds() -> [[UInt8]] {
        let time = CP56Time2a(year: 26, month: 11, day: 27, hour: 2, minute: 14, milliseconds: 7_621)
        func asdu(_ type: TypeID, _ cause: Cause, _ elements: [InformationElement], sequence: Bool = false) -> [UInt8] {
            let objects = elements.enumerated().map { InformationObject(address: 1001 + UInt32($0.offset), element: $0.element) }
            return (try? ASDU(type: type, cause: CauseOfTransmission(cause: cause), commonAddress: 1, objects: objects,
                              isSequence: sequence).encoded()) ?? []
        }
        let asdus: [[UInt8]] = [
            asdu(.interrogation, .activation, [.interrogation(20)]),
            asdu(.measuredFloatWithTime, .spontaneous, [.measuredFloatWithTime(13.25, .good, time)]),
            asdu(.measuredFloat, .interrogatedByStation, [.measuredFloat(1, .good), .measuredFloat(-2, .invalid)], sequence: true),
            asdu(.singlePoint, .interrogatedByStation, [.singlePoint(true, .good), .singlePoint(false, .notTopical)]),
            asdu(.doublePointWithTime, .spontaneous, [.doublePointWithTime(.on, .good, time)]),
            asdu(.integratedTotalsWithTime, .spontaneous, [.integratedTotalsWithTime(BinaryCounterReading(value: 5, sequence: 1), time)]),
            asdu(.setpointFloat, .activation, [.setpointFloat(-4, SetpointQualifier(select: true))]),
            asdu(.setpointFloatWithTime, .activation, [.setpointFloatWithTime(25, SetpointQualifier(select: false), time)]),
            asdu(.singleCommandWithTime, .activation, [.singleCommandWithTime(SingleCommand(on: true), time)]),
            asdu(.singleCommand, .activation, [.singleCommand(SingleCommand(on: false, select: true))]),
            asdu(.singleCommand, .deactivation, [.singleCommand(SingleCommand(on: true))]),
            asdu(.doublePoint, .interrogatedByStation, [.doublePoint(.off, .good), .doublePoint(.intermediate, .invalid)], sequence: true),
            asdu(.singlePointWithTime, .spontaneous, [.singlePointWithTime(true, .good, time)]),
            asdu(.integratedTotals, .requestedByGeneralCounter, [.integratedTotals(BinaryCounterReading(value: -7, sequence: 3)), .integratedTotals(BinaryCounterReading(value: 12, sequence: 3))]),
            asdu(.endOfInitialisation, .initialised, [.endOfInitialisation(0)]),
            asdu(.interrogation, .activationConfirmation, [.interrogation(20)]),
            asdu(.clockSynchronisation, .activation, [.clockSynchronisation(time)]),
            asdu(.counterInterrogation, .activation, [.counterInterrogation(5)]),
            [102, 1, 6, 0, 1, 0, 0, 0, 0],  // C_RD_NA_1: an unknown type
        ]
        var stream = Frame.unnumbered(.startDataTransferActivation).encoded()
        for (index, octets) in asdus.enumerated() {
            stream += Frame.information(send: SequenceNumber(UInt16(index)), receive: .zero, asdu: octets).encoded()
        }
        stream += Frame.supervisory(receive: .zero).encoded() + Frame.unnumbered(.testFrameActivation).encoded()
            + Frame.unnumbered(.stopDataTransferActivation).encoded()
        let single = asdus.map { [UInt8(6)] + Frame.information(send: .zero, receive: .zero, asdu: $0).encoded() }
        // The outstation's link acknowledges each: an S-frame, a TESTFR act and con between I-frames.
        var acknowledged = Frame.unnumbered(.startDataTransferActivation).encoded()
        for (index, octets) in asdus.enumerated() {
            acknowledged += Frame.information(send: SequenceNumber(UInt16(index)), receive: .zero, asdu: octets).encoded()
            acknowledged += index % 3 == 0 ? Frame.supervisory(receive: .zero).encoded() : Frame.unnumbered(index % 3 == 1 ? .testFrameActivation : .testFrameConfirmation).encoded()
        }
        // c104's session (hil/peers/iec104_peer.py produce): the client's APDUs, then the server's.
        let c104Client = ["680407000000", "680e0000000064010600070000000014", "681402000c00670106000700000000e287190e1b0b1a",
                          "680e04000e0065010600070000000005", "681206001400320106000700b90b00000080c000"]
        let c104Server = ["68040b000000", "680e0000020064010700070000000014", "680e02000200018114000700d1070001",
                          "680e0400020003811400070035080002", "6812060002000d8114000700e903000000544100",
                          "681908000200248114000700ed03000000764200c187190e1b0b1a", "680e0a00020064010a00070000000014",
                          "68140c000400670107000700000000e287190e1b0b1a", "680e0e00060065010700070000000005",
                          "6812100006000f8125000700a10f0040e2010000", "680e1200060065010a00070000000005",
                          "681214000800320107000700b90b00000080c000", "681916000800240103000700ed03000000794200e387190e1b0b1a"]
        return [[0] + stream, [63] + stream, [2] + Frame.unnumbered(.testFrameActivation).encoded(), [17] + acknowledged,
                [63] + c104Client.flatMap(IEC104SessionHarness.hexOctets), [5] + c104Server.flatMap(IEC104SessionHarness.hexOctets)] + single
    }
}
