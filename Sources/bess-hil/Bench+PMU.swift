import ArgumentParser
import ControlCore
import Foundation
import Synchrophasor

/// A PMU's C37.118.2-2011 stream as bess-hil sends it in the benches: CFG-2 and data frames for
/// `pmus` PMUs (IDCODE `idcode`, `idcode + 1`, …), each with two phasors, one analog and one digital
/// word, in integer form (FREQ in mHz from 50 Hz, DFREQ × 100) or float form (everything float32,
/// polar phasors, FREQ in Hz).
struct PMUStream {
    var idcode: UInt16
    var pmus: Int
    var float: Bool
    var dataRate: Int16 = 50
    static let timeBase: UInt32 = 1_000_000

    /// The CFG-2 frame describing the stream.
    func configuration2(secondOfCentury: UInt32 = 1_700_000_000) -> [UInt8] {
        var body: [UInt8] = []
        body.appendWord(PMUStream.timeBase)
        body.appendHalf(UInt16(pmus))
        for index in 0..<pmus {
            body += name("PMU \(index + 1)")
            body.appendHalf(idcode &+ UInt16(index))
            body.appendHalf(float ? 0x000F : 0x0000)
            body.appendHalf(2); body.appendHalf(1); body.appendHalf(1)  // PHNMR, ANNMR, DGNMR
            for channel in ["VA", "IA", "P"] + (0..<16).map({ "BREAKER \($0)" }) { body += name(channel) }
            body.appendWord(915_527); body.appendWord(0x0100_0000 | 45_776)  // PHUNIT: volts, amperes
            body.appendWord(0x0100_0001)                                       // ANUNIT: RMS, scale 1
            body.appendWord(0x0000_FFFF)                                       // DIGUNIT
            body.appendHalf(1); body.appendHalf(1)                             // FNOM 50 Hz, CFGCNT 1
        }
        body.appendHalf(UInt16(bitPattern: dataRate))
        return Frame.encode(type: .configuration2, idcode: idcode, secondOfCentury: secondOfCentury, fractionOfSecond: 0, body: body)
    }

    /// The CFG-3 frame describing the same stream (C37.118.2-2011 Table 10, version 2): names with a
    /// length byte, G_PMU_ID, PHSCALE, ANSCALE, DIGUNIT, location unspecified, class M.
    func configuration3(secondOfCentury: UInt32 = 1_700_000_000) -> [UInt8] {
        var body: [UInt8] = [0, 0]  // CONT_IDX: the only frame
        body.appendWord(PMUStream.timeBase)
        body.appendHalf(UInt16(pmus))
        for index in 0..<pmus {
            body += prefixed("PMU \(index + 1)")
            body.appendHalf(idcode &+ UInt16(index))
            body += (0..<16).map { UInt8(truncatingIfNeeded: index &* 16 &+ $0) }
            body.appendHalf(float ? 0x000F : 0x0000)
            body.appendHalf(2); body.appendHalf(1); body.appendHalf(1)
            for channel in ["VA", "IA", "P"] + (0..<16).map({ "BREAKER \($0)" }) { body += prefixed(channel) }
            for (kind, scale) in [(UInt32(0x0000_0400), Float(9.15527)), (0x0000_0C00, 0.45776)] {  // phase A voltage, current
                body.appendWord(kind); body.appendWord(scale.bitPattern); body.appendWord(Float(0).bitPattern)
            }
            body.appendWord(Float(1).bitPattern); body.appendWord(Float(0).bitPattern)  // ANSCALE
            body.appendWord(0x0000_FFFF)                                                // DIGUNIT
            for _ in 0..<3 { body.appendWord(Float.infinity.bitPattern) }               // PMU_LAT, LON, ELEV
            body.append(UInt8(ascii: "M"))
            body.appendWord(40_000); body.appendWord(0)                                 // WINDOW, GRP_DLY (µs)
            body.appendHalf(1); body.appendHalf(1)                                      // FNOM 50 Hz, CFGCNT 1
        }
        body.appendHalf(UInt16(bitPattern: dataRate))
        return Frame.encode(type: .configuration3, version: 2, idcode: idcode, secondOfCentury: secondOfCentury, fractionOfSecond: 0, body: body)
    }

    /// One data frame: every PMU reporting `frequencyHz` and `rocof` with STAT `status`.
    func data(frequencyHz: Double, rocof: Double, status: UInt16 = 0, secondOfCentury: UInt32, fraction: UInt32) -> [UInt8] {
        var body: [UInt8] = []
        for _ in 0..<pmus {
            body.appendHalf(status)
            if float {
                for value: Float in [230.5, 0.25, 12.5, -2.0] { body.appendWord(value.bitPattern) }
                body.appendWord(Float(frequencyHz).bitPattern)
                body.appendWord(Float(rocof).bitPattern)
                body.appendWord(Float(1500).bitPattern)
            } else {
                for value: Int16 in [25_000, 300, 1_200, -40] { body.appendHalf(UInt16(bitPattern: value)) }
                body.appendHalf(UInt16(bitPattern: Int16(clamping: Int(((frequencyHz - 50) * 1000).rounded()))))
                body.appendHalf(UInt16(bitPattern: Int16(clamping: Int((rocof * 100).rounded()))))
                body.appendHalf(1500)
            }
            body.appendHalf(0x0001)  // the digital word
        }
        return Frame.encode(type: .data, idcode: idcode, secondOfCentury: secondOfCentury, fractionOfSecond: fraction, body: body)
    }

    private func prefixed(_ text: String) -> [UInt8] { [UInt8(text.utf8.count)] + Array(text.utf8) }

    private func name(_ text: String) -> [UInt8] {
        Array((text + String(repeating: " ", count: 16)).utf8.prefix(16))
    }
}

