import BessBase
import ControlCore
import Synchrophasor

/// IEEE C37.118.2 frames as a PMU (or anyone reaching the PMU client's socket) sends them, as a TCP
/// stream: each frame cut by `Frame.size(atStartOf:)`, checked by `Frame(decoding:)`, then decoded
/// as a configuration (CFG-1, CFG-2, CFG-3) or as a data frame against the newest configuration the
/// stream brought, or until then one of pyPMU's CFG-2s. The first input byte picks that starting
/// configuration (bits 2–1) and whether the harness writes each frame's SYNC, FRAMESIZE and CHK
/// itself (bit 0), so that the fuzzer reaches the bodies past the CRC.
///
/// Invariants: a refusal carries one of the codes for its stage; a frame that passes the checks
/// encodes back to exactly its bytes; a configuration stays within the limits (PMUs, channels, data
/// frame size), its names are printable ASCII, its extended part is there exactly for CFG-3, and a
/// CONT_IDX refusal comes only from CFG-3; a data frame of the configuration's stream and length is
/// never refused, and decodes to one measurement per PMU with the configured channel counts, an
/// integer FREQ within FNOM ± 32.767 Hz, an integer DFREQ within ± 327.67 Hz/s, float values finite
/// or nil.
enum PMUHarness {
    /// At most this many frames per input (a 4 KiB input holds at most 256).
    static let maxFrames = 256

    /// Codes `Frame` may refuse a frame with.
    static let frameCodes: [SynchrophasorErrorCode] = [.frameTooShort, .frameSizeInvalid, .crcMismatch, .syncInvalid, .frameTypeUnknown, .versionUnsupported]

    /// pyPMU's CFG-2s (integer; float at 60 Hz; two PMUs): what data frames decode against until the
    /// stream sends a configuration of its own.
    static let fixed: [Configuration] = [PMUPeerFrames.cfg2Int, PMUPeerFrames.cfg2Float, PMUPeerFrames.cfg2Multi].compactMap {
        try? Configuration(decoding: IEC104SessionHarness.hexOctets($0))
    }

    static func run(_ input: inout FuzzInput) -> [String] {
        var violations = Violations()
        guard fixed.count == 3 else { return ["pyPMU's CFG-2 seeds no longer decode"] }
        let mode = input.u8()
        var stream = input.rest()
        var configuration = fixed[Int(mode >> 1) % fixed.count]
        // The whole input as one frame: accepted only when FRAMESIZE says exactly its length.
        do {
            let whole = try Frame(decoding: stream)
            violations.check(whole.header.frameSize == stream.count, "a frame of \(stream.count) bytes accepted with FRAMESIZE \(whole.header.frameSize)")
        } catch {
            violations.check(frameCodes.contains(error.code), "the whole input refused with \(error.code)")
        }
        var offset = 0
        var frames = 0
        while offset < stream.count, frames < maxFrames {
            if mode & 1 != 0 { repair(&stream, at: offset) }
            let rest = stream[offset...]
            let size: Int?
            do {
                size = try Frame.size(atStartOf: rest)
            } catch {
                violations.check([.syncInvalid, .frameTypeUnknown, .versionUnsupported, .frameSizeInvalid].contains(error.code), "the stream refused with \(error.code)")
                break
            }
            guard let size, size <= rest.count else { break }
            violations.check(size >= Frame.minimumSize && size <= 65535, "a frame of \(size) bytes announced")
            let bytes = Array(rest.prefix(size))
            frames += 1
            offset += size
            step(bytes, &configuration, &violations)
        }
        return violations.list
    }

    /// Gives the frame at `offset` a good SYNC byte, a FRAMESIZE no longer than what is left and its CHK.
    static func repair(_ stream: inout [UInt8], at offset: Int) {
        let left = stream.count - offset
        guard left >= Frame.minimumSize else { return }
        let size = min(left, Int(stream[offset + 2]) << 8 | Int(stream[offset + 3]))
        guard size >= Frame.minimumSize else { return }
        stream[offset] = 0xAA
        stream[offset + 2] = UInt8(size >> 8)
        stream[offset + 3] = UInt8(size & 0xFF)
        let check = crcCCITT(stream[offset..<(offset + size - 2)])
        stream[offset + size - 2] = UInt8(check >> 8)
        stream[offset + size - 1] = UInt8(check & 0xFF)
    }

