public import ControlCore
import Foundation

/// One block of the schedule closed (`schedule_block`, docs/uplink.md): what it was to deliver and
/// what it did, kWh at the connection point (with a meter; the units' sum without one), + = export.
/// deviation = delivered − droop − target, and as % of the block's energy at rated power (Σ
/// `max_power_kw` × block length); `bound_by` what held it back longest, by `ScheduleBinding`'s name.
public struct ScheduleBlockRecord: Codable, Sendable, Equatable {
    public var startUnix: Int64
    public var lengthS: Int64
    public var targetKWh: Double
    public var deliveredKWh: Double
    public var droopKWh: Double
    public var deviationKWh: Double
    public var deviationPct: Double
    public var boundBy: String
    public var revision: Int

    public init(startUnix: Int64, lengthS: Int64, targetKWh: Double, deliveredKWh: Double, droopKWh: Double, deviationKWh: Double,
                deviationPct: Double, boundBy: String, revision: Int) {
        self.startUnix = startUnix
        self.lengthS = lengthS
        self.targetKWh = targetKWh
        self.deliveredKWh = deliveredKWh
        self.droopKWh = droopKWh
        self.deviationKWh = deviationKWh
        self.deviationPct = deviationPct
        self.boundBy = boundBy
        self.revision = revision
    }

    /// The record of a block the cycle closed.
    public init(_ report: ScheduleBlockReport) {
        self.init(startUnix: report.startUnixSeconds, lengthS: report.lengthSeconds, targetKWh: report.targetKWh,
                  deliveredKWh: report.deliveredKWh, droopKWh: report.droopKWh, deviationKWh: report.deviationKWh,
                  deviationPct: report.deviationPercent, boundBy: "\(report.boundBy)", revision: report.revision)
    }

    /// The event kind the record travels as.
    public static let kind = "schedule_block"

    /// The names `bound_by` takes.
    public static let bindings: Set<String> = Set(ScheduleBinding.allCases.map { "\($0)" })

    enum CodingKeys: String, CodingKey {
        case revision
        case startUnix = "start_unix", lengthS = "length_s", targetKWh = "target_kwh", deliveredKWh = "delivered_kwh"
        case droopKWh = "droop_kwh", deviationKWh = "deviation_kwh", deviationPct = "deviation_pct", boundBy = "bound_by"
    }

    /// The journal's line: `schedule block 2026-11-30T10:00:00Z: target -12.50 kWh, delivered …`.
    public var sentence: String {
        let f = { (v: Double) in String(format: "%.2f", v) }
        return "schedule block \(ScheduleDocument.rfc3339(startUnix)) (revision \(revision)): target \(f(targetKWh)) kWh, "
            + "delivered \(f(deliveredKWh)) kWh of which droop \(f(droopKWh)) kWh, deviation \(f(deviationKWh)) kWh "
            + "(\(f(deviationPct)) % of rated), bound by \(boundBy)"
    }
}
