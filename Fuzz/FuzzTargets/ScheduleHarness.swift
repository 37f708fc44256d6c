import BessBase
import ControlCore
import Foundation
import Uplink

/// A block schedule as it arrives (issue 60): the document of `bessctl schedule load FILE` alone, or
/// carried by the aggregator's `schedule` command (one MQTT message, or an HTTP batch answer), through
/// `DispatchValidator`, `ScheduleDocument.decode`/`schedule(source:lengthSeconds:nowUnix:)`, then what
/// `ScheduleStore.offer` does with it: `Schedule.merge` against a schedule in force through a revision
/// gate, the cycle's `ScheduleWindow`, and `ScheduleFeasibility.check` against a site. The first bytes
/// pick the transport, the block length (60–3600 s), the clock, the gate, the zone and the site.
///
/// Invariants: a refusal is `SCHEDULE_INVALID` (or the dispatch codes) with a message of printable
/// text (no control, format or separator character; the peer's text quoted) of at most 1 KiB; a
/// schedule taken has 1–672 blocks, each start on a block boundary, strictly increasing, at most a
/// week ahead, the last not ended, every energy finite within ±10^6 kWh, its id a command id and its
/// revision 0…2^31−1, and written back as a document it decodes to itself; the merge keeps blocks
/// sorted and unique, on the boundary, each one of the incoming's or the current's, a later revision
/// changing nothing before the gate's first block and taking every incoming block from it on, a first
/// revision taking no incoming block already begun; the window holds at most 8 blocks not ended, in
/// order; a shortfall names a block of the schedule and a finite, positive kWh.
enum ScheduleHarness {
    /// 2026-11-29T00:00:00Z: the seeds' day.
    static let base: Int64 = 1_795_910_400
    static let lengths: [Int64] = [900, 60, 300, 1800, 3600]
    /// UTC, India, Nepal, Newfoundland (negative, half hour), Chatham (+12:45).
    static let offsets = [0, 19_800, 20_700, -12_600, 45_900]
    static let ratings: [String: Double] = ["A": 50, "B": 100]
    static let houseSymbols: Set<Unicode.Scalar> = ["±", "…", "–", "−", "≤", "≥", "×", "Σ", "η"]

    static func run(_ input: inout FuzzInput) -> [String] {
        let flags = input.u8()
        let length = lengths[Int(input.u8()) % lengths.count]
        let now = base + Int64(input.u16()) * 15 + Int64(input.u8() % 60)
        let gateByte = input.u8()
        let gate = ScheduleGate(blocks: Int(gateByte % 16) * (gateByte & 0x80 != 0 ? 6 : 1), align: 1 + Int(input.u8() % 4),
                                utcOffsetSeconds: offsets[Int(input.u8()) % offsets.count])
        let payload = input.rest()
        var violations = Violations()
        let document: ScheduleDocument
        switch flags & 3 {
        case 0:  // bessctl schedule load FILE, the control socket's `schedule` verb
            do throws(ScheduleError) {
                document = try ScheduleDocument.decode(payload)
            } catch {
                violations.check(error.code == .invalid, "decode refused with \(error.code)")
                checkText(error.message, "decode's refusal", &violations)
                return violations.list
            }
        default:  // the aggregator's command: one MQTT message (1) or an HTTP batch answer (2, 3)
            guard let carried = command(payload, batch: flags & 2 != 0, relative: flags & 4 != 0, now: now, &violations) else {
                return violations.list
            }
            document = carried
        }
        let schedule: Schedule
        do throws(ScheduleError) {
            schedule = try document.schedule(source: flags & 8 != 0 ? .operator : .aggregator, lengthSeconds: length, nowUnix: now)
        } catch {
            violations.check(error.code == .invalid, "schedule refused with \(error.code)")
            checkText(error.message, "the refusal", &violations)
            return violations.list
        }
        check(taken: schedule, document: document, now: now, &violations)
        let current = flags & 16 != 0 ? nil : inForce(length: length, now: now)
        let merged = Schedule.merge(current: current, incoming: schedule, arrivalUnix: now, gate: gate)
        check(merged: merged, current: current, incoming: schedule, now: now, gate: gate, &violations)
        let window = ScheduleWindow(merged, from: now, generation: 1)
        violations.check((0...ScheduleWindow.capacity).contains(window.count), "a window of \(window.count) blocks")
        for i in 0..<window.count {
            violations.check(window.blocks[i].startUnixSeconds + length > now, "the window holds a block that has ended")
            if i > 0 { violations.check(window.blocks[i - 1].startUnixSeconds < window.blocks[i].startUnixSeconds, "the window out of order") }
        }
        let site = feasibilityInput(flags >> 5)
        if let shortfall = ScheduleFeasibility.check(merged, from: now, site) {
            violations.check(shortfall.shortKWh.isFinite && shortfall.shortKWh > 0, "a shortfall of \(shortfall.shortKWh) kWh")
            violations.check(merged.blocks.contains { $0.startUnixSeconds == shortfall.blockStartUnixSeconds }, "a shortfall names no block")
        }
        return violations.list
    }

