import BessBase
import ControlCore
import Synchrophasor
import Testing

/// A name field of CFG-3: one length byte, then the bytes.
func lengthPrefixed(_ text: String) -> [UInt8] {
    let raw = Array(text.utf8)
    return [UInt8(raw.count)] + raw
}

/// A CFG-3 body (C37.118.2-2011 Table 10) for the stream `configurationBody()` describes as CFG-2:
/// one PMU, one float polar phasor, no analog, no digital, 50 Hz, CFGCNT 7, DATA_RATE 50.
func configuration3Body(continuation: UInt16 = 0, numPMU: UInt16 = 1, phasors: UInt16 = 1, station: [UInt8] = lengthPrefixed("PMU A"),
                        phasorName: [UInt8] = lengthPrefixed("VA"), format: UInt16 = 0x000F, fnom: UInt16 = 1) -> [UInt8] {
    var body: [UInt8] = [UInt8(continuation >> 8), UInt8(continuation & 0xFF), 0x00, 0x0F, 0x42, 0x40, UInt8(numPMU >> 8), UInt8(numPMU & 0xFF)]
    body += station + [0x05, 0x82] + (0..<16).map { UInt8($0 * 3) }                // STN, IDCODE 1410, G_PMU_ID
    body += [UInt8(format >> 8), UInt8(format & 0xFF), UInt8(phasors >> 8), UInt8(phasors & 0xFF), 0, 0, 0, 0]
    body += phasorName
    body += [0x00, 0x80, 0x0C, 0x2A] + [0x3F, 0x80, 0x00, 0x00] + [0xBF, 0x00, 0x00, 0x00]  // PHSCALE: flags, type, user, Y 1, θ −0.5
    body += [0x41, 0xE4, 0xE9, 0x44] + [0x42, 0x9A, 0x6B, 0x02] + [0x7F, 0x80, 0x00, 0x00]  // LAT 28.6139, LON 77.209, ELEV ∞
    body += Array("M".utf8) + [0x00, 0x00, 0x9C, 0x40] + [0xFF, 0xFF, 0xF8, 0x30]        // SVC_CLASS, WINDOW 40000, GRP_DLY −2000
    body += [UInt8(fnom >> 8), UInt8(fnom & 0xFF), 0x00, 0x07, 0x00, 0x32]                 // FNOM, CFGCNT 7, DATA_RATE 50
    return body
}

@Suite("C37.118.2 CFG-3")
struct Configuration3Tests {
    var goodData: [UInt8] {
        frame(type: .data, body: [0, 0] + [0x43, 0x66, 0x80, 0x00, 0x3F, 0x00, 0x00, 0x00] + [0x42, 0x48, 0x00, 0x00, 0, 0, 0, 0])
    }

    @Test("a CFG-3 decodes to the Configuration its CFG-2 gives, plus its own fields")
    func decodes() throws {
        let extended = try Configuration(decoding: frame(type: .configuration3, body: configuration3Body()))
        let plain = try Configuration(decoding: frame(type: .configuration2, body: configurationBody()))
        #expect(extended.header.type == .configuration3)
        #expect(extended.timeBase == plain.timeBase && extended.dataRate == plain.dataRate)
        #expect(extended.dataFrameSize == plain.dataFrameSize)
        let pmu = try #require(extended.pmus.first)
        #expect(pmu.stationName == "PMU A" && pmu.idcode == 1410 && pmu.phasorNames == ["VA"])
        #expect(pmu.format == plain.pmus[0].format && pmu.nominalHz == 50 && pmu.configurationCount == 7)
        #expect(pmu.phasorUnits.isEmpty && pmu.analogUnits.isEmpty && pmu.digitalUnits.isEmpty)
        #expect(plain.pmus[0].extended == nil)
        let more = try #require(pmu.extended)
        #expect(more.globalID == (0..<16).map { UInt8($0 * 3) })
        #expect(more.phasorScales == [PhasorScale(modificationFlags: 0x0080, typeIndication: 0x0C, userDesignation: 0x2A, scale: 1, angleOffset: -0.5)])
        #expect(more.phasorScales[0].isCurrent && more.phasorScales[0].component == 4)
        #expect(more.analogScales.isEmpty)
        #expect(more.latitude == 28.6139 && more.longitude == 77.209 && more.elevation == .infinity)
        #expect(more.serviceClass == UInt8(ascii: "M"))
        #expect(more.windowMicroseconds == 40000 && more.groupDelayMicroseconds == -2000)
        // The data stream it describes decodes exactly as under CFG-2.
        let underExtended = try DataFrame(decoding: goodData, configuration: extended)
        #expect(underExtended == (try DataFrame(decoding: goodData, configuration: plain)))
        #expect(try underExtended.measurement(idcode: 1410).frequencyHz == 50)
    }

