import BessSystem
import ControlCore
import Foundation
import Glibc
import IEC104
import TestSupport
import Testing

/// The outstation in a running bessd (simulation), spoken to in raw frames.
@Suite("IEC 104: a running bessd's outstation", .serialized)
struct IEC104DaemonTests {
    static func yaml(port: Int) -> String {
        daemonYAML + """

            iec104:
              listen: 127.0.0.1:\(port)
              common_address: 7
              agc: {expiry_s: 30}
              groups:
                - {name: sldc, allow_from: [127.0.0.1], commands: [agc, setpoint]}
            """
    }

    static func float(_ element: InformationElement) -> Float? {
        if case let .measuredFloat(v, q) = element, q.isEmpty { return v }
        return nil
    }

    /// Runs c104 (hil/peers/iec104_client.py) against `port` and checks what every c104 run shows:
    /// each step passed, and values 1004, 1005 and 1012 equal to what `bessctl site --json` says
    /// after it (the site at 50 Hz with two units). `context` closes each failure message (socat's
    /// log through TLS). Returns c104's report and the site it was checked against.
    static func c104Checked(port: Int, daemon: RunningDaemon, context: @autoclosure () -> String = "") throws
        -> (json: [String: Any], site: [String: Any]) {
        let run = try Package.tool(["python3", "hil/peers/iec104_client.py", String(port), "7", "0.05", "0.02"])
        #expect(run.status == 0, "iec104_client.py: \(run.err.suffix(600)) \(context())")
        let json = try #require(try JSONSerialization.jsonObject(with: Data(run.out.utf8)) as? [String: Any],
                                "\(run.out.prefix(400)) \(context())")
        let ok = json["ok"] as? [String: Bool] ?? [:]
        for step in ["connected", "startdt", "interrogation", "clock_sync", "counters", "agc_in_service", "agc_target", "setpoint_sbo"] {
            #expect(ok[step] == true, "c104: \(step) \(ok)")
        }
        let site = try daemon.request(["verb": "site"])
        let values = json["values"] as? [String: Any] ?? [:]
        let soc = (site["units"] as? [[String: Any]] ?? []).compactMap { $0["soc_percent"] as? Double }.reduce(0, +) / 2
        #expect((values["1005"] as? Double).map { abs($0 - soc) < 0.2 } == true, "1005 \(values["1005"] ?? "-") vs \(soc)")
        #expect((values["1004"] as? Double).map { abs($0 - 50) < 0.001 } == true, "1004 \(values["1004"] ?? "-")")
        #expect((values["1012"] as? Double).map { abs($0 - 0.2) < 1e-6 } == true, "regulation upper limit 1012 \(values["1012"] ?? "-")")
        return (json, site)
    }

    /// The interrogation equals bessctl site --json.
    @Test("STARTDT, end of init, interrogation, spontaneous, negative answers; a bad frame closes only its own")
    func rawFrames() throws {
        let port = Loopback.freePort()
        let daemon = try RunningDaemon(yaml: Self.yaml(port: port))
        var site: [String: Any] = [:]
        // Droop holds the units at a steady power under the steady 49.8 Hz: wait until it has settled.
        var last = 0.0
        let settled = waitFor(seconds: 20) {
            site = (try? daemon.request(["verb": "site"])) ?? [:]
            let units = site["units"] as? [[String: Any]] ?? []
            let power = units.compactMap { $0["power_w"] as? Double }.reduce(0, +)
            defer { last = power }
            return units.count == 2 && abs(power) > 1000 && abs(power - last) < 50
        }
        #expect(settled, "site: \(site)")
        let station = try RawControlStation(port: port)
        station.send(.unnumbered(.startDataTransferActivation))
        #expect(station.next() == .unnumbered(.startDataTransferConfirmation))
        let initialised = station.asdu { $0.type == .endOfInitialisation }
        #expect(initialised?.cause.cause == .initialised && initialised?.commonAddress == 7)

        try station.send(ASDU(type: .interrogation, cause: CauseOfTransmission(cause: .activation), commonAddress: 7,
                              objects: [InformationObject(address: 0, element: .interrogation(20))]))
        // Events queued since start (kept for the first started connection) may come first: the
        // interrogation's frames run from its ACT_CON to its ACT_TERM.
        var answers: [ASDU] = []
        while let asdu = station.asdu(where: { _ in true }) {
            if asdu.type == .interrogation, asdu.cause.cause == .activationConfirmation { answers = [] }
            answers.append(asdu)
            if asdu.type == .interrogation, asdu.cause.cause == .activationTermination { break }
        }
        site = try daemon.request(["verb": "site"])
        #expect(answers.first?.type == .interrogation && answers.first?.cause.cause == .activationConfirmation)
        #expect(answers.last?.cause.cause == .activationTermination)
        let points = answers.filter { $0.type != .interrogation }
        #expect(points.allSatisfy { $0.cause.cause == .interrogatedByStation && [1, 3, 13].contains($0.type.rawValue) },
                "GI answers only in untimed types with COT 20: \(points.map { "\($0.type)/\($0.cause.cause)" })")
        var values: [UInt32: InformationElement] = [:]
        var count = 0
        for object in points.flatMap(\.objects) {
            values[object.address] = object.element
            count += 1
        }
        let expected = Set((1001...1017).map(UInt32.init) + (2001...2006).map(UInt32.init) + [2101, 2102])
        #expect(Set(values.keys) == expected && count == expected.count, "every point once: \(values.keys.sorted())")
        let units = site["units"] as? [[String: Any]] ?? []
        let power = units.compactMap { $0["power_w"] as? Double }.reduce(0, +)
        let soc = units.compactMap { $0["soc_percent"] as? Double }.reduce(0, +) / 2
        let discharge = units.compactMap { $0["allowed_discharge_w"] as? Double }.reduce(0, +)
        #expect(values[1001].flatMap(Self.float).map { abs(Double($0) - power / 1e6) < 0.002 } == true,
                "1001 \(String(describing: values[1001])) vs units \(power) W")
        #expect(values[1004].flatMap(Self.float).map { abs($0 - 49.8) < 0.001 } == true, "1004 \(String(describing: values[1004]))")
        #expect(values[1005].flatMap(Self.float).map { abs(Double($0) - soc) < 0.2 } == true, "1005 \(String(describing: values[1005])) vs \(soc)")
        #expect(values[1006].flatMap(Self.float).map { abs(Double($0) - discharge / 1e6) < 0.002 } == true,
                "1006 \(String(describing: values[1006])) vs \(discharge)")
        #expect(values[2004] == .singlePoint(true, .good), "frequency response active at 49.8 Hz")
        #expect(values[2101] == .doublePoint(.on, .good) && values[2102] == .doublePoint(.on, .good))

        // A change: unit D2 to standby → its double point OFF, spontaneous, time-tagged now.
        _ = try daemon.request(["verb": "mode", "mode": "standby", "unit": "D2"])
        let spontaneous = station.asdu(seconds: 10) {
            guard $0.type == .doublePointWithTime, $0.objects.first?.address == 2102,
                  case .doublePointWithTime(.off, _, _)? = $0.objects.first?.element else { return false }
            return true
        }
        #expect(spontaneous?.cause.cause == .spontaneous)
        if case let .doublePointWithTime(state, _, tag)? = spontaneous?.objects.first?.element {
            #expect(state == .off)
            let ms = try tag.unixMilliseconds()
            #expect(abs(Double(ms) / 1000 - SystemClock.wallClockSeconds()) < 5, "time tag \(tag)")
        } else {
            Issue.record("no spontaneous M_DP_TB_1 for 2102: \(String(describing: spontaneous))")
        }

        // Unknown IOA, common address and type: answered negatively, the link carries on.
        try station.send(ASDU(type: .setpointFloat, cause: CauseOfTransmission(cause: .activation), commonAddress: 7,
                              objects: [InformationObject(address: 3999, element: .setpointFloat(1, SetpointQualifier(select: false)))]))
        let unknownIOA = station.asdu { $0.type == .setpointFloat }
        #expect(unknownIOA?.cause.cause == .unknownObjectAddress && unknownIOA?.cause.negative == true)
        try station.send(ASDU(type: .interrogation, cause: CauseOfTransmission(cause: .activation), commonAddress: 8,
                              objects: [InformationObject(address: 0, element: .interrogation(20))]))
        let unknownCA = station.asdu { $0.type == .interrogation }
        #expect(unknownCA?.cause.cause == .unknownCommonAddress && unknownCA?.cause.negative == true)
        station.send(Frame.information(send: station.sendNumber, receive: station.receiveNumber, asdu: [0x66, 0x01, 0x06, 0x00, 0x07, 0x00, 0x00, 0x00, 0x00]))
        station.sendNumber = station.sendNumber.next
        let unknownType = station.asdu { $0.type.rawValue == 0x66 }
        #expect(unknownType?.cause.cause == .unknownType && unknownType?.cause.negative == true)

        // A second connection sends a frame whose length octet is 2: it is closed, the first is not.
        let hostile = try RawControlStation(port: port)
        hostile.send(bytes: [0x68, 0x02, 0x01, 0x00])
        #expect(hostile.waitClosed(), "the malformed connection is closed")
        station.send(.unnumbered(.testFrameActivation))
        var confirmed = false
        for _ in 0..<20 where !confirmed {
            confirmed = station.next(seconds: 0.5) == .unnumbered(.testFrameConfirmation)
        }
        #expect(confirmed && !station.closed, "the first connection still answers TESTFR")
        daemon.signal(SIGTERM)
        let (_, text) = daemon.finish()
        #expect(text.contains("IEC104_BAD_LENGTH"), "the close is logged with its code")
        #expect(text.contains("IEC104_LISTENING"))
    }

    /// c104 (lib60870): interrogation equals bessctl site --json; spontaneous M_ME_TF_1; AGC in service and target (direct); site setpoint select-before-operate taken by the cycle.
    @Test("c104 as control centre: interrogation, clock sync, counters, spontaneous values, AGC, site setpoint")
    func c104ControlCentre() throws {
        let port = Loopback.freePort(), metricsPort = Loopback.freePort()
        let daemon = try RunningDaemon(yaml: Self.yaml(port: port).replacingOccurrences(of: "base_hz: 49.8", with: "base_hz: 50.0")
            + "\nmetrics_listen: 127.0.0.1:\(metricsPort)\n")
        var site: [String: Any] = [:]
        let running = waitFor(seconds: 15) {
            site = (try? daemon.request(["verb": "site"])) ?? [:]
            return (site["units"] as? [[String: Any]] ?? []).compactMap { $0["soc_percent"] as? Double }.count == 2
        }
        #expect(running, "site: \(site)")
        let (json, checkedSite) = try Self.c104Checked(port: port, daemon: daemon)
        site = checkedSite
        let received = json["received"] as? [[String: Any]] ?? []
        func frames(_ type: Int, _ cot: Int) -> [[String: Any]] { received.filter { $0["type"] as? Int == type && $0["cot"] as? Int == cot } }
        #expect(!frames(36, 3).isEmpty, "spontaneous M_ME_TF_1")
        #expect(frames(13, 20).count + frames(1, 20).count + frames(3, 20).count >= 3 && frames(36, 20).isEmpty,
                "interrogation in untimed types only")
        #expect(frames(15, 37).first?["count"] as? Int == 2, "both counters on counter interrogation")
        #expect(received.allSatisfy { $0["negative"] as? Bool == false }, "no negative answer")
        // What the commands did, as bessctl site --json shows it.
        let agc = site["agc"] as? [String: Any] ?? [:]
        #expect(agc["in_service"] as? Bool == true && (agc["target_w"] as? Double).map { abs($0 - 50_000) < 1 } == true, "agc: \(agc)")
        let setpoint = (site["grid_operator"] as? [String: Any])?["scada_setpoint"] as? [String: Any]
        #expect((setpoint?["power_w"] as? Double).map { abs($0 - 20_000) < 1 } == true, "site setpoint: \(String(describing: setpoint))")
        // Four accepted: AGC in service, the AGC target, the setpoint's select and its execute.
        #expect(metric(metricsPort, "bessd_iec104_commands_total{result=\"accepted\"}") == 4)
        #expect(metric(metricsPort, "bessd_iec104_interrogations_total") == 1)
        daemon.signal(SIGTERM)
        let (_, text) = daemon.finish()
        #expect(text.contains("IEC104_CLOCK_SYNC") && text.contains("BESS_IOA=3002") && text.contains("BESS_RESULT=accepted"), "journal lines")
    }

    @Test("redundancy: when the started connection dies, the next gets its unacknowledged events in order, once")
    func redundancyHandOver() throws {
        let port = Loopback.freePort()
        let daemon = try RunningDaemon(yaml: Self.yaml(port: port))
        #expect(waitFor(seconds: 15) {
            ((try? daemon.request(["verb": "site"]))?["units"] as? [[String: Any]] ?? []).compactMap { $0["soc_percent"] as? Double }.count == 2
        })
        // A takes the events queued since start and never acknowledges: at k = 12 the window is full.
        let first = try RawControlStation(port: port, acknowledges: false)
        first.send(.unnumbered(.startDataTransferActivation))
        var sentToFirst: [ASDU] = []
        while let asdu = first.asdu(seconds: 2, where: { _ in true }) {
            if asdu.cause.cause == .spontaneous { sentToFirst.append(asdu) }
        }
        #expect(sentToFirst.count == 11, "k = 12 I-frames: M_EI_NA_1 and 11 events, got \(sentToFirst.count)")
        _ = try daemon.request(["verb": "mode", "mode": "standby", "unit": "D2"])
        // B starts in the same group: A is closed, its unacknowledged events go to B first.
        let second = try RawControlStation(port: port)
        second.send(.unnumbered(.startDataTransferActivation))
        #expect(first.waitClosed(), "the former started connection is closed at the switch-over")
        var sentToSecond: [ASDU] = []
        let gotStandby = waitFor(seconds: 10) {
            while let asdu = second.asdu(seconds: 0.3, where: { _ in true }) {
                if asdu.cause.cause == .spontaneous { sentToSecond.append(asdu) }
            }
            return sentToSecond.contains {
                if case .doublePointWithTime(.off, _, _)? = $0.objects.first?.element, $0.objects.first?.address == 2102 { return true }
                return false
            }
        }
        #expect(gotStandby, "the standby of D2 reaches the second station")
        #expect(Array(sentToSecond.prefix(sentToFirst.count)) == sentToFirst, "the unacknowledged events first, in order")
        #expect(Set(sentToSecond.map { try? $0.encoded() }).count == sentToSecond.count, "no event twice")
        daemon.signal(SIGTERM)
        let (_, text) = daemon.finish()
        #expect(text.contains("IEC104_SWITCHOVER"))
    }

    /// Sends a set-point or single command and returns the outstation's answers to it (ACT_CON and,
    /// when executed, ACT_TERM).
    static func command(_ station: RawControlStation, _ element: InformationElement, at address: UInt32) throws -> [ASDU] {
        try station.send(ASDU(type: element.type, cause: CauseOfTransmission(cause: .activation), commonAddress: 7,
                              objects: [InformationObject(address: address, element: element)]))
        var answers: [ASDU] = []
        while let asdu = station.asdu(seconds: 1, where: { $0.type == element.type }) {
            answers.append(asdu)
            if asdu.cause.negative || asdu.cause.cause == .activationTermination { break }
        }
        return answers
    }

    /// Refused: group without the right, stale time tag, frequency response, AGC out of service, an execute unlike its select.
    @Test("commands refused without right, stale, in frequency response, AGC out, or mismatched; SBO accepted")
    func commandRefusals() throws {
        let port = Loopback.freePort()
        let yaml = Self.yaml(port: port).replacingOccurrences(of: "commands: [agc, setpoint]", with: "commands: [agc, setpoint, frequency_response]")
        let daemon = try RunningDaemon(yaml: yaml + "\n    - {name: plant, allow_from: [127.0.0.2], commands: []}\n")
        var sldc: RawControlStation?
        #expect(waitFor(seconds: 10) { sldc = try? RawControlStation(port: port); return sldc != nil }, "bessd listens")
        let plant = try RawControlStation(port: port, from: "127.0.0.2")
        guard let sldc else { return }
        for station in [sldc, plant] {
            station.send(.unnumbered(.startDataTransferActivation))
            #expect(station.asdu { $0.type == .endOfInitialisation } != nil)
        }
        func refused(_ answers: [ASDU]) -> Bool {
            answers.count == 1 && answers[0].cause.cause == .activationConfirmation && answers[0].cause.negative
        }
        func executed(_ answers: [ASDU]) -> Bool {
            answers.map(\.cause.cause) == [.activationConfirmation, .activationTermination] && !answers.contains { $0.cause.negative }
        }
        #expect(refused(try Self.command(plant, .singleCommand(SingleCommand(on: true)), at: 3101)), "plant may command nothing")
        #expect(refused(try Self.command(sldc, .setpointFloat(0.05, SetpointQualifier(select: false)), at: 3001)), "AGC out of service")
        #expect(refused(try Self.command(sldc, .singleCommand(SingleCommand(on: true)), at: 3102)), "no runtime droop switch")
        let old = try CP56Time2a(unixMilliseconds: Int64(SystemClock.wallClockSeconds() * 1000) - 60_000)
        #expect(refused(try Self.command(sldc, .setpointFloatWithTime(0.01, SetpointQualifier(select: false), old), at: 3002)), "a minute old")
        let select = try Self.command(sldc, .setpointFloat(0.01, SetpointQualifier(select: true)), at: 3002)
        #expect(select.count == 1 && select.first?.cause.negative == false, "select: \(select)")
        #expect(refused(try Self.command(sldc, .setpointFloat(0.02, SetpointQualifier(select: false)), at: 3002)), "executes another value")
        #expect(executed(try Self.command(sldc, .setpointFloat(0.01, SetpointQualifier(select: false)), at: 3002)), "executes the selected value")
        // The reactive set-points (issue 59): 0 Mvar and unity are inside any site's capability,
        // 100 Mvar beyond this one's, 1.5 no power factor; the plant's group has no setpoint right.
        #expect(refused(try Self.command(plant, .setpointFloat(0, SetpointQualifier(select: false)), at: 3003)), "plant: 3003")
        #expect(refused(try Self.command(sldc, .setpointFloat(100, SetpointQualifier(select: false)), at: 3003)), "100 Mvar")
        #expect(executed(try Self.command(sldc, .setpointFloat(0, SetpointQualifier(select: false)), at: 3003)), "0 Mvar")
        #expect(refused(try Self.command(sldc, .setpointFloat(1.5, SetpointQualifier(select: false)), at: 3004)), "1.5 is no power factor")
        let unity = try Self.command(sldc, .setpointFloat(-1, SetpointQualifier(select: true)), at: 3004)
        #expect(unity.count == 1 && unity.first?.cause.negative == false, "select unity: \(unity)")
        #expect(executed(try Self.command(sldc, .setpointFloat(-1, SetpointQualifier(select: false)), at: 3004)), "executes unity")
        #expect(executed(try Self.command(sldc, .singleCommand(SingleCommand(on: true)), at: 3101)), "AGC in service")
        let now = try CP56Time2a(unixMilliseconds: Int64(SystemClock.wallClockSeconds() * 1000))
        #expect(executed(try Self.command(sldc, .setpointFloatWithTime(0.05, SetpointQualifier(select: false), now), at: 3001)), "AGC target")
        var agc: [String: Any] = [:]
        let followed = waitFor(seconds: 5) {
            agc = ((try? daemon.request(["verb": "site"]))?["agc"] as? [String: Any]) ?? [:]
            return (agc["target_w"] as? Double).map { abs($0 - 50_000) < 1 } == true
        }
        #expect(followed, "the cycle takes the AGC target: \(agc)")
        daemon.signal(SIGTERM)
        let (_, text) = daemon.finish()
        for reason in ["COMMAND_NOT_ALLOWED", "AGC_NOT_IN_SERVICE", "FREQUENCY_RESPONSE_NO_SWITCH", "COMMAND_TOO_OLD", "COMMAND_NOT_AS_SELECTED",
                       "SETPOINT_OUT_OF_RANGE"] {
            #expect(text.contains("BESS_REASON=\(reason)"), "journal: \(reason)")
        }
    }

    @Test("a station that never acknowledges interrogations is closed for its backlog; others served")
    func backlogCloses() throws {
        let port = Loopback.freePort()
        // The other station in a group of its own: in one group its STARTDT would close the first.
        let daemon = try RunningDaemon(yaml: Self.yaml(port: port) + "\n    - {name: plant, allow_from: [127.0.0.2]}\n")
        var greedy: RawControlStation?
        #expect(waitFor(seconds: 10) { greedy = try? RawControlStation(port: port, acknowledges: false); return greedy != nil }, "bessd listens")
        guard let greedy else { return }
        let other = try RawControlStation(port: port, from: "127.0.0.2")
        greedy.send(.unnumbered(.startDataTransferActivation))
        other.send(.unnumbered(.startDataTransferActivation))
        #expect(other.asdu { $0.type == .endOfInitialisation } != nil)
        // 200 interrogations behind a window the station never opens: about 1000 answers waiting.
        let interrogation = ASDU(type: .interrogation, cause: CauseOfTransmission(cause: .activation), commonAddress: 7,
                                 objects: [InformationObject(address: 0, element: .interrogation(20))])
        for _ in 0..<200 { try greedy.send(interrogation) }
        #expect(greedy.waitClosed(seconds: 10), "closed for its backlog")
        other.send(.unnumbered(.testFrameActivation))
        var confirmed = false
        for _ in 0..<20 where !confirmed { confirmed = other.next(seconds: 0.5) == .unnumbered(.testFrameConfirmation) }
        #expect(confirmed, "the other station is still served")
        daemon.signal(SIGTERM)
        let (_, text) = daemon.finish()
        #expect(text.contains("IEC104_BACKLOG"), "\(text.split(separator: "\n").filter { $0.contains("IEC104") }.suffix(6))")
    }

    /// Rights: IEC104_GROUPS_RELOADED, no restart asked; timer: IEC104_RESTART_NEEDED.
    @Test("reload: group rights apply live, a timer change needs a restart, an AGC band change needs neither")
    func reloadNamesTheRestart() throws {
        let port = Loopback.freePort()
        let yaml = Self.yaml(port: port)
        let daemon = try RunningDaemon(yaml: yaml)
        _ = daemon.notify.collect(seconds: 8) { $0.contains("READY=1") }
        func reload(_ text: String) throws {
            try text.replacingOccurrences(of: "@SOCKET@", with: daemon.socket)
                .write(toFile: daemon.configPath, atomically: true, encoding: .utf8)
            daemon.signal(SIGHUP)
            _ = daemon.notify.collect(seconds: 5) { $0.hasPrefix("READY=1") }
        }
        try reload(yaml.replacingOccurrences(of: "agc: {expiry_s: 30}", with: "agc: {expiry_s: 20}"))
        try reload(yaml.replacingOccurrences(of: "commands: [agc, setpoint]", with: "commands: []"))
        try reload(yaml.replacingOccurrences(of: "commands: [agc, setpoint]", with: "commands: []")
            .replacingOccurrences(of: "common_address: 7", with: "common_address: 7\n  t3_s: 25"))
        daemon.signal(SIGTERM)
        let (code, text) = daemon.finish()
        #expect(code == 0)
        let notices = text.split(separator: "\n").filter { $0.contains("IEC104_RESTART_NEEDED") || $0.contains("the iec104: block changed") }
        #expect(notices.count == 1 && notices.allSatisfy { $0.contains("timers") }, "\(notices)")
        let applied = text.split(separator: "\n").filter { $0.contains("BESS_CODE=IEC104_GROUPS_RELOADED") }
        #expect(applied.count == 1, "\(applied)")
        #expect(text.components(separatedBy: "reload applied").count - 1 == 3, "the three reloads applied")
    }
}