extension [UInt8] {
    mutating func appendHalf(_ value: UInt16) { append(contentsOf: [UInt8(value >> 8), UInt8(value & 0xFF)]) }
    mutating func appendWord(_ value: UInt32) { appendHalf(UInt16(value >> 16)); appendHalf(UInt16(value & 0xFFFF)) }
}

/// The C37.118.2 decoder's cost per frame, in process: whole frames (CRC, header, body) decoded as a
/// PMU client decodes them, each round timing `frames` decodes over 64 distinct frames.
struct PMUDecodeCost: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "pmu-decode",
        abstract: "C37.118.2 decode cost per frame: data frames of 1 PMU (integer) and 4 PMUs (float), a CFG-2 and a CFG-3 of 4 PMUs.")
    @Option(help: "Decodes timed per round.") var frames = 200_000
    @Option(help: "Rounds (the summary gives their median and fastest).") var rounds = 10

    func run() throws {
        let integer = PMUStream(idcode: 1410, pmus: 1, float: false)
        let floating = PMUStream(idcode: 7734, pmus: 4, float: true)
        let integerConfiguration = try Configuration(decoding: integer.configuration2())
        let floatConfiguration = try Configuration(decoding: floating.configuration2())
        func dataFrames(_ stream: PMUStream) -> [[UInt8]] {
            (0..<64).map { (index: Int) -> [UInt8] in
                let hz: Double = 49.9 + Double(index) * 0.003
                let rocof: Double = Double(index % 7) * 0.05 - 0.15
                return stream.data(frequencyHz: hz, rocof: rocof, secondOfCentury: 1_700_000_000 + UInt32(index / 50), fraction: UInt32(index % 50) * 20_000)
            }
        }
        let integerFrames = dataFrames(integer)
        let floatFrames = dataFrames(floating)
        let configurations = (0..<64).map { (index: Int) -> [UInt8] in
            PMUStream(idcode: 7734, pmus: 4, float: true, dataRate: index % 2 == 0 ? 25 : 50).configuration2(secondOfCentury: 1_700_000_000 + UInt32(index))
        }
        // Each decode is checked: the cost is of decoding that gives the right answer.
        for (index, frame) in integerFrames.enumerated() {
            let decoded = try DataFrame(decoding: frame, configuration: integerConfiguration).measurement(idcode: 1410).frequencyHz ?? .nan
            guard abs(decoded - (49.9 + Double(index) * 0.003)) < 0.0006 else { throw ValidationError("integer frame \(index) decodes to \(decoded) Hz") }
        }
        for (index, frame) in floatFrames.enumerated() {
            let decoded = try DataFrame(decoding: frame, configuration: floatConfiguration).measurement(idcode: 7737).frequencyHz ?? .nan
            guard abs(decoded - (49.9 + Double(index) * 0.003)) < 1e-4 else { throw ValidationError("float frame \(index) decodes to \(decoded) Hz") }
        }
        let integerNs = try time { sum, i in sum += try DataFrame(decoding: integerFrames[i & 63], configuration: integerConfiguration).measurements[0].frequencyHz ?? 0 }
        let floatNs = try time { sum, i in sum += try DataFrame(decoding: floatFrames[i & 63], configuration: floatConfiguration).measurements[3].frequencyHz ?? 0 }
        let configurationNs = try time { sum, i in sum += Double(try Configuration(decoding: configurations[i & 63]).dataRate) }
        let extended = (0..<64).map { (index: Int) -> [UInt8] in
            PMUStream(idcode: 7734, pmus: 4, float: true, dataRate: index % 2 == 0 ? 25 : 50).configuration3(secondOfCentury: 1_700_000_000 + UInt32(index))
        }
        let decoded3 = try Configuration(decoding: extended[0])
        guard decoded3.dataFrameSize == floatConfiguration.dataFrameSize, decoded3.pmus.map(\.format) == floatConfiguration.pmus.map(\.format) else {
            throw ValidationError("the CFG-3 does not describe the CFG-2's stream")
        }
        let extendedNs = try time { sum, i in sum += Double(try Configuration(decoding: extended[i & 63]).dataRate) }
        print("pmu-decode: \(frames) decodes × \(rounds) rounds; data frames \(integerFrames[0].count) B (1 PMU integer), "
              + "\(floatFrames[0].count) B (4 PMUs float); CFG-2 \(configurations[0].count) B, CFG-3 \(extended[0].count) B (4 PMUs)")
        print(String(format: "SUMMARY pmu_decode int1_ns=%.1f float4_ns=%.1f cfg2_ns=%.1f cfg3_ns=%.1f int1_min_ns=%.1f float4_min_ns=%.1f cfg2_min_ns=%.1f cfg3_min_ns=%.1f",
                     integerNs.median, floatNs.median, configurationNs.median, extendedNs.median,
                     integerNs.fastest, floatNs.fastest, configurationNs.fastest, extendedNs.fastest))
    }

    /// Nanoseconds per call of `body` over `frames` calls, per round: the median and the fastest round.
    func time(_ body: (inout Double, Int) throws -> Void) throws -> (median: Double, fastest: Double) {
        var perCall: [Double] = []
        var sum = 0.0
        let clock = ContinuousClock()
        for _ in 0..<max(1, rounds) {
            let start = clock.now
            for i in 0..<frames { try body(&sum, i) }
            perCall.append(Double((clock.now - start).nanosecondsClamped) / Double(max(1, frames)))
        }
        guard sum.isFinite else { throw ValidationError("decoded values summed to \(sum)") }
        let sorted = perCall.sorted()
        return (sorted[sorted.count / 2], sorted[0])
    }
}
