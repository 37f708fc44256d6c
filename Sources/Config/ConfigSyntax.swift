import Foundation
internal import Yams

/// Locates a YAML syntax error at the line where the mistake is.
///
/// libyaml stops at the token where it can no longer go on, which is often the one after the mistake:
/// a key without its colon is found out at the next key, a duplicate key is reported at its first
/// occurrence, and a control character at an offset only. This reads the text beside libyaml's report
/// to name the line a field engineer has to edit.
enum ConfigSyntax {
    /// One diagnostic per control character (at most `limit`), with its line and column, or none.
    ///
    /// YAML allows tab, line breaks and printable characters only; anything else (an escape sequence
    /// or a NUL pasted from a terminal) makes libyaml refuse the whole file without a line.
    static func controlCharacters(in text: String, file: String, limit: Int = 10) -> [ConfigDiagnostic] {
        var found: [ConfigDiagnostic] = []
        var line = 1, column = 1
        var previous: Unicode.Scalar?
        for scalar in text.unicodeScalars {
            defer { previous = scalar }
            if isBreak(scalar) {
                if !(scalar == "\n" && previous == "\r") { line += 1 }
                column = 1
                continue
            }
            if !allowed(scalar) {
                let hex = String(scalar.value, radix: 16, uppercase: true)
                let code = "U+" + String(repeating: "0", count: max(0, 4 - hex.count)) + hex
                found.append(ConfigDiagnostic(
                    code: .syntax, file: file, line: line, keyPath: "",
                    message: "YAML syntax error: control character \(code) at column \(column) is not allowed "
                        + "(pasted from a terminal? delete it)"))
                if found.count == limit { break }
            }
            column += 1
        }
        return found
    }

    /// The diagnostic for an error thrown by `Yams.compose(yaml: text)`.
    static func diagnostic(_ error: any Error, text: String, file: String) -> ConfigDiagnostic {
        var line: Int?
        var problem = "\(error)"
        if let yamlError = error as? YamlError {
            switch yamlError {
            case .scanner(let context, let p, let mark, _):
                problem = p
                line = mark.line
                if let context, context.text == "while scanning a simple key" {
                    // "could not find expected ':'" comes at the next token; the key lacking it is here.
                    line = context.mark.line
                    problem = "a key without its ':' (\(p))"
                } else if let context, context.text.hasPrefix("while scanning a quoted scalar") {
                    line = context.mark.line
                    problem = "a quote opened here is not closed (\(p) at line \(mark.line))"
                } else if p == "mapping values are not allowed in this context" {
                    let found = mappingValueMistake(text, at: mark)
                    line = found.line
                    switch found.mistake {
                    case .here: problem = "a ':' where a key cannot start: check this line's indentation or quote its value (\(p))"
                    case .missingColon: problem = "a key without its ':' (\(p) at line \(mark.line))"
                    case .blockIndentation: problem = "this line is indented unlike the lines of its block (\(p) at line \(mark.line))"
                    }
                } else if let context {
                    problem = "\(p) \(context.text) at line \(context.mark.line)"
                }
            case .parser(let context, let p, let mark, _), .composer(let context, let p, let mark, _):
                line = mark.line
                problem = context.map { "\(p) \($0.text) at line \($0.mark.line)" } ?? p
                if p.hasPrefix("did not find expected key") || p.hasPrefix("did not find expected '-' indicator")
                    || p.hasPrefix("did not find expected <document start>"),
                   let start = misindentedBlockStart(lines(text), before: mark.line)
                {
                    line = start
                    problem = "this line is indented unlike the lines of its block (\(p) at line \(mark.line))"
                }
            case .duplicatedKeysInMapping(let duplicates, let context):
                let name = duplicates.first ?? ""
                let second = secondOccurrence(of: name, first: context.mark, in: text)
                line = second?.line ?? context.mark.line
                problem = second == nil
                    ? "duplicate key '\(name)'"
                    : "duplicate key '\(name)' (first at line \(context.mark.line)); each key once per mapping"
            case .reader(let p, _, _, _):
                problem = p
            default:
                break
            }
        }
        return ConfigDiagnostic(code: .syntax, file: file, line: line, keyPath: "",
                                message: "YAML syntax error: \(problem)")
    }

