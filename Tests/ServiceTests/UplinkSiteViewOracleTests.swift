import BessSystem
import ControlCore
import Foundation
@testable import Config
@testable import Cycle
@testable import Service
import Testing
import Uplink

/// The uplink's availability record reads the site's figures from the published `SiteView`: for the
/// same statuses it must be the same bytes as when the recorder computed them itself.
@Suite("Uplink availability from the published SiteView")
struct UplinkSiteViewOracleTests {
    /// Sites that reach every branch: a meter with both grid limits, an SOC reserve and a
    /// frequency-response reserve; no meter; a meter without limits; three units, one of no energy.
    static let sites: [(yaml: String, zeroCapacityUnit: Int?)] = [
        (SiteUplinkTests.yaml + "\ngrid_integration:\n  droop_settings: {sustain_s: 720}\n", nil),
        ("""
        bess_units:
          - {id: A, capacity_kwh: 500, max_power_kw: 250}
        """, nil),
        ("""
        bess_units:
          - {id: A, capacity_kwh: 200, max_power_kw: 100}
          - {id: B, capacity_kwh: 100, max_power_kw: 50}
        site:
          meter: {protocol: sunspec}
          soc_reserve_percent: 10
        """, nil),
        ("""
        bess_units:
          - {id: A, capacity_kwh: 200, max_power_kw: 100}
          - {id: B, capacity_kwh: 200, max_power_kw: 100}
          - {id: C, capacity_kwh: 300, max_power_kw: 150}
        site:
          meter: {protocol: sunspec}
          grid_limits: {export_max_kw: 0}
          soc_reserve_percent: 15
        grid_integration:
          droop_settings: {sustain_s: 1800}
        """, 1),
    ]

    /// The site's part of the availability record as `UplinkRecorder.siteAvailability(_:_:)` made
    /// it at 0a10d98, before the site's figures moved into `SiteView`: copied here as the oracle.
    /// (Each unit's part is computed per unit as before, by the same lines.)
    static func oldSiteAvailability(_ configuration: BessdConfiguration, _ units: [UnitStatus], _ site: SiteStatus) -> SiteAvailability {
        let reserve = ResponseReserve(droop: configuration.controlSettings.droop, units: configuration.unitSettings)
        let socReserve = configuration.site.socReservePercent
        var up = 0.0, down = 0.0, now = 0.0
        for (index, u) in units.enumerated() {
            now += u.setpoint
            let reached = index < reserve.units.count
                ? reserve.units[index].reached(soc: u.soc.isFinite ? u.soc : nil, was: (false, false)) : (discharge: false, charge: false)
            if !reached.discharge, u.soc.isFinite, u.soc > socReserve { up += u.allowedDischarge }
            if !reached.charge { down += u.allowedCharge }
        }
        up = max(0, up - now)
        down = max(0, down + now)
        if configuration.site.meter != nil {
            if let exportMax = configuration.site.exportMaxKW {
                up = site.gridPower.isFinite ? min(up, max(0, site.gridPower + exportMax * 1000)) : 0
            }
            if let importMax = configuration.site.importMaxKW {
                down = site.gridPower.isFinite ? min(down, max(0, importMax * 1000 - site.gridPower)) : 0
            }
        }
        return SiteAvailability(upW: up, downW: down)
    }

    /// One unit's status: `soc` NaN with `bms` false is a unit whose BMS does not answer.
    static func unit(soc: Double, setpoint: Double, charge: Double, discharge: Double, bms: Bool = true) -> UnitStatus {
        var u = UnitStatus()
        u.soc = soc
        u.setpoint = setpoint
        u.allowedCharge = charge
        u.allowedDischarge = discharge
        u.bmsOnline = bms
        u.power = setpoint
        return u
    }

    /// The edge cases, then a deterministic sweep over SOCs, setpoints, allowed power and grid readings.
    static func cases(units count: Int) -> [(units: [UnitStatus], site: SiteStatus)] {
        func site(_ grid: Double, stale: Bool = false) -> SiteStatus {
            var s = SiteStatus()
            s.gridPower = grid
            s.meterStale = stale
            return s
        }
        func all(_ u: UnitStatus) -> [UnitStatus] { [UnitStatus](repeating: u, count: count) }
        var cases: [(units: [UnitStatus], site: SiteStatus)] = [
            ([UnitStatus](repeating: UnitStatus(), count: count), SiteStatus()),  // before the first publication
            (all(unit(soc: .nan, setpoint: 0, charge: 0, discharge: 0, bms: false)), site(0)),  // no BMS
            (all(unit(soc: .nan, setpoint: 10_000, charge: 50_000, discharge: 50_000)), site(-5_000)),
            (all(unit(soc: 120, setpoint: -20_000, charge: 80_000, discharge: 80_000)), site(40_000)),  // SOC > 100
            (all(unit(soc: -5, setpoint: 30_000, charge: 80_000, discharge: 80_000)), site(150_000)),  // SOC < 0
            (all(unit(soc: .infinity, setpoint: 0, charge: 10_000, discharge: 10_000)), site(.nan)),
            (all(unit(soc: 60, setpoint: 30_000, charge: 100_000, discharge: 100_000)), site(150_000, stale: true)),
            (all(unit(soc: 20, setpoint: 0, charge: 100_000, discharge: 100_000)), site(-30_000)),  // at the SOC reserve
            (all(unit(soc: 50, setpoint: -200_000, charge: 100_000, discharge: 100_000)), site(300_000)),
        ]
        let socs: [Double] = [.nan, -5, 0, 5, 12, 14, 15, 16.5, 20, 20.000_001, 50, 85.2, 95, 100, 120, .infinity]
        let powers: [Double] = [0, 1, 10_000, 49_999.5, 100_000, 250_000]
        let grids: [Double] = [.nan, -1e6, -20_000, -0.5, 0, 1_000, 150_000, 230_000, 1e6]
        // Case `n`'s field `salt` from a list of `count`: a multiplicative hash, the same on every run.
        func pick(_ count: Int, _ n: Int, _ salt: Int) -> Int {
            Int((((UInt(n) &+ 1) &* 2_654_435_761 &+ UInt(salt) &* 2_246_822_519) >> 7) % UInt(count))
        }
        for n in 0..<300 {
            let units = (0..<count).map { i in
                unit(soc: socs[pick(socs.count, n, 10 * i)],
                     setpoint: powers[pick(powers.count, n, 10 * i + 1)] * (pick(2, n, 10 * i + 2) == 0 ? 1 : -1),
                     charge: powers[pick(powers.count, n, 10 * i + 3)], discharge: powers[pick(powers.count, n, 10 * i + 4)],
                     bms: pick(4, n, 10 * i + 5) != 0)
            }
            cases.append((units, site(grids[pick(grids.count, n, 98)], stale: pick(5, n, 99) == 0)))
        }
        return cases
    }

