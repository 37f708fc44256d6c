import BessSystem
import ControlCore
@testable import Cycle
import Foundation
import IEC104
@testable import Outstation
import TestSupport
import Testing

/// 3003 and 3004 on the wire, to the outstation on its thread (stepped time, `SteppedOutstation`):
/// in raw frames, and from c104 (lib60870, hil/peers/iec104_command_client.py), the independent
/// controlling station. `SteppedOutstation`'s site has no unit with var points (its view's capability
/// is 0 var each way): it takes 0 Mvar and a unity power factor and refuses the rest. The last test
/// publishes units with var capability and c104 meets the bounds of the view they make.
@Suite("IEC 104 outstation: 3003 and 3004 on the wire, raw and from c104", .serialized)
struct StationReactiveWireTests {
    /// Sends `value` at `address` as C_SE_NC_1 and returns its answers: up to a negative one, the
    /// ACT_TERM, or a select's ACT_CON.
    static func command(_ station: RawStation, _ value: Float, at address: UInt32, select: Bool = false,
                        type: TypeID = .setpointFloat) throws -> [ASDU] {
        let qualifier = SetpointQualifier(select: select)
        let now = try CP56Time2a(unixMilliseconds: Int64(SystemClock.wallClockSeconds() * 1000))
        let element: InformationElement = switch type {
        case .singleCommand: .singleCommand(SingleCommand(on: true))
        case .setpointFloatWithTime:
            .setpointFloatWithTime(value, qualifier, now)
        default: .setpointFloat(value, qualifier)
        }
        try station.send(ASDU(type: type, cause: CauseOfTransmission(cause: .activation), commonAddress: 7,
                              objects: [InformationObject(address: address, element: element)]))
        return station.asdus {
            guard let last = $0.last(where: { $0.type == type }) else { return false }
            return last.cause.negative || last.cause.cause == .activationTermination || (select && last.cause.cause == .activationConfirmation)
        }.filter { $0.type == type }
    }

    static let executed: [Cause] = [.activationConfirmation, .activationTermination]

    @Test("raw frames: 3003 and 3004 direct and SBO confirmed and terminated; outside the capability, unlike the select, a single command refused")
    func rawFrames() throws {
        let outstation = try SteppedOutstation()
        let station = try RawStation(port: outstation.server.port)
        #expect(station.start())
        let direct = try Self.command(station, 0, at: 3003)
        #expect(direct.map(\.cause.cause) == Self.executed && !direct.contains { $0.cause.negative }, "0 Mvar: \(direct)")
        #expect(outstation.shared.commands.reactive.enabled && outstation.shared.commands.reactive.value == 0)
        let beyond = try Self.command(station, 0.01, at: 3003)
        #expect(beyond.count == 1 && beyond[0].cause.cause == .activationConfirmation && beyond[0].cause.negative, "10 kvar, no capability")
        #expect(outstation.journal.lines(.commandRefused).last?.fields["BESS_REASON"] == "SETPOINT_OUT_OF_RANGE")
        let tagged = try Self.command(station, 0, at: 3003, type: .setpointFloatWithTime)
        #expect(tagged.map(\.cause.cause) == Self.executed && !tagged.contains { $0.cause.negative }, "C_SE_TC_1 time-tagged now: \(tagged)")

        #expect(try Self.command(station, -1, at: 3004, select: true).map(\.cause.negative) == [false], "selected")
        #expect(try Self.command(station, 1, at: 3004).map(\.cause.negative) == [true], "an execute unlike the select")
        let selected = try Self.command(station, -1, at: 3004)
        #expect(selected.map(\.cause.cause) == Self.executed && !selected.contains { $0.cause.negative }, "the selected value: \(selected)")
        let commands = outstation.shared.commands
        #expect(commands.powerFactorInjecting.enabled && commands.powerFactorInjecting.value == -1)
        #expect(commands.powerFactorAbsorbing.enabled && commands.powerFactorAbsorbing.value == -1)
        #expect(try Self.command(station, 0.95, at: 3004).map(\.cause.negative) == [true], "0.95 without capability")
        #expect(try Self.command(station, 1.5, at: 3004).map(\.cause.negative) == [true], "1.5 is no power factor")
        let single = try Self.command(station, 1, at: 3004, type: .singleCommand)
        #expect(single.count == 1 && single[0].cause.cause == .unknownType && single[0].cause.negative, "3004 takes set-points only")
        #expect(outstation.shared.commands == commands, "refusals change nothing")
        let lines = outstation.journal.lines(.command).filter { $0.fields["BESS_IOA"] == "3004" }
        #expect(lines.last?.fields["BESS_VALUE"] == "-1" && lines.last?.fields["BESS_RESULT"] == "accepted")
    }

    @Test("raw frames: a group without the setpoint right is refused 3003 and 3004 (COMMAND_NOT_ALLOWED)")
    func withoutRight() throws {
        let outstation = try SteppedOutstation { $0.groups = [IEC104Group(name: "sldc", commands: [.agc, .frequencyResponse])] }
        let station = try RawStation(port: outstation.server.port)
        #expect(station.start())
        #expect(try Self.command(station, 0, at: 3003).map(\.cause.negative) == [true])
        #expect(try Self.command(station, 1, at: 3004, select: true).map(\.cause.negative) == [true])
        #expect(outstation.journal.lines(.commandRefused).map { $0.fields["BESS_REASON"] } == ["COMMAND_NOT_ALLOWED", "COMMAND_NOT_ALLOWED"])
        #expect(!outstation.shared.commands.reactive.enabled && !outstation.shared.commands.powerFactorInjecting.enabled)
    }

