import BessBase
import BessSystem
import ControlCore
@testable import Cycle
@testable import PMULink
import Foundation
import Synchronization
import TestSupport
import Testing

/// How a test reaches the PMU: the transport, and the local port the PMU sends its data to (nil:
/// the port commands came from). `udp_local` is `udp` with a fixed local port.
struct PMUMode {
    let transport: PMUSettings.Transport
    let localPort: Int?

    /// Every mode by its test name: `tcp`, `udp`, `udp_local`, `tcp_udp`, `udp_spontaneous`.
    static let names = ["tcp", "udp", "udp_local", "tcp_udp", "udp_spontaneous"]

    init(_ name: String) {
        transport = PMUSettings.Transport(rawValue: name == "udp_local" ? "udp" : name)!
        localPort = transport == .tcp || name == "udp" ? nil : Loopback.freePort()
    }
}

/// `hil/peers/pmu_peer.py serve`: pyPMU's own server (TCP; its data over UDP for `tcp_udp`) or the
/// script's UDP PMU (commanded or spontaneous), 50 frames/s, steered line by line on its standard
/// input (`freq`, `stat`, `inject`, `resume`).
final class PMUPeer: Sendable {
    private let peer: UnitsPeer
    private let input: Pipe
    /// The port it serves.
    var port: Int { peer.port }

    init(_ mode: PMUMode, port: Int = 0, float: Bool = false, freq: Double) throws {
        let input = Pipe()
        peer = try UnitsPeer(arguments: ["python3", "hil/peers/pmu_peer.py", "serve", "--transport", mode.transport.rawValue,
                                         "--port", String(port), "--data-port", String(mode.localPort ?? 0),
                                         "--idcode", "1410", "--freq", String(freq)] + (float ? ["--float"] : []),
                             input: input)
        self.input = input
    }

    /// Every line it printed so far.
    var printed: [String] { peer.all }

    /// One command line; waits until the peer acknowledged it (`OK <verb>`).
    func send(_ line: String) {
        let verb = String(line.split(separator: " ").first ?? "")
        let before = printed.filter { $0 == "OK " + verb }.count
        input.fileHandleForWriting.write(Data((line + "\n").utf8))
        #expect(waitFor(seconds: 10) { self.printed.filter { $0 == "OK " + verb }.count > before }, "peer did not take \(line)")
    }

    /// Kills the peer and pyPMU's connection processes (one process group) and waits for it.
    func stop() {
        if peer.process.isRunning { kill(-peer.process.processIdentifier, SIGKILL) }
        peer.stop()
    }
}

/// The reader's log lines, collected.
final class LogLines: Sendable {
    private let lines = Mutex<[String]>([])
    var all: [String] { lines.withLock { $0 } }
    var sink: @Sendable (Notice) -> Void { { [self] notice in lines.withLock { $0.append(notice.message) } } }
    func contains(_ code: String) -> Bool { all.contains { $0.hasPrefix(code + ":") } }
}

/// The PMU client against pyPMU (PyPI `synchrophasor`) over TCP, pyPMU's server with its data over
/// UDP (Annex F's mixed mode), and the peer script's UDP PMU (commanded, to a fixed port, and
/// spontaneous), all at 50 frames/s: samples carry the peer's frequency; invalid or unsynchronised
/// data, a wrong CHK and a wrong IDCODE publish nothing; a restarted PMU is followed again without help.
@Suite("PMU reader against pyPMU", .serialized)
struct PMUReaderTests {
    func reader(_ peer: PMUPeer, _ mode: PMUMode, log: LogLines) -> PMUReader {
        PMUReader(settings: PMUSettings(host: "127.0.0.1", port: mode.transport.sendsCommands ? UInt16(peer.port) : 0,
                                        transport: mode.transport, localPort: mode.localPort.map { UInt16($0) }, idcode: 1410,
                                        reconnectDelay: .milliseconds(200)),
                  log: log.sink)
    }

    func near(_ reader: PMUReader, _ hertz: Double) -> Bool {
        guard let sample = reader.latest.read() else { return false }
        return abs(sample.frequency.value - hertz) < 0.0005
    }

    func count(_ counter: borrowing Atomic<UInt64>) -> UInt64 { counter.load(ordering: .relaxed) }

