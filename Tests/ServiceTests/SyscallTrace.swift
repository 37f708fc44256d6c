import Foundation

/// The system calls `strace -f -y -s 0 -o FILE` wrote, as the durability tests read them: each call's
/// name, the path behind its first argument when that is a descriptor (strace's `-y`), its quoted
/// arguments (the paths of `openat` and `rename`), the rest of its arguments as text, and its result.
/// A call strace split in two (`<unfinished ...>`, then `<... fsync resumed>` after another thread's
/// line) is joined and placed where it finished. Signals and exits are left out.
struct SyscallTrace {
    struct Call: CustomStringConvertible {
        var name: String
        /// The path of the descriptor in the first argument (`fsync(5</d/f.tmp>)`: `/d/f.tmp`); nil when
        /// the first argument is not a descriptor.
        var descriptor: String?
        /// The quoted arguments in order, unescaped.
        var strings: [String]
        /// The arguments as strace wrote them.
        var arguments: String
        /// The return value (-1 for a failure).
        var result: Int
        var line: String

        var description: String { line }

        /// A flush of the file or directory at `path` that succeeded: fsync, or fdatasync (which also
        /// writes the size and the blocks a read needs; no name).
        func flushes(_ path: String) -> Bool {
            (name == "fsync" || name == "fdatasync") && descriptor == path && result == 0
        }

        /// Bytes written to the file at `path` (write, pwrite64).
        func writes(to path: String) -> Bool {
            (name == "write" || name == "pwrite64" || name == "writev") && descriptor == path && result > 0
        }

        /// `from` renamed to `to`, successfully.
        func renames(_ from: String, to: String) -> Bool {
            ["rename", "renameat", "renameat2"].contains(name) && strings.count >= 2 && strings[0] == from && strings[1] == to && result == 0
        }

        /// An open of `path` (any flags, any result).
        func opens(_ path: String) -> Bool {
            (name == "openat" || name == "open") && strings.first == path
        }

        /// The last numeric argument: pwrite64's offset.
        var lastNumber: Int? {
            arguments.split(separator: ",").last.flatMap { Int($0.trimmingCharacters(in: .whitespaces)) }
        }
    }

    let calls: [Call]

    init(parsing text: String) {
        var calls: [Call] = []
        var unfinished: [Substring: String] = [:]
        for raw in text.split(separator: "\n") {
            guard let space = raw.firstIndex(of: " ") else { continue }
            let pid = raw[..<space]
            var line = String(raw[space...].drop { $0 == " " })
            if line.hasPrefix("+++") || line.hasPrefix("---") { continue }
            if line.hasSuffix(" <unfinished ...>") {
                unfinished[pid] = String(line.dropLast(" <unfinished ...>".count))
                continue
            }
            if line.hasPrefix("<... "), let resumed = line.range(of: " resumed>") {
                guard let start = unfinished.removeValue(forKey: pid) else { continue }
                line = start + line[resumed.upperBound...]
            }
            if let call = Self.call(line) { calls.append(call) }
        }
        self.calls = calls
    }

    /// One whole call line, `name(arguments) = result…`; nil for anything else.
    static func call(_ line: String) -> Call? {
        guard let open = line.firstIndex(of: "("), let equals = line.range(of: " = ", options: .backwards) else { return nil }
        let head = line[..<equals.lowerBound].trimmingCharacters(in: .whitespaces)
        guard head.hasSuffix(")"), head.endIndex > open else { return nil }
        let arguments = String(head[head.index(after: open)..<head.index(before: head.endIndex)])
        let name = String(line[..<open])
        let resultText = line[equals.upperBound...].prefix { $0 == "-" || $0.isNumber }
        guard let result = Int(resultText) else { return nil }
        var descriptor: String?
        let digits = arguments.prefix { $0.isNumber }
        if !digits.isEmpty, arguments.dropFirst(digits.count).first == "<" {
            let rest = arguments.dropFirst(digits.count + 1)
            descriptor = rest.firstIndex(of: ">").map { String(rest[..<$0]) }
        }
        return Call(name: name, descriptor: descriptor, strings: quoted(arguments), arguments: arguments, result: result, line: line)
    }

    /// The quoted strings in `text`, with strace's `\"` and `\\` undone.
    static func quoted(_ text: String) -> [String] {
        var strings: [String] = []
        var current: String?
        var escaped = false
        for character in text {
            guard var string = current else {
                if character == "\"" { current = "" }
                continue
            }
            if escaped {
                string.append(character)
                escaped = false
            } else if character == "\\" {
                escaped = true
            } else if character == "\"" {
                strings.append(string)
                current = nil
                continue
            } else {
                string.append(character)
            }
            current = string
        }
        return strings
    }

    /// The index of the first open of `path` at or after `start` (a marker the traced process opened).
    func marker(_ path: String, from start: Int = 0) -> Int? {
        calls[start...].firstIndex { $0.opens(path) }
    }

    /// What breaks the atomic, durable replacement of `path` in each of the saves that end at
    /// `markers` (each an open of a path that does not exist, made by the traced process right after
    /// a save returned): in every save, bytes written to `path.tmp`, then a flush of `path.tmp` after
    /// its last write, then `path.tmp` renamed over `path`, then a flush of the directory holding
    /// `path`, all before the marker. Empty when every save did so.
    func replacementFaults(_ path: String, markers: [String], from begin: Int = 0) -> [String] {
        let temporary = path + ".tmp"
        let directory = (path as NSString).deletingLastPathComponent
        var faults: [String] = []
        var start = begin
        for (number, marker) in markers.enumerated() {
            let save = "save \(number + 1) of \((path as NSString).lastPathComponent)"
            guard let end = self.marker(marker, from: start) else {
                faults.append("\(save): the traced process never reached \(marker)")
                break
            }
            defer { start = end + 1 }
            guard let rename = calls[start..<end].lastIndex(where: { $0.renames(temporary, to: path) }) else {
                faults.append("\(save): no rename of the temporary over the file")
                continue
            }
            guard let lastWrite = calls[start..<rename].lastIndex(where: { $0.writes(to: temporary) }) else {
                faults.append("\(save): nothing written to \(temporary) before the rename")
                continue
            }
            if !calls[(lastWrite + 1)..<rename].contains(where: { $0.flushes(temporary) }) {
                faults.append("\(save): no fsync of the temporary between its last write and the rename")
            }
            if !calls[(rename + 1)..<end].contains(where: { $0.flushes(directory) }) {
                faults.append("\(save): no fsync of \(directory) after the rename, before the save returned")
            }
        }
        return faults
    }
}
