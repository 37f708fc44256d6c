import Foundation
import Testing

/// The fuzz harnesses in the ordinary suite: every target's seeds and every input that once broke a
/// harness (Tests/FuzzRegressions/TARGET/) run through the same invariants `make fuzz` checks. The
/// harnesses are compiled into this target from Fuzz/FuzzTargets (the `Harnesses` link), so
/// the replay and the fuzzer run the same code.
@Suite("Fuzz regressions")
struct FuzzRegressionTests {
    /// Tests/FuzzRegressions, found from this file (Tests/FuzzTests/FuzzRegressionTests.swift).
    static let directory = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("FuzzRegressions").path

    @Test("every target's seeds break no invariant", arguments: FuzzTarget.allCases)
    func seeds(_ target: FuzzTarget) {
        let seeds = target.seeds()
        #expect(!seeds.isEmpty)
        for (index, seed) in seeds.enumerated() {
            let violations = target.run(seed)
            #expect(violations.isEmpty, "\(target.rawValue) seed \(index): \(violations.prefix(3))")
        }
    }

    @Test("every input that once failed now passes", arguments: FuzzTarget.allCases)
    func regressions(_ target: FuzzTarget) throws {
        let folder = Self.directory + "/" + target.rawValue
        let names = (try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []
        for name in names.sorted() {
            let data = try #require(FileManager.default.contents(atPath: folder + "/" + name))
            let violations = target.run([UInt8](data))
            #expect(violations.isEmpty, "\(target.rawValue)/\(name): \(violations.prefix(3))")
        }
    }

    @Test("the regressions folder holds the inputs the README lists")
    func listed() throws {
        let readme = try String(contentsOfFile: Self.directory + "/README.md", encoding: .utf8)
        var files = 0
        for target in FuzzTarget.allCases {
            let names = (try? FileManager.default.contentsOfDirectory(atPath: Self.directory + "/" + target.rawValue)) ?? []
            for name in names {
                files += 1
                #expect(readme.contains("`\(name)`"), "\(target.rawValue)/\(name) is not described in README.md")
            }
        }
        #expect(files >= 2)
    }
}
