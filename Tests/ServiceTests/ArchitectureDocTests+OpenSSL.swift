import Foundation
import Testing

/// Which targets reach OpenSSL, read from Package.swift's graph (`packageGraph`): Config maps the YAML
/// and builds no TLS context, and the codecs are pure protocol, so none of them links COpenSSL or
/// TLSTransport, not even through another target (issue 58).
extension ArchitectureDocTests {
    /// What must stay out of Config's, IEC104's and IEEE2030_5's transitive dependencies.
    static let tlsTargets: Set<String> = ["COpenSSL", "TLSTransport"]

    @Test("Config, IEC104 and IEEE2030_5 reach neither COpenSSL nor TLSTransport, directly or through a dependency")
    func configAndCodecsLinkNoOpenSSL() throws {
        let graph = Self.packageGraph(try Self.read("Package.swift"))
        #expect(Self.reached(from: "Sep2Link", in: graph).isSuperset(of: Self.tlsTargets),
                "Sep2Link reaches TLSTransport and COpenSSL: the graph was not read whole: \(graph)")
        for target in ["Config", "IEC104", "IEEE2030_5"] {
            let reached = Self.reached(from: target, in: graph)
            #expect(reached.contains("BessBase"), "\(target) was not found in Package.swift: \(reached)")
            #expect(reached.isDisjoint(with: Self.tlsTargets),
                    "\(target) reaches \(reached.intersection(Self.tlsTargets).sorted()) through \(Self.path(from: target, to: Self.tlsTargets, in: graph))")
        }
    }

    @Test("Config depending on Outstation again is caught, with the path to TLSTransport")
    func configOnOutstationIsCaught() throws {
        let text = try Self.read("Package.swift")
        let list = try #require(text.range(of: #"name: "Config",\s*dependencies: \["#, options: .regularExpression),
                                "Package.swift declares Config otherwise: adapt this test's edit")
        var edited = text
        edited.insert(contentsOf: #""Outstation", "#, at: list.upperBound)
        let graph = Self.packageGraph(edited)
        #expect(Self.reached(from: "Config", in: graph).isSuperset(of: Self.tlsTargets))
        #expect(Self.path(from: "Config", to: ["TLSTransport"], in: graph) == ["Config", "Outstation", "TLSTransport"])
    }

    /// Every target `target` depends on, directly or through others (itself left out).
    static func reached(from target: String, in graph: Graph) -> Set<String> {
        var seen: Set<String> = []
        var pending = Array(graph[target] ?? [])
        while let next = pending.popLast() {
            guard seen.insert(next).inserted else { continue }
            pending += graph[next] ?? []
        }
        return seen
    }

    /// A shortest chain of dependencies from `target` to one of `goals` (both ends included), for the
    /// failure message; empty when there is none.
    static func path(from target: String, to goals: Set<String>, in graph: Graph) -> [String] {
        var previous: [String: String] = [:]
        var queue = [target], head = 0
        while head < queue.count {
            let node = queue[head]
            head += 1
            if goals.contains(node) {
                var chain = [node]
                while let before = previous[chain[0]] { chain.insert(before, at: 0) }
                return chain
            }
            for next in (graph[node] ?? []).sorted() where next != target && previous[next] == nil {
                previous[next] = node
                queue.append(next)
            }
        }
        return []
    }
}
