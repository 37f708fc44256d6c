public import Config
public import Cycle
import Foundation
import Glibc

/// Builds the Prometheus text.
struct MetricsText {
    var lines: [String] = []

    mutating func metric(_ name: String, _ type: String, _ help: String, _ samples: [(labels: String, value: Double)]) {
        lines.append("# HELP \(name) \(help)")
        lines.append("# TYPE \(name) \(type)")
        for sample in samples where sample.value.isFinite {
            lines.append("\(name)\(sample.labels.isEmpty ? "" : "{\(sample.labels)}") \(sample.value)")
        }
    }

    var text: String { lines.joined(separator: "\n") + "\n" }

    static func label(_ value: String) -> String {
        value.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"")
    }
}