    /// The schedule a command carries, once the validator has taken it; nil when it was refused or
    /// carries none (its refusal checked).
    static func command(_ payload: [UInt8], batch: Bool, relative: Bool, now: Int64, _ violations: inout Violations) -> ScheduleDocument? {
        var commands: [DispatchCommand]
        if batch {
            guard let answer = try? JSONDecoder().decode(BatchResponse.self, from: Data(payload)) else { return nil }
            commands = answer.commands
        } else {
            switch MQTTUplinkSender.decodeCommand(payload) {
            case .malformed(let refusal):
                violations.check(!refusal.accepted && (refusal.reason ?? "").hasPrefix("MQTT_COMMAND_MALFORMED"), "a malformed message answered \(refusal)")
                return nil
            case .command(let command): commands = [command]
            }
        }
        var carried: ScheduleDocument?
        for var command in commands {
            if relative { command.expiresUnix += Double(now) }
            if let refusal = DispatchValidator.refusal(command, ratings: ratings, now: Double(now)) {
                checkText(refusal.message, "the dispatch refusal", &violations)
                continue
            }
            guard command.kind == "schedule" else { continue }
            violations.check(command.schedule != nil && command.unit == nil && command.powerKW == nil && command.reactiveKVar == nil
                                 && command.mode == nil, "a schedule command taken with a unit, power, kvar or mode, or without its schedule")
            carried = carried ?? command.schedule
        }
        return carried
    }

    static func check(taken s: Schedule, document: ScheduleDocument, now: Int64, _ violations: inout Violations) {
        violations.check((1...ScheduleDocument.maximumBlocks).contains(s.blocks.count), "taken with \(s.blocks.count) blocks")
        violations.check(IdentifierRule.acceptsCommandID(s.id), "taken with id \(TextQuoting.quoted(s.id, limit: 40))")
        violations.check((0...Int(Int32.max)).contains(s.revision), "taken with revision \(s.revision)")
        for (k, block) in s.blocks.enumerated() {
            violations.check(block.startUnixSeconds % s.lengthSeconds == 0, "block \(k) off the boundary")
            violations.check(block.startUnixSeconds <= now + ScheduleDocument.maximumLeadSeconds, "block \(k) more than a week ahead")
            violations.check(block.targetKWh.isFinite && abs(block.targetKWh) <= ScheduleDocument.maximumKWh, "block \(k): \(block.targetKWh) kWh")
            if k > 0 { violations.check(s.blocks[k - 1].startUnixSeconds < block.startUnixSeconds, "block \(k) not after the one before") }
        }
        violations.check((s.blocks.last?.startUnixSeconds ?? .min) + s.lengthSeconds > now, "taken with every block ended")
        // Written back (UTC starts) and read again: the same schedule.
        let back = (try? JSONEncoder().encode(ScheduleDocument(s))).map { [UInt8]($0) } ?? []
        let again = try? ScheduleDocument.decode(back).schedule(source: s.source, lengthSeconds: s.lengthSeconds, nowUnix: now)
        violations.check(again == s, "the schedule written back reads as \(again.map { "\($0.blocks.count) blocks" } ?? "a refusal")")
    }