    @Test("availability records: the same bytes read from the published view as computed the old way")
    func sameBytes() throws {
        var compared = 0
        for (yaml, zeroCapacityUnit) in Self.sites {
            var configuration = try ConfigLoader.parse(yaml, file: "site.yaml")
            if let zeroCapacityUnit { configuration.units[zeroCapacityUnit].capacityKWh = 0 }
            let directory = NSTemporaryDirectory() + "bessd-view-oracle-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
            defer { try? FileManager.default.removeItem(atPath: directory) }
            let recorder = UplinkRecorder(queue: SpoolQueue(try Spool(directory: directory)), configuration: configuration)
            // The daemon's shared state: the view computed at each publication, in the outbox.
            let shared = SharedState(units: configuration.units.count, view: SiteView.Settings(configuration))
            var seq: UInt64 = 0
            for (units, site) in Self.cases(units: configuration.units.count) {
                shared.contents.withLock { c in
                    c.outbox.publishStatus { out, outSite in
                        out = units
                        outSite = site
                    }
                }
                recorder.nextTelemetry = .zero
                recorder.nextAvailability = .zero
                #expect(recorder.tick(now: .zero, shared: shared) == nil)
                let records = try recorder.queue.records(after: seq, limit: 10)
                seq = records.last?.seq ?? seq
                let made = try #require(records.first { record in
                    guard let decoded = try? JSONDecoder().decode(UplinkRecord.self, from: Data(record.payload)) else { return false }
                    if case .availability = decoded.body { return true }
                    return false
                })
                let decoded = try JSONDecoder().decode(UplinkRecord.self, from: Data(made.payload))
                guard case .availability(let unitsPart, _) = decoded.body else { Issue.record("not availability"); continue }
                #expect(unitsPart.map(\.id) == configuration.units.map(\.id))
                let oracle = UplinkRecord(seq: decoded.seq, time: decoded.time,
                                          body: .availability(units: unitsPart, site: Self.oldSiteAvailability(configuration, units, site)),
                                          mode: configuration.mode.rawValue)
                // Foundation's encoder writes an object's keys in hash order, which varies from one
                // encoding to the next (the old records' bytes did too): the bytes are compared with
                // each object's keys sorted, and the decoded values exactly.
                let bytes = try Self.sortedKeys(made.payload), expected = try Self.sortedKeys(try JSONEncoder().encode(oracle))
                #expect(bytes == expected, "\(String(decoding: bytes, as: UTF8.self)) ≠ \(String(decoding: expected, as: UTF8.self))")
                #expect(decoded == oracle)
                compared += 1
            }
        }
        #expect(compared == Self.sites.count * (9 + 300))
    }

    /// `json` with every object's keys sorted, its numbers' text as it was.
    static func sortedKeys<Bytes: Sequence<UInt8>>(_ json: Bytes) throws -> [UInt8] {
        let object = try JSONSerialization.jsonObject(with: Data(json), options: [.fragmentsAllowed])
        return [UInt8](try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .fragmentsAllowed]))
    }

    @Test("the published view carries the site's ratings and, before any publication, no availability")
    func ratings() throws {
        var configuration = try ConfigLoader.parse(Self.sites[3].yaml, file: "site.yaml")
        configuration.units[1].capacityKWh = 0
        let shared = SharedState(units: 3, view: SiteView.Settings(configuration))
        var units = [UnitStatus](repeating: UnitStatus(), count: 3)
        var site = SiteStatus(), view = SiteView(), frequency = Double.nan
        shared.read(units: &units, site: &site, view: &view, frequency: &frequency)
        #expect(view.ratedPowerW == 350_000 && view.usableEnergyWh == 500_000)
        #expect(view.availableUpW == 0 && view.availableDownW == 0)
        #expect(view.unitsW.isNaN && view.socPercent.isNaN && view.meteredW.isNaN && view.clampedSOCPercent.isNaN)
    }
}
