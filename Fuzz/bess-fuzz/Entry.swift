// bess-fuzz: the decoders' libFuzzer targets (Fuzz/FuzzTargets), a target only when BESS_FUZZ is set.
//
// Built by `make fuzz` (scripts/fuzz.sh) with `-sanitize=fuzzer,address -D BESS_FUZZ` in a build folder
// of its own (.build-fuzz): there `main` hands over to libFuzzer's driver, the target is named by
// BESS_FUZZ_TARGET, and BESS_FUZZ_WRITE_SEEDS=DIR writes the target's seeds into DIR and exits. Built
// without the flag (`BESS_FUZZ=1 swift build --build-path .build-replay --product bess-fuzz`) it is a
// replay tool: `bess-fuzz TARGET FILE...` runs each file through the target and exits 1 when any
// breaks an invariant (how a crash file from a fuzz run is checked after the fix).
import FuzzTargets
import Foundation

func writeSeeds(_ target: FuzzTarget, into directory: String) -> Int32 {
    try? FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    for (index, seed) in target.seeds().enumerated() {
        _ = FileManager.default.createFile(atPath: "\(directory)/seed-\(index)", contents: Data(seed))
    }
    return 0
}

#if BESS_FUZZ
import CFuzzer

nonisolated(unsafe) var selected: FuzzTarget = .can

/// One input: the target's invariants, and an abort (libFuzzer keeps the input) when one breaks.
func fuzzOne(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    let bytes = size > 0 && data != nil ? Array(UnsafeBufferPointer(start: data, count: size)) : []
    let violations = selected.run(bytes)
    if let first = violations.first {
        FileHandle.standardError.write(Data("BESS_FUZZ_INVARIANT \(selected.rawValue): \(first)\n".utf8))
        abort()
    }
    return 0
}

/// The entry point SwiftPM links as `main`: pick the target, then hand over to libFuzzer's driver.
@main
struct FuzzMain {
    static func main() {
        let name = ProcessInfo.processInfo.environment["BESS_FUZZ_TARGET"] ?? ""
        guard let target = FuzzTarget(rawValue: name) else {
            FileHandle.standardError.write(Data("bess-fuzz: BESS_FUZZ_TARGET must be one of \(FuzzTarget.allCases.map(\.rawValue)) (got '\(name)')\n".utf8))
            exit(2)
        }
        selected = target
        if let directory = ProcessInfo.processInfo.environment["BESS_FUZZ_WRITE_SEEDS"] { exit(writeSeeds(target, into: directory)) }
        var argc = CommandLine.argc
        var argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>? = CommandLine.unsafeArgv
        exit(LLVMFuzzerRunDriver(&argc, &argv) { data, size in fuzzOne(data, size) })
    }
}
#else
@main
struct Replay {
    static func main() {
        let arguments = Array(CommandLine.arguments.dropFirst())
        if arguments.first == "--seeds", arguments.count == 3, let target = FuzzTarget(rawValue: arguments[1]) {
            exit(writeSeeds(target, into: arguments[2]))
        }
        guard let name = arguments.first, let target = FuzzTarget(rawValue: name), arguments.count >= 2 else {
            print("usage: bess-fuzz TARGET FILE...   (replay)\n       bess-fuzz --seeds TARGET DIR\n"
                  + "targets: \(FuzzTarget.allCases.map(\.rawValue).joined(separator: ", ")); make fuzz runs them under libFuzzer")
            exit(2)
        }
        var failed = false
        for file in arguments.dropFirst() {
            guard let data = FileManager.default.contents(atPath: file) else {
                print("\(file): cannot read")
                failed = true
                continue
            }
            let violations = target.run([UInt8](data))
            print("\(file): \(violations.isEmpty ? "ok" : violations.joined(separator: "; "))")
            failed = failed || !violations.isEmpty
        }
        exit(failed ? 1 : 0)
    }
}
#endif
