import BessBase
public import Config
public import Cycle
import BessSystem
import ControlCore
import Foundation
import Synchronization
import Uplink

/// Records posted from a thread other than the service loop's (the IEC 104 outstation's command
/// outcomes), each with the wall time it was posted; the service loop's next round takes them into
/// the spool. Bounded: past `capacity` the oldest is dropped and counted, so a peer that sends
/// commands faster than the loop runs costs memory only up to the bound. A ring: a post is O(1)
/// under the lock, however full the inbox is.
final class RecordInbox: Sendable {
    let capacity: Int
    private let state: PILock<Ring>

    /// The records in `slots` from `head`, `count` of them, wrapping at `capacity`.
    struct Ring {
        var slots: [(time: Double, body: RecordBody)?]
        var head = 0
        var count = 0
        var dropped: UInt64 = 0
    }

    init(capacity: Int = 1024) {
        self.capacity = max(1, capacity)
        state = PILock(Ring(slots: Array(repeating: nil, count: max(1, capacity))))
    }

    /// Adds `body`, stamped now (any thread); when full, in the oldest's place.
    func post(_ body: RecordBody) {
        let time = SystemClock.wallClockSeconds()
        state.withLock { ring in
            let capacity = ring.slots.count
            if ring.count == capacity {
                ring.slots[ring.head] = (time, body)
                ring.head = (ring.head + 1) % capacity
                ring.dropped += 1
            } else {
                ring.slots[(ring.head + ring.count) % capacity] = (time, body)
                ring.count += 1
            }
        }
    }

    /// Everything posted since the last take, oldest first, and how many were dropped meanwhile.
    func take() -> (records: [(time: Double, body: RecordBody)], dropped: UInt64) {
        state.withLock { ring in
            let capacity = ring.slots.count
            var records: [(time: Double, body: RecordBody)] = []
            records.reserveCapacity(ring.count)
            for offset in 0..<ring.count {
                let index = (ring.head + offset) % capacity
                if let record = ring.slots[index] { records.append(record) }
                ring.slots[index] = nil
            }
            let dropped = ring.dropped
            ring.head = 0
            ring.count = 0
            ring.dropped = 0
            return (records, dropped)
        }
    }
}

/// Turns what the cycle publishes into uplink records in the spool: telemetry every interval,
/// availability at least every 5 s, every closed energy block and every event. Runs on the service
/// thread; a full disk or a broken spool is logged and never reaches the cycle.
final class UplinkRecorder {
    let queue: SpoolQueue
    let configuration: BessdConfiguration
    let interval: Duration
    var nextTelemetry = MonotonicInstant.zero
    var nextAvailability = MonotonicInstant.zero
    var reportedDrops: UInt64 = 0
    var failing: String?
    let encoder = JSONEncoder()
    /// False while the system clock is not synchronised: every record says so (`clock`).
    var clockSynchronized = true
    /// Events posted by other threads, recorded at the start of each `tick` (and at stop).
    let inbox = RecordInbox()
    /// Records the inbox's bound dropped since start (/metrics `bessd_uplink_inbox_dropped_total`; read
    /// on the server thread).
    let inboxDroppedTotal = Atomic<UInt64>(0)
    /// True while rounds in a row find drops: one episode, journalled once.
    var inboxDropping = false
    /// Set by the round whose drops start an episode (how many it found), nil otherwise: the service
    /// journals `UPLINK_INBOX_DROPPED` once per episode.
    var inboxDropsStarting: UInt64?

    /// An energy block's clock flags.
    static func clockFlags(_ block: EnergyBlock) -> [String] {
        (block.clockUnsynced ? ["unsynchronized"] : []) + (block.clockStepped ? ["stepped"] : [])
    }

    /// The energy kept for frequency response (`droop_settings.sustain_s`): never offered upward.
    let reserve: ResponseReserve

    init(queue: SpoolQueue, configuration: BessdConfiguration) {
        self.queue = queue
        self.configuration = configuration
        reserve = ResponseReserve(droop: configuration.controlSettings.droop, units: configuration.unitSettings)
        interval = configuration.aggregator?.interval ?? .seconds(1)
        reportedDrops = queue.state.dropped
    }

    /// Appends `body` as the next record, at `time` (Unix seconds; now when nil). Returns the error
    /// code when the spool refused it.
    @discardableResult
    func record(_ body: RecordBody, clock flags: [String]? = nil, time: Double? = nil) -> String? {
        let time = time ?? SystemClock.wallClockSeconds()
        let mode = configuration.mode.rawValue
        let clock = flags ?? (clockSynchronized ? nil : ["unsynchronized"])
        do {
            try queue.append { seq in [UInt8](try encoder.encode(UplinkRecord(seq: seq, time: time, body: body, mode: mode, clock: clock))) }
            failing = nil
            return nil
        } catch let error as SpoolError {
            failing = error.code.description
            return error.code.description
        } catch {
            failing = "SPOOL_IO"
            return "SPOOL_IO"
        }
    }

    /// When the next telemetry or availability record is due (the service loop wakes for it).
    var nextDue: MonotonicInstant { min(nextTelemetry, nextAvailability) }

    /// Called every service-loop round: the units' and the site's status and the site's view of them
    /// as one cycle published them (one lock), the statistics, and the blocks closed since the last.
    func tick(now: MonotonicInstant, shared: SharedState) -> String? {
        var units = [UnitStatus](repeating: UnitStatus(), count: shared.unitCount)
        var site = SiteStatus(), view = SiteView(), frequency = Double.nan
        shared.read(units: &units, site: &site, view: &view, frequency: &frequency)
        return tick(now: now, units: units, stats: shared.statistics, blocks: shared.takeBlocks(), site: site, view: view)
    }

