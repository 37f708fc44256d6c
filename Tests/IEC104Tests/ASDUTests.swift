import BessBase
import ControlCore
import IEC104
import Testing

/// The ASDU codec: the example APDUs of grid-interfaces.md §2.2 (captured between c104 peers) and
/// frames built from the standard's field definitions, byte-exact both ways; every type's length
/// and VSQ rules; unknown types answered negatively.
@Suite("IEC 104 ASDU")
struct ASDUTests {
    static let time = CP56Time2a(year: 26, month: 11, day: 27, hour: 2, minute: 14, milliseconds: 7_621)

    @Test("the spontaneous M_ME_TF_1 of §2.2: IOA 1001, 13.25, CP56Time2a 2026-11-27 02:14:07.621")
    func spontaneousFloat() throws {
        let apdu = hex("68 19 02 00 02 00 24 01 03 00 01 00 e9 03 00 00 00 54 41 00 c5 1d 0e 02 1b 0b 1a")
        guard case let .information(send, receive, octets) = try Frame(decoding: apdu) else {
            Issue.record("not an I-frame")
            return
        }
        #expect(send == SequenceNumber(1) && receive == SequenceNumber(1))
        let asdu = try ASDU(decoding: octets)
        #expect(asdu.type == .measuredFloatWithTime && asdu.cause.cause == .spontaneous && asdu.commonAddress == 1)
        #expect(asdu.objects == [InformationObject(address: 1001, element: .measuredFloatWithTime(13.25, .good, Self.time))])
        #expect(try asdu.encoded() == octets)
    }

    @Test("the select-before-operate C_SE_NC_1 of §2.2: −4.0 with S/E = 1, then execute with S/E = 0")
    func setpoint() throws {
        let select = ASDU(type: .setpointFloat, cause: CauseOfTransmission(cause: .activationConfirmation), commonAddress: 1,
                          objects: [InformationObject(address: 3001, element: .setpointFloat(-4, SetpointQualifier(select: true)))])
        #expect(try select.encoded() == hex("32 01 07 00 01 00 b9 0b 00 00 00 80 c0 80"))
        var execute = select
        execute.information = .objects([InformationObject(address: 3001, element: .setpointFloat(-4, SetpointQualifier(select: false)))])
        #expect(try execute.encoded() == hex("32 01 07 00 01 00 b9 0b 00 00 00 80 c0 00"))
        #expect(try ASDU(decoding: hex("32 01 07 00 01 00 b9 0b 00 00 00 80 c0 80")) == select)
    }

    /// One ASDU of every type this module serves, with its octets written out from the standard.
    static let vectors: [(ASDU, String)] = {
        func asdu(_ type: TypeID, _ cause: Cause, _ objects: [InformationObject], sequence: Bool = false) -> ASDU {
            ASDU(type: type, cause: CauseOfTransmission(cause: cause), commonAddress: 1, objects: objects, isSequence: sequence)
        }
        let t = "c5 1d 0e 02 1b 0b 1a"
        return [
            (asdu(.singlePoint, .interrogatedByStation, [.init(address: 2001, element: .singlePoint(true, .good)),
                                                         .init(address: 2002, element: .singlePoint(false, [.invalid, .notTopical]))]),
             "01 02 14 00 01 00 d1 07 00 01 d2 07 00 c0"),
            (asdu(.singlePoint, .interrogatedByStation, [.init(address: 2001, element: .singlePoint(true, .substituted)),
                                                         .init(address: 2002, element: .singlePoint(false, .blocked))], sequence: true),
             "01 82 14 00 01 00 d1 07 00 21 10"),
            (asdu(.doublePoint, .interrogatedByStation, [.init(address: 2101, element: .doublePoint(.on, .good)),
                                                         .init(address: 2102, element: .doublePoint(.indeterminate, .invalid))]),
             "03 02 14 00 01 00 35 08 00 02 36 08 00 83"),
            (asdu(.measuredFloat, .interrogatedByStation, [.init(address: 1001, element: .measuredFloat(13.25, .good)),
                                                           .init(address: 1002, element: .measuredFloat(-1, .overflow))], sequence: true),
             "0d 82 14 00 01 00 e9 03 00 00 00 54 41 00 00 00 80 bf 01"),
            (asdu(.integratedTotals, .requestedByGeneralCounter, [.init(address: 4001, element: .integratedTotals(
                BinaryCounterReading(value: 123_456, sequence: 3, carry: true)))]),
             "0f 01 25 00 01 00 a1 0f 00 40 e2 01 00 23"),
            (asdu(.singlePointWithTime, .spontaneous, [.init(address: 2005, element: .singlePointWithTime(true, .good, time))]),
             "1e 01 03 00 01 00 d5 07 00 01 " + t),
            (asdu(.doublePointWithTime, .spontaneous, [.init(address: 2101, element: .doublePointWithTime(.off, .good, time))]),
             "1f 01 03 00 01 00 35 08 00 01 " + t),
            (asdu(.measuredFloatWithTime, .spontaneous, [.init(address: 1001, element: .measuredFloatWithTime(13.25, .good, time))]),
             "24 01 03 00 01 00 e9 03 00 00 00 54 41 00 " + t),
            (asdu(.integratedTotalsWithTime, .spontaneous, [.init(address: 4002, element: .integratedTotalsWithTime(
                BinaryCounterReading(value: -2, sequence: 31, adjusted: true, invalid: true), time))]),
             "25 01 03 00 01 00 a2 0f 00 fe ff ff ff df " + t),
            (asdu(.singleCommand, .activation, [.init(address: 3101, element: .singleCommand(SingleCommand(on: true, select: true, qualifier: 1)))]),
             "2d 01 06 00 01 00 1d 0c 00 85"),
            (asdu(.setpointFloat, .activation, [.init(address: 3001, element: .setpointFloat(25.5, SetpointQualifier(select: false)))]),
             "32 01 06 00 01 00 b9 0b 00 00 00 cc 41 00"),
            (asdu(.singleCommandWithTime, .activation, [.init(address: 3102, element: .singleCommandWithTime(SingleCommand(on: false), time))]),
             "3a 01 06 00 01 00 1e 0c 00 00 " + t),
            (asdu(.setpointFloatWithTime, .activation, [.init(address: 3002, element: .setpointFloatWithTime(
                -10, SetpointQualifier(select: true), time))]),
             "3f 01 06 00 01 00 ba 0b 00 00 00 20 c1 80 " + t),
            (asdu(.endOfInitialisation, .initialised, [.init(address: 0, element: .endOfInitialisation(0))]),
             "46 01 04 00 01 00 00 00 00 00"),
            (asdu(.interrogation, .activation, [.init(address: 0, element: .interrogation(20))]),
             "64 01 06 00 01 00 00 00 00 14"),
            (asdu(.counterInterrogation, .activation, [.init(address: 0, element: .counterInterrogation(5))]),
             "65 01 06 00 01 00 00 00 00 05"),
            (asdu(.clockSynchronisation, .activation, [.init(address: 0, element: .clockSynchronisation(time))]),
             "67 01 06 00 01 00 00 00 00 " + t),
        ]
    }()

