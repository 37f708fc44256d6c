import BessBase
import BessSystem
import ControlCore
import Cycle
import IEC104
import Synchronization

/// Interrogation, counter interrogation and clock synchronisation.
extension StationProcedures {
    /// C_IC_NA_1: station interrogation (QOI 20) answered ACT_CON, every point once in its
    /// untimed type with COT 20, ACT_TERM; group interrogation (QOI 21–36, group 1–16) the same
    /// with the group's points (`StationImage.Point.group`) and COT 21–36 (a group without points:
    /// ACT_CON and ACT_TERM). Any other QOI: negative ACT_CON; an IOA other than 0: COT 47.
    func interrogation(_ asdu: ASDU, _ connection: OutstationConnection, groups: inout RedundancyGroups) {
        guard asdu.cause.cause == .activation else {
            return negative(asdu, .unknownCause, connection, "interrogation with COT \(asdu.cause.cause)")
        }
        guard let object = asdu.objects.first, case .interrogation(let qoi) = object.element else {
            return answer(asdu.answer(.activationConfirmation, negative: true), to: connection)
        }
        guard object.address == 0 else {
            return negative(asdu, .unknownObjectAddress, connection, "interrogation at IOA \(object.address), not 0")
        }
        let group = Int(qoi) - 20
        guard let interrogated = group == 0 ? Cause.interrogatedByStation : Cause.interrogatedByGroup(group) else {
            counters.negativeAnswers.add(1, ordering: .relaxed)
            peerLog(connection, .negative, "IEC 104 interrogation from \(connection.stream.peer) answered negatively: QOI \(qoi) is neither 20 (station) nor 21–36 (groups 1–16)",
                    [.peer: connection.stream.peer, .asduType: "\(asdu.type.rawValue)", .qoi: "\(qoi)"])
            return answer(asdu.answer(.activationConfirmation, negative: true), to: connection)
        }
        counters.interrogations.add(1, ordering: .relaxed)
        answer(asdu.answer(.activationConfirmation), to: connection)
        sample(now: clock.now(), groups: &groups)
        // One ASDU per type, as many objects as fit (SQ = 0: addresses need not follow each other).
        let cause = CauseOfTransmission(cause: interrogated, originator: asdu.cause.originator)
        var byType: [(TypeID, [InformationObject])] = []
        for point in image.points where group == 0 || point.group == group {
            let element = point.value.untimed
            let object = InformationObject(address: point.address, element: element)
            if let last = byType.indices.last, byType[last].0 == element.type, byType[last].1.count < 30 {
                byType[last].1.append(object)
            } else {
                byType.append((element.type, [object]))
            }
        }
        for (type, objects) in byType {
            answer(ASDU(type: type, cause: cause, commonAddress: settings.commonAddress, objects: objects), to: connection)
        }
        answer(asdu.answer(.activationTermination), to: connection)
    }

    /// C_CI_NA_1: the general counter request (RQT 5) answered ACT_CON, both counters with COT 37,
    /// ACT_TERM; the freeze bits are read as "read" (the counters are never frozen or reset).
    func counterInterrogation(_ asdu: ASDU, _ connection: OutstationConnection, groups: inout RedundancyGroups) {
        guard asdu.cause.cause == .activation else {
            return negative(asdu, .unknownCause, connection, "counter interrogation with COT \(asdu.cause.cause)")
        }
        guard case .counterInterrogation(let qcc)? = asdu.objects.first?.element, qcc & 0x3F == 5 else {
            return answer(asdu.answer(.activationConfirmation, negative: true), to: connection)
        }
        answer(asdu.answer(.activationConfirmation), to: connection)
        sample(now: clock.now(), groups: &groups)
        answer(ASDU(type: .integratedTotals, cause: CauseOfTransmission(cause: .requestedByGeneralCounter, originator: asdu.cause.originator),
                    commonAddress: settings.commonAddress, objects: image.counters()), to: connection)
        image.advanceCounterSequence()
        answer(asdu.answer(.activationTermination), to: connection)
    }

    /// C_CS_NA_1: answered ACT_CON with the station's time; the offset is logged; the system clock
    /// is never set from the wire (it follows NTP/PTP).
    func clockSynchronisation(_ asdu: ASDU, _ connection: OutstationConnection) {
        guard asdu.cause.cause == .activation else {
            return negative(asdu, .unknownCause, connection, "clock synchronisation with COT \(asdu.cause.cause)")
        }
        guard case .clockSynchronisation(let tag)? = asdu.objects.first?.element, let theirs = try? tag.unixMilliseconds(base: timeBase) else {
            return answer(asdu.answer(.activationConfirmation, negative: true), to: connection)
        }
        let ours = Int64((wallClock() * 1000).rounded(.down))
        let offset = Double(theirs - ours) / 1000
        peerLog(connection, .clockSync, "IEC 104 clock synchronisation from \(connection.stream.peer): its time is \(tag), \(trimmed(offset, decimals: 3)) s from ours; the system clock is not set from IEC 104",
                [.peer: connection.stream.peer, .offsetS: trimmed(offset, decimals: 3)])
        var confirmation = asdu.answer(.activationConfirmation)
        confirmation.information = .objects([InformationObject(address: 0, element: .clockSynchronisation(timeTag()))])
        answer(confirmation, to: connection)
    }
}
