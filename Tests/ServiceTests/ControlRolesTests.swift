import ControlProtocol
import Foundation
import Glibc
@testable import Service
import TestSupport
import Testing

/// Who may do what on the control socket: `bess` reads, `bess-operators` (alone) acts, anyone
/// else is refused with PERMISSION_DENIED. The end-to-end test runs bessctl as real non-root users.
@Suite("Control-socket roles")
struct ControlRolesTests {
    /// bess-operators acts without bess.
    @Test("role from uid and groups: root, daemon user and bess-operators act; bess reads; others nothing")
    func roles() {
        let reader: UInt32 = 901
        let op: UInt32 = 902
        func role(_ uid: UInt32, _ groups: [UInt32], readerGID: UInt32? = reader, operatorGID: UInt32? = op) -> ControlCaller.Role {
            ControlCaller.role(uid: uid, groups: groups, daemonUID: 990, readerGID: readerGID, operatorGID: operatorGID)
        }
        #expect(role(0, []) == .operator)
        #expect(role(990, []) == .operator)
        #expect(role(1000, [1000, op]) == .operator)
        #expect(role(1000, [1000, reader, op]) == .operator)
        #expect(role(1000, [1000, reader]) == .reader)
        #expect(role(1000, [1000]) == .none)
        #expect(role(1000, [1000, 27]) == .none)
        // A machine without the groups: only root and the daemon's user.
        #expect(role(1000, [1000, reader, op], readerGID: nil, operatorGID: nil) == .none)
        #expect(ControlCaller.needed(verb: "status") == .reader)
        #expect(ControlCaller.needed(verb: "faults") == .reader)
        #expect(ControlCaller.needed(verb: "site") == .reader)
        for verb in ["reset", "mode", "override", "", "explode"] { #expect(ControlCaller.needed(verb: verb) == .operator, "\(verb)") }
    }

    /// Users made for the test and removed after it; the two groups are made when missing and
    /// removed only if this test made them.
    final class TestUsers {
        var createdGroups: [String] = []
        var createdUsers: [String] = []

        func group(_ name: String) throws {
            if getgrnam(name) != nil { return }
            try Self.must(["groupadd", "--system", name])
            createdGroups.append(name)
        }

        func user(_ name: String, groups: [String]) throws {
            if getpwnam(name) != nil { _ = try? Package.tool(["userdel", name]) }
            var arguments = ["useradd", "--system", "--user-group", "--no-create-home", "--shell", "/usr/sbin/nologin"]
            if !groups.isEmpty { arguments += ["--groups", groups.joined(separator: ",")] }
            try Self.must(arguments + [name])
            createdUsers.append(name)
        }

        func uid(_ name: String) -> UInt32 { getpwnam(name)?.pointee.pw_uid ?? UInt32.max }

        /// bessctl run as `name` with its groups from /etc/group, as a login would give them.
        func bessctl(as name: String, _ arguments: [String]) throws -> (status: Int32, out: String, err: String) {
            let path = try #require(Package.executable("bessctl")).path
            return try Package.tool(["setpriv", "--reuid", name, "--regid", name, "--init-groups", "--", path] + arguments)
        }

        func remove() {
            for name in createdUsers { _ = try? Package.tool(["userdel", name]) }
            for name in createdGroups { _ = try? Package.tool(["groupdel", name]) }
        }

        static func must(_ arguments: [String]) throws {
            let result = try Package.tool(arguments)
            guard result.status == 0 else { throw Package.RunFailure(message: "\(arguments.joined(separator: " ")): \(result.err)") }
        }
    }

    /// --socket goes before the verb.
    @Test("bessctl as real users: bess reads, bess-operators acts, others refused and logged",
          .enabled(if: getuid() == 0, "makes users and runs bessctl as them: needs root"))
    func realUsers() throws {
        let users = TestUsers()
        defer { users.remove() }
        try users.group(ControlCaller.readerGroup)
        try users.group(ControlCaller.operatorGroup)
        try users.user("bess-t-reader", groups: [ControlCaller.readerGroup])
        try users.user("bess-t-operator", groups: [ControlCaller.operatorGroup])
        try users.user("bess-t-nobody", groups: [])

        let daemon = try RunningDaemon(yaml: daemonYAML)
        _ = daemon.notify.collect(seconds: 8) { $0.contains("READY=1") }
        var info = stat()
        #expect(stat(daemon.socket, &info) == 0)
        #expect(info.st_mode & 0o777 == 0o666, "the socket is open to all; bessd decides per caller")

        // bess: reads (with --socket before the verb, and --socket=PATH), may not act.
        let status = try users.bessctl(as: "bess-t-reader", ["--socket", daemon.socket, "status"])
        #expect(status.status == 0, "\(status.err)")
        #expect(status.out.contains("D1") && status.out.contains("D2"))
        let faults = try users.bessctl(as: "bess-t-reader", ["--socket=\(daemon.socket)", "faults"])
        #expect(faults.status == 0, "\(faults.err)")
        for verb in [["mode", "standby", "--unit", "D2"], ["reset"], ["override", "--unit", "D1", "--power-kw", "5", "--for", "1m"]] {
            let refused = try users.bessctl(as: "bess-t-reader", verb + ["--socket", daemon.socket])
            #expect(refused.status == 2, "\(verb)")
            #expect(refused.err.contains("PERMISSION_DENIED") && refused.err.contains("bess-operators"), "\(verb): \(refused.err)")
        }
        #expect(try daemon.units()[1]["state"] as? String != "standby", "a refused mode changed nothing")

        // bess-operators alone (not in bess): reads and acts.
        let opStatus = try users.bessctl(as: "bess-t-operator", ["status", "--socket", daemon.socket])
        #expect(opStatus.status == 0, "\(opStatus.err)")
        let standby = try users.bessctl(as: "bess-t-operator", ["--socket", daemon.socket, "mode", "standby", "--unit", "D2"])
        #expect(standby.status == 0, "\(standby.err)")
        _ = try daemon.waitForUnits { $0[1]["state"] as? String == "standby" }
        let auto = try users.bessctl(as: "bess-t-operator", ["mode", "auto", "--unit", "D2", "--socket", daemon.socket])
        #expect(auto.status == 0, "\(auto.err)")

        // Neither group: nothing, not even status.
        for verb in [["status"], ["faults"], ["mode", "standby"]] {
            let refused = try users.bessctl(as: "bess-t-nobody", verb + ["--socket", daemon.socket])
            #expect(refused.status == 2, "\(verb)")
            #expect(refused.err.contains("PERMISSION_DENIED"), "\(verb): \(refused.err)")
        }

        // A flood of refusals is counted, not logged line by line (at most 5 a second).
        for _ in 0..<25 { _ = try users.bessctl(as: "bess-t-nobody", ["faults", "--socket", daemon.socket]) }

        daemon.signal(SIGTERM)
        let (_, text) = daemon.finish()
        let logged = text.components(separatedBy: "refused: PERMISSION_DENIED").count - 1
        #expect(logged < 6 + 25, "\(logged) refusal lines for 31 refusals")
        #expect(text.contains("more refused and not logged before this one"))
        let nobody = users.uid("bess-t-nobody")
        let reader = users.uid("bess-t-reader")
        let op = users.uid("bess-t-operator")
        #expect(text.contains("bessctl (uid \(nobody), pid"), "refusals are logged with the caller")
        #expect(text.contains("): status refused: PERMISSION_DENIED"))
        #expect(text.contains("bessctl (uid \(reader), pid"))
        #expect(text.contains("): mode refused: PERMISSION_DENIED (acting needs membership of bess-operators)"))
        #expect(text.contains("bessctl (uid \(op)): mode standby for D2"), "the operator's act is audited with its uid")
    }

    @Test("typed requests carry the keys the socket reads; a field of the wrong type reads as absent")
    func typedRequests() throws {
        func wire(_ request: ControlRequest) throws -> [String: Any] {
            try #require(JSONSerialization.jsonObject(with: JSONEncoder().encode(request)) as? [String: Any])
        }
        let override = try wire(ControlRequest(.override, unit: "U1", powerKW: -20, forSeconds: 900))
        #expect(override["verb"] as? String == "override" && override["unit"] as? String == "U1")
        #expect((override["power_kw"] as? NSNumber)?.doubleValue == -20 && (override["for_s"] as? NSNumber)?.doubleValue == 900)
        #expect(try wire(ControlRequest(.override, unit: "U1", clear: true))["clear"] as? Bool == true)
        #expect(try wire(ControlRequest(.reset)).keys.sorted() == ["verb"])
        func read(_ line: String) throws -> ControlRequest { try JSONDecoder().decode(ControlRequest.self, from: Data(line.utf8)) }
        #expect(try read(#"{"verb": "mode", "mode": 5, "unit": null}"#) == ControlRequest(.mode))
        #expect(try read(#"{"verb": 1}"#).verb == .unknown(""))
        #expect(try read(#"{"verb": "reboot"}"#).verb == .unknown("reboot"))
        #expect(try read(#"{"verb": "reset", "unit": -1}"#).unit == .notAName("-1"))
        #expect(try read(#"{"verb": "reset", "unit": true}"#).unit == .notAName("true"))
        #expect(try read(#"{"verb": "override", "unit": "U1", "clear": 1, "power_kw": "5"}"#).clear)
        #expect(try read(#"{"verb": "override", "unit": "U1", "power_kw": "5"}"#).powerKW == nil)
        #expect((try? read("[1]")) == nil)
        // Roles: what only reads needs a reader; every other verb, unknown ones included, an operator.
        #expect(ControlVerb.known.filter(\.onlyReads).map(\.name) == ["status", "faults", "site", "config", "metrics", "events", "schedule", "plan"])
        #expect(ControlCaller.needed(.unknown("reboot")) == .operator && ControlCaller.needed(verb: "status") == .reader)
    }
}
