import Foundation
import TestSupport
import Testing

/// docs/architecture.md's drawing and threads table, held against Package.swift and Sources.
///
/// - The drawing is the first fenced block under "## Module graph": every target of Package.swift
///   appears in it as a whole word.
/// - The threads tables are the rows under "## Threads" whose first cell starts with a name in
///   backticks; those names and the thread-name literals in Sources (`.start(name: "…")`,
///   `CurrentThread.name("…")`, `thread.name = "…"`) are the same set.
extension ArchitectureDocTests {
    @Test("the drawing names every target of Package.swift")
    func drawingNamesEveryTarget() throws {
        let targets = Set(Self.packageGraph(try Self.read("Package.swift")).keys)
        let drawing = Self.drawing(try Self.read("docs/architecture.md"))
        #expect(!drawing.isEmpty, "docs/architecture.md has no drawing (a ``` block) under \"## Module graph\"")
        let missing = Self.missing(targets, from: drawing)
        #expect(missing.isEmpty, "docs/architecture.md's drawing lacks the targets \(missing)")
    }

    @Test("the threads table and the thread names in Sources are the same set")
    func threadsTableMatchesSources() throws {
        let literals = try Self.threadNameLiterals(in: Self.sourceFiles())
        let documented = Self.documentedThreads(try Self.read("docs/architecture.md"))
        #expect(literals["bessd-cycle"] != nil, "no thread name found in Sources: \(literals)")
        let differences = Self.threadDifferences(sources: literals, documented: documented)
        #expect(differences.isEmpty, "docs/architecture.md, \"## Threads\", differs from Sources:\n\(differences.joined(separator: "\n"))")
    }

    @Test("a target missing from the drawing, or a thread missing from either side, is a difference")
    func missingTargetsAndThreadsAreCaught() throws {
        let doc = """
            ## Module graph
            ```
            bessd ─► Service     bess-hil
            Fieldbus (CAN) ─► CModbus
            ```
            - Cycle → none
            ## Threads
            | Thread | Code |
            |---|---|
            | `bessd-cycle` (SCHED_FIFO, `realtime.cpu`) | Cycle |
            | watchdog (unnamed) | Service |
            | `bessd-gone` | nowhere |
            ## Walks
            | `not-a-thread` | here |
            """
        #expect(Self.missing(["bessd", "bess-hil", "Fieldbus", "FieldbusTests", "Cycle", "CModbus"], from: Self.drawing(doc))
            == ["Cycle", "FieldbusTests"])
        #expect(Self.documentedThreads(doc) == ["bessd-cycle", "bessd-gone"])
        let sources = try Self.threadNameLiterals(in: [
            ("A.swift", #"worker.start(name: "bessd-cycle", prefaultedStackBytes: 1) { loop() }"#),
            ("B.swift", "// worker.start(name: \"bessd-commented\")\nlet thread = Thread {}\nthread.name = \"fleet-\\(t)\""),
            ("C.swift", #"CurrentThread.name("bessd-resolve")"#),
        ])
        #expect(sources == ["bessd-cycle": "A.swift", "fleet-\\(t)": "B.swift", "bessd-resolve": "C.swift"])
        let differences = Self.threadDifferences(sources: sources, documented: Self.documentedThreads(doc))
        #expect(differences.count == 3, "\(differences)")
        #expect(differences.contains { $0.contains("bessd-resolve") && $0.contains("C.swift") }, "\(differences)")
        #expect(differences.contains { $0.contains("bessd-gone") && $0.contains("not in Sources") }, "\(differences)")
    }

    // MARK: - Reading

    /// The first fenced block under "## Module graph" (empty when there is none).
    static func drawing(_ text: String) -> String {
        var inSection = false, inFence = false
        var lines: [Substring] = []
        for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
            if line.hasPrefix("## ") {
                if inSection { break }
                inSection = line.trimmingCharacters(in: .whitespaces) == "## Module graph"
                continue
            }
            guard inSection else { continue }
            if line.hasPrefix("```") {
                if inFence { break }
                inFence = true
                continue
            }
            if inFence { lines.append(line) }
        }
        return lines.joined(separator: "\n")
    }

    /// The names of `targets` that `drawing` does not hold as a whole word (letters, digits, `_`
    /// and `-` bound a word), sorted.
    static func missing(_ targets: Set<String>, from drawing: String) -> [String] {
        let words = Set(drawing.split { !($0.isLetter || $0.isNumber || $0 == "_" || $0 == "-") }.map(String.init))
        return targets.subtracting(words).sorted()
    }

    /// The rows under "## Threads" whose first cell starts with a name in backticks: those names.
    static func documentedThreads(_ text: String) -> Set<String> {
        var inSection = false
        var names: Set<String> = []
        for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
            if line.hasPrefix("## ") {
                inSection = line.trimmingCharacters(in: .whitespaces) == "## Threads"
                continue
            }
            guard inSection, line.hasPrefix("|") else { continue }
            let cell = line.dropFirst().drop { $0 == " " }
            guard cell.first == "`", let end = cell.dropFirst().firstIndex(of: "`") else { continue }
            names.insert(String(cell[cell.index(after: cell.startIndex)..<end]))
        }
        return names
    }

    /// Every thread-name literal in `files` (path, text), with the file it is in; `//` lines skipped.
    static func threadNameLiterals(in files: [(path: String, text: String)]) throws -> [String: String] {
        let patterns = [#"\.start\(name: "([^"]+)""#, #"CurrentThread\.name\("([^"]+)"\)"#, #"[tT]hread\.name = "([^"]+)""#]
        let expressions = try patterns.map { try Regex($0, as: (Substring, Substring).self) }
        var names: [String: String] = [:]
        for file in files {
            for line in file.text.split(separator: "\n") where !line.trimmingCharacters(in: .whitespaces).hasPrefix("//") {
                for expression in expressions {
                    for match in line.matches(of: expression) { names[String(match.output.1)] = file.path }
                }
            }
        }
        return names
    }

    /// Every line that says how the names in Sources and in the doc differ; empty when they agree.
    static func threadDifferences(sources: [String: String], documented: Set<String>) -> [String] {
        let inSources = Set(sources.keys)
        return inSources.subtracting(documented).sorted().map { "- `\($0)` (\(sources[$0]!)) is not in the threads table" }
            + documented.subtracting(inSources).sorted().map { "- `\($0)` is in the threads table but not in Sources" }
    }

    /// Every .swift file under Sources, as its path from the package root and its text.
    static func sourceFiles() throws -> [(path: String, text: String)] {
        let root = Package.root.appendingPathComponent("Sources")
        guard let walk = FileManager.default.enumerator(at: root, includingPropertiesForKeys: nil) else { return [] }
        var files: [(path: String, text: String)] = []
        for case let url as URL in walk where url.pathExtension == "swift" {
            let path = "Sources/" + url.path.dropFirst(root.path.count + 1)
            files.append((path, try String(contentsOf: url, encoding: .utf8)))
        }
        #expect(files.count > 100, "Sources was not read: \(files.count) files")
        return files
    }
}