    @Test("names are escaped and may be empty or 255 bytes long")
    func names() throws {
        let long = String(repeating: "n", count: 255)
        let body = configuration3Body(station: [3, 0x41, 0x07, 0xC3], phasorName: lengthPrefixed(long))
        let pmu = try #require(try Configuration(decoding: frame(type: .configuration3, body: body)).pmus.first)
        #expect(pmu.stationName == "A??")
        #expect(pmu.phasorNames == [long])
        let empty = try Configuration(decoding: frame(type: .configuration3, body: configuration3Body(station: [0], phasorName: [0])))
        #expect(empty.pmus[0].stationName == "" && empty.pmus[0].phasorNames == [""])
    }

    @Test("CONT_IDX other than 0 (one frame of several): PMU_CONFIGURATION_FRAGMENTED")
    func fragmented() {
        for index: UInt16 in [1, 2, 0xFFFF] {
            #expect(code { _ = try Configuration(decoding: frame(type: .configuration3, body: configuration3Body(continuation: index))) } == .configurationFragmented)
        }
        #expect(SynchrophasorError(.configurationFragmented, message: "x").description == "PMU_CONFIGURATION_FRAGMENTED: x")
    }

    @Test("lengths and counts past the frame, limits, reserved bits, trailing bytes: PMU_CONFIGURATION_INVALID")
    func refused() {
        let bodies: [[UInt8]] = [
            configuration3Body(station: [255] + Array("PMU A".utf8)),       // STN longer than what is left
            configuration3Body(phasorName: [200, 0x56, 0x41]),               // a channel name overrunning the frame
            configuration3Body(phasors: 0xFFFF),                              // above the limit
            configuration3Body(phasors: 200),                                 // within the limit, not within the frame
            configuration3Body(numPMU: 2),                                    // a second PMU that is not there
            configuration3Body(numPMU: 0xFFFF),
            configuration3Body(format: 0x0010),
            configuration3Body(fnom: 0x0003),
            configuration3Body() + [0],                                       // a byte after DATA_RATE
            Array(configuration3Body().prefix(7)),                            // cut inside TIME_BASE
        ]
        for (index, body) in bodies.enumerated() {
            #expect(code { _ = try Configuration(decoding: frame(type: .configuration3, body: body)) } == .configurationInvalid, "body \(index)")
        }
        // Bounded before allocation: a huge announced count in a small frame is refused at once.
        #expect(code { _ = try Configuration(decoding: frame(type: .configuration3, body: configuration3Body(phasors: 256))) } == .configurationInvalid)
    }

    @Test("Configuration(decoding:) takes CFG-1, CFG-2 and CFG-3 by frame type, nothing else")
    func byFrameType() throws {
        #expect(try Configuration(decoding: frame(type: .configuration1, body: configurationBody())).header.type == .configuration1)
        // A CFG-2 body read as CFG-3: its TIME_BASE's first word (0x000F) is read as CONT_IDX.
        #expect(code { _ = try Configuration(decoding: frame(type: .configuration3, body: configurationBody())) } == .configurationFragmented)
        #expect(code { _ = try Configuration(decoding: frame(type: .configuration2, body: configuration3Body())) } == .configurationInvalid)
        #expect(code { _ = try Configuration(decoding: frame(type: .header, body: configuration3Body())) } == .frameTypeUnexpected)
    }
}