    /// c104's run: per command, the answers of its IOA as "COT+" / "COT-".
    static func c104(_ port: Int, _ commands: [String]) throws -> [[String]] {
        let run = try Package.tool(["python3", "hil/peers/iec104_command_client.py", String(port), "7"] + commands)
        #expect(run.status == 0, "iec104_command_client.py: \(run.err.suffix(600))")
        let json = try #require(try JSONSerialization.jsonObject(with: Data(run.out.utf8)) as? [String: Any], "\(run.out.prefix(400))")
        let ok = json["ok"] as? [String: Bool] ?? [:]
        #expect(ok["connected"] == true && ok["startdt"] == true, "c104: \(ok)")
        let results = json["commands"] as? [[String: Any]] ?? []
        #expect(results.count == commands.count, "\(results)")
        return results.map { result in
            (result["frames"] as? [[String: Any]] ?? []).map { frame in
                "\(frame["cot"] as? Int ?? -1)\(frame["negative"] as? Bool == true ? "-" : "+")"
            }
        }
    }

    @Test("c104 sends 3003 and 3004 direct and SBO: bessd's confirmations and the SiteCommands written; a group without the right refused")
    func fromC104() throws {
        let outstation = try SteppedOutstation()
        let answers = try Self.c104(outstation.server.port,
                                    ["3003:direct:0", "3003:sbo:0.01", "3004:sbo:1", "3004:direct:0.95", "3004:direct:0", "3004:sbo:1.5",
                                     "3003:direct:0"])
        #expect(answers.count == 7)
        guard answers.count == 7 else { return }
        #expect(answers[0] == ["7+", "10+"], "3003 0 Mvar direct: \(answers[0])")
        #expect(answers[1] == ["7+", "7-"], "3003 10 kvar: selected, its execute refused (no capability): \(answers[1])")
        #expect(answers[2] == ["7+", "7+", "10+"], "3004 unity SBO: \(answers[2])")
        #expect(answers[3] == ["7-"], "3004 0.95 without capability: \(answers[3])")
        #expect(answers[4] == ["7-"], "3004 0 is no power factor: \(answers[4])")
        #expect(answers[5] == ["7+", "7-"], "3004 1.5: selected, its execute refused: \(answers[5])")
        #expect(answers[6] == ["7+", "10+"], "3003 0 Mvar again: \(answers[6])")
        let commands = outstation.shared.commands
        #expect(commands.reactive.enabled && commands.reactive.value == 0, "\(commands.reactive)")
        #expect(!commands.powerFactorInjecting.enabled && !commands.powerFactorAbsorbing.enabled,
                "the last 3003 took the unity 3004 out of force: \(commands.powerFactorInjecting)")
        #expect(outstation.journal.lines(.commandRefused).filter { $0.fields["BESS_REASON"] == "SETPOINT_OUT_OF_RANGE" }.count == 4)

        let barred = try SteppedOutstation { $0.groups = [IEC104Group(name: "sldc", commands: [.agc])] }
        let refused = try Self.c104(barred.server.port, ["3003:direct:0", "3004:sbo:1"])
        #expect(refused == [["7-"], ["7-"]], "no setpoint right: \(refused)")
        #expect(!barred.shared.commands.reactive.enabled && !barred.shared.commands.powerFactorInjecting.enabled)
    }

    @Test("c104 against a capable site (2 × 100 kW, 50 kvar in and 40 kvar out each): the bounds of the published view")
    func fromC104Capable() throws {
        let shared = SharedState(units: 2, view: StationReactiveCommandTests.ratings)
        shared.contents.withLock { $0.units = StationReactiveCommandTests.capableUnits }
        #expect(shared.view.varMaxInjecting == 100_000 && shared.view.varMaxAbsorbing == 80_000 && shared.view.ratedPowerW == 200_000)
        let outstation = try SteppedOutstation(shared: shared)
        // Over-excited down to 0.894 (200 / √(200² + 100²)), under-excited down to 0.928 (200 / √(200² + 80²)).
        let answers = try Self.c104(outstation.server.port,
                                    ["3003:direct:0.1", "3003:direct:0.1001", "3003:sbo:-0.08", "3003:direct:-0.081",
                                     "3004:sbo:0.95", "3004:direct:0.89", "3004:direct:-0.92", "3004:direct:-0.93"])
        #expect(answers.count == 8)
        guard answers.count == 8 else { return }
        #expect(answers[0] == ["7+", "10+"], "100 kvar injecting, the capability: \(answers[0])")
        #expect(answers[1] == ["7-"], "100.1 kvar: \(answers[1])")
        #expect(answers[2] == ["7+", "7+", "10+"], "80 kvar absorbing SBO: \(answers[2])")
        #expect(answers[3] == ["7-"], "81 kvar absorbing: \(answers[3])")
        #expect(answers[4] == ["7+", "7+", "10+"], "0.95 over-excited SBO: \(answers[4])")
        #expect(answers[5] == ["7-"], "0.89 over-excited: \(answers[5])")
        #expect(answers[6] == ["7-"], "0.92 under-excited: \(answers[6])")
        #expect(answers[7] == ["7+", "10+"], "0.93 under-excited: \(answers[7])")
        let commands = outstation.shared.commands
        #expect(!commands.reactive.enabled && commands.reactive.expiresAt == nil, "the 3004s replaced the 80 kvar: \(commands.reactive)")
        #expect(commands.powerFactorInjecting.enabled && commands.powerFactorInjecting.value == -0.93)
        #expect(commands.powerFactorAbsorbing.enabled && commands.powerFactorAbsorbing.value == -0.93)
    }
}
