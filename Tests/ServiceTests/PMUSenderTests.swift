@testable import bess_hil
import Foundation
import Glibc
import Synchronization
import TestSupport
import Testing

/// The plant's PMU (`PMUSender`) against a client that stops reading: its send waits at most
/// `sendTimeout` for room, then the connection is closed and the next one served.
@Suite("The plant's PMU: a peer that stops reading")
struct PMUSenderTests {
    @Test("a peer asking for CFG-3 without reading is dropped after the send timeout; the next one gets data")
    func stalledPeer() throws {
        let stream = PMUStream(idcode: 1410, pmus: 100, float: false, dataRate: 50)
        let size = stream.configuration3().count
        let pmu = try PMUSender(stream: stream, sendTimeout: .milliseconds(200))
        pmu.start()
        defer { pmu.stop() }
        let stalled = try #require(Loopback.connect(Int(pmu.port)))
        defer { close(stalled) }
        // Non-blocking: the commands go out as far as the PMU takes them, and this side never reads,
        // so the answers (at least 64 MiB asked for) fill both sockets' buffers.
        _ = fcntl(stalled, F_SETFL, fcntl(stalled, F_GETFL) | O_NONBLOCK)
        let ask = ScenarioPMUTests.command(6, idcode: 1410)  // send CFG-3
        let burst = [[UInt8]](repeating: ask, count: (64 << 20) / size + 1).flatMap { $0 }
        var sent = 0
        #expect(waitFor(seconds: 10) {
            if sent < burst.count {
                let count = burst[sent...].withUnsafeBytes { send(stalled, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
                if count > 0 { sent += count }
            }
            return pmu.state.withLock { $0.sendTimeouts } >= 1
        }, "the PMU gave up on the peer (\(sent) of \(burst.count) octets of commands taken, CFG-3 of \(size) octets)")

        let next = try #require(Loopback.connect(Int(pmu.port)))
        defer { close(next) }
        _ = ScenarioPMUTests.command(2, idcode: 1410).withUnsafeBytes { send(next, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        let frames = try #require(ScenarioPMUTests.dataFrames(next, seconds: 1), "the next connection is open")
        #expect(!frames.isEmpty, "data frames to the next connection")
        #expect(pmu.state.withLock { $0.connections } == 2)
    }
}