    static func check(merged m: Schedule, current: Schedule?, incoming: Schedule, now: Int64, gate: ScheduleGate,
                      _ violations: inout Violations) {
        for (k, block) in m.blocks.enumerated() {
            violations.check(block.startUnixSeconds % m.lengthSeconds == 0, "merged block \(k) off the boundary")
            if k > 0 { violations.check(m.blocks[k - 1].startUnixSeconds < block.startUnixSeconds, "merged blocks out of order or repeated") }
            let mine = incoming.blocks.contains(block), kept = current?.blocks.contains(block) ?? false
            violations.check(mine || kept, "merged block \(k) is neither the incoming's nor the current's")
        }
        guard let current, current.id == incoming.id, current.lengthSeconds == incoming.lengthSeconds else {
            for block in m.blocks where block.startUnixSeconds <= now {
                violations.check(current?.blocks.contains(block) ?? false, "a first revision changed a block already begun")
            }
            return
        }
        guard incoming.revision > current.revision else {
            violations.check(m == current, "a revision not above the current changed it")
            return
        }
        let from = Schedule.firstRevisable(arrivalUnix: now, lengthSeconds: m.lengthSeconds, gate: gate)
        violations.check(from > now, "the gate opens at \(from), not after the arrival \(now)")
        violations.check(m.blocks.filter { $0.startUnixSeconds < from } == current.blocks.filter { $0.startUnixSeconds < from },
                         "a later revision changed a block inside the gate")
        violations.check(m.blocks.filter { $0.startUnixSeconds >= from } == incoming.blocks.filter { $0.startUnixSeconds >= from },
                         "a later revision did not take its blocks from the gate on")
    }

    /// The schedule in force when the seeds arrive: `day-1` revision 1, from two blocks before `now`
    /// for 16 blocks.
    static func inForce(length: Int64, now: Int64) -> Schedule {
        let first = (now / length - 2) * length
        let blocks = (0..<16).map { ScheduleBlock(startUnixSeconds: first + Int64($0) * length, targetKWh: Double($0 % 5 - 2) * 7.5) }
        return Schedule(id: "day-1", revision: 1, source: .aggregator, lengthSeconds: length, blocks: blocks)
    }

    /// A site of 200 kWh and 150 kW, with a meter and grid limits or without.
    static func feasibilityInput(_ pick: UInt8) -> ScheduleFeasibilityInput {
        let metered = pick & 1 != 0
        return ScheduleFeasibilityInput(socKWh: [100, 20, 195, 0][Int(pick >> 1) & 3], capacityKWh: 200, lowerKWh: 20, upperKWh: 190,
                                        chargeEfficiency: 0.95, dischargeEfficiency: 0.95, maxChargeKW: 150, maxDischargeKW: 150,
                                        importLimitKW: metered ? 80 : nil, exportLimitKW: metered ? 60 : nil,
                                        loadForecastKW: { start in metered ? Double(start / 60 % 7) * 10 : nil }, metered: metered)
    }

    /// A message a person or a log reads: no control, format or separator character, non-ASCII only
    /// the house's own symbols (the peer's text is quoted into ASCII), at most 1 KiB.
    static func checkText(_ text: String, _ what: String, _ violations: inout Violations) {
        violations.check(!text.isEmpty && text.utf8.count <= 1024, "\(what): \(text.utf8.count) bytes")
        for scalar in text.unicodeScalars where !(0x20...0x7E).contains(scalar.value) && !houseSymbols.contains(scalar) {
            violations.list.append("\(what) holds U+\(String(scalar.value, radix: 16, uppercase: true)): \(TextQuoting.quoted(text, limit: 200))")
            return
        }
    }