    /// One round from `units` and `site` as published and `view`, the site's view of them
    /// (`SiteView`, computed with `SiteView.Settings(configuration)`): the site's figures are the
    /// view's, each unit's its own.
    func tick(now: MonotonicInstant, units: [UnitStatus], stats: CycleStatistics, blocks: [EnergyBlock],
              site: SiteStatus, view: SiteView) -> String? {
        // Posted events first, at the time they were posted.
        var problem = takeInbox()
        for block in blocks where block.unit < 0 {
            // The connection point's block: imported energy is in `dischargedWh`, exported in `chargedWh`.
            problem = record(.gridEnergyBlock(startUnix: block.startUnixSeconds, lengthS: block.lengthSeconds,
                                              importedKWh: block.dischargedKWh, exportedKWh: block.chargedKWh,
                                              coveredS: block.coveredSeconds), clock: Self.clockFlags(block)) ?? problem
        }
        for block in blocks where block.unit >= 0 && block.unit < configuration.units.count {
            problem = record(.energyBlock(unit: configuration.units[block.unit].id, startUnix: block.startUnixSeconds,
                                          lengthS: block.lengthSeconds, chargedKWh: block.chargedKWh,
                                          dischargedKWh: block.dischargedKWh, coveredS: block.coveredSeconds),
                                 clock: Self.clockFlags(block)) ?? problem
        }
        let drops = queue.state.dropped
        if drops > reportedDrops {
            problem = record(.spoolDrop(count: drops - reportedDrops)) ?? problem
            reportedDrops = drops
        }
        if now >= nextTelemetry {
            nextTelemetry = now + interval
            let telemetry = zip(configuration.units, units).map { unit, u in
                UnitTelemetry(id: unit.id, state: "\(u.state)", socPercent: finite(u.soc), sohPercent: finite(u.soh),
                              powerW: finite(u.power), setpointW: u.setpoint, voltageV: finite(u.voltage),
                              currentA: finite(u.current), temperatureMinC: finite(u.temperatureMin),
                              temperatureMaxC: finite(u.temperatureMax), allowedChargeW: u.allowedCharge,
                              allowedDischargeW: u.allowedDischarge, trips: u.active.map { "\($0.name)" },
                              latched: u.latched.map { "\($0.name)" }, bmsOnline: u.bmsOnline, inverterOnline: u.inverterOnline)
            }
            // The connection point rides in the same record (a site with a meter), not a second one.
            let siteTelemetry = configuration.site.meter == nil ? nil : SiteTelemetry(
                gridPowerW: finite(site.gridPower), bindingLimit: site.binding == .none ? nil : "\(site.binding)",
                shortfallW: site.shortfall, meterStale: site.meterStale)
            problem = record(.telemetry(frequencyHz: finite(stats.frequency), cycleP99Us: stats.histogram.percentile(0.99),
                                        overruns: stats.overruns, units: telemetry, site: siteTelemetry)) ?? problem
        }
        if now >= nextAvailability {
            nextAvailability = now + min(.seconds(5), configuration.aggregator?.interval ?? .seconds(5))
            // Energy to the SOC trips less what is kept for frequency response.
            let availability = zip(zip(configuration.units, units), reserve.units).map { pair, kept -> UnitAvailability in
                let (unit, u) = pair
                let capacityWh = unit.capacityKWh * 1000
                let soc = u.soc.isFinite ? u.soc : 0
                let socMax = configuration.socBound(.socHigh, default: 95)
                let socMin = configuration.socBound(.socLow, default: 5)
                return UnitAvailability(
                    id: unit.id, chargePowerW: u.allowedCharge, dischargePowerW: u.allowedDischarge,
                    chargeEnergyWh: u.soc.isFinite ? max(0, max(0, socMax - soc) / 100 * capacityWh - kept.chargeWh) : 0,
                    dischargeEnergyWh: u.soc.isFinite ? max(0, max(0, soc - socMin) / 100 * capacityWh - kept.dischargeWh) : 0)
            }
            problem = record(.availability(units: availability, site: Self.siteAvailability(view))) ?? problem
        }
        return problem
    }

    func finite(_ value: Double) -> Double? { value.isFinite ? value : nil }

    /// The inbox's records into the spool, at the time they were posted; those its bound dropped
    /// count as dropped records (a `spool_drop`, the metric, and an episode's start for the journal).
    /// Each round, and once more at stop so nothing posted is lost. Returns the spool's refusal, if any.
    @discardableResult
    func takeInbox() -> String? {
        var problem: String?
        let posted = inbox.take()
        for (time, body) in posted.records { problem = record(body, time: time) ?? problem }
        inboxDropsStarting = nil
        if posted.dropped > 0 {
            problem = record(.spoolDrop(count: posted.dropped)) ?? problem
            inboxDroppedTotal.add(posted.dropped, ordering: .relaxed)
            if !inboxDropping { inboxDropsStarting = posted.dropped }
        }
        inboxDropping = posted.dropped > 0
        return problem
    }

    /// What the site can still offer up and down, as the published view says
    /// (`SiteView.availableUpW`, `availableDownW`).
    static func siteAvailability(_ view: SiteView) -> SiteAvailability {
        SiteAvailability(upW: view.availableUpW, downW: view.availableDownW)
    }
}

extension BessdConfiguration {
    /// The SOC threshold of an interlock as configured, for the energy headroom.
    func socBound(_ code: TripCode, default value: Double) -> Double {
        interlocks[code]?.threshold ?? value
    }
}
