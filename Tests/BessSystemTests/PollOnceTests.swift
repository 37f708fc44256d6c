import BessSystem
import Glibc
import Testing

@Suite("pollOnce: one poll, a signal as a timeout")
struct PollOnceTests {
    @Test("pollOnce: 0 at the timeout, the count of descriptors ready once one is")
    func pollOnceWaits() throws {
        var ends: [Int32] = [0, 0]
        #expect(pipe(&ends) == 0)
        defer { close(ends[0]); close(ends[1]) }
        var pfd = pollfd(fd: ends[0], events: Int16(POLLIN), revents: 0)
        #expect(try BessSystem.pollOnce(&pfd, count: 1, timeoutMilliseconds: 0) == 0)
        #expect(Glibc.write(ends[1], "x", 1) == 1)
        #expect(try BessSystem.pollOnce(&pfd, count: 1, timeoutMilliseconds: 1_000) == 1)
        #expect(pfd.revents & Int16(POLLIN) != 0)
    }
}
