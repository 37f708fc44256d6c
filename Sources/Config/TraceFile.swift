import ControlCore
import Foundation
internal import Yams

/// A `seconds,VALUE` CSV that a configuration names (`simulation.trace_file`, a load or PV profile's
/// `trace_file`): a header line and `#` comments are allowed, times must increase, and every error
/// names the CSV's line at the configuration key that named the file.
struct TraceFile {
    /// The path read: the name as written when absolute, else beside the configuration file.
    let location: String

    /// The trace `name` as written in the configuration file `file`.
    init(_ name: String, besideConfiguration file: String) {
        var location = name
        if !name.hasPrefix("/"), let slash = file.lastIndex(of: "/") { location = String(file[...slash]) + name }
        self.location = location
    }

    /// The points of a `seconds,hz` frequency trace, each hz in 40 < hz < 70.
    func frequencyPoints(at node: Node?, _ path: String, _ r: ConfigReader) -> [TracePoint] {
        points(column: "hz", valid: { $0 > 40 && $0 < 70 }, rule: "40 < hz < 70", at: node, path, r)
            .map { TracePoint(at: $0.at, hz: $0.value) }
    }

    /// The points of the file, each at its time from the run's start; `valid` checks each value
    /// (`rule` says what it wants). Any error is reported at `node` and `path` and gives no points.
    func points(column: String, valid: (Double) -> Bool, rule: String, at node: Node?, _ path: String,
                _ r: ConfigReader) -> [(at: Duration, value: Double)] {
        guard let data = FileManager.default.contents(atPath: location), let text = String(data: data, encoding: .utf8) else {
            r.error(node, path, "cannot read the trace file", got: location)
            return []
        }
        var points: [(at: Duration, value: Double)] = []
        var lastSeconds = -Double.infinity
        for (number, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let trimmed = line.trimmingCharacters(in: .whitespacesAndNewlines)
            if trimmed.isEmpty || trimmed.hasPrefix("#") || (number == 0 && trimmed.first?.isLetter == true) { continue }
            let cells = trimmed.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
            guard cells.count >= 2, let t = Double(cells[0]), let value = Double(cells[1]), t.isFinite, value.isFinite, valid(value) else {
                r.error(node, path, "\(location) line \(number + 1): expected seconds,\(column) with \(rule)", got: trimmed)
                return []
            }
            if t <= lastSeconds {
                r.error(node, path, "\(location) line \(number + 1): times must increase", got: trimmed)
                return []
            }
            lastSeconds = t
            // The file's own number is checked above; each time is converted once, a time before
            // the start keeping its sign.
            points.append((t < 0 ? .zero - .seconds(fromDouble: -t) : .seconds(fromDouble: t), value))
        }
        if points.isEmpty { r.error(node, path, "the trace file has no points", got: location) }
        return points
    }
}
