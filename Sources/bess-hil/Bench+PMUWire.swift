import ArgumentParser
import BessSystem
import ControlCore
import Foundation
import Glibc
import Synchronization
import Synchrophasor

/// bess-hil as the PMU for `bench pmu-wire`: a C37.118.2-2011 server on loopback TCP that answers
/// bessd's command frames (CFG-2, CFG-3, start, stop) and, once started, sends data frames at the
/// stream's rate on absolute deadlines of the monotonic clock. A frequency step goes out in the next
/// frame; the instant just before that frame's `send` is stamped on the clock the inverters' writes
/// are stamped on.
final class PMUSender: @unchecked Sendable {
    struct State {
        var hz = 50.0
        var generation = 0
        var stepPending = false
        var stepSentAt: MonotonicInstant?
        var streaming = false
        var frames = 0
        var connections = 0
    }

    let stream: PMUStream
    let state = Mutex(State())
    let port: UInt16
    private let listener: Int32
    private let running = Atomic<Bool>(true)
    private let done = Atomic<Bool>(false)

    init(stream: PMUStream) throws {
        self.stream = stream
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        listener = fd
        guard fd >= 0 else { throw ValidationError("PMU sender: socket failed (errno \(errno))") }
        var one: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound == 0, listen(fd, 4) == 0 else { throw ValidationError("PMU sender: bind or listen failed (errno \(errno))") }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        port = UInt16(bigEndian: address.sin_port)
    }

    func start() {
        Thread { [self] in
            serve()
            done.store(true, ordering: .releasing)
        }.start()
    }

    func stop() {
        running.store(false, ordering: .relaxed)
        while !done.load(ordering: .acquiring) { usleep(1_000) }
        close(listener)
    }

    /// Sets the frequency the next frame carries and forgets the previous stamp.
    func step(to hz: Double) {
        state.withLock {
            $0.hz = hz
            $0.generation += 1
            $0.stepPending = true
            $0.stepSentAt = nil
        }
    }

    var frames: Int { state.withLock { $0.frames } }