    /// One whole frame: checked, encoded back, then decoded by its type.
    static func step(_ bytes: [UInt8], _ configuration: inout Configuration, _ violations: inout Violations) {
        let frame: Frame
        do {
            frame = try Frame(decoding: bytes)
        } catch {
            violations.check(frameCodes.contains(error.code), "a frame refused with \(error.code)")
            return
        }
        let header = frame.header
        let again = Frame.encode(type: header.type, version: header.version, idcode: header.idcode, secondOfCentury: header.secondOfCentury,
                                 fractionOfSecond: header.fractionOfSecond, timeQuality: header.timeQuality, body: frame.body)
        violations.check(again == bytes, "a \(header.type) frame encodes back to other bytes")
        switch header.type {
        case .configuration1, .configuration2, .configuration3:
            do {
                let decoded = try Configuration(frame: frame)
                check(decoded, &violations)
                configuration = decoded
            } catch {
                violations.check(error.code == .configurationInvalid || (error.code == .configurationFragmented && header.type == .configuration3),
                                 "a \(header.type) refused with \(error.code)")
            }
        case .data:
            do {
                check(try DataFrame(frame: frame, configuration: configuration), configuration, &violations)
            } catch {
                violations.check([.idcodeUnknown, .dataMismatch].contains(error.code), "a data frame refused with \(error.code)")
                violations.check(header.idcode != configuration.header.idcode || header.frameSize != configuration.dataFrameSize,
                                 "a data frame of the configuration's stream and length refused with \(error.code)")
            }
        case .header, .command:
            break
        }
    }

    static func check(_ configuration: Configuration, _ violations: inout Violations) {
        let extended = configuration.header.type == .configuration3
        violations.check((1...64).contains(configuration.pmus.count), "\(configuration.pmus.count) PMUs")
        violations.check((1...0xFF_FFFF).contains(configuration.timeBase) && configuration.dataRate != 0, "TIME_BASE \(configuration.timeBase), DATA_RATE \(configuration.dataRate)")
        violations.check(configuration.dataFrameSize == Frame.minimumSize + configuration.pmus.reduce(0) { $0 + $1.dataSize }
                         && configuration.dataFrameSize <= 65535, "data frames of \(configuration.dataFrameSize) bytes")
        for pmu in configuration.pmus {
            let names = [pmu.stationName] + pmu.phasorNames + pmu.analogNames + pmu.digitalNames
            violations.check(names.allSatisfy { $0.utf8.allSatisfy { (0x20...0x7E).contains($0) } && $0.last != " " }, "a name not escaped to printable ASCII")
            violations.check([pmu.phasorNames.count, pmu.analogNames.count, pmu.digitalUnits.count].allSatisfy { $0 <= 256 }, "more than 256 channels of a kind")
            violations.check(pmu.digitalNames.count == 16 * pmu.digitalUnits.count, "\(pmu.digitalNames.count) names for \(pmu.digitalUnits.count) digital words")
            violations.check(pmu.nominalHz == 50 || pmu.nominalHz == 60, "FNOM \(pmu.nominalHz) Hz")
            if let more = pmu.extended {
                violations.check(extended && more.globalID.count == 16 && more.phasorScales.count == pmu.phasorNames.count
                                 && more.analogScales.count == pmu.analogNames.count && pmu.phasorUnits.isEmpty && pmu.analogUnits.isEmpty,
                                 "CFG-3 fields that do not match the channels (or from a \(configuration.header.type))")
            } else {
                violations.check(!extended && pmu.phasorUnits.count == pmu.phasorNames.count && pmu.analogUnits.count == pmu.analogNames.count,
                                 "CFG-1/2 units that do not match the channels (or a CFG-3 without its fields)")
            }
        }
    }

