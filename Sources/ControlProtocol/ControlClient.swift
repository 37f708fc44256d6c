import Foundation
public import Glibc
public import BessSystem

/// Why a control request failed on the client's side (`CONTROL_SOCKET_UNREACHABLE`,
/// `CONTROL_NO_ANSWER`, …). bessd's own refusals come back as `{"ok": false, "code": …}` answers.
public typealias ControlError = BessError

/// The control protocol: one JSON object per line each way over bessd's Unix stream socket. The
/// client side, for bessctl, bess-hil and tests; it links nothing of the daemon.
public enum ControlClient {
    /// Sends one request and waits for its answer.
    public static func request(_ request: ControlRequest, socket path: String, timeout: Duration = .seconds(5))
        throws(ControlError) -> [String: Any]
    {
        guard let data = try? JSONEncoder().encode(request) else {
            throw ControlError(.badRequest, message: "request is not JSON")
        }
        return try exchange(data, socket: path, timeout: timeout)
    }

    /// Sends one request written as a JSON object (tests and tools that send what no verb would,
    /// such as a wrong type or an unknown verb) and waits for its answer.
    public static func request(_ object: [String: Any], socket path: String, timeout: Duration = .seconds(5))
        throws(ControlError) -> [String: Any]
    {
        guard let data = try? JSONSerialization.data(withJSONObject: object) else {
            throw ControlError(.badRequest, message: "request is not JSON")
        }
        return try exchange(data, socket: path, timeout: timeout)
    }

    /// Writes `request` as one line and reads one line back: the answer, a JSON object.
    private static func exchange(_ request: Data, socket path: String, timeout: Duration) throws(ControlError) -> [String: Any] {
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
        var data = request
        data.append(0x0A)
        _ = data.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        var received: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65536)
        while !received.contains(0x0A) {
            let count = read(fd, &chunk, chunk.count)
            if count <= 0 { break }
            received += chunk.prefix(count)
        }
        guard let end = received.firstIndex(of: 0x0A),
              let answer = try? JSONSerialization.jsonObject(with: Data(received[..<end])) as? [String: Any]
        else {
            throw ControlError(.controlNoAnswer, message: "bessd did not answer in time")
        }
        return answer
    }
}

/// `struct ucred` (needs _GNU_SOURCE in C, so Swift does not see it): pid, uid, gid.
public struct PeerCredentials {
    public var pid: Int32 = 0
    public var uid: UInt32 = 0
    public var gid: UInt32 = 0
    public init() {}
}