    @Test("samples carry the PMU's frequency and ROCOF, integer and float FREQ, in every mode",
          arguments: [("tcp", false), ("udp", true), ("tcp", true), ("udp", false), ("udp_local", false), ("tcp_udp", true),
                      ("tcp_udp", false), ("udp_spontaneous", false), ("udp_spontaneous", true)])
    func follows(transport: String, float: Bool) throws {
        let mode = PMUMode(transport)
        let peer = try PMUPeer(mode, float: float, freq: 49.95)
        defer { peer.stop() }
        try #require(peer.port > 0, "peer did not serve: \(peer.printed)")
        let log = LogLines()
        let reader = reader(peer, mode, log: log)
        let started = SystemClock.shared.now()
        reader.start()
        defer { reader.stop() }
        #expect(waitFor(seconds: 15) { near(reader, 49.95) }, "log: \(log.all)")
        peer.send("freq 50.07")
        peer.send("rocof -0.25")
        #expect(waitFor(seconds: 5) { near(reader, 50.07) && reader.latest.read()?.rocofHzPerSecond == -0.25 })
        let sample = try #require(reader.latest.read())
        #expect(sample.frameTime > 1_700_000_000, "the frame's SOC, Unix seconds")
        #expect(sample.takenAt > started && sample.takenAt <= SystemClock.shared.now(), "taken on the monotonic clock")
        let isConnected = reader.connected.load(ordering: .relaxed)
        #expect(isConnected)
        #expect(count(reader.connects) == 1)
        #expect(count(reader.rejectedFrames) == 0)
        #expect(log.contains("PMU_CONNECTED"), "\(log.all)")
        #expect(log.contains("PMU_CFG3_UNANSWERED") == mode.transport.sendsCommands,
                "neither pyPMU nor the UDP peer serves CFG-3: CFG-2 it is; unasked, nothing is asked for")
        // Data keeps coming (50 frames/s).
        let frames = count(reader.frames)
        #expect(waitFor(seconds: 5) { count(reader.frames) >= frames + 50 })
    }

    @Test("STAT invalid data or an unsynchronised PMU publishes nothing", arguments: PMUMode.names)
    func unusable(transport: String) throws {
        let mode = PMUMode(transport)
        let peer = try PMUPeer(mode, freq: 50.01)
        defer { peer.stop() }
        let log = LogLines()
        let reader = reader(peer, mode, log: log)
        reader.start()
        defer { reader.stop() }
        try #require(waitFor(seconds: 15) { near(reader, 50.01) }, "log: \(log.all)")
        for stat in ["invalid", "unsync"] {
            let unusable = count(reader.unusableSamples)
            peer.send("stat \(stat)")
            peer.send("freq 47")
            #expect(waitFor(seconds: 5) { count(reader.unusableSamples) > unusable })
            let held = try #require(reader.latest.read())
            // Every frame from here on is marked unusable: five more change nothing.
            #expect(waitFor(seconds: 5) { count(reader.unusableSamples) >= unusable + 6 })
            #expect(reader.latest.read() == held)
            #expect(held.frequency.value != 47)
            peer.send("stat ok")
            #expect(waitFor(seconds: 5) { near(reader, 47) }, "usable again")
            peer.send("freq 50.01")
            #expect(waitFor(seconds: 5) { near(reader, 50.01) })
        }
        #expect(count(reader.rejectedFrames) == 0)
    }

    @Test("a frame with a wrong CHK or another stream's IDCODE is refused and changes nothing", arguments: PMUMode.names)
    func rejected(transport: String) throws {
        let mode = PMUMode(transport)
        let peer = try PMUPeer(mode, freq: 50.02)
        defer { peer.stop() }
        let log = LogLines()
        let reader = reader(peer, mode, log: log)
        reader.start()
        defer { reader.stop() }
        try #require(waitFor(seconds: 15) { near(reader, 50.02) }, "log: \(log.all)")
        for (kind, mark, bad) in [("crc", 50.123, 47.5), ("idcode", 50.321, 46.5)] {
            let rejected = count(reader.rejectedFrames)
            // One good frame at `mark`, then the bad one at `bad`; then nothing until resume.
            peer.send("inject \(kind) \(mark) \(bad)")
            #expect(waitFor(seconds: 5) { count(reader.rejectedFrames) == rejected + 1 }, "\(kind): \(log.all)")
            #expect(near(reader, mark), "\(kind): the last good frame stands, got \(String(describing: reader.latest.read()))")
            peer.send("resume")
            #expect(waitFor(seconds: 5) { near(reader, 50.02) })
        }
        #expect(count(reader.connects) == 1, "refused frames do not cost the connection")
        #expect(log.contains("PMU_FRAME_REJECTED"))
    }

    @Test("STAT configuration changed: the configuration is asked for again", arguments: ["tcp", "udp", "tcp_udp"])
    func configurationChange(transport: String) throws {
        let mode = PMUMode(transport)
        let peer = try PMUPeer(mode, freq: 50.03)
        defer { peer.stop() }
        let log = LogLines()
        let reader = reader(peer, mode, log: log)
        reader.start()
        defer { reader.stop() }
        try #require(waitFor(seconds: 15) { near(reader, 50.03) }, "log: \(log.all)")
        let configurations = count(reader.configurations)
        peer.send("stat cfgchange")
        #expect(waitFor(seconds: 5) { count(reader.configurations) > configurations })
        peer.send("stat ok")
        #expect(count(reader.connects) == 1)
    }

    @Test("the PMU stopped and started again: the reader reconnects by itself, in every mode", arguments: PMUMode.names)
    func reconnects(transport: String) throws {
        let mode = PMUMode(transport)
        var peer = try PMUPeer(mode, freq: 50.04)
        defer { peer.stop() }
        let log = LogLines()
        let reader = reader(peer, mode, log: log)
        reader.start()
        defer { reader.stop() }
        try #require(waitFor(seconds: 15) { near(reader, 50.04) }, "log: \(log.all)")
        let port = peer.port
        peer.stop()
        #expect(waitFor(seconds: 10) { !reader.connected.load(ordering: .relaxed) })
        #expect(log.contains("PMU_LOST"), "\(log.all)")
        peer = try PMUPeer(mode, port: port, freq: 49.93)
        #expect(peer.port == port)
        #expect(waitFor(seconds: 20) { near(reader, 49.93) }, "log: \(log.all)")
        #expect(count(reader.connects) == 2)
        #expect(reader.isAlive)
    }
}

