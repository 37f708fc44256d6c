import Config
import ControlCore
import Cycle
import Foundation
@testable import Service
import BessSystem
import TestSupport
import Testing
import Uplink

/// `CLOCK_UNSYNCED` and `CLOCK_STEPPED` as an operator and an aggregator see them. The kernel's state
/// is whatever this machine's is; the tests read it independently (python's ctypes → adjtimex) and
/// check that bessd says the same, so they hold on a synchronised machine and on one that is not.
@Suite("Clock synchronisation", .serialized)
struct ClockTests {
    /// The kernel's word, read without bessd.
    static func kernelSynchronized() throws -> Bool {
        let script = """
            import ctypes, ctypes.util
            libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
            buf = ctypes.create_string_buffer(512)
            state = libc.adjtimex(buf)
            status = ctypes.c_int.from_buffer(buf, 40).value  # struct timex on x86_64: modes + pad, 4 longs, then status
            print("SYNC" if state != 5 and not (status & 0x40) else "UNSYNC")
            """
        let run = try Package.tool(["python3", "-c", script])
        #expect(run.status == 0, "\(run.err)")
        return run.out.contains("SYNC") && !run.out.contains("UNSYNC")
    }

    @Test("ClockSync.read says what the kernel says (adjtimex)")
    func kernel() throws {
        let expected = try Self.kernelSynchronized()
        let read = ClockSync.read()
        #expect(read.isSynchronized == expected, "\(read)")
        #expect(read.source == "kernel")
    }

    @Test("the daemon: status, bessctl, /metrics and the journal carry the clock's state")
    func daemon() throws {
        let synchronized = try Self.kernelSynchronized()
        let daemon = try RunningDaemon(yaml: daemonYAML)
        _ = daemon.notify.collect(seconds: 8) { $0.contains("READY=1") }
        let status = try daemon.request(["verb": "status"])
        let clock = try #require(status["clock"] as? [String: Any])
        #expect(clock["synchronized"] as? Bool == synchronized)
        #expect(clock["source"] as? String == "kernel")
        #expect((clock["code"] as? String) == (synchronized ? nil : "CLOCK_UNSYNCED"))
        let table = try Package.run("bessctl", ["status", "--socket", daemon.socket])
        #expect(table.out.contains("clock NOT synchronised (CLOCK_UNSYNCED, kernel)") == !synchronized, "\(table.out)")
        let metrics = try #require(try daemon.request(["verb": "metrics"])["text"] as? String)
        #expect(metrics.contains("bessd_clock_synchronized{source=\"kernel\"} \(synchronized ? 1 : 0)"), "\(metrics)")
        #expect(metrics.contains("bessd_clock_steps_total 0"))
        daemon.signal(SIGTERM)
        let (_, text) = daemon.finish()
        if synchronized {
            #expect(text.contains("the system clock is synchronised (kernel)"))
        } else {
            #expect(text.contains("CLOCK_UNSYNCED: the system clock is not synchronised (kernel); records and energy blocks are flagged"))
        }
    }

    @Test("records made while unsynchronised, and energy blocks with their own flags, say so in the spool")
    func records() throws {
        let directory = NSTemporaryDirectory() + "bess-clock-\(UInt32.random(in: 0...UInt32.max))"
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let configuration = try ConfigLoader.parse("""
            mode: simulation
            bess_units:
              - {id: U1, capacity_kwh: 100, max_power_kw: 50}
            """, file: "clock.yaml")
        let queue = SpoolQueue(try Spool(directory: directory))
        let recorder = UplinkRecorder(queue: queue, configuration: configuration)
        recorder.clockSynchronized = false
        #expect(recorder.record(.spoolDrop(count: 1)) == nil)
        recorder.clockSynchronized = true
        #expect(recorder.record(.spoolDrop(count: 2)) == nil)
        var block = EnergyBlock(unit: 0, startUnixSeconds: 1_800_000_000, lengthSeconds: 900, chargedWh: 0, dischargedWh: 500,
                                coveredSeconds: 900)
        block.clockStepped = true
        _ = recorder.tick(now: .zero, units: [], stats: CycleStatistics(), blocks: [block])
        let records = try queue.records(after: 0, limit: 10).map { try JSONDecoder().decode(UplinkRecord.self, from: Data($0.payload)) }
        #expect(records.first?.clock == ["unsynchronized"])
        #expect(records.dropFirst().first?.clock == nil)
        let energy = records.first { if case .energyBlock = $0.body { true } else { false } }
        #expect(energy?.clock == ["stepped"])
    }
}
