import BessBase
import ControlCore
import Synchrophasor
import Testing

/// Bytes from hexadecimal text (spaces ignored).
func bytes(_ text: String) -> [UInt8] {
    let digits = Array(text.filter { !$0.isWhitespace })
    return stride(from: 0, to: digits.count - 1, by: 2).map { UInt8(String(digits[$0...$0 + 1]), radix: 16)! }
}

/// The code a throwing decode gives, or nil when it succeeds.
func code(_ body: () throws -> Void) -> SynchrophasorError.Code? {
    do {
        try body()
        return nil
    } catch {
        return (error as? SynchrophasorError)?.code
    }
}

/// A frame with its FRAMESIZE and CHK set from `body`.
func frame(type: FrameType, idcode: UInt16 = 1410, body: [UInt8]) -> [UInt8] {
    Frame.encode(type: type, idcode: idcode, secondOfCentury: 1_700_000_000, fractionOfSecond: 0, body: body)
}

/// A CFG-2 body: TIME_BASE, NUM_PMU, and one PMU (1 float polar phasor, no analog, no digital, 50 Hz).
func configurationBody(numPMU: UInt16 = 1, phasors: UInt16 = 1, idcode: UInt16 = 1410) -> [UInt8] {
    var body: [UInt8] = [0x00, 0x0F, 0x42, 0x40, UInt8(numPMU >> 8), UInt8(numPMU & 0xFF)]
    body += Array("PMU A           ".utf8) + [UInt8(idcode >> 8), UInt8(idcode & 0xFF), 0x00, 0x0F]
    body += [UInt8(phasors >> 8), UInt8(phasors & 0xFF), 0, 0, 0, 0]
    body += Array("VA              ".utf8) + [0, 0x0D, 0xF8, 0x47]  // one name, PHUNIT
    body += [0x00, 0x01, 0x00, 0x07, 0x00, 0x32]  // FNOM 50 Hz, CFGCNT 7, DATA_RATE 50
    return body
}

@Suite("C37.118.2 frame codec")
struct CodecTests {
    /// Vectors from Python's CRC-CCITT (an implementation no one here wrote), produced by:
    /// python3 -c "import binascii; [print(hex(binascii.crc_hqx(v, 0xFFFF))) for v in
    ///   [b'', b'123456789', bytes.fromhex('aa41001205826553f105000000000002'), bytes(range(256)), b'\xff'*64]]"
    /// → 0xffff 0x29b1 0xb103 0x3fbd 0xf154
    @Test("CRC-CCITT (0x1021, init 0xFFFF) equals binascii.crc_hqx on fixed vectors")
    func crcVectors() {
        #expect(crcCCITT([UInt8]()) == 0xFFFF)
        #expect(crcCCITT(Array("123456789".utf8)) == 0x29B1)
        #expect(crcCCITT(bytes("aa41001205826553f105000000000002")) == 0xB103)
        #expect(crcCCITT((0...255).map { UInt8($0) }) == 0x3FBD)
        #expect(crcCCITT([UInt8](repeating: 0xFF, count: 64)) == 0xF154)
    }

    @Test("a command frame: SYNC 0xAA41, FRAMESIZE 18, IDCODE, SOC, FRACSEC, CMD, CHK")
    func commandFrame() throws {
        let start = Command.startData.frame(idcode: 1410, secondOfCentury: 1_700_000_005)
        #expect(start == bytes("aa41 0012 0582 6553f105 00000000 0002 b103"))
        let decoded = try Frame(decoding: start)
        #expect(decoded.header.type == .command)
        #expect(decoded.header.idcode == 1410)
        #expect(decoded.header.frameSize == 18)
        #expect(Array(decoded.body) == [0x00, 0x02])
        #expect(Command.sendConfiguration2.frame(idcode: 1, secondOfCentury: 0).dropLast(2).suffix(2) == [0x00, 0x05])
    }

    @Test("FRACSEC: time-quality byte and fraction; seconds with TIME_BASE")
    func fracsec() throws {
        let encoded = Frame.encode(type: .data, idcode: 1, secondOfCentury: 100, fractionOfSecond: 250_000, timeQuality: 0x25, body: [])
        let header = try Frame(decoding: encoded).header
        #expect(header.timeQuality == 0x25)
        #expect(header.messageTimeQuality == 5)
        #expect(header.fractionOfSecond == 250_000)
        #expect(header.seconds(timeBase: 1_000_000) == 100.25)
    }

    @Test("a configuration built here decodes; names are escaped to printable ASCII")
    func configurationDecodes() throws {
        var body = configurationBody()
        body[6 + 5] = 0x07  // a control byte in STN
        let configuration = try Configuration(decoding: frame(type: .configuration2, body: body))
        #expect(configuration.timeBase == 1_000_000)
        #expect(configuration.pmus.count == 1)
        #expect(configuration.pmus[0].stationName == "PMU A?")
        #expect(configuration.pmus[0].phasorNames == ["VA"])
        #expect(configuration.pmus[0].format.frequencyFloat)
        #expect(configuration.pmus[0].nominalHz == 50)
        #expect(configuration.pmus[0].configurationCount == 7)
        #expect(configuration.dataRate == 50)
        #expect(configuration.dataFrameSize == 16 + 2 + 8 + 8)
    }

