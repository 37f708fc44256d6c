import BessSystem
import Foundation
internal import Yams

/// A configuration's text fit for a support ticket (`bessctl config`, the `config.yaml` of
/// `bessctl diag`): every value under a key that names a secret (`Redaction.isSecretKey`: the 2030.5
/// `pin`, a password, token or secret) becomes `<redacted>`, and so do the credentials of every URL.
///
/// The keys are found by parsing, not by reading lines: a secret in a flow mapping
/// (`ieee2030_5: {pin: "111115"}`), a block scalar (`password: |`), a multi-line or quoted value, or a
/// list or mapping under a secret key is redacted wherever it is written. Everything else stays as
/// written, comments and line numbers included, so the text still matches the journal's
/// `FILE:LINE:` diagnostics; a commented-out `# password: …` line is redacted too. A text that does
/// not parse is withheld whole: nothing in it can be told apart.
public enum ConfigRedaction {
    public static func text(_ text: String) -> String {
        var lines = text.split(separator: "\n", omittingEmptySubsequences: false).map { Array($0.unicodeScalars) }
        let root: Node?
        do { root = try Yams.compose(yaml: text) } catch {
            return "# withheld: the configuration does not parse as YAML (\(lines.count) lines), so its secrets cannot be found"
        }
        var walk = Walk(lines: lines)
        if let root { walk.visit(root, secret: false, flow: false, indent: -1) }
        let starts = walk.starts.sorted { ($0.line, $0.column) < ($1.line, $1.column) }
        var edits: [Edit] = []
        for value in walk.secrets {
            let next = starts.first { ($0.line, $0.column) > (value.start.line, value.start.column) }
            edits += Span.edits(of: value, in: lines, before: next)
        }
        // Right to left on each line, so earlier columns stay where they were.
        for edit in edits.sorted(by: { ($0.line, $0.from) > ($1.line, $1.from) }) where edit.line < lines.count {
            let line = lines[edit.line]
            let from = min(edit.from, line.count), to = min(max(edit.to, from), line.count)
            lines[edit.line] = Array(line[..<from]) + Array(edit.replacement.unicodeScalars) + Array(line[to...])
        }
        return lines.map { line -> String in
            var scalars = String.UnicodeScalarView()
            scalars.append(contentsOf: line)
            return Redaction.urlCredentials(in: commentRedacted(String(scalars)))
        }.joined(separator: "\n")
    }

    /// A comment line that reads as a secret key with a value (`# password: old`) keeps its key.
    static func commentRedacted(_ line: String) -> String {
        guard let hash = line.firstIndex(where: { $0 != " " && $0 != "\t" }), line[hash] == "#" else { return line }
        let body = line[line.index(after: hash)...].drop { $0 == " " || $0 == "-" || $0 == "#" }
        guard let colon = body.firstIndex(of: ":"), Redaction.isSecretKey(body[..<colon].trimmingCharacters(in: .whitespaces)),
              body[body.index(after: colon)...].contains(where: { !$0.isWhitespace }) else { return line }
        return String(line[..<body.index(after: colon)]) + " " + Redaction.marker
    }

    /// A position in the text: 0-based line and column (columns count Unicode scalars, as libyaml's marks do).
    struct Position { var line: Int, column: Int }

    /// One replacement on one line: columns `from..<to` become `replacement`.
    struct Edit { var line: Int, from: Int, to: Int, replacement: String }

    /// A scalar to redact, with what its extent depends on.
    struct SecretValue {
        var start: Position
        var style: Node.Scalar.Style
        /// Inside a flow collection (`{…}`, `[…]`), where `,`, `]` and `}` end a plain scalar.
        var flow: Bool
        /// The indentation of the key that holds it: the lines of a block or multi-line value are
        /// indented further.
        var indent: Int
    }

    /// Every node's start, and the scalars under secret keys, in the order the file writes them.
    struct Walk {
        let lines: [[Unicode.Scalar]]
        var starts: [Position] = []
        var secrets: [SecretValue] = []

        init(lines: [[Unicode.Scalar]]) { self.lines = lines }

        /// Whether a collection starting at `start` is written in flow style (`{…}`, `[…]`): read from
        /// the text, as Yams gives a mapping the style of its end event, not of its start.
        func flowStyle(at start: Position?) -> Bool {
            guard let start, start.line < lines.count else { return false }
            let line = lines[start.line]
            var column = start.column
            // Past an anchor (`&a`) or a tag (`!!map`) written before it.
            while column < line.count, line[column] == "&" || line[column] == "!" {
                while column < line.count, !Span.isSpace(line[column]) { column += 1 }
                while column < line.count, Span.isSpace(line[column]) { column += 1 }
            }
            return column < line.count && (line[column] == "{" || line[column] == "[")
        }

        mutating func visit(_ node: Node, secret: Bool, flow: Bool, indent: Int) {
            let start = node.mark.map { Position(line: $0.line - 1, column: $0.column - 1) }
            if let start { starts.append(start) }
            switch node {
            case .scalar(let scalar):
                if secret, !scalar.string.isEmpty, let start { secrets.append(SecretValue(start: start, style: scalar.style, flow: flow, indent: indent)) }
            case .mapping(let mapping):
                let inFlow = flow || flowStyle(at: start)
                for (key, value) in mapping {
                    if let mark = key.mark { starts.append(Position(line: mark.line - 1, column: mark.column - 1)) }
                    let keyIndent = key.mark.map { $0.column - 1 } ?? indent
                    visit(value, secret: secret || key.scalar.map { Redaction.isSecretKey($0.string) } == true, flow: inFlow, indent: keyIndent)
                }
            case .sequence(let sequence):
                let inFlow = flow || flowStyle(at: start)
                for item in sequence { visit(item, secret: secret, flow: inFlow, indent: indent) }
            case .alias:
                break
            }
        }
    }