    static func check(_ data: DataFrame, _ configuration: Configuration, _ violations: inout Violations) {
        violations.check(data.measurements.count == configuration.pmus.count, "\(data.measurements.count) measurements for \(configuration.pmus.count) PMUs")
        for (measurement, pmu) in zip(data.measurements, configuration.pmus) {
            violations.check(measurement.idcode == pmu.idcode && measurement.phasors.count == pmu.phasorNames.count
                             && measurement.analogs.count == pmu.analogNames.count && measurement.digitals.count == pmu.digitalUnits.count,
                             "PMU \(pmu.idcode)'s measurement does not have its configured channels")
            if pmu.format.frequencyFloat {
                violations.check(measurement.frequencyHz?.isFinite ?? true && measurement.rocofHzPerSecond?.isFinite ?? true, "a float FREQ or DFREQ not finite")
            } else {
                violations.check(measurement.frequencyHz.map { abs($0 - Double(pmu.nominalHz)) <= 32.767 } ?? true, "an integer FREQ beyond FNOM ± 32.767 Hz")
                violations.check(measurement.rocofHzPerSecond.map { abs($0) <= 327.67 } ?? true, "an integer DFREQ beyond ± 327.67 Hz/s")
            }
            violations.check((try? data.measurement(idcode: pmu.idcode))?.idcode == pmu.idcode, "PMU \(pmu.idcode) not found by its IDCODE")
        }
    }

    /// Each of pyPMU's frames and the peer's CFG-3s alone (against the configuration that describes
    /// them), then as streams (configuration, then data), with and without the harness's repair.
    static func seeds() -> [[UInt8]] {
        let hex = IEC104SessionHarness.hexOctets
        let single: [[UInt8]] = [
            [0] + hex(PMUPeerFrames.cfg2Int), [0] + hex(PMUPeerFrames.dataInt), [2] + hex(PMUPeerFrames.cfg2Float), [2] + hex(PMUPeerFrames.dataFloat),
            [4] + hex(PMUPeerFrames.cfg2Multi), [4] + hex(PMUPeerFrames.dataMulti), [0] + hex(PMUPeerFrames.commandStart), [0] + hex(PMUPeerFrames.cfg3Int),
            [4] + hex(PMUPeerFrames.cfg3Multi), [0] + hex(PMUPeerFrames.cfg3Continued),
        ]
        let streams: [[UInt8]] = [
            hex(PMUPeerFrames.cfg3Int) + hex(PMUPeerFrames.dataInt) + hex(PMUPeerFrames.dataInt),
            hex(PMUPeerFrames.cfg2Float) + hex(PMUPeerFrames.dataFloat) + hex(PMUPeerFrames.cfg3Multi) + hex(PMUPeerFrames.dataMulti),
            hex(PMUPeerFrames.commandStart) + hex(PMUPeerFrames.cfg2Multi) + hex(PMUPeerFrames.dataMulti) + hex(PMUPeerFrames.cfg3Continued),
        ]
        return single + streams.flatMap { [[0] + $0, [1] + $0] }
    }
}

