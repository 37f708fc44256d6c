import BessBase
import ControlCore
import Foundation
import Uplink

/// Spool segments and state as a power cut, a bad disk or a hostile hand could leave them. Invariants:
/// the spool opens (damage is cut, never a refusal to start); what it replays is in order, each seq
/// once (a damaged middle segment leaves a gap), all below the next seq it hands out; a record appended after recovery is there after the
/// next start (nothing lost).
enum SpoolHarness {
    /// On tmpfs when there is one: the spool fsyncs, and a disk would make this target ten times slower.
    static let directory = (FileManager.default.fileExists(atPath: "/dev/shm") ? "/dev/shm/" : NSTemporaryDirectory())
        + "bess-fuzz-spool-\(getpid())"

    static func clear() {
        try? FileManager.default.removeItem(atPath: directory)
        try? FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    }

    static func run(_ input: inout FuzzInput) -> [String] {
        clear()
        let shape = input.u8()
        if shape & 4 != 0 {
            // Bit 3: a state file longer than 255 bytes (two slots 4 KiB apart).
            let state = input.take(shape & 8 != 0 ? Int(input.u16()) : Int(input.u8()))
            _ = FileManager.default.createFile(atPath: directory + "/state", contents: Data(state))
        }
        let count = Int(shape & 3) + 1
        for index in 0..<count {
            let bytes = index == count - 1 ? input.rest() : input.take(Int(input.u16()))
            let name = String(format: "seg-%020llu.log", UInt64(index) * 1000 + 1)
            _ = FileManager.default.createFile(atPath: directory + "/" + name, contents: Data(bytes))
        }
        var violations = Violations()
        let payload: [UInt8] = Array("after recovery".utf8)
        let appended: UInt64
        do throws(SpoolError) {
            let spool = try Spool(directory: directory, maxBytes: 64 << 10, segmentBytes: 4096, syncInterval: .seconds(3600))
            let replay = try spool.records(after: 0, limit: 100_000)
            // Damage in a middle segment is cut, so a gap is allowed; going back or twice is not.
            for (a, b) in zip(replay, replay.dropFirst()) {
                violations.check(b.seq > a.seq, "replay goes from seq \(a.seq) back to \(b.seq)")
            }
            let next = spool.nextSeq
            violations.check(replay.allSatisfy { $0.seq < next }, "a replayed seq is not below the next seq \(next)")
            // A spool whose records reach the end of the sequence refuses further ones, coded.
            if next >= Spool.maxSeq {
                do throws(SpoolError) {
                    _ = try spool.append(payload)
                    violations.check(false, "a record appended at seq \(next), past the end of the sequence")
                } catch {
                    violations.check(error.code == .sequenceExhausted, "at the end of the sequence: \(error)")
                }
                return violations.list
            }
            appended = try spool.append(payload)
            violations.check(appended == next, "appended as \(appended), next seq was \(next)")
        } catch {
            violations.check(false, "the spool refused to open or append after recovery: \(error)")
            return violations.list
        }
        do throws(SpoolError) {
            let again = try Spool(directory: directory, maxBytes: 64 << 10, segmentBytes: 4096, syncInterval: .seconds(3600))
            let found = try again.records(after: appended &- 1, limit: 1).first
            violations.check(found?.seq == appended && found?.payload == payload,
                             "record \(appended) appended after recovery is gone after a restart (found \(String(describing: found?.seq)))")
        } catch {
            violations.check(false, "the spool refused to reopen: \(error)")
        }
        return violations.list
    }

    /// Real segments: a spool written by the code itself, then read back as files.
    static func seeds() -> [[UInt8]] {
        clear()
        var seeds: [[UInt8]] = []
        do throws(SpoolError) {
            let spool = try Spool(directory: directory, maxBytes: 64 << 10, segmentBytes: 1024, syncInterval: .seconds(3600))
            for i in 0..<40 { try spool.append(Array("{\"seq\": \(i), \"kind\": \"sample\", \"power_w\": 1200}".utf8)) }
            try spool.acknowledge(upTo: 12)
        } catch {
            return []
        }
        let names = ((try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []).filter { $0.hasPrefix("seg-") }.sorted()
        let segments = names.compactMap { FileManager.default.contents(atPath: directory + "/" + $0).map { [UInt8]($0) } }
        let state = FileManager.default.contents(atPath: directory + "/state").map { [UInt8]($0) } ?? []
        guard !segments.isEmpty else { return [] }
        func compose(_ parts: [[UInt8]], state: [UInt8]?) -> [UInt8] {
            let long = (state?.count ?? 0) > 255
            var bytes: [UInt8] = [UInt8(parts.count - 1) | (state == nil ? 0 : 4) | (long ? 8 : 0)]
            if let state {
                bytes += long ? [UInt8(state.count >> 8), UInt8(state.count & 0xFF)] : [UInt8(state.count)]
                bytes += state
            }
            for (i, part) in parts.enumerated() {
                if i < parts.count - 1 { bytes += [UInt8(part.count >> 8), UInt8(part.count & 0xFF)] }
                bytes += part
            }
            return bytes
        }
        seeds.append(compose([segments[0]], state: nil))
        seeds.append(compose(Array(segments.prefix(3)), state: state))
        var torn = segments[0]
        torn.removeLast(7)
        seeds.append(compose([torn], state: state))
        // The older text form of the state file, which a spool written before the slots still has.
        seeds.append(compose(Array(segments.prefix(2)), state: Array("12 0 41\n".utf8)))
        clear()
        return seeds
    }
}