    private func serve() {
        while running.load(ordering: .relaxed) {
            var pending = pollfd(fd: listener, events: Int16(POLLIN), revents: 0)
            guard poll(&pending, 1, 100) > 0 else { continue }
            let connection = accept(listener, nil, nil)
            guard connection >= 0 else { continue }
            var one: Int32 = 1
            setsockopt(connection, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
            state.withLock {
                $0.connections += 1
                $0.streaming = false
            }
            session(connection)
            close(connection)
        }
    }

    /// One connection: commands in, configuration and data frames out, until it closes or we stop.
    private func session(_ connection: Int32) {
        let period = Duration.nanoseconds(1_000_000_000 / Int64(max(1, Int(stream.dataRate))))
        var next = SystemClock.shared.now() + period
        var buffer: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        while running.load(ordering: .relaxed) {
            let now = SystemClock.shared.now()
            if now >= next {
                guard sendFrame(connection) else { return }
                while next <= now { next = next + period }
                continue
            }
            // Whole milliseconds, rounded up: a frame goes out at most 1 ms after its deadline.
            var pending = pollfd(fd: connection, events: Int16(POLLIN), revents: 0)
            guard poll(&pending, 1, Int32(((next - now).nanosecondsClamped + 999_999) / 1_000_000)) > 0 else { continue }
            let count = recv(connection, &chunk, chunk.count, 0)
            guard count > 0 else { return }
            buffer += chunk[0..<count]
            while !buffer.isEmpty {
                let size: Int?
                do {
                    size = try Frame.size(atStartOf: buffer)
                } catch {
                    buffer.removeAll()  // not a frame: drop what came
                    break
                }
                guard let size, size <= buffer.count else { break }
                let bytes = Array(buffer.prefix(size))
                buffer.removeFirst(size)
                guard let frame = try? Frame(decoding: bytes), frame.header.type == .command, frame.body.count >= 2 else { continue }
                let start = frame.body.startIndex
                switch UInt16(frame.body[start]) << 8 | UInt16(frame.body[start + 1]) {
                case Command.stopData.rawValue: state.withLock { $0.streaming = false }
                case Command.startData.rawValue: state.withLock { $0.streaming = true }
                case Command.sendConfiguration2.rawValue: guard send(connection, stream.configuration2(secondOfCentury: wallClock().seconds)) else { return }
                case Command.sendConfiguration3.rawValue: guard send(connection, stream.configuration3(secondOfCentury: wallClock().seconds)) else { return }
                default: break
                }
            }
        }
    }

    /// The data frame due now, when data is on; stamps a pending step as it goes out.
    private func sendFrame(_ connection: Int32) -> Bool {
        let (streaming, hz, generation) = state.withLock { ($0.streaming, $0.hz, $0.generation) }
        guard streaming else { return true }
        let (seconds, fraction) = wallClock()
        let frame = stream.data(frequencyHz: hz, rocof: 0, secondOfCentury: seconds, fraction: fraction)
        let stamp = SystemClock.shared.now()
        guard send(connection, frame) else { return false }
        state.withLock {
            $0.frames += 1
            if $0.stepPending, $0.generation == generation {
                $0.stepPending = false
                $0.stepSentAt = stamp
            }
        }
        return true
    }

    private func send(_ connection: Int32, _ bytes: [UInt8]) -> Bool {
        var sent = 0
        while sent < bytes.count {
            let count = bytes[sent...].withUnsafeBytes { Glibc.send(connection, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            guard count > 0 else { return false }
            sent += count
        }
        return true
    }

    /// SOC and FRACSEC (TIME_BASE 1,000,000) from the wall clock.
    private func wallClock() -> (seconds: UInt32, fraction: UInt32) {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        return (UInt32(truncatingIfNeeded: now.tv_sec), UInt32(now.tv_nsec / 1_000))
    }
}

/// A frequency step in the PMU's data stream → the timed unit's first changed setpoint on its wire.
struct PMUWireLatency: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "pmu-wire",
        abstract: "PMU frequency step (C37.118.2 over TCP, bess-hil as the PMU) → new setpoint on the inverter's wire.")
    @Option(help: "Steps to time.") var steps = 100
    @OptionGroup var bessd: BenchBessdOptions
    @Option(help: "Units on the site, each with its own inverter on its own port; the first is timed.") var units = 8
    @Option(help: "The PMU's data frames per second.") var rate = 50
    @Flag(inversion: .prefixedNo, help: "Run bessd's cycle SCHED_FIFO 60.") var realtime = true
    @Option(help: "Write one latency (ms) per line here.") var csv: String?

    func run() throws {
        let sender = try PMUSender(stream: PMUStream(idcode: 1410, pmus: 1, float: false, dataRate: Int16(clamping: rate)))
        sender.start()
        defer { sender.stop() }
        let source = "frequency_source: pmu\n  pmu: {host: 127.0.0.1, port: \(sender.port), transport: tcp, idcode: 1410, max_age_ms: 100}"
        let bench = try WireBench(periodMs: bessd.periodMs, canInterface: nil, bessdPath: bessd.path, units: units,
                                  extraConfig: realtime ? "realtime: {priority: 60}" : "", frequencySource: source)
        defer { bench.stop() }
        try bench.waitReady()
        // bessd follows the PMU before anything is timed: its frames flow and a step moves the wire.
        let flowing = SystemClock.shared.now() + .seconds(15)
        while sender.frames < rate, SystemClock.shared.now() < flowing { bench.run(for: 0.1) }
        guard sender.frames >= rate else { throw ValidationError("bessd took no data from the PMU in 15 s; log in \(bench.directory)/bessd.log") }
        bench.run(for: 2)
        let before = bench.lastCommanded
        sender.step(to: 49.5)
        guard bench.firstWrite(after: SystemClock.shared.now(), timeout: 5, { abs($0 - before) > 100 }) != nil else {
            throw ValidationError("bessd's setpoints do not follow the PMU (is frequency_source: pmu wired?); log in \(bench.directory)/bessd.log")
        }
        sender.step(to: 50)
        bench.run(for: 1)
        let started = (SystemClock.shared.now(), sender.frames)
        let (latencies, misses) = bench.timeSteps(steps) { i in
            sender.step(to: i % 2 == 0 ? 49.5 : 50.0)
            // The stamp of the frame that carried it, once sent (the plant running meanwhile).
            let deadline = SystemClock.shared.now() + .seconds(1)
            while SystemClock.shared.now() < deadline {
                if let sentAt = sender.state.withLock({ $0.stepSentAt }) { return sentAt }
                usleep(200)
                bench.tick()
            }
            return nil
        }
        let seconds = Double((SystemClock.shared.now() - started.0).nanosecondsClamped) / 1e9
        print(String(format: "pmu-wire: %d frames in %.1f s (%.2f frames/s), %d connection(s)", sender.frames - started.1, seconds,
                     Double(sender.frames - started.1) / seconds, sender.state.withLock { $0.connections }))
        try report("pmu_step_to_setpoint", latencies, misses: misses, csv: csv)
    }
}