/// Frames from `hil/peers/pmu_peer.py` (`frames`: pyPMU's encoder; `cfg3`: built from the standard's
/// field table, pyPMU having no CFG-3 encoder), as hex.
enum PMUPeerFrames {
    static let cfg2Int = [
        "aa31017605826553f1000007a120000f4240000153746174696f6e2041202020202020200582000000020001000156412020202020202020",
        "20202020202056422020202020202020202020202020414e414c4f4731202020202020202020425245414b45522030202020202020204252",
        "45414b4552203120202020202020425245414b4552203220202020202020425245414b4552203320202020202020425245414b4552203420",
        "202020202020425245414b4552203520202020202020425245414b4552203620202020202020425245414b45522037202020202020204252",
        "45414b4552203820202020202020425245414b4552203920202020202020425245414b4552203130202020202020425245414b4552203131",
        "202020202020425245414b4552203132202020202020425245414b4552203133202020202020425245414b45522031342020202020204252",
        "45414b4552203135202020202020000df8470100b2d0000000010000ffff0001000100323bf1",
    ].joined()
    static let dataInt = "aa01002205826553f10200030d400000006400c8fed40190ff6affe7000c80014d68"
    static let cfg2Float = [
        "aa3101761e366553f1000007a120000f4240000153746174696f6e2041202020202020201e36000f00020001000156412020202020202020",
        "20202020202056422020202020202020202020202020414e414c4f4731202020202020202020425245414b45522030202020202020204252",
        "45414b4552203120202020202020425245414b4552203220202020202020425245414b4552203320202020202020425245414b4552203420",
        "202020202020425245414b4552203520202020202020425245414b4552203620202020202020425245414b45522037202020202020204252",
        "45414b4552203820202020202020425245414b4552203920202020202020425245414b4552203130202020202020425245414b4552203131",
        "202020202020425245414b4552203132202020202020425245414b4552203133202020202020425245414b45522031342020202020204252",
        "45414b4552203135202020202020000df8470100b2d0000000010000ffff00000002003203c2",
    ].joined()
    static let dataFloat = "aa0100301e366553f10300000000b805436680003f00000041240000bf800000426fb8523f4000003fc000000000a0b7"
    static let cfg2Multi = [
        "aa31019400636553f10100000000000f42400002504d55204f4e452020202020202020200007000f00010001000056312020202020202020",
        "20202020202041312020202020202020202020202020000000000100000100010003504d552054574f202020202020202020000800000001",
        "0000000156322020202020202020202020202020443020202020202020202020202020204431202020202020202020202020202044322020",
        "2020202020202020202020204433202020202020202020202020202044342020202020202020202020202020443520202020202020202020",
        "2020202044362020202020202020202020202020443720202020202020202020202020204438202020202020202020202020202044392020",
        "2020202020202020202020204431302020202020202020202020202044313120202020202020202020202020443132202020202020202020",
        "20202020443133202020202020202020202020204431342020202020202020202020202044313520202020202020202020202020000df847",
        "0000ffff000000040019777b",
    ].joined()
    static let dataMulti = "aa01003200636553f1040000000000003f800000000000004248147b3dcccccd402000000000000500060019fffd00ff02af"
    static let commandStart = "aa41001205826553f105000000000002b103"
    static let cfg3Int = [
        "aa52012f05826553f100000000000000000f424000010953746174696f6e20410582000102030405060708090a0b0c0d0e0f000000020001",
        "000102564102564207414e414c4f473109425245414b4552203009425245414b4552203109425245414b4552203209425245414b45522033",
        "09425245414b4552203409425245414b4552203509425245414b4552203609425245414b4552203709425245414b4552203809425245414b",
        "455220390a425245414b45522031300a425245414b45522031310a425245414b45522031320a425245414b45522031330a425245414b4552",
        "2031340a425245414b45522031350000040041127bfc0000000001800d073eea5f85bf00000040200000bf8000000000ffff41e4e944429a",
        "6b027f8000005000009c40fffff830000100010032105f",
    ].joined()
    static let cfg3Multi = [
        "aa5201d200636553f101000000000000000f42400002e3504d55204f4e4520e2809420556e7465727765726b2053c3bc6420787878787878",
        "7878787878787878787878787878787878787878787878787878787878787878787878787878787878787878787878787878787878787878",
        "7878787878787878787878787878787878787878787878787878787878787878787878787878787878787878787878787878787878787878",
        "7878787878787878787878787878787878787878787878787878787878787878787878787878787878787878787878787878787878787878",
        "78787878787878787878787878787878787878787878787878780007ffffffffffffffffffffffffffffffff000f00010001000007563109",
        "6c696e6500000001003f800000000000003f80000000000000c20779a743173595426a00004d000186a00000c3500001000307504d552054",
        "574f00086465666768696a6b6c6d6e6f70717273000000010000000102563202443002443102443202443302443402443502443602443702",
        "44380244390344313003443131034431320344313303443134034431350000040041127bfc0000000000ffff007f8000007f8000007f8000",
        "00500000000000000000000000040019b5da",
    ].joined()
    static let cfg3Continued = [
        "aa52012f05826553f100000000000001000f424000010953746174696f6e20410582000102030405060708090a0b0c0d0e0f000000020001",
        "000102564102564207414e414c4f473109425245414b4552203009425245414b4552203109425245414b4552203209425245414b45522033",
        "09425245414b4552203409425245414b4552203509425245414b4552203609425245414b4552203709425245414b4552203809425245414b",
        "455220390a425245414b45522031300a425245414b45522031310a425245414b45522031320a425245414b45522031330a425245414b4552",
        "2031340a425245414b45522031350000040041127bfc0000000001800d073eea5f85bf00000040200000bf8000000000ffff41e4e944429a",
        "6b027f8000005000009c40fffff8300001000100325764",
    ].joined()
}
