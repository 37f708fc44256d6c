import ControlCore
import ControlProtocol
import Foundation
@testable import Config
@testable import Cycle
@testable import Service
import Testing
import Uplink

/// The frequency-response reserve (`droop_settings.sustain_s`) in what bessd reports upward and in
/// `bessctl site`.
@Suite("Response reserve in the uplink")
struct ResponseReserveUplinkTests {
    /// Two 100 kW / 200 kWh units; 720 s of full response = 20 kWh discharge (10 % of each unit) and
    /// 19.6 kWh charge (98 kW at the 52.5 Hz trip, 9.8 %).
    static func yaml(sustain: Int) -> String {
        """
        bess_units:
          - {id: A, capacity_kwh: 200, max_power_kw: 100}
          - {id: B, capacity_kwh: 200, max_power_kw: 100}
        grid_integration:
          droop_settings: {sustain_s: \(sustain)}
        """
    }

    static func unit(soc: Double) -> UnitStatus {
        var u = UnitStatus()
        u.soc = soc
        u.allowedCharge = 100_000
        u.allowedDischarge = 100_000
        return u
    }

    func recorder(sustain: Int) throws -> (UplinkRecorder, String) {
        let directory = NSTemporaryDirectory() + "bessd-reserve-uplink-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        let configuration = try ConfigLoader.parse(Self.yaml(sustain: sustain), file: "site.yaml")
        return (UplinkRecorder(queue: SpoolQueue(try Spool(directory: directory)), configuration: configuration), directory)
    }

    @Test("the availability record's energy leaves the reserve out, each way")
    func unitEnergy() throws {
        let (recorder, directory) = try recorder(sustain: 720)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        #expect(recorder.tick(now: .zero, units: [Self.unit(soc: 50), Self.unit(soc: 12)], stats: CycleStatistics(),
                              blocks: []) == nil)
        let records = try recorder.queue.pending(limit: 10).map { try JSONDecoder().decode(UplinkRecord.self, from: Data($0.payload)) }
        let units = records.compactMap { record -> [UnitAvailability]? in
            if case .availability(let units, _) = record.body { return units }
            return nil
        }.first
        let list = try #require(units)
        // A at 50 %: 45 % of 200 kWh above SOC_LOW = 90 kWh less 20 kWh kept; 45 % below SOC_HIGH =
        // 90 kWh less 19.6 kWh. B at 12 %: 14 kWh above SOC_LOW, all of it reserve.
        #expect(abs(list[0].dischargeEnergyWh - 70_000) < 1e-6)
        #expect(abs(list[0].chargeEnergyWh - 70_400) < 1e-6)
        #expect(list[1].dischargeEnergyWh == 0)
    }

    @Test("site availability offers no more discharge once the site's energy is at the reserve")
    func sitePower() throws {
        let (recorder, directory) = try recorder(sustain: 720)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let (plain, plainDirectory) = try self.recorder(sustain: 0)
        defer { try? FileManager.default.removeItem(atPath: plainDirectory) }
        // Both at 14 %: 2 × 9 % of 200 kWh = 36 kWh above SOC_LOW, under the 40 kWh kept.
        let low = [Self.unit(soc: 14), Self.unit(soc: 14)]
        let held = recorder.siteAvailability(low, SiteStatus())
        #expect(held.upW == 0 && held.downW == 200_000)
        #expect(plain.siteAvailability(low, SiteStatus()).upW == 200_000, "without a sustain time nothing is kept")
        let fine = recorder.siteAvailability([Self.unit(soc: 50), Self.unit(soc: 50)], SiteStatus())
        #expect(fine.upW == 200_000 && fine.downW == 200_000)
    }

    @Test("bessctl site's reply: kWh each way, the SOC band, and whether it is reached")
    func siteReply() throws {
        let configuration = try ConfigLoader.parse(Self.yaml(sustain: 720), file: "site.yaml")
        let reply = try #require(StatusReport.reserveReply(configuration, units: [Self.unit(soc: 14), Self.unit(soc: 14)]))
        #expect(reply.sustainS == 720 && abs(reply.dischargeWh - 40_000) < 1e-6 && abs(reply.chargeWh - 39_200) < 1e-6)
        #expect(abs(reply.socLowPercent - 15) < 1e-9 && abs(reply.socHighPercent - 85.2) < 1e-9)
        #expect(reply.dischargeReached && !reply.chargeReached)
        let none = try ConfigLoader.parse(Self.yaml(sustain: 0), file: "site.yaml")
        #expect(StatusReport.reserveReply(none, units: []) == nil)
    }
}
