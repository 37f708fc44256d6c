import Foundation
import TestSupport
import Testing

/// docs/architecture.md's module graph, held against Package.swift.
///
/// The graph is the list under "## Module graph", one line per target: `- Target → Dep1, Dep2` (the
/// targets of this package it depends on, any order; `none` for none). Products of other packages
/// (Yams, NIO, …) are not part of it.
@Suite("docs/architecture.md matches Package.swift")
struct ArchitectureDocTests {
    /// A target and the targets it depends on.
    typealias Graph = [String: Set<String>]

    @Test("the module graph lists every target with exactly its target dependencies")
    func moduleGraphMatchesPackage() throws {
        let package = Self.packageGraph(try Self.read("Package.swift"))
        let documented = Self.documentedGraph(try Self.read("docs/architecture.md"))
        #expect(package["bessd"] != nil && package["ControlCore"] != nil, "Package.swift was not parsed: \(package)")
        let differences = Self.differences(package: package, documented: documented)
        #expect(differences.isEmpty, "docs/architecture.md, \"## Module graph\", differs from Package.swift:\n\(differences.joined(separator: "\n"))")
    }

    @Test("a dependency added to Package.swift alone, or a target, is a difference")
    func addedDependencyIsCaught() throws {
        let text = try Self.read("Package.swift")
        let documented = Self.documentedGraph(try Self.read("docs/architecture.md"))
        // Config gains a dependency on Service, and a new target appears; the doc says neither.
        let list = try #require(text.range(of: #"name: "Config",\s*dependencies: \["#, options: .regularExpression),
                                "Package.swift declares Config otherwise: adapt this test's edit")
        var edited = text
        edited.insert(contentsOf: #""Service", "#, at: list.upperBound)
        edited = edited.replacingOccurrences(of: "targets: [\n", with: "targets: [\n.target(name: \"Extra\", dependencies: [\"ControlCore\"]),\n")
        let package = Self.packageGraph(edited)
        #expect(package["Config"]?.contains("Service") == true, "\(package["Config"] ?? [])")
        let differences = Self.differences(package: package, documented: documented)
        #expect(differences.contains { $0.contains("Config") && $0.contains("Service") }, "\(differences)")
        #expect(differences.contains { $0.contains("Extra") }, "\(differences)")
    }

    @Test("the parser takes target names, leaves out products and comments")
    func parserReadsTargetsOnly() {
        let text = """
            let package = Package(
                products: [.executable(name: "tool", targets: ["tool"])],
                dependencies: [.package(url: "https://example.org/a.git", from: "1.0.0")],
                targets: [
                    // .target(name: "Commented", dependencies: ["Nothing"]),
                    .systemLibrary(name: "CLib", path: "Sources/CLib"),
                    .target(name: "Core", swiftSettings: settings),
                    .target(name: "Mid", dependencies: ["Core", "CLib", .product(name: "Yams", package: "Yams")]),
                    .executableTarget(name: "tool", dependencies: [
                        "Mid", .target(name: "Core"), .product(name: "ArgumentParser", package: "swift-argument-parser"),
                    ]),
                    .testTarget(name: "MidTests", dependencies: ["Mid"]),
                ]
            )
            """
        let graph = Self.packageGraph(text)
        #expect(graph == ["CLib": [], "Core": [], "Mid": ["Core", "CLib"], "tool": ["Mid", "Core"], "MidTests": ["Mid"]])
        let documented = Self.documentedGraph("""
            # x
            ## Module graph
            - `Mid` → Core, CLib
            - Core → none
            ## Next
            - Other → Core
            """)
        #expect(documented == ["Mid": ["Core", "CLib"], "Core": []])
    }

    // MARK: - Reading

    static func read(_ path: String) throws -> String {
        try String(contentsOf: Package.root.appendingPathComponent(path), encoding: .utf8)
    }

    /// Every line that says how the two graphs differ; empty when they agree.
    static func differences(package: Graph, documented: Graph) -> [String] {
        var lines: [String] = []
        for name in Set(package.keys).union(documented.keys).sorted() {
            switch (package[name], documented[name]) {
            case let (dependencies?, nil):
                lines.append("- \(name) is in Package.swift (→ \(dependencies.sorted().joined(separator: ", "))) but not in the doc")
            case (nil, _):
                lines.append("- \(name) is in the doc but not in Package.swift")
            case let (dependencies?, written?) where dependencies != written:
                let missing = dependencies.subtracting(written).sorted(), extra = written.subtracting(dependencies).sorted()
                lines.append("- \(name): the doc lacks [\(missing.joined(separator: ", "))] and has [\(extra.joined(separator: ", "))] too many")
            default:
                break
            }
        }
        return lines
    }

