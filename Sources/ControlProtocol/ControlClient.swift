public import BessBase
import ControlCore
import Foundation
public import Glibc
public import BessSystem

/// Why a control request failed on the client's side (`CONTROL_SOCKET_UNREACHABLE`,
/// `CONTROL_NO_ANSWER`, …). bessd's own refusals come back as `{"ok": false, "code": …}` answers.
public typealias ControlError = BessError

/// The control protocol: one JSON object per line each way over bessd's Unix stream socket. The
/// client side, for bessctl, bess-hil and tests; it links nothing of the daemon.
public enum ControlClient {
    /// Sends one request and waits for its answer: a reply to decode (`ControlAnswer.reply(as:)`)
    /// or bessd's refusal.
    public static func answer(_ request: ControlRequest, socket path: String, timeout: Duration = .seconds(5))
        throws(ControlError) -> ControlAnswer
    {
        guard let data = try? JSONEncoder().encode(request) else {
            throw ControlError(.badRequest, message: "request is not JSON")
        }
        let line = try exchange(Array(data), socket: path, timeout: timeout)
        guard let outcome = try? JSONDecoder().decode(ControlOutcome.self, from: Data(line)) else {
            throw ControlError(.controlNoAnswer, message: "bessd did not answer in time")
        }
        let refusal = outcome.ok == true
            ? nil : ControlFailure(outcome.code ?? "ERROR", outcome.message ?? "refused")
        return ControlAnswer(bytes: line, refusal: refusal)
    }

    /// Writes `request` (one JSON object, without its newline) as one line and returns bessd's answer
    /// line as received, without its newline: the raw pass-through under `answer(_:socket:timeout:)`,
    /// for a caller that sends or prints the JSON itself.
    public static func exchange(_ request: [UInt8], socket path: String, timeout: Duration = .seconds(5)) throws(ControlError) -> [UInt8] {
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        guard fd >= 0, let address = UnixSocketAddress(path: path) else {
            throw ControlError(.controlSocketFailed, message: "bad socket path \(path)")
        }
        guard address.connect(fd) == 0 else {
            throw ControlError(.controlSocketUnreachable,
                           message: "cannot connect to \(path): \(SystemError.text(errno)) (is bessd running? --socket PATH)")
        }
        let micros = max(1000, timeout.components.seconds * 1_000_000 + timeout.components.attoseconds / 1_000_000_000_000)
        var tv = timeval(tv_sec: Int(micros / 1_000_000), tv_usec: Int(micros % 1_000_000))
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
        let data = request + [0x0A]
        _ = data.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        var received: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65536)
        while !received.contains(0x0A) {
            let count = read(fd, &chunk, chunk.count)
            if count <= 0 { break }
            received += chunk.prefix(count)
        }
        guard let end = received.firstIndex(of: 0x0A) else {
            throw ControlError(.controlNoAnswer, message: "bessd did not answer in time")
        }
        return Array(received[..<end])
    }
}

/// One answer from bessd: its line as received, and its refusal when it refused.
public struct ControlAnswer: Sendable {
    /// The answer's JSON line, without its newline (`bessctl status --json` prints it).
    public let bytes: [UInt8]
    /// bessd's refusal (`"ok": false`), nil when it answered.
    public let refusal: ControlFailure?

    /// The answer decoded as `type`; `CONTROL_NO_ANSWER` when it is not one (a bessd of another version).
    public func reply<R: ControlReply>(as type: R.Type) throws(ControlError) -> R {
        do {
            return try JSONDecoder().decode(type, from: Data(bytes))
        } catch {
            throw ControlError(.controlNoAnswer, message: "bessd's answer is not a \(type): \(error)")
        }
    }
}

/// `struct ucred` (needs _GNU_SOURCE in C, so Swift does not see it): pid, uid, gid.
public struct PeerCredentials {
    public var pid: Int32 = 0
    public var uid: UInt32 = 0
    public var gid: UInt32 = 0
    public init() {}
}