    @Test("STAT bits: data error, sync, sorting, trigger, configuration change, time quality, reason")
    func status() {
        let good = PMUStatus(rawValue: 0x0000)
        #expect(good.isUsable)
        let bad = PMUStatus(rawValue: 0b11_1_1_1_1_1_101_10_0110)
        #expect(bad.dataError == 3)
        #expect(!bad.isDataValid)
        #expect(bad.pmuSyncError && bad.sortedByArrival && bad.triggerDetected && bad.configurationChanged && bad.dataModified)
        #expect(bad.timeQuality == 5)
        #expect(bad.unlockedTime == 2)
        #expect(bad.triggerReason == 6)
        #expect(!PMUStatus(rawValue: 0x2000).isUsable)
        #expect(!PMUStatus(rawValue: 0x4000).isUsable)
    }
}

@Suite("C37.118.2 decoder refuses bad input with its code")
struct RefusalTests {
    let configuration: Configuration

    init() throws {
        configuration = try Configuration(decoding: frame(type: .configuration2, body: configurationBody()))
    }

    var goodData: [UInt8] {
        frame(type: .data, body: [0, 0] + [0x43, 0x66, 0x80, 0x00, 0x3F, 0x00, 0x00, 0x00] + [0x42, 0x48, 0x00, 0x00, 0, 0, 0, 0])
    }

    @Test("the good data frame decodes (the refusals below differ from it in one thing)")
    func goodDecodes() throws {
        let data = try DataFrame(decoding: goodData, configuration: configuration)
        #expect(try data.measurement(idcode: 1410).frequencyHz == 50)
        #expect(try data.measurement(idcode: 1410).phasors == [Phasor(first: 230.5, second: 0.5, polar: true)])
    }

    @Test("short input: PMU_FRAME_TOO_SHORT")
    func short() {
        #expect(code { _ = try Frame(decoding: [0xAA, 0x01, 0x00]) } == .frameTooShort)
        #expect(code { _ = try Frame(decoding: Array(goodData.dropLast())) } == .frameTooShort)
    }

    @Test("FRAMESIZE beyond the buffer, below 16 or above the maximum: their codes")
    func frameSize() throws {
        var data = goodData
        data[3] = 0xFF  // FRAMESIZE 0x00FF, buffer of 34
        #expect(code { _ = try Frame(decoding: data) } == .frameTooShort)
        data[2] = 0xFF
        #expect(code { _ = try Frame(decoding: data, limits: FrameLimits(maximumFrameSize: 1024)) } == .frameSizeInvalid)
        data[2] = 0; data[3] = 4
        #expect(code { _ = try Frame(decoding: data) } == .frameSizeInvalid)
        #expect(code { _ = try Frame.size(atStartOf: data) } == .frameSizeInvalid)
        #expect(try Frame.size(atStartOf: goodData) == goodData.count)
        #expect(try Frame.size(atStartOf: [0xAA, 0x01]) == nil)
    }

    @Test("a wrong CHK: PMU_CRC_MISMATCH")
    func crc() {
        var data = goodData
        data[data.count - 1] ^= 0x01
        #expect(code { _ = try Frame(decoding: data) } == .crcMismatch)
        data = goodData
        data[20] ^= 0x40  // a payload bit
        #expect(code { _ = try DataFrame(decoding: data, configuration: configuration) } == .crcMismatch)
    }

    @Test("SYNC, frame type and version: their codes")
    func sync() {
        #expect(code { _ = try Frame(decoding: [0xAB] + goodData.dropFirst()) } == .syncInvalid)
        #expect(code { _ = try Frame(decoding: [0xAA, 0x81] + goodData.dropFirst(2)) } == .syncInvalid)
        #expect(code { _ = try Frame(decoding: [0xAA, 0x61] + goodData.dropFirst(2)) } == .frameTypeUnknown)
        #expect(code { _ = try Frame(decoding: [0xAA, 0x03] + goodData.dropFirst(2)) } == .versionUnsupported)
        #expect(code { _ = try Configuration(decoding: goodData) } == .frameTypeUnexpected)
    }

    @Test("huge NUM_PMU or PHNMR, zero TIME_BASE, trailing bytes: PMU_CONFIGURATION_INVALID")
    func configurationRefused() {
        for body in [configurationBody(numPMU: 0xFFFF), configurationBody(numPMU: 2), configurationBody(phasors: 0xFFFF),
                     configurationBody(phasors: 200), [0, 0, 0, 0] + configurationBody().dropFirst(4), configurationBody() + [0]] {
            #expect(code { _ = try Configuration(decoding: frame(type: .configuration2, body: body)) } == .configurationInvalid)
        }
        #expect(code { _ = try Configuration(decoding: frame(type: .configuration2, body: Array(configurationBody().prefix(5)))) } == .configurationInvalid)
    }

    @Test("a data frame not matching its configuration: PMU_DATA_MISMATCH; another stream: PMU_IDCODE_UNKNOWN")
    func dataRefused() throws {
        let longer = frame(type: .data, body: Array(goodData.dropFirst(14).dropLast(2)) + [0, 0])
        #expect(code { _ = try DataFrame(decoding: longer, configuration: configuration) } == .dataMismatch)
        let shorter = frame(type: .data, body: Array(goodData.dropFirst(14).dropLast(4)))
        #expect(code { _ = try DataFrame(decoding: shorter, configuration: configuration) } == .dataMismatch)
        let other = frame(type: .data, idcode: 9, body: Array(goodData.dropFirst(14).dropLast(2)))
        #expect(code { _ = try DataFrame(decoding: other, configuration: configuration) } == .idcodeUnknown)
        let data = try DataFrame(decoding: goodData, configuration: configuration)
        #expect(code { _ = try data.measurement(idcode: 1411) } == .idcodeUnknown)
    }

    @Test("every code prints its stable name and a message")
    func description() {
        let error = SynchrophasorError(.crcMismatch, message: "CHK 0x0000")
        #expect(error.description == "PMU_CRC_MISMATCH: CHK 0x0000")
    }
}