    static func seeds() -> [[UInt8]] {
        let head: (UInt8, UInt8) -> [UInt8] = { flags, gate in [flags, 0, 0x21, 0xC0, 0, gate, 1, 1] }  // 900 s; now 2026-11-30T12:00Z; align 2; India
        let day = #"{"id": "day-2", "revision": 1, "blocks": [{"start": "2026-11-30T18:00:00+05:30", "energy_kwh": -12.5}, "#
            + #"{"start": "2026-11-30T12:45:00Z", "energy_kwh": 20}, {"start": "2026-11-30T13:00:00.000Z", "energy_kwh": 0}, "#
            + #"{"start": "2026-11-30T08:15:00-05:00", "energy_kwh": 37.5}]}"#
        let revision = #"{"id": "day-1", "revision": 2, "blocks": [{"start": "2026-11-30T11:45:00Z", "energy_kwh": 1}, "#
            + #"{"start": "2026-11-30T12:00:00Z", "energy_kwh": 2}, {"start": "2026-11-30T12:15:00Z", "energy_kwh": 3}, "#
            + #"{"start": "2026-11-30T14:00:00Z", "energy_kwh": 4}, {"start": "2026-11-30T15:30:00Z", "energy_kwh": -1000000}]}"#
        let edges = [
            #"{"id": "x", "revision": -1, "blocks": [{"start": "2026-11-30T12:15:00Z", "energy_kwh": 1}]}"#,
            #"{"id": "x", "revision": 0, "blocks": []}"#,
            #"{"id": "x y", "revision": 0, "blocks": [{"start": "2026-11-30T12:15:00Z", "energy_kwh": 1}]}"#,
            #"{"id": "x", "revision": 0, "blocks": [{"start": "2026-11-30T12:15:01Z", "energy_kwh": 1}]}"#,
            #"{"id": "x", "revision": 0, "blocks": [{"start": "2026-11-30T12:15:00.5Z", "energy_kwh": 1e7}]}"#,
            #"{"id": "x", "revision": 0, "blocks": [{"start": "2026-12-09T12:15:00Z", "energy_kwh": 1}]}"#,
            #"{"id": "x", "revision": 0, "blocks": [{"start": "2026-11-30T12:30:00Z", "energy_kwh": 1}, {"start": "2026-11-30T12:15:00Z", "energy_kwh": 1}]}"#,
            #"{"id": "x", "revision": 0, "blocks": [{"start": "2024-02-29T23:45:00+00:00"}]}"#,
            #"{"id": "x", "revision": 0, "blocks": [{"start": "9999-12-31T23:45:00Z", "energy_kwh": 1}]}"#,
            #"{"id": "\u001b[31m", "revision": 0, "blocks": [{"start": "0000-01-01T00:00:00Z", "energy_kwh": 1}]}"#,
        ]
        let mqtt = #"{"id": "s1", "kind": "schedule", "expires_unix": 600, "schedule": "# + day + "}"
        let batch = #"{"acked_seq": 3, "commands": [{"id": "s2", "kind": "schedule", "unit": "A", "expires_unix": 600, "schedule": "#
            + revision + #"}, {"id": "s3", "kind": "schedule", "expires_unix": 600, "schedule": "# + revision + "}]}"
        return [head(0, 0) + Array(day.utf8), head(0, 0x86) + Array(revision.utf8), head(16, 0) + Array(revision.utf8),
                head(0x20 | 8, 2) + Array(day.utf8), head(5, 0) + Array(mqtt.utf8), head(6, 0x81) + Array(batch.utf8)]
            + edges.map { head(0, 0) + Array($0.utf8) }
    }
}