    @Test("every type encodes to the standard's octets and decodes back", arguments: vectors)
    func roundTrip(_ asdu: ASDU, _ octets: String) throws {
        #expect(try asdu.encoded() == hex(octets))
        #expect(try ASDU(decoding: hex(octets)) == asdu)
    }

    @Test("the COT octets carry cause, P/N, T and the originator; the common address is little-endian")
    func header() throws {
        let octets = hex("64 01 c7 05 34 12 00 00 00 14")
        let asdu = try ASDU(decoding: octets)
        #expect(asdu.cause == CauseOfTransmission(cause: .activationConfirmation, negative: true, test: true, originator: 5))
        #expect(asdu.commonAddress == 0x1234)
        #expect(try asdu.encoded() == octets)
    }

    @Test("an object count that does not match the octets exactly is IEC104_BAD_OBJECT_LENGTH, for every type", arguments: vectors)
    func objectLength(_ asdu: ASDU, _ octets: String) {
        let bytes = hex(octets)
        #expect(code { _ = try ASDU(decoding: bytes.dropLast()) } == .badObjectLength)
        #expect(code { _ = try ASDU(decoding: bytes + [0]) } == .badObjectLength)
        if asdu.objects.count == 1 && !asdu.isSequence && !asdu.type.isCommandLike {
            // One more object announced than present.
            var more = bytes
            more[1] += 1
            #expect(code { _ = try ASDU(decoding: more) } == .badObjectLength)
        }
    }

    @Test("VSQ: no objects, several commands, or SQ = 1 where the type never is a sequence is IEC104_BAD_VSQ", arguments: [
        "64 00 06 00 01 00",                                          // C_IC_NA_1 with no object
        "01 00 14 00 01 00",                                          // M_SP_NA_1 with no object
        "64 02 06 00 01 00 00 00 00 14 00 00 00 14",                  // two interrogations
        "64 81 06 00 01 00 00 00 00 14",                              // an interrogation as a sequence
        "2d 02 06 00 01 00 1d 0c 00 01 1e 0c 00 01",                  // two single commands
        "1e 82 03 00 01 00 d5 07 00 01 c5 1d 0e 02 1b 0b 1a 01 c5 1d 0e 02 1b 0b 1a", // M_SP_TB_1 as a sequence
    ])
    func vsq(_ octets: String) {
        #expect(code { _ = try ASDU(decoding: hex(octets)) } == .badVSQ, "\(octets)")
    }

    /// As c104's interrogation answers carry it.
    @Test("one time-tagged object with SQ = 1 decodes and keeps the bit")
    func singleTimedSequence() throws {
        let octets = hex("24 81 14 00 07 00 ed 03 00 00 00 76 42 00 20 af 13 0b 1b 0b 1a")
        let asdu = try ASDU(decoding: octets)
        #expect(asdu.isSequence && asdu.objects.count == 1 && asdu.objects[0].address == 1005)
        #expect(try asdu.encoded() == octets)
    }