    /// The list under "## Module graph": `- Target → A, B` (backticks allowed, `none` for no dependency).
    static func documentedGraph(_ text: String) -> Graph {
        var graph: Graph = [:]
        var inSection = false
        for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
            if line.hasPrefix("## ") {
                inSection = line.trimmingCharacters(in: .whitespaces) == "## Module graph"
                continue
            }
            guard inSection, line.hasPrefix("- "), let arrow = line.range(of: " → ") else { continue }
            let name = Self.bare(line[line.index(line.startIndex, offsetBy: 2)..<arrow.lowerBound])
            let rest = Self.bare(line[arrow.upperBound...])
            let dependencies = rest == "none" ? [] : rest.split(separator: ",").map { Self.bare($0) }
            graph[name] = Set(dependencies)
        }
        return graph
    }

    private static func bare(_ text: Substring) -> String {
        text.trimmingCharacters(in: .whitespaces).replacingOccurrences(of: "`", with: "")
    }

    /// Package.swift's targets (every `.target`, `.executableTarget`, `.testTarget`, `.systemLibrary`,
    /// `.plugin`, `.macro`, `.binaryTarget`), each with the quoted names in its `dependencies:` other
    /// than `.product(…)` entries. A plain scan: comments dropped, strings and brackets kept whole.
    static func packageGraph(_ source: String) -> Graph {
        let text = Array(Self.withoutComments(source).unicodeScalars)
        let kinds = ["target", "executableTarget", "testTarget", "systemLibrary", "plugin", "macro", "binaryTarget"]
            .map { Array(".\($0)(".unicodeScalars) }
        var graph: Graph = [:]
        var index = 0
        while index < text.count {
            if text[index] == "\"" {
                index = Self.endOfString(text, from: index)
                continue
            }
            guard let kind = kinds.first(where: { Self.matches(text, $0, at: index) }) else {
                index += 1
                continue
            }
            let open = index + kind.count - 1
            let close = Self.closing(text, from: open)
            let body = Array(text[(open + 1)..<close])
            if let name = Self.argument("name:", in: body) {
                graph[name] = Self.dependencies(in: body)
            }
            index = close + 1
        }
        return graph
    }

    /// The quoted names in `dependencies: [ … ]`, products left out.
    private static func dependencies(in body: [Unicode.Scalar]) -> Set<String> {
        let label = Array("dependencies:".unicodeScalars)
        guard let at = Self.find(label, in: body) else { return [] }
        var start = at + label.count
        while start < body.count, body[start] != "[" { start += 1 }
        guard start < body.count else { return [] }
        let list = Array(body[(start + 1)..<Self.closing(body, from: start)])
        let product = Array(".product(".unicodeScalars)
        var names: Set<String> = []
        var index = 0
        while index < list.count {
            if Self.matches(list, product, at: index) {
                index = Self.closing(list, from: index + product.count - 1) + 1
            } else if list[index] == "\"" {
                let end = Self.endOfString(list, from: index)
                names.insert(String(String.UnicodeScalarView(list[(index + 1)..<(end - 1)])))
                index = end
            } else {
                index += 1
            }
        }
        return names
    }

    /// The string after `label` (`name: "X"` → X), at the top level of the call.
    private static func argument(_ label: String, in body: [Unicode.Scalar]) -> String? {
        guard let at = Self.find(Array(label.unicodeScalars), in: body) else { return nil }
        var index = at + label.unicodeScalars.count
        while index < body.count, body[index] == " " { index += 1 }
        guard index < body.count, body[index] == "\"" else { return nil }
        let end = Self.endOfString(body, from: index)
        return String(String.UnicodeScalarView(body[(index + 1)..<(end - 1)]))
    }

    /// The first `needle` outside strings and outside nested brackets of `body`.
    private static func find(_ needle: [Unicode.Scalar], in body: [Unicode.Scalar]) -> Int? {
        let at = Self.scan(body, from: 0) { index, depth in depth == 0 && Self.matches(body, needle, at: index) }
        return at < body.count ? at : nil
    }

    private static func matches(_ text: [Unicode.Scalar], _ needle: [Unicode.Scalar], at index: Int) -> Bool {
        index + needle.count <= text.count && Array(text[index..<(index + needle.count)]) == needle
    }

    /// The index just past the string literal that opens at `index`.
    private static func endOfString(_ text: [Unicode.Scalar], from index: Int) -> Int {
        var end = index + 1
        while end < text.count, text[end] != "\"" {
            end += text[end] == "\\" ? 2 : 1
        }
        return min(end + 1, text.count)
    }

    /// The index of the bracket that closes the one at `open` (or the end of the text).
    private static func closing(_ text: [Unicode.Scalar], from open: Int) -> Int {
        Self.scan(text, from: open) { index, depth in depth == 0 && (text[index] == ")" || text[index] == "]") }
    }

    /// Walks `text` from `start`, string literals skipped whole, and returns the first index at which
    /// `stop` (given the index and the bracket depth counted from `start`, that index's bracket
    /// included) says so, or the end of the text.
    private static func scan(_ text: [Unicode.Scalar], from start: Int, _ stop: (Int, Int) -> Bool) -> Int {
        var depth = 0
        var index = start
        while index < text.count {
            if text[index] == "\"" {
                index = Self.endOfString(text, from: index)
                continue
            }
            switch text[index] {
            case "(", "[": depth += 1
            case ")", "]": depth -= 1
            default: break
            }
            if stop(index, depth) { return index }
            index += 1
        }
        return text.count
    }

    /// The source without `//` comments (a `//` inside a string, as in a URL, stays).
    private static func withoutComments(_ source: String) -> String {
        source.split(separator: "\n", omittingEmptySubsequences: false).map { line -> Substring in
            var inString = false
            var previous: Character = " "
            for index in line.indices {
                let character = line[index]
                if character == "\"" && previous != "\\" { inString.toggle() }
                if !inString, character == "/", previous == "/" {
                    return line[line.startIndex..<line.index(before: index)]
                }
                previous = character
            }
            return line
        }.joined(separator: "\n")
    }
}
