import ArgumentParser
import ControlCore
import ControlProtocol
import Foundation
import IEEE2030_5
import TLSTransport

/// The utility's IEEE 2030.5 server as bessd follows it: the device's LFDI and SFDI (what installers
/// enter in the utility's portal), the server's last answer, where the schedule comes from and the
/// controls in force with their program and expiry. With `--cert`, the LFDI and SFDI of a certificate
/// file, computed here without bessd (before it runs, or on another machine).
struct IEEE2030_5Command: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "ieee2030-5",
        abstract: "Show the IEEE 2030.5 client: LFDI, SFDI, the server's last answer, the utility's controls in force and their expiry.")
    @OptionGroup var connection: SocketOption
    @Flag(help: "Print bessd's answer (status's ieee2030_5) as JSON.") var json = false
    @Option(name: .customLong("cert"), help: "Only the LFDI and SFDI of this PEM certificate (ieee2030_5.cert_file), without bessd.")
    var certificate: String?

    func run() throws {
        if let certificate {
            let identity = try Self.identity(certificate)
            if json {
                var text = JSONText()
                text.beginObject()
                text.field("lfdi", identity.lfdi)
                text.field("sfdi", identity.sfdi)
                text.endObject()
                print(bessctl.json(text.bytes))
            } else {
                print("LFDI  \(identity.lfdi)\nSFDI  \(identity.sfdi)")
            }
            return
        }
        let answer = try connection.send(ControlRequest(.status))
        let status = try connection.decode(answer, as: StatusReply.self)
        guard let reply = status.ieee2030_5 else {
            FileHandle.standardError.write(Data("bessctl: bessd follows no IEEE 2030.5 server (no ieee2030_5: block, or its certificate gave no identity: see the journal)\n".utf8))
            throw ExitCode(1)
        }
        if json {
            print(bessctl.json(JSONText.encode(reply)))
            return
        }
        for line in Self.lines(reply, now: Date().timeIntervalSince1970) { print(line) }
        if let rows = Self.rows(reply) { printTable(rows) }
    }

    /// The identity of the first certificate of a PEM file; a clear message and exit 2 when there is none.
    static func identity(_ path: String) throws -> DeviceIdentity {
        guard let text = try? String(contentsOfFile: path, encoding: .utf8) else {
            throw ValidationError("cannot read \(path)")
        }
        do {
            return try DeviceIdentity(certificatePEM: text, sha256: CertificateDigest.sha256(certificateDER:))
        } catch {
            throw ValidationError("\(path): \(error)")
        }
    }

    /// One row per control in force under a header; nil when none is.
    static func rows(_ r: IEEE2030_5Reply) -> [[String]]? {
        guard !r.controls.isEmpty else { return nil }
        return [["CONTROL", "VALUE", "PROGRAM", "FROM", "UNTIL"]] + r.controls.map { c in
            [c.type, c.value, c.program, c.control.map { "control \($0)" } ?? "default", c.untilUnix.map { Status.clock(Double($0)) } ?? "-"]
        }
    }

    /// What a person reads above the table: identity, server, schedule.
    static func lines(_ r: IEEE2030_5Reply, now: Double) -> [String] {
        var lines = ["LFDI    \(r.lfdi ?? "unknown (the device certificate cannot be read and no EndDevice is stored)")",
                     "SFDI    \(r.sfdi.map(String.init) ?? "unknown")"]
        var server = "server  \(r.server)"
        switch r.reachable {
        case true?: server += " answering"
        case false?: server += " NOT answering"
        case nil: server += " not asked yet"
        }
        if let status = r.lastStatus { server += ", last answer HTTP \(status)" }
        if let at = r.lastAnswerUnix { server += " \(Int((now - at).rounded())) s ago" }
        if let error = r.lastError { server += " (\(error))" }
        lines.append(server)
        if let stopped = r.stopped { lines.append("STOPPED \(stopped)") }
        let source = switch r.source {
        case "live": "as the server last gave it"
        case "cached": "from the state directory's copy (the server has not answered since bessd started)"
        default: "none: no utility control"
        }
        lines.append("schedule \(source)" + (r.programs.isEmpty ? "" : "; programs \(r.programs.joined(separator: ", "))"))
        if let time = r.serverTimeUnix { lines.append("server time \(Status.clock(time))") }
        if r.controls.isEmpty { lines.append("no control in force") }
        if let units = r.cannotOpen {
            lines.append("CONTACTOR_UNAVAILABLE cannot open \(units.joined(separator: ", ")): no usable SunSpec 123 Conn, held at 0 W")
        }
        return lines
    }
}