    @Test("an ASDU outside 6…249 octets is IEC104_BAD_LENGTH")
    func asduLength() {
        #expect(code { _ = try ASDU(decoding: hex("64 01 06 00 01")) } == .badLength)
        #expect(code { _ = try ASDU(decoding: [UInt8](repeating: 0xC8, count: 250)) } == .badLength)
    }

    @Test("a sequence takes consecutive addresses, and one running past 16 777 215 is IEC104_BAD_ADDRESS")
    func sequenceAddresses() throws {
        #expect(code { _ = try ASDU(decoding: hex("01 83 14 00 01 00 fe ff ff 00 01 00")) } == .badAddress)
        let ok = try ASDU(decoding: hex("01 82 14 00 01 00 fe ff ff 00 01"))
        #expect(ok.objects.map(\.address) == [0xFF_FFFE, 0xFF_FFFF])
    }

    @Test("an unknown type decodes with its octets and is mirrored with COT 44 and P/N = 1, byte-exact")
    func unknownType() throws {
        let octets = hex("66 01 06 00 01 00 b9 0b 00")  // C_RD_NA_1 (102), which this module does not serve
        let asdu = try ASDU(decoding: octets)
        #expect(!asdu.type.isKnown)
        #expect(asdu.information == .unknownType(count: 1, octets: hex("b9 0b 00")))
        #expect(try asdu.encoded() == octets)
        #expect(try asdu.negativeAnswer(.unknownType).encoded() == hex("66 01 6c 00 01 00 b9 0b 00"))
        // The same for a known type with an unknown common address (COT 46) or IOA (47).
        let gi = try ASDU(decoding: hex("64 01 06 07 09 00 00 00 00 14"))
        #expect(try gi.negativeAnswer(.unknownCommonAddress).encoded() == hex("64 01 6e 07 09 00 00 00 00 14"))
        #expect(try gi.answer(.activationConfirmation).encoded() == hex("64 01 07 07 09 00 00 00 00 14"))
    }

    @Test("a time tag with a field out of range inside an ASDU is IEC104_BAD_TIME")
    func badTimeInside() {
        #expect(code { _ = try ASDU(decoding: hex("67 01 06 00 01 00 00 00 00 c5 1d 0e 02 1b 0d 1a")) } == .badTime)  // month 13
    }

    @Test("encoding refuses what decoding would refuse", arguments: [
        (ASDU(type: .measuredFloat, cause: CauseOfTransmission(cause: .spontaneous), commonAddress: 1,
              objects: [InformationObject(address: 1, element: .singlePoint(true, .good))]), IEC104Error.Code.elementMismatch),
        (ASDU(type: .measuredFloat, cause: CauseOfTransmission(cause: .spontaneous), commonAddress: 1, objects: []), .badVSQ),
        (ASDU(type: .singlePoint, cause: CauseOfTransmission(cause: .spontaneous), commonAddress: 1,
              objects: [InformationObject(address: 0x100_0000, element: .singlePoint(true, .good))]), .badAddress),
        (ASDU(type: .singlePoint, cause: CauseOfTransmission(cause: .spontaneous), commonAddress: 1,
              objects: [InformationObject(address: 1, element: .singlePoint(true, .good)),
                        InformationObject(address: 3, element: .singlePoint(true, .good))], isSequence: true), .badAddress),
        (ASDU(type: .clockSynchronisation, cause: CauseOfTransmission(cause: .activation), commonAddress: 1,
              objects: [InformationObject(address: 0, element: .clockSynchronisation(
                  CP56Time2a(year: 26, month: 2, day: 30, hour: 0, minute: 0, milliseconds: 0)))]), .badTime),
        (ASDU(type: .measuredFloat, cause: CauseOfTransmission(cause: .spontaneous), commonAddress: 1,
              objects: (0..<128).map { InformationObject(address: UInt32($0), element: .measuredFloat(0, .good)) }), .tooLarge),
        (ASDU(type: .measuredFloat, cause: CauseOfTransmission(cause: .spontaneous), commonAddress: 1,
              objects: (0..<31).map { InformationObject(address: UInt32($0), element: .measuredFloat(0, .good)) }), .tooLarge),
    ])
    func encodeRefusals(_ asdu: ASDU, _ expected: IEC104Error.Code) {
        #expect(code { _ = try asdu.encoded() } == expected)
    }

    @Test("the largest ASDU, 30 floats of 8 octets after the header, fits 249 octets and an APDU of 253")
    func largest() throws {
        let asdu = ASDU(type: .measuredFloat, cause: CauseOfTransmission(cause: .interrogatedByStation), commonAddress: 1,
                        objects: (0..<30).map { InformationObject(address: UInt32($0), element: .measuredFloat(Float($0), .good)) })
        let octets = try asdu.encoded()
        #expect(octets.count == 246)
        let frame = Frame.information(send: .zero, receive: .zero, asdu: octets).encoded()
        #expect(try Frame(decoding: frame) == .information(send: .zero, receive: .zero, asdu: octets))
    }
}

extension TypeID {
    /// Commands and system types: one object only.
    var isCommandLike: Bool { [45, 50, 58, 63, 70, 100, 101, 103].contains(rawValue) }
}