/// One session's decoding (`PMUStream`) on pyPMU's two-PMU stream (`pmu_peer.py frames`: stream 99
/// carrying PMU 7, float FREQ 50.02 Hz, and PMU 8, int16 FREQ +25 mHz from 60 Hz).
@Suite("PMU stream decoding")
struct PMUStreamTests {
    func frames() throws -> [String: [UInt8]] {
        let run = try Package.tool(["python3", "hil/peers/pmu_peer.py", "frames"])
        var out: [String: [UInt8]] = [:]
        for line in run.out.split(separator: "\n") {
            guard let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
                  let name = object["name"] as? String, let hex = object["hex"] as? String else { continue }
            out[name] = stride(from: 0, to: hex.count, by: 2).map {
                UInt8(hex[hex.index(hex.startIndex, offsetBy: $0)..<hex.index(hex.startIndex, offsetBy: $0 + 2)], radix: 16)!
            }
        }
        return out
    }

    /// What the stream's CFG-2 and then its data frame do to a session following `pmu`.
    func session(pmu: UInt16?) throws -> (configuration: PMUStream.Outcome, data: PMUStream.Outcome, stream: PMUStream) {
        let all = try frames()
        var stream = PMUStream(settings: PMUSettings(host: "pmu", port: 4712, idcode: 99, pmuIdcode: pmu), askCFG3: false)
        let configuration = stream.accept(try #require(all["cfg2-multi"])[...], at: .zero)
        return (configuration, stream.accept(try #require(all["data-multi"])[...], at: MonotonicInstant(nanoseconds: 5)), stream)
    }

    /// The stream's IDCODE is none of them.
    @Test("pmu_idcode picks one PMU of a multi-PMU frame; without it the first")
    func picksPMU() throws {
        let eighth = try session(pmu: 8)
        #expect(eighth.configuration == .configuration(changed: true))
        guard case .sample(let eight) = eighth.data else { Issue.record("no sample for PMU 8"); return }
        #expect(abs(eight.frequency.value - 60.025) < 1e-9)
        #expect(eight.rocofHzPerSecond == -0.03)
        #expect(eight.takenAt == MonotonicInstant(nanoseconds: 5))
        #expect(eight.frameTime == 1_700_000_004)
        guard case .sample(let first) = try session(pmu: nil).data else { Issue.record("no sample for the first PMU"); return }
        #expect(abs(first.frequency.value - 50.02) < 1e-5)
    }

    @Test("a pmu_idcode the stream does not carry ends the session with PMU_IDCODE_UNKNOWN")
    func unknownPMU() throws {
        let ninth = try session(pmu: 9)
        #expect(ninth.configuration == .ignored && ninth.data == .ignored, "no configuration taken, so no data decoded")
        #expect(ninth.stream.fatal?.code == .idcodeUnknown)
        #expect(ninth.stream.fatal?.description.hasPrefix("PMU_IDCODE_UNKNOWN: stream 99") == true)
    }

    @Test("what ends a session is a coded error, printed by its stable name")
    func linkErrorNames() {
        let codes: [PMULinkErrorCode] = [.connectFailed, .stopped, .io, .closed, .cfg3Unanswered, .configurationTimeout,
                                         .silent, .idcodeUnknown]
        #expect(Set(codes.map(\.description)).count == codes.count)
        #expect(codes.allSatisfy { $0.description.hasPrefix("PMU_") })
        #expect(PMULinkError(.silent, message: "no frame for 3 s").description == "PMU_SILENT: no frame for 3 s")
    }

    @Test("a data frame of another stream, or one whose CHK is wrong, is rejected with its code")
    func rejects() throws {
        let all = try frames()
        var stream = PMUStream(settings: PMUSettings(host: "pmu", port: 4712, idcode: 99), askCFG3: false)
        _ = stream.accept(try #require(all["cfg2-multi"])[...], at: .zero)
        guard case .rejected(let code, _) = stream.accept(try #require(all["data-int"])[...], at: .zero) else {
            Issue.record("stream 1410's frame taken"); return
        }
        #expect(code == "PMU_IDCODE_UNKNOWN")
        var broken = try #require(all["data-multi"])
        broken[broken.count - 1] ^= 0xFF
        guard case .rejected(let crc, _) = stream.accept(broken[...], at: .zero) else { Issue.record("bad CHK taken"); return }
        #expect(crc == "PMU_CRC_MISMATCH")
    }
}

extension PMUStreamTests {
    @Test("silence limit: 3 s, three frame periods at slower rates, at most 10 s (DATA_RATE −32768 too)")
    func silenceLimit() {
        #expect(PMUReader.silence(framePeriodSeconds: nil) == .seconds(3))
        #expect(PMUReader.silence(framePeriodSeconds: 1.0 / 50) == .seconds(3))
        #expect(PMUReader.silence(framePeriodSeconds: 2) == .seconds(6))
        #expect(PMUReader.silence(framePeriodSeconds: 5) == .seconds(10))
        #expect(PMUReader.silence(framePeriodSeconds: 32768) == .seconds(10))
    }

    @Test("a command frame's SOC is the injected wall clock's second, not the system's")
    func wallClockInjected() {
        let reader = PMUReader(settings: PMUSettings(host: "pmu", port: 4712, idcode: 99), wallClock: { 1_234_567_890.75 }, log: { _ in })
        #expect(reader.secondOfCentury() == 1_234_567_890)
    }

    /// Garbage (a bad SYNC starts a resync), then a false 0xAA, then two good data frames. The false
    /// start claims 61440 bytes (not all come yet), or exactly itself and the first good frame (whose
    /// CHK then fails): either way both good frames are taken from the bytes at hand.
    /// A large FRAMESIZE, or one spanning a good frame.
    @Test("after a resync a false 0xAA does not cost the good frames behind it",
          arguments: [true, false])
    func falseStart(large: Bool) throws {
        let all = try frames()
        let settings = PMUSettings(host: "pmu", port: 4712, idcode: 99)
        let reader = PMUReader(settings: settings, log: { _ in })
        var stream = PMUStream(settings: settings, askCFG3: false)
        _ = stream.accept(try #require(all["cfg2-multi"])[...], at: .zero)
        let data = try #require(all["data-multi"])
        let claimed = large ? 0xF000 : 6 + data.count
        let wire: [UInt8] = [0x01, 0x02, 0xAA, 0x01, UInt8(claimed >> 8), UInt8(claimed & 0xFF), 0x00, 0x63] + data + data
        var buffer = [UInt8](repeating: 0, count: PMUReader.bufferCapacity)
        buffer.replaceSubrange(0..<wire.count, with: wire)
        let left = reader.extractFrames(&buffer, filled: wire.count, at: .zero, &stream)
        #expect(reader.frames.load(ordering: .relaxed) == 2, "the good frames behind the false start")
        #expect(left == 0)
        #expect(reader.latest.read() != nil)
        #expect(reader.rejectedFrames.load(ordering: .relaxed) == 1, "the resync counted once")
        #expect(!stream.resynchronising)
    }
}

/// The slot between the reader and the cycle.
@Suite("Frequency sample slot")
struct FrequencySampleSlotTests {
    static func sample(_ k: Int64) -> PMUSample {
        PMUSample(frequency: Hertz(Double(k)), rocofHzPerSecond: k % 3 == 0 ? nil : -Double(k),
                  takenAt: MonotonicInstant(nanoseconds: k), frameTime: Double(k) + 0.5)
    }

    @Test("nothing before the first sample; the newest after, ROCOF missing or not")
    func newest() {
        let slot = FrequencySampleSlot()
        #expect(slot.read() == nil)
        slot.publish(Self.sample(1))
        #expect(slot.read() == Self.sample(1))
        slot.publish(Self.sample(3))
        #expect(slot.read() == Self.sample(3))
        #expect(slot.read()?.rocofHzPerSecond == nil)
        slot.publish(Self.sample(4))
        #expect(slot.read() == Self.sample(4))
    }

    /// The writer publishes without pause until the reader has made its reads, so the two overlap
    /// however the machine schedules them; a read given up (nil, overtaken 64 times) is counted
    /// apart and is no failure. Without the sequence check, torn reads show up here.
    @Test("a reader never sees a sample torn between two publications; a read given up is nil")
    func untorn() {
        let slot = FrequencySampleSlot()
        slot.publish(Self.sample(1))
        let stop = Flag()
        let finished = Flag()
        let published = Published()
        let writer = Thread {
            var k: Int64 = 1
            while !stop.done.load(ordering: .relaxed) {
                k += 1
                slot.publish(Self.sample(k))
            }
            published.last.store(k, ordering: .relaxed)
            finished.done.store(true, ordering: .releasing)
        }
        writer.start()
        var torn = 0
        var reads = 0
        var givenUp = 0
        var last: Int64 = 0
        while reads < 300_000 {
            guard let got = slot.read() else { givenUp += 1; continue }
            reads += 1
            let k = got.takenAt.nanoseconds
            if got != Self.sample(k) || k < last { torn += 1 }
            last = k
        }
        stop.done.store(true, ordering: .relaxed)
        #expect(waitFor { finished.done.load(ordering: .acquiring) }, "the writer did not stop")
        #expect(torn == 0, "\(torn) of \(reads) reads mixed two samples or went back (\(givenUp) given up)")
        #expect(slot.read() == Self.sample(published.last.load(ordering: .relaxed)))
    }
}

/// A flag a thread raises.
final class Flag: Sendable { let done = Atomic<Bool>(false) }

/// The last number a writer thread published.
final class Published: Sendable { let last = Atomic<Int64>(1) }

/// The link's sockets through BessSystem's system-call layer: a failure is a coded error that keeps
/// the errno.
@Suite("PMU link")
struct PMULinkTests {
    func open(_ settings: PMUSettings) -> Result<PMULink, PMULinkError> {
        Result { () throws(PMULinkError) in
            try PMULink.open(settings, resolver: PMULink.resolver(settings), clock: SystemClock.shared, wakeup: Wakeup(), running: { true })
        }
    }

    @Test("a PMU host lookup without answer is PMU_CONNECT_FAILED ETIMEDOUT at the answer limit")
    func lookupBounded() {
        let release = DispatchSemaphore(value: 0)
        defer { release.signal() }
        let settings = PMUSettings(host: "pmu.test", port: 4712, idcode: 1)
        let resolver = HostResolver(host: "pmu.test", port: 4712, abandonAfter: .seconds(60), lookup: { _, _ in
            release.wait()  // a resolver that does not answer until the test ends
            return .failed(code: EAI_NONAME, systemError: 0)
        })
        let opened = Result { () throws(PMULinkError) in
            try PMULink.open(settings, resolver: resolver, clock: SystemClock.shared, wakeup: Wakeup(), running: { true })
        }
        guard case .failure(let error) = opened else { Issue.record("resolved a name nobody answers"); return }
        #expect(error.code == .connectFailed && error.errno == ETIMEDOUT, "\(error)")
        #expect(error.message == "cannot resolve the host: no answer within 3 s", "\(error)")
    }

    @Test("a refused connection is PMU_CONNECT_FAILED with ECONNREFUSED kept, in tcp and tcp_udp")
    func refused() {
        let closed = UInt16(Loopback.freePort())
        for transport in [PMUSettings.Transport.tcp, .tcpUDP] {
            let settings = PMUSettings(host: "127.0.0.1", port: closed, transport: transport,
                                       localPort: transport == .tcpUDP ? UInt16(Loopback.freePort()) : nil, idcode: 1)
            guard case .failure(let error) = open(settings) else { Issue.record("connected to a closed port"); continue }
            #expect(error.code == .connectFailed)
            #expect(error.systemError == ECONNREFUSED && error.errno == ECONNREFUSED, "\(error)")
            #expect(error.description == "PMU_CONNECT_FAILED: connect 127.0.0.1:\(closed): Connection refused")
        }
    }

    @Test("a local port another link holds is PMU_CONNECT_FAILED with EADDRINUSE kept")
    func localPortTaken() throws {
        let port = UInt16(Loopback.freePort())
        let holder = try open(PMUSettings(host: "127.0.0.1", port: 0, transport: .udpSpontaneous, localPort: port, idcode: 1)).get()
        #expect(holder.channels.map(\.channel) == [.datagrams])
        for transport in [PMUSettings.Transport.udp, .udpSpontaneous] {
            let settings = PMUSettings(host: "127.0.0.1", port: transport == .udp ? 4713 : 0, transport: transport, localPort: port, idcode: 1)
            guard case .failure(let error) = open(settings) else { Issue.record("bound a taken port"); continue }
            #expect(error.code == .connectFailed)
            #expect(error.systemError == EADDRINUSE, "\(error)")
            #expect(error.message.hasPrefix("bind local port \(port): "), "\(error)")
        }
    }

    @Test("on a fixed local port, a datagram from another address than the PMU's is foreign; the PMU's is taken")
    func foreignSource() throws {
        let local = UInt16(Loopback.freePort())
        let link = try open(PMUSettings(host: "127.0.0.1", port: 0, transport: .udpSpontaneous, localPort: local, idcode: 1)).get()
        func received(from source: String) -> PMULink.Received? {
            let fd = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
            defer { close(fd) }
            var from = sockaddr_in()
            from.sin_family = sa_family_t(AF_INET)
            from.sin_addr.s_addr = inet_addr(source)
            var to = from
            to.sin_addr.s_addr = inet_addr("127.0.0.1")
            to.sin_port = local.bigEndian
            let bytes: [UInt8] = [0xAA, 0x01, 0x00, 0x10]
            _ = withUnsafePointer(to: &from) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
            _ = withUnsafePointer(to: &to) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { sendto(fd, bytes, bytes.count, 0, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
            var buffer = [UInt8](repeating: 0, count: 64)
            var got: PMULink.Received?
            _ = waitFor(seconds: 5) {
                got = try? link.receive(.datagrams, into: &buffer, from: 0)
                if case .nothing = got { return false }
                return true
            }
            return got
        }
        guard case .foreign = received(from: "127.0.0.2") else { Issue.record("a stranger's datagram taken"); return }
        guard case .bytes(4) = received(from: "127.0.0.1") else { Issue.record("the PMU's datagram not taken"); return }
    }

    @Test("udp binds local_port when set; udp_spontaneous sends nothing")
    func channels() throws {
        let local = UInt16(Loopback.freePort())
        let fixed = try open(PMUSettings(host: "127.0.0.1", port: 4713, transport: .udp, localPort: local, idcode: 1)).get()
        var bound = sockaddr_in()
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &bound) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fixed.channels[0].descriptor, $0, &length) } }
        #expect(UInt16(bigEndian: bound.sin_port) == local)
        let unasked = try open(PMUSettings(host: "127.0.0.1", port: 0, transport: .udpSpontaneous, localPort: UInt16(Loopback.freePort()), idcode: 1)).get()
        try unasked.send([0xAA, 0x41, 0x00, 0x12])
        var buffer = [UInt8](repeating: 0, count: 64)
        guard case .nothing = try unasked.receive(.datagrams, into: &buffer, from: 0) else { Issue.record("a datagram from nowhere"); return }
    }
}