    /// Where a scalar's text lies, from its start to its end, by its style.
    enum Span {
        static func edits(of value: SecretValue, in lines: [[Unicode.Scalar]], before next: Position?) -> [Edit] {
            guard value.start.line < lines.count else { return [] }
            var line = value.start.line
            var column = value.start.column
            // An anchor (`&a`) or a tag (`!!str`) comes before the value itself.
            while column < lines[line].count, lines[line][column] == "&" || lines[line][column] == "!" {
                while column < lines[line].count, !isSpace(lines[line][column]) { column += 1 }
                while column < lines[line].count, isSpace(lines[line][column]) { column += 1 }
                if column >= lines[line].count, line + 1 < lines.count, next.map({ line + 1 <= $0.line }) ?? true {
                    line += 1
                    column = indentation(lines[line])
                }
            }
            switch value.style {
            case .doubleQuoted, .singleQuoted:
                return quoted(lines, line: line, column: column, double: value.style == .doubleQuoted)
            case .literal, .folded:
                return block(lines, line: line, column: column, indent: value.indent, before: next)
            default:
                return plain(lines, line: line, column: column, flow: value.flow, indent: value.indent, before: next)
            }
        }

        /// A quoted scalar ends at its closing quote (`\"` escapes one in double quotes, `''` in single).
        static func quoted(_ lines: [[Unicode.Scalar]], line first: Int, column: Int, double: Bool) -> [Edit] {
            let quote: Unicode.Scalar = double ? "\"" : "'"
            var line = first, index = column + 1
            while line < lines.count {
                let text = lines[line]
                while index < text.count {
                    if double, text[index] == "\\" { index += 2; continue }
                    if text[index] == quote {
                        if !double, index + 1 < text.count, text[index + 1] == quote { index += 2; continue }
                        return spread(from: first, column: column, to: line, end: index + 1, lines)
                    }
                    index += 1
                }
                line += 1
                index = 0
            }
            return spread(from: first, column: column, to: lines.count - 1, end: lines.last?.count ?? 0, lines)
        }

        /// A block scalar (`|`, `>`): its header line, then every line indented past its key's, or
        /// blank, up to the next node.
        static func block(_ lines: [[Unicode.Scalar]], line first: Int, column: Int, indent: Int, before next: Position?) -> [Edit] {
            var last = first
            var line = first + 1
            while line < lines.count, next.map({ line < $0.line }) ?? true {
                let text = lines[line]
                if text.allSatisfy(isSpace) || indentation(text) > indent { last = line } else { break }
                line += 1
            }
            return spread(from: first, column: column, to: last, end: lines[last].count, lines)
        }

        /// A plain scalar: to the end of its line, a comment (` #`) or, in a flow collection, `,`,
        /// `]` or `}`; then any further lines indented past its key's, up to a comment line or the next node.
        static func plain(_ lines: [[Unicode.Scalar]], line first: Int, column: Int, flow: Bool, indent: Int,
                          before next: Position?) -> [Edit] {
            var edits: [Edit] = []
            var line = first, from = column
            while line < lines.count {
                let text = lines[line]
                var end = from
                while end < text.count {
                    let c = text[end]
                    if flow, c == "," || c == "]" || c == "}" { break }
                    if c == "#", end == 0 || isSpace(text[end - 1]) { break }
                    end += 1
                }
                if let next, next.line == line { end = min(end, max(from, next.column)) }
                while end > from, isSpace(text[end - 1]) { end -= 1 }
                let whole = !edits.isEmpty && text[end...].allSatisfy(isSpace)
                if end > from { edits.append(Edit(line: line, from: whole ? 0 : from, to: whole ? text.count : end,
                                                  replacement: edits.isEmpty ? Redaction.marker : "")) }
                if end < text.count, !text[end...].allSatisfy(isSpace) { break }  // a comment or the collection goes on
                line += 1
                guard line < lines.count, next.map({ line < $0.line }) ?? true else { break }
                let following = lines[line]
                let start = indentation(following)
                if start < following.count, following[start] == "#" { break }
                guard start >= following.count || start > indent else { break }
                from = start
            }
            return edits
        }

        /// The edits that blank lines `first…last` between (`first`, `column`) and (`last`, `end`),
        /// the marker on the first.
        static func spread(from first: Int, column: Int, to last: Int, end: Int, _ lines: [[Unicode.Scalar]]) -> [Edit] {
            (first...max(first, last)).map { line in
                let to = line == last ? end : lines[line].count
                // A line taken whole is left empty, its indentation too.
                let from = line == first ? column : to >= lines[line].count ? 0 : indentation(lines[line])
                return Edit(line: line, from: from, to: max(from, to), replacement: line == first ? Redaction.marker : "")
            }
        }

        static func indentation(_ line: [Unicode.Scalar]) -> Int { line.firstIndex { !isSpace($0) } ?? line.count }
        static func isSpace(_ c: Unicode.Scalar) -> Bool { c == " " || c == "\t" || c == "\r" }
    }
}
