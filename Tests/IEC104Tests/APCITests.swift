import BessBase
import ControlCore
import IEC104
import Testing

/// The APCI: the six U functions, S- and I-frames byte-exact from the standard's control-field
/// definitions (IEC 60870-5-104 §5.1–5.3), sequence numbers modulo 32768, and the stream splitter.
@Suite("IEC 104 APCI")
struct APCITests {
    @Test("U-frames are 68 04 <function> 00 00 00 both ways", arguments: [
        (UFunction.startDataTransferActivation, "68 04 07 00 00 00"),
        (.startDataTransferConfirmation, "68 04 0b 00 00 00"),
        (.stopDataTransferActivation, "68 04 13 00 00 00"),
        (.stopDataTransferConfirmation, "68 04 23 00 00 00"),
        (.testFrameActivation, "68 04 43 00 00 00"),
        (.testFrameConfirmation, "68 04 83 00 00 00"),
    ])
    func unnumbered(_ function: UFunction, _ octets: String) throws {
        #expect(Frame.unnumbered(function).encoded() == hex(octets))
        #expect(try Frame(decoding: hex(octets)) == .unnumbered(function))
    }

    @Test("S- and I-frames carry N(S) and N(R) shifted left by one, low octet first", arguments: [
        (UInt16(0), "00 00"), (1, "02 00"), (127, "fe 00"), (128, "00 01"), (255, "fe 01"), (16_384, "00 80"), (32_767, "fe ff"),
    ])
    func numbering(_ number: UInt16, _ octets: String) throws {
        let n = SequenceNumber(number)
        let s = Frame.supervisory(receive: n)
        #expect(s.encoded() == hex("68 04 01 00" + octets))
        #expect(try Frame(decoding: s.encoded()) == s)
        let asdu = hex("64 01 06 00 01 00 00 00 00 14")
        let i = Frame.information(send: n, receive: SequenceNumber(3), asdu: asdu)
        #expect(i.encoded() == hex("68 0e" + octets + "06 00") + asdu)
        #expect(try Frame(decoding: i.encoded()) == i)
    }

    @Test("sequence numbers count modulo 32768: 32767 is followed by 0")
    func wrap() {
        #expect(SequenceNumber(32_767).next == .zero)
        #expect(SequenceNumber(32_768) == .zero)
        #expect(SequenceNumber(2).distance(from: SequenceNumber(32_766)) == 4)
        #expect(SequenceNumber(5).distance(from: SequenceNumber(5)) == 0)
    }

    @Test("a malformed APDU is a typed error", arguments: [
        ("67 04 07 00 00 00", IEC104Error.Code.badStart),
        ("", .badLength),
        ("68", .badLength),
        ("68 00", .badLength),
        ("68 03 07 00 00", .badLength),
        ("68 fe" + String(repeating: " 00", count: 254), .badLength),
        ("68 ff" + String(repeating: " 00", count: 255), .badLength),
        ("68 04 07 00 00", .badLength),                           // shorter than its length says
        ("68 04 07 00 00 00 00", .badLength),                     // longer
        ("68 05 07 00 00 00 00", .badLength),                     // a U-frame of length 5
        ("68 05 01 00 00 00 00", .badLength),                     // an S-frame of length 5
        ("68 09 00 00 00 00 64 01 06 00 01", .badLength),         // an I-frame whose ASDU is under 6 octets
        ("68 04 0f 00 00 00", .badControl),                       // STARTDT act and con at once
        ("68 04 03 00 00 00", .badControl),                       // a U-frame with no function
        ("68 04 07 01 00 00", .badControl),                       // a U-frame with a reserved octet set
        ("68 04 05 00 00 00", .badControl),                       // an S-frame with reserved bits in octet 1
        ("68 04 01 01 00 00", .badControl),                       // an S-frame with octet 2 set
        ("68 04 01 00 01 00", .badControl),                       // an S-frame with bit 1 of octet 3 set
        ("68 0a 00 00 01 00 64 01 06 00 01 00", .badControl),     // an I-frame with bit 1 of octet 3 set
    ])
    func malformed(_ octets: String, _ expected: IEC104Error.Code) {
        #expect(code { _ = try Frame(decoding: hex(octets)) } == expected, "\(octets)")
        // A frame whose length octet matches its octets is refused by the splitter with the same code.
        let bytes = hex(octets)
        if bytes.count >= 2, bytes.count == Int(bytes[1]) + 2 || bytes[0] != 0x68 || bytes[1] < 4 || bytes[1] > 253 {
            var splitter = FrameSplitter()
            splitter.append(bytes)
            #expect(code { _ = try splitter.next() } == expected, "splitter on \(octets)")
        }
    }

    @Test("the splitter returns frames fed one octet at a time, and several frames from one read")
    func splitting() throws {
        let stream = hex("68 04 07 00 00 00") + hex("68 0e 02 00 04 00 64 01 06 00 01 00 00 00 00 14") + hex("68 04 01 00 0a 00")
        var splitter = FrameSplitter()
        var frames: [Frame] = []
        for octet in stream {
            splitter.append([octet])
            while let frame = try splitter.next() { frames.append(frame) }
        }
        #expect(frames == [.unnumbered(.startDataTransferActivation),
                           .information(send: SequenceNumber(1), receive: SequenceNumber(2), asdu: hex("64 01 06 00 01 00 00 00 00 14")),
                           .supervisory(receive: SequenceNumber(5))])
        #expect(splitter.bufferedCount == 0)
        var whole = FrameSplitter()
        whole.append(stream + stream)
        var count = 0
        while try whole.next() != nil { count += 1 }
        #expect(count == 6)
    }

    @Test("the splitter refuses a bad length as soon as its octet arrives, then stays refused")
    func earlyRefusal() {
        var splitter = FrameSplitter()
        splitter.append([0x68])
        #expect(code { _ = try splitter.next() } == nil)
        splitter.append([0xFE])
        #expect(code { _ = try splitter.next() } == .badLength)
        splitter.append(hex("68 04 07 00 00 00"))
        #expect(code { _ = try splitter.next() } == .badLength)
        var garbage = FrameSplitter()
        garbage.append([0x00])
        #expect(code { _ = try garbage.next() } == .badStart)
    }

    @Test("every error has a stable IEC104_ name")
    func names() {
        let codes: [IEC104Error.Code] = [.badStart, .badLength, .badControl, .badVSQ, .badObjectLength, .badTime, .badAddress,
                                         .elementMismatch, .tooLarge, .badAcknowledgement, .badSequence, .notStarted,
                                         .unexpectedFrame, .windowFull, .t1Expired]
        #expect(Set(codes.map(\.description)).count == codes.count)
        #expect(codes.allSatisfy { $0.description.hasPrefix("IEC104_") })
        #expect(IEC104Error.Code.badLength.description == "IEC104_BAD_LENGTH")
    }
}
