import BessSystem
import ControlCore
import Cycle
import IEC104
import Synchronization

/// The station behind the links: the image of the site it serves, sampled from the cycle's
/// publications into spontaneous events, and the application procedures a started connection
/// asks for (interrogation, counter interrogation, clock synchronisation, commands), with the
/// negative answers (COT 44–47, P/N = 1) for what the station does not know. Used by the server
/// thread only; the connections and groups are the server's, handed in with each call.
final class StationProcedures {
    let settings: OutstationSettings
    let shared: SharedState
    var image: StationImage
    let journal: PeerJournal
    let counters: OutstationCounters
    /// Every command outcome, whether or not the journal's budget writes its line.
    let audit: (@Sendable (OutstationAuditEntry) -> Void)?
    /// The monotonic clock (select timeouts, sampling at an interrogation).
    let clock: any MonotonicClock
    /// The wall clock, seconds since 1970: the time tags of events and answers, and the age of
    /// time-tagged commands.
    let wallClock: @Sendable () -> Double
    let timeBase: TimeBase
    /// The commands' decisions (rights, time tags, selects).
    let commands: OutstationCommands
    /// The selects held, by information object address.
    var selections: [UInt32: OutstationCommands.Selection] = [:]
    private var lastCycle: UInt64 = .max
    private var units: [UnitStatus]
    private var site = SiteStatus()

    init(settings: OutstationSettings, description: StationDescription, shared: SharedState, journal: PeerJournal,
         counters: OutstationCounters, audit: (@Sendable (OutstationAuditEntry) -> Void)?, clock: any MonotonicClock,
         wallClock: @escaping @Sendable () -> Double) {
        self.settings = settings
        self.shared = shared
        self.journal = journal
        self.counters = counters
        self.audit = audit
        self.clock = clock
        self.wallClock = wallClock
        image = StationImage(description: description, settings: settings)
        units = [UnitStatus](repeating: UnitStatus(), count: shared.unitCount)
        timeBase = TimeBase(offsetMinutes: settings.timeZoneOffsetMinutes) ?? .utc
        commands = OutstationCommands(settings: settings, timeBase: timeBase)
    }

    /// Handles one ASDU a started connection sent; a malformed one is returned (it closes the
    /// connection). An unknown type, cause, common address or IOA is answered negatively and the
    /// link carries on.
    func handle(_ octets: [UInt8], from connection: OutstationConnection, groups: inout RedundancyGroups, now: MonotonicInstant) -> IEC104Error? {
        let asdu: ASDU
        do { asdu = try ASDU(decoding: octets) } catch { return error }
        if case .unknownType = asdu.information {
            negative(asdu, .unknownType, connection, "type \(asdu.type.rawValue) unknown")
            return nil
        }
        let global = asdu.commonAddress == 0xFFFF
        let stationWide = asdu.type == .interrogation || asdu.type == .counterInterrogation || asdu.type == .clockSynchronisation
        guard asdu.commonAddress == settings.commonAddress || (global && stationWide) else {
            negative(asdu, .unknownCommonAddress, connection, "common address \(asdu.commonAddress)")
            return nil
        }
        switch asdu.type {
        case .interrogation: interrogation(asdu, connection, groups: &groups)
        case .counterInterrogation: counterInterrogation(asdu, connection, groups: &groups)
        case .clockSynchronisation: clockSynchronisation(asdu, connection)
        case .setpointFloat, .setpointFloatWithTime, .singleCommand, .singleCommandWithTime: command(asdu, connection, groups: groups, now: now)
        default:
            // A monitor type in the control direction.
            negative(asdu, .unknownType, connection, "type \(asdu.type) is not served in the control direction")
        }
        return nil
    }

    func answer(_ asdu: ASDU, to connection: OutstationConnection) {
        var copy = asdu
        if copy.commonAddress == 0xFFFF { copy.commonAddress = settings.commonAddress }
        guard let bytes = try? copy.encoded() else { return }
        connection.answers.append(bytes)
    }

    func negative(_ asdu: ASDU, _ cause: Cause, _ connection: OutstationConnection, _ why: String) {
        counters.negativeAnswers.add(1, ordering: .relaxed)
        peerLog(connection, .negative, "IEC 104 \(asdu.type) from \(connection.stream.peer) answered negatively with COT \(cause): \(why)",
                [.peer: connection.stream.peer, .cot: "\(cause)", .asduType: "\(asdu.type.rawValue)"])
        answer(asdu.negativeAnswer(cause), to: connection)
    }

    /// A journal line the peer's input caused (a negative answer, a refused command, a clock
    /// synchronisation), within its address's budget of such lines. True when written.
    @discardableResult
    func peerLog(_ connection: OutstationConnection, _ code: OutstationLogCode, _ message: String, _ fields: [NoticeField: String]) -> Bool {
        journal.write(address: connection.stream.peerAddress, .input, code, message, fields)
    }

    /// Takes the cycle's latest published state when it is new: the image is filled and every
    /// change beyond its deadband becomes a time-tagged event in every group's queue.
    func sample(now: MonotonicInstant, groups: inout RedundancyGroups) {
        var frequency = Double.nan
        var view = SiteView()
        let cycle = shared.read(units: &units, site: &site, view: &view, frequency: &frequency)
        guard cycle != lastCycle else { return }
        lastCycle = cycle
        image.fill(units: units, site: site, view: view, frequency: frequency, now: now)
        image.fill(frequencyEvents: shared.frequencyEventTally)
        let changes = image.changes()
        guard !changes.isEmpty else { return }
        let tag = timeTag()
        for point in changes {
            let asdu = ASDU(type: point.value.timed(tag).type, cause: CauseOfTransmission(cause: .spontaneous),
                            commonAddress: settings.commonAddress,
                            objects: [InformationObject(address: point.address, element: point.value.timed(tag))])
            guard let bytes = try? asdu.encoded() else { continue }
            let dropped = groups.enqueue(bytes)
            if dropped > 0 { counters.eventsDropped.add(UInt64(dropped), ordering: .relaxed) }
            counters.eventsQueued.add(1, ordering: .relaxed)
        }
    }

    /// Now as a CP56Time2a in the configured time base.
    func timeTag() -> CP56Time2a {
        let ms = Int64((wallClock() * 1000).rounded(.down))
        return (try? CP56Time2a(unixMilliseconds: ms, base: timeBase))
            ?? CP56Time2a(year: 0, month: 1, day: 1, hour: 0, minute: 0, milliseconds: 0, invalid: true)
    }
}