    // MARK: lines

    static func isBreak(_ scalar: Unicode.Scalar) -> Bool {
        scalar == "\n" || scalar == "\r" || scalar == "\u{85}" || scalar == "\u{2028}" || scalar == "\u{2029}"
    }

    /// YAML 1.1's printable set, as libyaml checks it.
    static func allowed(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        case 0x09, 0x0A, 0x0D, 0x20...0x7E, 0x85, 0xA0...0xD7FF, 0xE000...0xFFFD, 0x10000...0x10FFFF: true
        default: false
        }
    }

    /// The text's lines, broken where libyaml breaks them (so index + 1 is libyaml's line).
    static func lines(_ text: String) -> [String] {
        var result: [String] = []
        var current = String.UnicodeScalarView()
        var previous: Unicode.Scalar?
        for scalar in text.unicodeScalars {
            defer { previous = scalar }
            if isBreak(scalar) {
                if scalar == "\n" && previous == "\r" { continue }
                result.append(String(current))
                current = String.UnicodeScalarView()
            } else {
                current.append(scalar)
            }
        }
        result.append(String(current))
        return result
    }

    /// What a "mapping values are not allowed in this context" is.
    enum Mistake { case here, missingColon, blockIndentation }

    /// The line and kind of "mapping values are not allowed in this context", found at the ':' of `mark`.
    ///
    /// The ':' ends a plain scalar that libyaml read across lines. When the line before holds no key
    /// of its own (`mode simulation` over `bess_units:`), that line lost its colon; when it is the first
    /// line of its block and indented off the file's step, that line is; otherwise (a line indented too
    /// deep under a value, or `a: b: c`) the mistake is on the ':''s own line.
    static func mappingValueMistake(_ text: String, at mark: Mark) -> (line: Int, mistake: Mistake) {
        let all = lines(text)
        guard mark.line >= 1, mark.line <= all.count else { return (mark.line, .here) }
        let own = Array(all[mark.line - 1].unicodeScalars.prefix(max(0, mark.column - 1)))
        let before = String(String.UnicodeScalarView(own))
        if hasKey(before) || before.trimmingLeadingSpaces.hasPrefix("-") || before.contains("{") || before.contains("[") {
            return (mark.line, .here)
        }
        guard let previous = contentLine(all, before: mark.line - 1) else { return (mark.line, .here) }
        if !hasKey(all[previous]) { return (previous + 1, .missingColon) }
        return misindentedBlockStart(all, before: mark.line).map { ($0, .blockIndentation) } ?? (mark.line, .here)
    }

    /// The index of the last line before `index` that holds more than blanks or a comment.
    static func contentLine(_ all: [String], before index: Int) -> Int? {
        (0..<max(0, min(index, all.count))).reversed().first { i in
            let content = all[i].trimmingLeadingSpaces
            return !content.isEmpty && !content.hasPrefix("#")
        }
    }

    static func indentation(_ line: String) -> Int { line.prefix { $0 == " " }.count }

    static func opensBlock(_ line: String) -> Bool {
        var content = Substring(line)
        if let comment = content.range(of: " #") { content = content[..<comment.lowerBound] }
        return content.trimmingTrailingSpaces.hasSuffix(":")
    }

    /// When the content line before (1-based) `line` is the first of its block and indented off the
    /// file's step from its parent key, that line (1-based): libyaml takes the first line's indentation
    /// for the block's and reports the next line, the one that agrees with the rest of the file.
    static func misindentedBlockStart(_ all: [String], before line: Int) -> Int? {
        guard let first = contentLine(all, before: line - 1) else { return nil }
        let parent = contentLine(all, before: first)
        if let parent, !opensBlock(all[parent]) { return nil }
        let expected = parent.map { indentation(all[$0]) + step(all) } ?? 0
        return indentation(all[first]) == expected ? nil : first + 1
    }

    /// The file's usual indentation step: how far the lines under a `key:` are indented past it.
    static func step(_ all: [String]) -> Int {
        var counts: [Int: Int] = [:]
        for (index, line) in all.enumerated() where opensBlock(line) && !line.trimmingLeadingSpaces.hasPrefix("#") {
            guard let next = (index + 1..<all.count).first(where: { i in
                let content = all[i].trimmingLeadingSpaces
                return !content.isEmpty && !content.hasPrefix("#")
            }) else { continue }
            let difference = indentation(all[next]) - indentation(line)
            if difference > 0 { counts[difference, default: 0] += 1 }
        }
        return counts.max { ($0.value, -$0.key) < ($1.value, -$1.key) }?.key ?? 2
    }

    /// Whether a line holds a mapping key's ':' (followed by a space or ending the line, comment aside).
    static func hasKey(_ line: String) -> Bool {
        var content = Substring(line)
        if let comment = content.range(of: " #") { content = content[..<comment.lowerBound] }
        let trimmed = content.trimmingTrailingSpaces
        return trimmed.contains(": ") || trimmed.hasSuffix(":")
    }

    // MARK: duplicate keys

    /// Where `name` occurs the second time in the mapping whose first `name` key is at `first`.
    ///
    /// Yams names the first occurrence only. The key there is renamed and the text composed again: then
    /// either the next duplicate of `name` is reported at its own first (the second) occurrence, or the
    /// text composes and the renamed key's mapping holds the other one. Another duplicate reported on the
    /// way is renamed the same way (a few times at most).
    static func secondOccurrence(of name: String, first: Mark, in text: String) -> Mark? {
        var edited = text
        var target = first
        for attempt in 0..<8 {
            let prefix = "bessd-renamed-\(attempt)-"
            guard let next = insert(prefix, at: target, in: edited) else { return nil }
            edited = next
            do {
                guard let root = try Yams.compose(yaml: edited) else { return nil }
                return find(name, besideKeyAt: first, renamedWith: "bessd-renamed-0-", in: root)
            } catch YamlError.duplicatedKeysInMapping(let duplicates, let context) {
                if duplicates.first == name { return context.mark }
                target = context.mark
            } catch {
                return nil
            }
        }
        return nil
    }

    /// `text` with `insertion` put before the scalar at `mark` (1-based line and column in scalars).
    static func insert(_ insertion: String, at mark: Mark, in text: String) -> String? {
        var line = 1, column = 1
        var previous: Unicode.Scalar?
        var scalars = text.unicodeScalars
        var index = scalars.startIndex
        while index < scalars.endIndex {
            if line == mark.line && column == mark.column { break }
            let scalar = scalars[index]
            if isBreak(scalar) {
                if !(scalar == "\n" && previous == "\r") { line += 1 }
                column = 1
            } else {
                column += 1
            }
            previous = scalar
            index = scalars.index(after: index)
        }
        guard line == mark.line, column == mark.column, index < scalars.endIndex else { return nil }
        scalars.insert(contentsOf: insertion.unicodeScalars, at: index)
        return String(scalars)
    }

    /// In the mapping holding the renamed first key (on `first`'s line), the mark of the key `name`.
    static func find(_ name: String, besideKeyAt first: Mark, renamedWith prefix: String, in node: Node) -> Mark? {
        switch node {
        case .mapping(let mapping):
            let keys = mapping.map(\.key)
            if keys.contains(where: { $0.string == prefix + name && $0.mark?.line == first.line }),
               let other = keys.first(where: { $0.string == name })
            {
                return other.mark
            }
            for (key, value) in mapping {
                if let found = find(name, besideKeyAt: first, renamedWith: prefix, in: key) ?? find(
                    name, besideKeyAt: first, renamedWith: prefix, in: value)
                {
                    return found
                }
            }
            return nil
        case .sequence(let sequence):
            for item in sequence {
                if let found = find(name, besideKeyAt: first, renamedWith: prefix, in: item) { return found }
            }
            return nil
        case .scalar, .alias:
            return nil
        }
    }
}

private extension StringProtocol {
    var trimmingLeadingSpaces: SubSequence { drop { $0 == " " || $0 == "\t" } }
    var trimmingTrailingSpaces: String {
        String(String(reversed().drop { $0 == " " || $0 == "\t" }).reversed())
    }
}
