import BessSystem
internal import Yams

/// Walks a YAML node tree, collecting every error instead of stopping at the first, and tracks which
/// keys of each mapping were read so that unknown keys are reported.
final class ConfigReader {
    let file: String
    private(set) var diagnostics: [ConfigDiagnostic] = []
    /// The keys each section's decoder asked for, present in the file or not, by `ConfigKeys.section`:
    /// the tests hold them to the keys the section declares.
    fileprivate(set) var keysRead: [String: Set<String>] = [:]

    init(file: String) { self.file = file }

    var hasErrors: Bool { diagnostics.contains { $0.severity == .error } }

    func error(_ node: Node?, _ path: String, _ message: String, got: String? = nil, code: ConfigDiagnostic.Code = .invalid) {
        diagnostics.append(ConfigDiagnostic(code: code, file: file, line: node?.mark?.line, keyPath: path, message: message, got: got))
    }

    func notice(_ node: Node?, _ path: String, _ message: String, code: ConfigDiagnostic.Code = .notice) {
        diagnostics.append(ConfigDiagnostic(code: code, severity: .notice, file: file,
                                            line: node?.mark?.line, keyPath: path, message: message))
    }

    static func shown(_ node: Node) -> String {
        switch node {
        // A value quoted in an error reaches the terminal and, on a reload, the journal: a URL's
        // credentials are not repeated there.
        case .scalar(let scalar): return scalar.string.isEmpty ? "an empty value" : "'\(Redaction.urlCredentials(in: scalar.string))'"
        case .mapping: return "a mapping"
        case .sequence: return "a list"
        case .alias: return "an alias"
        }
    }

    /// A mapping's keys, read one by one; `finish(_:)` reports the keys nobody asked for.
    final class Fields {
        let reader: ConfigReader
        let node: Node
        let path: String
        private var pairs: [(key: String, keyNode: Node, value: Node)] = []
        private var used: Set<String> = []

        init(reader: ConfigReader, node: Node, mapping: Node.Mapping, path: String) {
            self.reader = reader
            self.node = node
            self.path = path
            for (key, value) in mapping {
                guard let name = key.scalar?.string else {
                    reader.error(key, path, "keys must be plain names", got: ConfigReader.shown(key))
                    continue
                }
                pairs.append((name, key, value))
            }
        }

        func child(_ key: String) -> String { path.isEmpty ? key : "\(path).\(key)" }

        /// The value node for `key`, marking it read.
        func node(_ key: String) -> Node? {
            used.insert(key)
            guard let pair = pairs.first(where: { $0.key == key }) else { return nil }
            if case .scalar(let scalar) = pair.value, scalar.tag.description.hasSuffix(":null")
                || (scalar.string.isEmpty && scalar.style == .plain) || scalar.string == "~" || scalar.string == "null"
            {
                return nil  // `key:` with no value means "use the default"
            }
            return pair.value
        }

        func has(_ key: String) -> Bool { pairs.contains { $0.key == key } }

        /// Marks `key` as known but not implemented, with a notice if present.
        func acknowledge(_ key: String, _ message: String) {
            used.insert(key)
            if let pair = pairs.first(where: { $0.key == key }) {
                reader.notice(pair.keyNode, child(key), message)
            }
        }

        /// Reports every key that was never read as unknown, listing the section's keys, and adds the
        /// keys read to the reader's `keysRead`.
        func finish(_ keys: ConfigKeys) {
            reader.keysRead[keys.section, default: []].formUnion(used)
            reportUnread(hint: "; known keys: \(keys.list)")
        }

        /// Reports every key that was never read, for a mapping whose keys are names given elsewhere
        /// in the file (unit ids).
        func finish() { reportUnread(hint: "") }

        private func reportUnread(hint: String) {
            for pair in pairs where !used.contains(pair.key) {
                reader.error(pair.keyNode, child(pair.key), "unknown key\(hint)")
            }
        }

