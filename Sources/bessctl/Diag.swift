import ArgumentParser
import ControlProtocol
import Foundation

/// `bessctl diag`: one tarball for a support ticket. Everything is gathered from the running bessd over
/// the control socket and from the system's own tools; whatever cannot be collected is said in
/// NOTES.txt inside the bundle, and diag still exits 0 (a broken site is when it is needed most).
struct Diag: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Write a support bundle (.tar.gz): configuration (secrets redacted), status, faults, site, /metrics, "
            + "the last 1,000 journal entries, versions, CAN interface state, spool backlog.")

    @OptionGroup var connection: SocketOption
    @Option(help: "Where the bundle goes (default: ./bessd-diag-HOST-TIME.tar.gz).") var output: String?
    @Option(name: .customLong("journal-lines"), help: "Journal entries of bessd to include.") var journalLines = 1000

    func run() throws {
        let stamp = Self.stamp()
        let name = "bessd-diag-\(ProcessInfo.processInfo.hostName.split(separator: ".").first ?? "host")-\(stamp)"
        // The bundle holds the journal and the configuration: readable by its owner only, gathered in
        // a directory of a name nobody can guess or take first.
        umask(0o077)
        var template = Array((NSTemporaryDirectory() + "bessctl-diag-XXXXXX").utf8CString)
        guard let made = mkdtemp(&template) else {
            FileHandle.standardError.write(Data("bessctl: DIAG_WRITE_FAILED: cannot make a temporary directory\n".utf8))
            throw ExitCode(1)
        }
        let scratch = String(cString: made)
        let folder = scratch + "/" + name
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: scratch) }
        var notes: [String] = []
        var collected: [String] = []

        func save(_ file: String, _ text: String) {
            if FileManager.default.createFile(atPath: folder + "/" + file, contents: Data(text.utf8)) { collected.append(file) }
        }
        func ask(_ verb: ControlVerb) -> ControlAnswer? {
            do {
                let answer = try ControlClient.answer(ControlRequest(verb), socket: connection.socket)
                if let refusal = answer.refusal {
                    notes.append("\(verb): bessd refused: \(refusal.code): \(refusal.message)")
                    return nil
                }
                return answer
            } catch {
                notes.append("\(verb): bessd not reachable on \(connection.socket): \(error)")
                return nil
            }
        }
        func reply<R: ControlReply>(_ verb: ControlVerb, as type: R.Type) -> R? {
            guard let answer = ask(verb) else { return nil }
            do {
                return try answer.reply(as: type)
            } catch {
                notes.append("\(verb): \(error)")
                return nil
            }
        }

        var versions = ["bessctl \(BessdVersion.string)"]
        for verb: ControlVerb in [.status, .faults, .site] {
            guard let answer = ask(verb) else { continue }
            save("\(verb).json", json(answer.bytes))
            if verb == .status {
                let status = try? answer.reply(as: StatusReply.self)
                versions.append("bessd \(status?.version ?? "?") (mode \(status?.mode ?? "?"))")
                if let uplink = status?.uplink {
                    var text = JSONText()
                    text.beginObject()
                    text.field("uplink", uplink)
                    text.endObject()
                    save("spool.json", json(text.bytes))
                } else {
                    save("spool.json", "{\"uplink\": null}\n")
                    notes.append("spool: bessd has no uplink configured (no spool)")
                }
            }
        }
        if let config = reply(.config, as: ConfigReply.self) {
            save("config.yaml", "# \(config.path) as bessd loaded it; secrets redacted\n" + config.text)
        }
        if let metrics = reply(.metrics, as: MetricsReply.self) { save("metrics.txt", metrics.text) }

        let journal = Self.command(["journalctl", "-u", "bessd", "-n", String(journalLines), "--no-pager", "-o", "short-iso-precise"])
        if let text = journal.out, journal.status == 0, !text.contains("-- No entries --"), !text.isEmpty {
            save("journal.txt", text)
        } else {
            notes.append("journal: not collected (\(journal.out == nil ? "journalctl not found" : "journalctl: \((journal.err ?? journal.out ?? "").prefix(200))"))")
        }
        let can = Self.command(["ip", "-details", "-statistics", "link", "show", "type", "can"])
        let vcan = Self.command(["ip", "-details", "-statistics", "link", "show", "type", "vcan"])
        let links = (can.out ?? "") + (vcan.out ?? "")
        if links.isEmpty {
            notes.append("can: no CAN interfaces (\(can.out == nil ? "ip not found" : "ip link shows none"))")
        } else {
            save("can.txt", links)
        }
        let os = (try? String(contentsOfFile: "/etc/os-release", encoding: .utf8))?
            .split(separator: "\n").first { $0.hasPrefix("PRETTY_NAME=") }.map(String.init) ?? "os-release not readable"
        versions += [os, Self.command(["uname", "-srvm"]).out?.trimmingCharacters(in: .whitespacesAndNewlines) ?? "uname not found"]
        save("versions.txt", versions.joined(separator: "\n") + "\n")
        save("NOTES.txt", "bessctl diag at \(stamp) UTC\n"
             + (notes.isEmpty ? "everything was collected\n" : "not collected:\n" + notes.map { "- " + $0 }.joined(separator: "\n") + "\n"))

        let path = output ?? FileManager.default.currentDirectoryPath + "/\(name).tar.gz"
        let tar = Self.command(["tar", "-czf", path, "-C", scratch, name])
        guard tar.status == 0 else {
            FileHandle.standardError.write(Data("bessctl: DIAG_WRITE_FAILED: cannot write \(path): \(tar.err ?? "tar not found")\n".utf8))
            throw ExitCode(1)
        }
        print("bessctl diag: wrote \(path) (\(collected.count) files: \(collected.sorted().joined(separator: ", ")))")
        for note in notes { print("  not collected: \(note)") }
    }

    static func stamp() -> String {
        var now = time(nil)
        var parts = tm()
        gmtime_r(&now, &parts)
        return String(format: "%04d%02d%02dT%02d%02d%02dZ", parts.tm_year + 1900, parts.tm_mon + 1, parts.tm_mday,
                      parts.tm_hour, parts.tm_min, parts.tm_sec)
    }

    /// Runs a system tool found on PATH; nil output when it is not installed.
    static func command(_ arguments: [String]) -> (status: Int32, out: String?, err: String?) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = arguments
        let out = Pipe()
        let err = Pipe()
        process.standardOutput = out
        process.standardError = err
        process.standardInput = FileHandle.nullDevice
        do { try process.run() } catch { return (127, nil, "\(error)") }
        let outData = out.fileHandleForReading.readDataToEndOfFile()
        let errData = err.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        if process.terminationStatus == 127 { return (127, nil, String(decoding: errData, as: UTF8.self)) }
        return (process.terminationStatus, String(decoding: outData, as: UTF8.self), String(decoding: errData, as: UTF8.self))
    }
}
