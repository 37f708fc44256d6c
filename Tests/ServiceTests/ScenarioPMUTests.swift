@testable import bess_hil
import BessBase
import ControlCore
import Foundation
import Glibc
import TestSupport
import Testing

/// The scenarios' PMU steps and event expectations (hil/README.md): how a file states them, and the
/// plant's PMU (`PMUSender`) on the wire, read with a CRC written here from the standard's
/// definition (CRC-CCITT, 0xFFFF), not with the project's decoder.
@Suite("Scenario files and the plant's PMU: pmu steps, STAT on the wire, events")
struct ScenarioPMUTests {
    /// A scenario file with this body, read as `bess-hil scenario` reads it.
    static func load(_ body: String) throws -> Result<Scenario, ScenarioError> { try ScenarioIEC104FileTests.load(body) }

    @Test("pmu steps carry the frequency and STAT they name; events and the new signals are read")
    func steps() throws {
        let scenario = try Self.load("""
            timeline:
              - {at_s: 0, pmu: {frequency_hz: 49.4}}
              - {at_s: 5, pmu: {stat: unsynchronised}}
              - {at_s: 9, pmu: {stat: stopped}}
              - {at_s: 10, pmu: {bad_frames: crc}}
              - {at_s: 11, pmu: {bad_frames: none}}
            expect:
              - {from_s: 1, to_s: 4, frequency_source: pmu, bessd_frequency_hz: 49.4}
            events:
              - {direction: under, cause: unit_tripped, cause_code: INVERTER_FAULT, shortfall_w_min: 4000, max_shortfall_w_min: 9000, score_max: 0.9}
            """).get()
        #expect(scenario.needsPMU)
        guard case .pmu(let hz, let status, nil) = scenario.actions[0].kind, case .pmu(nil, .unsynchronised, nil) = scenario.actions[1].kind,
              case .pmu(nil, .stopped, nil) = scenario.actions[2].kind, case .pmu(nil, nil, .some(.crc)) = scenario.actions[3].kind,
              case .pmu(nil, nil, .some(nil)) = scenario.actions[4].kind else {
            Issue.record("not pmu actions: \(scenario.actions.map(\.label))")
            return
        }
        #expect(hz == 49.4 && status == nil)
        #expect(scenario.actions.map(\.label) == ["PMU 49.4 Hz", "PMU STAT unsynchronised", "PMU stopped", "PMU bad frames: crc",
                                                  "PMU bad frames: none"])
        #expect(scenario.expectations[0].flags.map(\.signal) == ["frequency_source"])
        #expect(scenario.expectations[0].numeric.map(\.tolerance) == [0.005], "a frequency's default tolerance")
        let event = try #require(scenario.events.first)
        #expect(event.fields.map(\.key) == ["direction", "cause", "cause_code"])
        #expect(event.bounds.map(\.key) == ["shortfall_w", "max_shortfall_w", "score"])
        #expect(try !Self.load("timeline:\n  - {at_s: 1, frequency_hz: 49.5}\nexpect:\n  - {at_s: 2, setpoint_kw: 5}").get().needsPMU)
    }

    @Test("an unknown STAT, pmu or event key, or a frequency out of range is refused, each named")
    func refused() throws {
        let result = try Self.load("""
            timeline:
              - {at_s: 1, pmu: {stat: sleepy}}
              - {at_s: 2, pmu: {frequency_hz: 5}}
              - {at_s: 3, pmu: {rocof: 1}}
              - {at_s: 4, pmu: {bad_frames: some}}
            expect:
              - {at_s: 2, setpoint_kw: 5}
            events:
              - {cause: soc_limit, shortfall_kw_min: 3}
              - {score: 1}
            """)
        guard case .failure(let error) = result else {
            Issue.record("loaded")
            return
        }
        #expect(error.code == .invalid)
        #expect(error.message.contains("timeline[0].pmu.stat: unknown; known: valid, invalid, unsynchronised, stopped"), "\(error)")
        #expect(error.message.contains("timeline[1].pmu.frequency_hz: a frequency, 40–70 Hz"), "\(error)")
        #expect(error.message.contains("timeline[2].pmu.rocof: unknown key"), "\(error)")
        #expect(error.message.contains("timeline[3].pmu.bad_frames: unknown; known: crc, idcode, none"), "\(error)")
        #expect(error.message.contains("events[0].shortfall_kw_min: unknown key"), "\(error)")
        #expect(error.message.contains("events[1]: checks nothing"), "\(error)")
    }

    /// CRC-CCITT as C37.118.2-2011 Annex B states it: polynomial 0x1021, initial 0xFFFF, no reflection.
    static func crc(_ bytes: some Collection<UInt8>) -> UInt16 {
        var crc: UInt16 = 0xFFFF
        for byte in bytes {
            crc ^= UInt16(byte) << 8
            for _ in 0..<8 { crc = crc & 0x8000 != 0 ? (crc << 1) ^ 0x1021 : crc << 1 }
        }
        return crc
    }

    /// A command frame (C37.118.2-2011 Table 12): `command` 2 turns data on.
    static func command(_ command: UInt16, idcode: UInt16) -> [UInt8] {
        var frame: [UInt8] = [0xAA, 0x41, 0, 18, UInt8(idcode >> 8), UInt8(idcode & 0xFF), 0, 0, 0, 0, 0, 0, 0, 0,
                              UInt8(command >> 8), UInt8(command & 0xFF)]
        let check = crc(frame)
        frame += [UInt8(check >> 8), UInt8(check & 0xFF)]
        return frame
    }

    /// The data frames that arrive on `fd` within `seconds` whose CRC is right (checked here), or nil
    /// when the connection closed; `wrongCRC` counts the others.
    static func dataFrames(_ fd: Int32, seconds: Double, wrongCRC: UnsafeMutablePointer<Int>? = nil) -> [[UInt8]]? {
        var buffer: [UInt8] = []
        var frames: [[UInt8]] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        let end = Date().addingTimeInterval(seconds)
        while Date() < end {
            var pending = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            guard poll(&pending, 1, 50) > 0 else { continue }
            let count = recv(fd, &chunk, chunk.count, 0)
            if count <= 0 { return nil }
            buffer += chunk[0..<count]
            while buffer.count >= 4, case let size = Int(buffer[2]) << 8 | Int(buffer[3]), buffer.count >= size {
                let frame = Array(buffer.prefix(size))
                buffer.removeFirst(size)
                let sent = UInt16(frame[size - 2]) << 8 | UInt16(frame[size - 1])
                guard frame[1] & 0x70 == 0 else { continue }  // type 0: data
                if crc(frame.dropLast(2)) == sent { frames.append(frame) } else { wrongCRC?.pointee += 1 }
            }
        }
        return frames
    }

    @Test("the plant's PMU sends its set STAT and frequency; stopped, it refuses connections until set valid")
    func onTheWire() throws {
        let pmu = try PMUSender(stream: PMUStream(idcode: 1410, pmus: 1, float: false, dataRate: 50))
        pmu.start()
        defer { pmu.stop() }
        /// STAT and FREQ (mHz from 50 Hz) of the last frame: STAT at byte 14, FREQ after four 16-bit phasor parts.
        func last(_ frames: [[UInt8]]) -> (stat: UInt16, mHz: Int16)? {
            frames.last.map { (UInt16($0[14]) << 8 | UInt16($0[15]), Int16(bitPattern: UInt16($0[24]) << 8 | UInt16($0[25]))) }
        }
        func connect() throws -> Int32 {
            let fd = try #require(Loopback.connect(Int(pmu.port)))
            _ = Self.command(2, idcode: 1410).withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            return fd
        }
        pmu.set(hz: 49.4, status: .valid)
        let fd = try connect()
        defer { close(fd) }
        let valid = try #require(Self.dataFrames(fd, seconds: 0.5))
        #expect(valid.count >= 10, "50 frames/s: \(valid.count) in 0.5 s")
        #expect(last(valid).map { $0.stat == 0 && $0.mHz == -600 } == true, "\(String(describing: last(valid)))")
        for (status, word) in [(PMUSender.Status.invalid, UInt16(0xC000)), (.unsynchronised, 0x2000)] {
            pmu.set(status: status)
            let frames = try #require(Self.dataFrames(fd, seconds: 0.3))
            #expect(last(frames)?.stat == word, "\(status)")
        }
        // Bad frames between the good ones: a wrong CHK, then another stream's IDCODE, each measuring 47 Hz.
        pmu.set(status: .valid, badFrames: .some(.crc))
        var wrong = 0
        let withBadCRC = try #require(Self.dataFrames(fd, seconds: 0.3, wrongCRC: &wrong))
        #expect(wrong >= 5 && withBadCRC.allSatisfy { last([$0])?.mHz == -600 }, "\(wrong) bad, \(withBadCRC.count) good")
        pmu.set(badFrames: .some(.idcode))
        let mixed = try #require(Self.dataFrames(fd, seconds: 0.3))
        let other = mixed.filter { $0[4] == 0x05 && $0[5] == 0x83 }  // IDCODE 1411
        #expect(other.count >= 5 && other.allSatisfy { last([$0])?.mHz == -3000 }, "\(other.count) of \(mixed.count)")
        #expect(mixed.count - other.count >= 5)
        pmu.set(badFrames: .some(nil))
        _ = Self.dataFrames(fd, seconds: 0.1)
        let clean = try #require(Self.dataFrames(fd, seconds: 0.3))
        #expect(clean.allSatisfy { $0[4] == 0x05 && $0[5] == 0x82 }, "IDCODE 1410 only")
        pmu.set(status: .stopped)
        #expect(waitFor(seconds: 2) { Self.dataFrames(fd, seconds: 0.1) == nil }, "the connection is closed")
        let refused = try connect()
        #expect(waitFor(seconds: 2) { Self.dataFrames(refused, seconds: 0.1) == nil }, "a new one is closed at once")
        close(refused)
        pmu.set(status: .valid)
        let again = try connect()
        defer { close(again) }
        let back = try #require(Self.dataFrames(again, seconds: 0.5))
        #expect(last(back).map { $0.stat == 0 && $0.mHz == -600 } == true, "\(String(describing: last(back)))")
    }

    /// Sent to the start's sender, with the STAT set.
    @Test("over UDP the plant's PMU answers a start datagram with data frames; stopped, it sends nothing")
    func overUDP() throws {
        let pmu = try PMUSender(stream: PMUStream(idcode: 1410, pmus: 1, float: false, dataRate: 50), udp: true)
        pmu.start()
        defer { pmu.stop() }
        pmu.set(hz: 49.4, status: .invalid)
        let fd = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = pmu.port.bigEndian
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        try #require(connected == 0)
        _ = Self.command(2, idcode: 1410).withUnsafeBytes { send(fd, $0.baseAddress, $0.count, 0) }
        let frames = try #require(Self.dataFrames(fd, seconds: 0.5))
        #expect(frames.count >= 10, "50 frames/s: \(frames.count) in 0.5 s")
        #expect(frames.last.map { UInt16($0[14]) << 8 | UInt16($0[15]) } == 0xC000, "STAT invalid")
        pmu.set(status: .stopped)
        _ = Self.dataFrames(fd, seconds: 0.1)
        #expect(Self.dataFrames(fd, seconds: 0.3)?.isEmpty == true, "a stopped PMU sends nothing")
    }
}