        // MARK: typed getters

        func string(_ key: String, default value: String? = nil, pattern: ((String) -> Bool)? = nil,
                    rule: String = "") -> String? {
            guard let node = node(key) else { return value }
            guard case .scalar(let scalar) = node else {
                reader.error(node, child(key), "expected text", got: ConfigReader.shown(node))
                return value
            }
            if let pattern, !pattern(scalar.string) {
                reader.error(node, child(key), rule, got: ConfigReader.shown(node))
                return value
            }
            return scalar.string
        }

        func double(_ key: String, default value: Double? = nil, range: ClosedRange<Double>? = nil,
                    exclusiveLower: Bool = false, unit: String = "") -> Double? {
            guard let node = node(key) else { return value }
            guard case .scalar = node, let number = node.int.map(Double.init) ?? node.float, number.isFinite else {
                reader.error(node, child(key), "expected a number\(unit.isEmpty ? "" : " in \(unit)")",
                             got: ConfigReader.shown(node))
                return value
            }
            if let range, !range.contains(number) || (exclusiveLower && number == range.lowerBound) {
                let bounds = exclusiveLower
                    ? "greater than \(format(range.lowerBound)) and at most \(format(range.upperBound))"
                    : "from \(format(range.lowerBound)) to \(format(range.upperBound))"
                reader.error(node, child(key), "must be \(bounds)\(unit.isEmpty ? "" : " \(unit)")",
                             got: ConfigReader.shown(node))
                return value
            }
            return number
        }

        func int(_ key: String, default value: Int? = nil, range: ClosedRange<Int>? = nil, unit: String = "") -> Int? {
            guard let node = node(key) else { return value }
            guard case .scalar = node, let number = node.int else {
                reader.error(node, child(key), "expected a whole number\(unit.isEmpty ? "" : " of \(unit)")",
                             got: ConfigReader.shown(node))
                return value
            }
            if let range, !range.contains(number) {
                reader.error(node, child(key), "must be from \(range.lowerBound) to \(range.upperBound)\(unit.isEmpty ? "" : " \(unit)")",
                             got: ConfigReader.shown(node))
                return value
            }
            return number
        }

        func bool(_ key: String, default value: Bool) -> Bool {
            guard let node = node(key) else { return value }
            guard case .scalar = node, let flag = node.bool else {
                reader.error(node, child(key), "expected true or false", got: ConfigReader.shown(node))
                return value
            }
            return flag
        }

        func choice<T>(_ key: String, _ choices: [(String, T)], default value: T) -> T {
            guard let node = node(key) else { return value }
            let names = choices.map(\.0)
            guard case .scalar(let scalar) = node,
                  let match = choices.first(where: { $0.0 == scalar.string.lowercased() })
            else {
                reader.error(node, child(key), "must be one of \(names.joined(separator: ", "))",
                             got: ConfigReader.shown(node))
                return value
            }
            return match.1
        }

        func fields(_ key: String) -> Fields? {
            guard let node = node(key) else { return nil }
            return reader.fields(node, child(key))
        }

        func sequence(_ key: String) -> [Node]? {
            guard let node = node(key) else { return nil }
            guard case .sequence(let sequence) = node else {
                reader.error(node, child(key), "expected a list", got: ConfigReader.shown(node))
                return nil
            }
            return Array(sequence)
        }

        /// The mark of `key`'s value, or of the mapping itself.
        func mark(_ key: String) -> Node? { pairs.first { $0.key == key }?.value ?? node }
    }

    func fields(_ node: Node, _ path: String) -> Fields? {
        guard case .mapping(let mapping) = node else {
            error(node, path, "expected a mapping of keys", got: ConfigReader.shown(node))
            return nil
        }
        return Fields(reader: self, node: node, mapping: mapping, path: path)
    }
}

func format(_ value: Double) -> String {
    value == value.rounded() && abs(value) < 1e15 ? String(Int64(value)) : String(value)
}
