import ControlCore
import Foundation
@testable import Config
@testable import Cycle
@testable import Service
import Testing
import Uplink

@Suite("Site in the uplink")
struct SiteUplinkTests {
    func recorder(_ yaml: String) throws -> (UplinkRecorder, String) {
        let directory = NSTemporaryDirectory() + "bessd-site-uplink-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        let configuration = try ConfigLoader.parse(yaml, file: "site.yaml")
        return (UplinkRecorder(queue: SpoolQueue(try Spool(directory: directory)), configuration: configuration), directory)
    }

    static let yaml = """
        bess_units:
          - {id: A, capacity_kwh: 200, max_power_kw: 100}
          - {id: B, capacity_kwh: 200, max_power_kw: 100}
        site:
          meter: {protocol: sunspec}
          grid_limits: {import_max_kw: 230, export_max_kw: 20}
          soc_reserve_percent: 20
        """

    static func unit(soc: Double, setpoint: Double) -> UnitStatus {
        var u = UnitStatus()
        u.soc = soc
        u.setpoint = setpoint
        u.allowedCharge = 100_000
        u.allowedDischarge = 100_000
        return u
    }

    /// Limits use the meter's reading; nothing the limits bound without a fresh reading.
    @Test("site availability: from present power within the grid limits, never from SOC-reserve units")
    func availability() throws {
        let (recorder, directory) = try recorder(Self.yaml)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        var site = SiteStatus()
        site.gridPower = 150_000  // importing 150 kW
        // A discharges 30 kW at SOC 60; B charges 10 kW at SOC 15 (in the reserve).
        let units = [Self.unit(soc: 60, setpoint: 30_000), Self.unit(soc: 15, setpoint: -10_000)]
        let a = recorder.siteAvailability(units, site)
        // Up: A's 100 kW only (B is in the reserve) less the 20 kW the site gives now = 80 kW;
        // inside the export limit: grid may fall by 150 + 20 = 170 kW. Down: 200 kW of charge plus the
        // 20 kW given now = 220, inside the import limit: 230 − 150 = 80 kW.
        #expect(abs(a.upW - 80_000) < 1e-6)
        #expect(abs(a.downW - 80_000) < 1e-6)
        site.gridPower = .nan
        let stale = recorder.siteAvailability(units, site)
        #expect(stale.upW == 0 && stale.downW == 0)
    }

    @Test("telemetry carries the connection point in the same record as the units")
    func telemetry() throws {
        let (recorder, directory) = try recorder(Self.yaml)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        var site = SiteStatus()
        site.gridPower = 231_000
        site.binding = .importLimit
        site.shortfall = 1_000
        #expect(recorder.tick(now: .zero, units: [Self.unit(soc: 60, setpoint: 0), Self.unit(soc: 60, setpoint: 0)],
                              stats: CycleStatistics(), blocks: [], site: site) == nil)
        let records = try recorder.queue.pending(limit: 10).map { try JSONDecoder().decode(UplinkRecord.self, from: Data($0.payload)) }
        let telemetry = records.compactMap { record -> SiteTelemetry? in
            if case .telemetry(_, _, _, let units, let site) = record.body, units.count == 2 { return site }
            return nil
        }
        #expect(telemetry == [SiteTelemetry(gridPowerW: 231_000, bindingLimit: "import", shortfallW: 1_000, meterStale: false)])
        #expect(records.filter { if case .telemetry = $0.body { true } else { false } }.count == 1)
    }
}
