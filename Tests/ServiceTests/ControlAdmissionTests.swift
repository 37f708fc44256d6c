import BessSystem
import ControlCore
import ControlProtocol
import Foundation
import Glibc
@testable import Service
import Synchronization
import TestSupport
import Testing

/// The control socket is open to every local user: a user with no role may not push an operator or
/// a reader off it, and no one uid may take it whole (`ControlAdmission`).
@Suite("Control socket admission")
struct ControlAdmissionTests {
    typealias Session = ControlAdmission.Session

    static func session(_ id: Int32, uid: UInt32, _ role: ControlCaller.Role, idleSince: Int64, busy: Bool = false) -> Session {
        Session(id: id, uid: uid, role: role, lastActivity: MonotonicInstant(nanoseconds: idleSince), busy: busy)
    }

    /// Never one of a higher role than the newcomer's.
    @Test("connection policy: a uid past its cap closes its own idlest; a full socket closes the lowest role's")
    func policy() {
        let op = Self.session(1, uid: 1000, .operator, idleSince: 0)  // the idlest of all
        let reader = Self.session(2, uid: 1001, .reader, idleSince: 1)
        let none = (3...6).map { Self.session(Int32($0), uid: 2000 + UInt32($0), .none, idleSince: Int64($0) * 10) }
        let full = [op, reader] + none
        func decide(_ uid: UInt32, _ role: ControlCaller.Role, _ open: [Session]) -> ControlAdmission.Decision {
            ControlAdmission.decide(uid: uid, role: role, open: open, maximum: 6, perUID: 3)
        }
        // Room: admitted.
        #expect(decide(3000, .none, Array(full.prefix(5))) == .admit)
        // Full: a newcomer of any role closes the idlest role-none session, not the idler operator.
        for role in [ControlCaller.Role.none, .reader, .operator] { #expect(decide(3000, role, full) == .evict(3), "\(role)") }
        // Full of people with roles: no role takes nothing; a reader takes a reader, not an operator; an operator takes the idlest.
        let staff = [op, reader] + (3...6).map { Self.session(Int32($0), uid: 1100 + UInt32($0), .operator, idleSince: Int64($0)) }
        #expect(decide(3000, .none, staff) == .refuse)
        #expect(decide(3000, .reader, staff) == .evict(2))
        #expect(decide(3000, .operator, staff) == .evict(2))
        #expect(ControlAdmission.decide(uid: 3000, role: .operator, open: staff.filter { $0.role == .operator }, maximum: 5, perUID: 3)
                == .evict(1))
        // One uid at its cap closes its own idlest, whatever else is open, even with room left.
        let flood = (10...12).map { Self.session(Int32($0), uid: 2000, .none, idleSince: Int64($0)) }
        #expect(decide(2000, .none, [op] + flood) == .evict(10))
        // An answer that waits for the cycle is never closed.
        let waiting = flood.map { var s = $0; s.busy = true; return s }
        #expect(decide(2000, .none, [op] + waiting) == .refuse)
        #expect(decide(3000, .none, [Self.session(1, uid: 1, .none, idleSince: 0, busy: true)] + Array(full.dropFirst()))
                == .evict(3))
        // Without a uid (metrics): no cap per uid, the idlest makes room.
        #expect(ControlAdmission.decide(uid: nil, role: .operator, open: full, maximum: 6, perUID: 1) == .evict(3))
        #expect(ControlAdmission.decide(uid: nil, role: .operator, open: [op, reader], maximum: 6, perUID: 1) == .admit)
    }

    /// A client of the test's server: connected, non-blocking.
    static func connect(_ path: String) -> Int32 {
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        #expect(UnixSocketAddress(path: path)?.connect(fd) == 0)
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
        return fd
    }

    /// Whether the server closed `fd` (end of file; what it wrote first is read and dropped).
    static func closedByServer(_ fd: Int32) -> Bool {
        var buffer = [UInt8](repeating: 0, count: 512)
        while true {
            let n = recv(fd, &buffer, buffer.count, 0)
            if n > 0 { continue }
            return n == 0
        }
    }

    @Test("one uid's flood is capped at its own cost; roleless users never close an operator's idle session")
    func server() throws {
        let path = NSTemporaryDirectory() + "bessd-admission-\(getpid()).sock"
        var limits = ServiceServer.Limits()
        limits.maxConnections = 6
        limits.maxConnectionsPerUID = 3
        limits.idleTimeout = .seconds(60)
        // The kernel's word on each caller, in the order they connect (the real one needs real users:
        // ControlRolesTests).
        let callers = PILock<[ControlCaller]>([])
        let server = try ServiceServer(controlPath: path, metricsAddress: nil, limits: limits, appliedGeneration: { 0 },
                                       handleControl: { _, caller in .now(MetricsReply(text: "uid \(caller.uid)")) },
                                       renderMetrics: { "" },
                                       callerOf: { _ in callers.withLock { $0.removeFirst() } })
        server.start()
        defer { server.stop() }
        var open: [Int32] = []
        defer { for fd in open { close(fd) } }
        /// Connects as `caller` and waits until the server has taken the connection.
        func connect(as caller: ControlCaller) -> Int32 {
            callers.withLock { $0.append(caller) }
            let fd = Self.connect(path)
            open.append(fd)
            #expect(waitFor(seconds: 5) { callers.withLock { $0.isEmpty } }, "the server did not take the connection")
            return fd
        }
        let op = connect(as: ControlCaller(uid: 1000, pid: 1, role: .operator))
        let reader = connect(as: ControlCaller(uid: 1001, pid: 2, role: .reader))
        // One uid with no role opens ten: it keeps three, each newcomer closing its own idlest.
        let flood = (0..<10).map { _ in connect(as: ControlCaller(uid: 2000, pid: 3, role: .none)) }
        #expect(waitFor(seconds: 5) { server.evicted.load(ordering: .relaxed) == 7 })
        #expect(flood.prefix(7).allSatisfy { Self.closedByServer($0) }, "a uid kept more than its cap")
        #expect(!flood.suffix(3).contains { Self.closedByServer($0) })
        // Many uids with no role fill the socket and go on arriving: they push out only one another.
        for uid in UInt32(3000)..<3012 { _ = connect(as: ControlCaller(uid: uid, pid: 4, role: .none)) }
        #expect(!Self.closedByServer(op) && !Self.closedByServer(reader), "a session with a role was closed for one without")
        // The operator's idle session still answers.
        let request = Array("{\"verb\":\"metrics\"}\n".utf8)
        #expect(send(op, request, request.count, 0) == request.count)
        var answer = [UInt8](repeating: 0, count: 512)
        var got = 0
        #expect(waitFor(seconds: 5) {
            let n = recv(op, &answer, answer.count, 0)
            if n > 0 { got += n }
            return got > 0
        }, "the operator's session did not answer")
        #expect(String(decoding: answer.prefix(got), as: UTF8.self).contains("uid 1000"))
        // Full of sessions with roles, a newcomer with no role is refused, and nobody is closed for it.
        for uid in UInt32(1100)..<1104 { _ = connect(as: ControlCaller(uid: uid, pid: 5, role: .operator)) }
        let refusedBefore = server.refused.load(ordering: .relaxed)
        let late = connect(as: ControlCaller(uid: 4000, pid: 6, role: .none))
        #expect(waitFor(seconds: 5) { server.refused.load(ordering: .relaxed) == refusedBefore + 1 })
        #expect(Self.closedByServer(late))
        #expect(!Self.closedByServer(op) && !Self.closedByServer(reader))
    }
}
