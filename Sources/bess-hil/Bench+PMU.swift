import ArgumentParser
import ControlCore
import Foundation
import Synchrophasor

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
