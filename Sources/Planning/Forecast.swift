public import BessBase

/// The site's load and PV over one block from its start, kW.
public struct ForecastPoint: Sendable, Equatable, Codable {
    /// The block's start.
    public var startUnixSeconds: Int64
    /// Load, kW.
    public var loadKW: Double
    /// PV, kW.
    public var pvKW: Double

    /// A point from its fields.
    public init(startUnixSeconds: Int64, loadKW: Double, pvKW: Double) {
        self.startUnixSeconds = startUnixSeconds
        self.loadKW = loadKW
        self.pvKW = pvKW
    }
}

/// A forecast file (`optimiser.forecast_file`): CSV with the header `start,load_kw,pv_kw` and one line
/// per block, `start` in RFC 3339 with its offset (`2026-11-29T10:15:00+05:30` or `…Z`), starts
/// strictly increasing, powers finite and ≥ 0. Lines end in LF or CRLF; blank lines and lines starting
/// with `#` are skipped.
public enum ForecastFile {
    /// The most rows a file may hold (over 100 days of 15-minute blocks).
    public static let maximumRows = 10_000
    /// The most bytes a file may hold.
    public static let maximumBytes = 1 << 20

    /// The points of `text`, or `PLAN_FORECAST_INVALID` naming the first bad line (1-based), or
    /// `PLAN_FORECAST_TOO_LARGE`.
    public static func parse(_ text: String) throws(PlanningError) -> [ForecastPoint] {
        guard text.utf8.count <= maximumBytes else {
            throw PlanningError(.forecastTooLarge, message: "\(text.utf8.count) bytes (at most \(maximumBytes))")
        }
        var points: [ForecastPoint] = []
        var sawHeader = false
        var number = 0
        // Lines are cut at the byte: "\r\n" is one Character, so cutting at the Character "\n" left a
        // file with CRLF line ends (a spreadsheet's export) one line, refused for its header.
        for raw in text.utf8.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false) {
            number += 1
            let line = String(decoding: raw.last == UInt8(ascii: "\r") ? raw.dropLast() : raw, as: UTF8.self)
            let trimmed = line[...].trimmingSpaces
            if trimmed.isEmpty || trimmed.hasPrefix("#") { continue }
            func bad(_ what: String) -> PlanningError { PlanningError(.forecastInvalid, message: "line \(number): \(what)") }
            let fields = trimmed.split(separator: ",", omittingEmptySubsequences: false).map { $0.trimmingSpaces }
            if !sawHeader {
                guard fields == ["start", "load_kw", "pv_kw"] else { throw bad("the header is not start,load_kw,pv_kw") }
                sawHeader = true
                continue
            }
            guard fields.count == 3 else { throw bad("\(fields.count) fields (start,load_kw,pv_kw)") }
            guard points.count < maximumRows else {
                throw PlanningError(.forecastTooLarge, message: "line \(number): more than \(maximumRows) rows")
            }
            guard let start = RFC3339.unixSeconds(fields[0]) else {
                throw bad("start \(TextQuoting.quoted(fields[0], limit: 40)) is not RFC 3339 with an offset")
            }
            guard let load = Double(fields[1]), load.isFinite, load >= 0 else {
                throw bad("load_kw \(TextQuoting.quoted(fields[1], limit: 24)) is not a number >= 0")
            }
            guard let pv = Double(fields[2]), pv.isFinite, pv >= 0 else {
                throw bad("pv_kw \(TextQuoting.quoted(fields[2], limit: 24)) is not a number >= 0")
            }
            if let last = points.last, start <= last.startUnixSeconds { throw bad("start is not after the line before's") }
            points.append(ForecastPoint(startUnixSeconds: start, loadKW: load, pvKW: pv))
        }
        guard sawHeader else { throw PlanningError(.forecastInvalid, message: "line 1: no header start,load_kw,pv_kw") }
        return points
    }
}

/// A forecast from the site meter's own history: for a block, the same block yesterday, else the
/// latest block recorded. The history is the site's net load per block (load − PV, kW, battery
/// excluded); a positive value becomes load, a negative one PV.
public struct PersistenceForecast: Sendable, Equatable {
    /// (block start, net load kW), in any order; the latest per start counts.
    public private(set) var history: [Int64: Double]
    /// The latest block recorded.
    public private(set) var latest: (startUnixSeconds: Int64, netKW: Double)?

    /// A forecast from recorded blocks.
    public init(blocks: [(startUnixSeconds: Int64, netKW: Double)] = []) {
        history = [:]
        for block in blocks { record(startUnixSeconds: block.startUnixSeconds, netKW: block.netKW) }
    }

    /// Records a closed block (a non-finite value is ignored).
    public mutating func record(startUnixSeconds start: Int64, netKW: Double) {
        guard netKW.isFinite else { return }
        history[start] = netKW
        if latest.map({ start >= $0.startUnixSeconds }) ?? true { latest = (start, netKW) }
    }

    /// Drops blocks older than `unix` (the service keeps two days).
    public mutating func forget(before unix: Int64) {
        history = history.filter { $0.key >= unix }
        if let l = latest, l.startUnixSeconds < unix { latest = nil }
    }

    /// The forecast for the block starting at `start`; nil with no history at all.
    public func point(startUnixSeconds start: Int64) -> ForecastPoint? {
        guard let net = history[start - 86_400] ?? latest?.netKW else { return nil }
        return ForecastPoint(startUnixSeconds: start, loadKW: max(net, 0), pvKW: max(-net, 0))
    }

    /// Equal when both hold the same blocks and the same latest one.
    public static func == (a: Self, b: Self) -> Bool {
        a.history == b.history && a.latest?.startUnixSeconds == b.latest?.startUnixSeconds && a.latest?.netKW == b.latest?.netKW
    }
}

extension Substring {
    /// Without leading and trailing spaces and tabs.
    var trimmingSpaces: Substring {
        var s = self
        while let f = s.first, f == " " || f == "\t" { s = s.dropFirst() }
        while let l = s.last, l == " " || l == "\t" { s = s.dropLast() }
        return s
    }
}
