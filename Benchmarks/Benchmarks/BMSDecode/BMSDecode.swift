import Benchmark
import Config
import ControlCore
import Fieldbus
import Foundation

/// What a BMS costs its worker per frame (issue 61: a profiled BMS costs no more than today's decoder):
/// one Pylontech LV transmission cycle (0x351, 0x355, 0x356, 0x359, 0x35C, 0x35E, 0x373) decoded 10,000
/// times by the hand-written `PylontechDecoder` and by `ProfiledCANDecoder` compiled from the built-in
/// `pylontech-lv` profile, the same frames to each; and the BYD C130 rack's 13-register block read
/// through `ProfiledModbusBMS` from `devices/byd-c130.yaml` (the vector of devices.md §6).
let benchmarks: @Sendable () -> Void = {
    Benchmark.defaultConfiguration = .init(metrics: [.wallClock, .cpuTotal, .mallocCountTotal],
                                           maxDuration: .seconds(5), maxIterations: 50)
    let state = PylontechBMSState(
        chargeVoltageLimit: 56.8, chargeCurrentLimit: 100, dischargeCurrentLimit: 120, dischargeVoltageLimit: 46,
        soc: 63, soh: 98, voltage: 52.4, current: -12.5, temperature: 24.5, minCellVoltage: 3.271,
        maxCellVoltage: 3.302, minCellTemperature: 23, maxCellTemperature: 26.5)
    let frames = state.frames()
    let rounds = 10_000 / frames.count

    Benchmark("BMS decode x 10000 frames, PylontechDecoder") { benchmark in
        var decoder = PylontechDecoder()
        benchmark.startMeasurement()
        decodeRounds(&decoder, frames, rounds)
        benchmark.stopMeasurement()
        blackHole(decoder.snapshot)
    }

    guard let lv = ProfileReader.read(text: BuiltInProfiles.pylontechLV, path: "").profile,
          let compiled = try? ProfiledCANDecoder(profile: lv)
    else { fatalError("the built-in pylontech-lv profile does not compile") }
    Benchmark("BMS decode x 10000 frames, profile pylontech-lv") { benchmark in
        var decoder = compiled
        benchmark.startMeasurement()
        decodeRounds(&decoder, frames, rounds)
        benchmark.stopMeasurement()
        precondition(decoder.snapshot.limits != nil && decoder.snapshot.cells != nil, "the profile decoded nothing")
        blackHole(decoder.snapshot)
    }

    let devices = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("devices")
    guard let byd = ProfileReader.read(path: devices.appendingPathComponent("byd-c130.yaml").path).profile,
          let rack = try? ProfiledModbusBMS(profile: byd)
    else { fatalError("devices/byd-c130.yaml does not compile") }
    // devices.md §6: FC 03 at 0x2100, 13 registers; the rest of each block zeros.
    let vector: [UInt16] = [0x1B00, 0, 0, 0x003F, 0x0062, 0x0011, 0x0D16, 0x008C, 0x0CE4, 0x0005, 0x0109, 0x0058, 0x00F0]
    let blocks = rack.readPlan.map { block -> (ModbusReadBlock, [UInt16]) in
        var words = [UInt16](repeating: 0, count: block.count)
        if block.address <= 0x2100, block.address + block.count >= 0x2100 + vector.count {
            for (k, w) in vector.enumerated() { words[0x2100 - block.address + k] = w }
        }
        if block.address <= 0x216C, block.address + block.count >= 0x216E {
            words[0x216C - block.address] = 0x01F4
            words[0x216D - block.address] = 0x0320
        }
        return (block, words)
    }
    Benchmark("BMS Modbus ingest x 10000 blocks, profile byd-c130") { benchmark in
        var bms = rack
        var t: Int64 = 0
        benchmark.startMeasurement()
        for k in 0..<10_000 {
            let (block, words) = blocks[k % blocks.count]
            t += 100_000_000
            blackHole(bms.ingest(block, words: words, at: MonotonicInstant(nanoseconds: t)))
        }
        benchmark.stopMeasurement()
        blackHole(bms.snapshot)
    }
}

@inline(never)
func decodeRounds<D: BMSDecoder>(_ decoder: inout D, _ frames: [CANFrame], _ rounds: Int) {
    var t: Int64 = 0
    for _ in 0..<rounds {
        for frame in frames {
            t += 1_000_000
            blackHole(decoder.ingest(frame, at: MonotonicInstant(nanoseconds: t)))
        }
    }
}
