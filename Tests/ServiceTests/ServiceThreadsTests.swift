import BessSystem
import Simulation
import ControlCore
import Fieldbus
import ControlProtocol
import Foundation
import Glibc
import Logging
@testable import Service
@testable import Cycle
@testable import Config
import Synchronization
import TestSupport
import Testing
import Uplink

@Suite("Operator and aggregator through the mailbox and the cycle")
struct AuthorityTests {
    static func site() throws -> (SiteRunner, SharedState, DispatchIntake) {
        let c = try ConfigLoader.parse(EmbeddedConfiguration.simulationYAML, file: "embedded")
        let runner = try SiteRunner.make(configuration: c, startedAt: .zero) { _ in }
        let shared = SharedState(units: c.units.count)
        runner.attach(shared)
        let intake = DispatchIntake(shared: shared, logger: Logger(label: "test"), units: c.units.map { ($0.id, $0.maxPowerKW) })
        return (runner, shared, intake)
    }

    static func run(_ runner: SiteRunner, from: Double, seconds: Double) {
        for k in 1...Int(seconds * 10) {
            runner.run(now: MonotonicInstant(nanoseconds: Int64(((from + Double(k) / 10) * 1e9).rounded())), lateness: .zero)
        }
    }

    @Test("an aggregator auto, an emergency stop and its end never lift the operator's standby")
    func operatorStandbyHolds() throws {
        let (runner, shared, intake) = try Self.site()
        let id = runner.settings.devices[0].id
        Self.run(runner, from: 0, seconds: 3)
        #expect(shared.units[0].mode == .auto)
        shared.post { $0.mode[0] = .standby }  // bessctl mode standby --unit
        Self.run(runner, from: 3, seconds: 0.5)
        let now = SystemClock.wallClockSeconds()
        let acks = intake.apply([
            DispatchCommand(id: "a", kind: "mode", unit: id, mode: "auto", expiresUnix: now + 60),
            DispatchCommand(id: "b", kind: "emergency_stop", unit: id, expiresUnix: now + 1),
        ])
        #expect(acks.allSatisfy { $0.accepted })
        Self.run(runner, from: 3.5, seconds: 0.5)
        #expect(shared.units[0].holds.operatorUnit && shared.units[0].holds.remoteEmergency)
        // The emergency stop ends (1 s), the aggregator's auto stands: the operator's standby holds.
        Self.run(runner, from: 4, seconds: 3)
        let held = shared.units[0]
        #expect(held.mode == .standby && held.state == .standby && held.setpoint == 0)
        #expect(held.holds.operatorUnit && held.holds.remoteUntil == nil)
        #expect(StatusReport.heldBy(held)?.who == "operator")
        // Only the operator lifts it.
        shared.post { $0.mode[0] = .auto }
        Self.run(runner, from: 7, seconds: 1)
        #expect(shared.units[0].mode == .auto)
        #expect(StatusReport.heldBy(shared.units[0]) == nil)
    }

    @Test("the cycle takes the mailbox whole, once: applied, emptied, and the next request starts clean")
    func mailboxSwap() throws {
        let (runner, shared, _) = try Self.site()
        Self.run(runner, from: 0, seconds: 1)
        let first = shared.post {
            $0.mode[0] = .standby
            $0.override[1] = (Watts.kilowatts(20), .seconds(60))
        }
        Self.run(runner, from: 1, seconds: 0.1)
        #expect(shared.units[0].mode == .standby)
        #expect(shared.units[1].overrideW == 20_000)
        #expect(shared.contents.withLock { $0.appliedGeneration } == first)
        // What the cycle took is gone from the shared mailbox: nothing is applied twice.
        let left = shared.peekMailbox()
        #expect(left.mode.allSatisfy { $0 == nil } && left.override.allSatisfy { $0 == nil } && left.generation == first)
        // The next request lands in the mailbox the cycle cleared and gave back.
        let second = shared.post { $0.mode[0] = .auto }
        #expect(second == first + 1)
        #expect(shared.peekMailbox().override.allSatisfy { $0 == nil })
        Self.run(runner, from: 1.1, seconds: 0.1)
        #expect(shared.units[0].mode == .auto)
        #expect(shared.units[1].overrideW == 20_000)
        #expect(shared.contents.withLock { $0.appliedGeneration } == second)
    }

    @Test("an aggregator standby is shown with its end and lapses by itself")
    func remoteStandbyLapses() throws {
        let (runner, shared, intake) = try Self.site()
        Self.run(runner, from: 0, seconds: 1)
        _ = intake.apply([DispatchCommand(id: "s", kind: "mode", unit: runner.settings.devices[1].id, mode: "standby",
                                          expiresUnix: SystemClock.wallClockSeconds() + 2)])
        Self.run(runner, from: 1, seconds: 0.5)
        let u = shared.units[1]
        #expect(u.mode == .standby)
        let held = try #require(StatusReport.heldBy(u))
        #expect(held.who == "aggregator" && (held.remaining ?? .zero) > .seconds(1) && (held.remaining ?? .seconds(9)) <= .seconds(2))
        Self.run(runner, from: 1.5, seconds: 2)
        #expect(shared.units[1].mode == .auto)
    }
}

@Suite("Service threads")
struct ServiceThreadsTests {
    @Test("the watchdog feeds only while the cycle beats on time and every worker lives")
    func watchdog() {
        let beat = Atomic<UInt64>(0)
        let late = Atomic<Bool>(false)
        let alive = Atomic<Bool>(true)
        let sent = Atomic<Int>(0)
        let dog = Watchdog(interval: .milliseconds(40), health: .init(
            beat: { beat.load(ordering: .relaxed) }, onTime: { !late.load(ordering: .relaxed) },
            workersAlive: { alive.load(ordering: .relaxed) })) { message in
            if message == "WATCHDOG=1" { sent.add(1, ordering: .relaxed) }
        }
        let ticker = WorkerThread()
        ticker.start {
            while ticker.isRunning {
                beat.add(1, ordering: .relaxed)
                usleep(2_000)
            }
        }
        dog.start()
        defer { dog.stop() }
        #expect(waitFor { sent.load(ordering: .relaxed) >= 3 })
        // A stalled cycle: no beat, no WATCHDOG=1.
        ticker.stop()
        let withheld = dog.withheld.load(ordering: .relaxed)
        #expect(waitFor { dog.withheld.load(ordering: .relaxed) >= withheld + 3 })
        let whileStalled = sent.load(ordering: .relaxed)
        #expect(waitFor { dog.withheld.load(ordering: .relaxed) >= withheld + 6 })
        #expect(sent.load(ordering: .relaxed) <= whileStalled + 1)  // at most the check already under way
        // Beating again but late, or with a dead worker: still withheld.
        let lateTicker = WorkerThread()
        lateTicker.start {
            while lateTicker.isRunning {
                beat.add(1, ordering: .relaxed)
                usleep(2_000)
            }
        }
        defer { lateTicker.stop() }
        late.store(true, ordering: .relaxed)
        alive.store(false, ordering: .relaxed)
        let before = sent.load(ordering: .relaxed)
        let withheld2 = dog.withheld.load(ordering: .relaxed)
        #expect(waitFor { dog.withheld.load(ordering: .relaxed) >= withheld2 + 4 })
        #expect(sent.load(ordering: .relaxed) <= before + 1)
        late.store(false, ordering: .relaxed)
        #expect(waitFor { dog.withheld.load(ordering: .relaxed) >= withheld2 + 8 })
        #expect(sent.load(ordering: .relaxed) <= before + 1)  // the worker is still dead
        alive.store(true, ordering: .relaxed)
        #expect(waitFor { sent.load(ordering: .relaxed) >= before + 3 })
    }

    @Test("worker threads (the cycle, bus workers, servers) run with every signal blocked")
    func signalsBlocked() {
        var before = sigset_t()
        pthread_sigmask(SIG_BLOCK, nil, &before)
        let blocked = Mutex<[Int32: Bool]>([:])
        let done = Atomic<Bool>(false)
        let thread = WorkerThread()
        thread.start {
            var mask = sigset_t()
            pthread_sigmask(SIG_BLOCK, nil, &mask)
            blocked.withLock { for signal in [SIGHUP, SIGTERM, SIGINT, SIGUSR1] { $0[signal] = sigismember(&mask, signal) == 1 } }
            done.store(true, ordering: .releasing)
        }
        #expect(waitFor { done.load(ordering: .acquiring) })
        #expect(waitFor { !thread.isAlive })
        thread.stop()
        #expect(blocked.withLock { $0 } == [SIGHUP: true, SIGTERM: true, SIGINT: true, SIGUSR1: true])
        // The creating thread's own mask is as it was.
        var after = sigset_t()
        pthread_sigmask(SIG_BLOCK, nil, &after)
        for signal in 1..<32 { #expect(sigismember(&before, Int32(signal)) == sigismember(&after, Int32(signal))) }
    }

    /// A hardware site of `units` units, each with its inverter on a port of loopback nobody serves
    /// (its own endpoint, so its own bus worker) and its BMS on a CAN interface that does not exist.
    static func realtimeSite(_ realtime: String, units: Int) -> String {
        "mode: hardware\nrealtime: \(realtime)\nbess_units:\n" + (1...units).map { i in
            "  - {id: U\(i), capacity_kwh: 100, max_power_kw: 50, modbus: {host: 127.0.0.1, port: \(i), unit_id: 1}, "
                + "inverter: {protocol: sunspec}, bms: {interface: bessdnone\(i - 1)}}\n"
        }.joined()
    }

    /// It is the first step of the alarm path.
    @Test("under realtime the CAN worker runs SCHED_FIFO one below the cycle, like the bus workers")
    func canWorkerRealtime() throws {
        let c = try ConfigLoader.parse(Self.realtimeSite("{priority: 30}", units: 1), file: "realtime.yaml")
        let site = try HardwareSite(configuration: c, phase: CyclePhase(period: .milliseconds(100))) { _ in }
        #expect(site.bmsWorkers.map(\.realtime) == [RealtimeThread(priority: 29, cpu: CurrentThread.allowedCPUs().last)])
        // The thread itself: its policy and priority as the kernel reports them (stat fields 41 and 40).
        func fifo(_ priority: Int) -> Int {
            let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task")) ?? []
            return tasks.filter { task in
                guard let stat = try? String(contentsOfFile: "/proc/self/task/\(task)/stat", encoding: .utf8),
                      let close = stat.lastIndex(of: ")") else { return false }
                let fields = stat[stat.index(after: close)...].split(separator: " ")
                return fields.count > 38 && fields[38] == "1" && fields[37] == "\(priority)"
            }.count
        }
        let before = fifo(17)
        let refused = Mutex<[DeviceNotice]>([])
        let worker = BMSWorker(interface: "bessdnone0", slot: BMSSlot(), realtime: RealtimeThread(priority: 17)) { notice in refused.withLock { $0.append(notice) } }
        worker.start()
        defer { worker.stop() }
        // As root it runs SCHED_FIFO; without the right to, it says so (REALTIME_DEGRADED).
        #expect(waitFor { fifo(17) == before + 1 || (getuid() != 0 && refused.withLock { $0.contains { $0.code == "REALTIME_DEGRADED" && $0.severity == .warning } }) },
                "no thread runs SCHED_FIFO 17: \(refused.withLock { $0 })")
    }

    /// The kernel's view of thread `tid` of this process: the CPUs it may run on (`Cpus_allowed_list`)
    /// and its name.
    static func kernelThread(_ tid: Int32) -> (cpus: String, name: String)? {
        guard tid > 0, let status = try? String(contentsOfFile: "/proc/self/task/\(tid)/status", encoding: .utf8),
              let name = try? String(contentsOfFile: "/proc/self/task/\(tid)/comm", encoding: .utf8) else { return nil }
        let line = status.split(separator: "\n").first { $0.hasPrefix("Cpus_allowed_list:") }
        return line.map { ($0.dropFirst("Cpus_allowed_list:".count).trimmingCharacters(in: .whitespaces),
                           name.trimmingCharacters(in: .whitespacesAndNewlines)) }
    }

    @Test("realtime.cpu: last CPU by default, a listed number as given, an unlisted one falls back, noticed")
    func realtimePlacement() {
        let base = RealtimeSettings(priority: 60, lockMemory: true)
        func place(_ cpu: RealtimeSettings.CPU, _ allowed: [Int]) -> (Int?, Int?, Int, String?) {
            var settings = base
            settings.cpu = cpu
            let p = Realtime.placement(settings, allowed: allowed)
            #expect(p.cycle.priority == 60 && p.workers.priority == 59)
            return (p.cycle.cpu, p.workers.cpu, p.workers.priority, p.notice)
        }
        #expect(place(.last, [0, 1]) == (1, 1, 59, nil))
        #expect(place(.last, [0]) == (0, 0, 59, nil))
        #expect(place(.last, [2, 5]) == (5, 5, 59, nil))
        #expect(place(.index(0), [0, 1]) == (0, 0, 59, nil))
        #expect(place(.none, [0, 1]) == (nil, nil, 59, nil))
        let outside = place(.index(3), [0, 1])
        #expect(outside.0 == 1 && outside.1 == 1)
        #expect(outside.3 == "REALTIME_DEGRADED: realtime.cpu 3 is not one of the CPUs bessd was started on (0,1: CPUAffinity= "
                + "or taskset); the cycle and its workers run on CPU 1")
        // The kernel would not say (an empty set): last pins nothing, a number is tried as given.
        #expect(place(.last, []) == (nil, nil, 59, nil))
        #expect(place(.index(1), []) == (1, 1, 59, nil))
    }

    /// The cycle, bus poller, both bus workers and both CAN workers.
    @Test("under realtime all control threads share one CPU: the last, realtime.cpu's, or none",
          .enabled(if: CurrentThread.allowedCPUs().count >= 2, "on one CPU a pinned thread and a free one look alike"))
    func realtimeThreadsShareOneCPU() throws {
        let allowed = CurrentThread.allowedCPUs()
        let everyCPU = Self.kernelThread(CurrentThread.id)!.cpus
        try #require(!allowed.isEmpty)
        // The default (the last CPU), the first CPU named (another CPU on a machine of two or more),
        // and none (each thread keeps the process's CPUs).
        for (key, expected) in [("", "\(allowed.last!)"), (", cpu: \(allowed.first!)", "\(allowed.first!)"), (", cpu: none", everyCPU)] {
            let c = try ConfigLoader.parse(Self.realtimeSite("{priority: 30\(key)}", units: 2), file: "pinned.yaml")
            let runner = try SiteRunner.hardware(configuration: c, startedAt: SystemClock.shared.now()) { _ in }
            let site = try #require(runner.io as? HardwareSite)
            let cycle = CycleThread(runner: runner, shared: SharedState(units: 2))
            runner.startWorkers()
            cycle.start()
            defer {
                cycle.stop()
                runner.stopWorkers()
            }
            let threads: [(role: String, id: () -> Int32)] = [("bessd-cycle", { cycle.threadID }),
                                                             ("bessd-poller", { site.poller?.threadID ?? 0 })]
                + site.workers.map { worker in ("bessd-bus", { worker.threadID }) }
                + site.bmsWorkers.map { worker in ("bessd-can", { worker.threadID }) }
            #expect(threads.count == 6)
            // Each thread is named as it starts and pins itself as its loop starts: wait until all six show both.
            let seen = { threads.map { Self.kernelThread($0.id()) } }
            #expect(waitFor { seen().map { $0?.name } == threads.map(\.role) && seen().allSatisfy { $0?.cpus == expected } },
                    "realtime\(key): \(seen().map { $0.map { "\($0.name) on \($0.cpus)" } ?? "not running" }) (expected \(expected))")
            #expect(cycle.realtimePlacement?.hasSuffix(key.contains("none") ? "not pinned" : "all on CPU \(expected)") == true)
        }
        // The thread that started them all is not pinned.
        #expect(Self.kernelThread(CurrentThread.id)?.cpus == everyCPU)
        // A CPU the kernel refuses: the thread says so and keeps running where it may.
        let notices = Mutex<[String]?>(nil)
        let probe = WorkerThread()
        probe.start { notices.withLock { $0 = Realtime.enter(RealtimeThread(priority: 5, cpu: 1023), as: "the probe").notices } }
        #expect(waitFor { notices.withLock { $0 } != nil })
        probe.stop()
        let pinNotices = (notices.withLock { $0 } ?? []).filter { $0.contains("pin") }
        #expect(pinNotices == ["REALTIME_DEGRADED: cannot pin the probe to CPU 1023 (Invalid argument); it runs on CPUs "
                               + allowed.map(String.init).joined(separator: ",")], "\(pinNotices)")
    }

    @Test("a status reader copies out: the cycle's storage is never shared, so running it allocates nothing new")
    func readersCopyOut() throws {
        let c = try ConfigLoader.parse(EmbeddedConfiguration.simulationYAML, file: "embedded")
        let runner = try SiteRunner.make(configuration: c, startedAt: .zero) { _ in }
        let shared = SharedState(units: c.units.count)
        runner.attach(shared)
        runner.run(now: MonotonicInstant(nanoseconds: 100_000_000), lateness: .zero)
        // A reader holds its copies while the cycle runs again.
        let units = shared.units
        let stats = shared.statistics
        let cycleBuffer = shared.contents.withLock { c in c.stats.histogram.counts.withUnsafeBufferPointer { UInt(bitPattern: $0.baseAddress) } }
        let readerBuffer = stats.histogram.counts.withUnsafeBufferPointer { UInt(bitPattern: $0.baseAddress) }
        #expect(cycleBuffer != readerBuffer)
        runner.run(now: MonotonicInstant(nanoseconds: 200_000_000), lateness: .zero)
        let after = shared.contents.withLock { c in c.stats.histogram.counts.withUnsafeBufferPointer { UInt(bitPattern: $0.baseAddress) } }
        #expect(after == cycleBuffer)  // no copy-on-write: the same storage
        #expect(units.count == c.units.count && stats.cycles == 1)
    }
}

@Suite("What each program links")
struct LinkageTests {
    /// Symbols of `program` defined by one of `modules` (mangled names that start with the module:
    /// `$s7NIOCore…`; a type of another module whose name merely contains `Cycle` does not count).
    static func symbols(_ program: String, mentioning modules: [String]) throws -> [String] {
        let url = try #require(Package.executable(program))
        return try Package.capture(URL(fileURLWithPath: "/usr/bin/nm"), [url.path], directory: nil).out
            .split(separator: "\n").map(String.init)
            .filter { line in modules.contains { line.contains(" $s" + $0) || line.contains(" _$s" + $0) } }
    }

    /// bessctl reads device profiles with the configuration's own reader (Config, so YAML), so that
    /// `bessctl profiles` and `probe` never disagree with `bessd check-config` about a profile; the
    /// daemon's services, the network stack and the simulators stay out of it.
    @Test("bessctl links no NIO, TLS, HTTP client or daemon service code; bessd does (the check can see them)")
    func bessctlIsSmall() throws {
        let heavy = ["7NIOCore", "6NIOSSL", "15AsyncHTTPClient", "7Service", "10Simulation", "8HILPlant", "6Uplink"]
        #expect(try Self.symbols("bessctl", mentioning: heavy).isEmpty)
        #expect(try !Self.symbols("bessd", mentioning: ["7NIOCore", "7Service"]).isEmpty)
        #expect(try !Self.symbols("bessctl", mentioning: ["6Config"]).isEmpty)
    }

    @Test("bessd links the simulated site but not the HIL plant's SunSpec server; bess-hil does")
    func bessdShipsNoPlant() throws {
        let plant = ["8HILPlant", "13SunSpecServer"]
        #expect(try Self.symbols("bessd", mentioning: plant).isEmpty)
        #expect(try !Self.symbols("bessd", mentioning: ["10Simulation"]).isEmpty)
        #expect(try !Self.symbols("bess-hil", mentioning: plant).isEmpty)
    }
}

@Suite("The service loop sleeps until there is work")
struct ServiceWakeupTests {
    @Test("the cycle wakes the service loop exactly when it publishes an event or a closed block")
    func cycleWakes() throws {
        let (runner, shared, _) = try AuthorityTests.site()
        var woken = 0, quiet = 0
        for k in 1...200 {
            if k == 120 { shared.post { $0.mode[0] = .standby } }  // an operator's standby: an event
            runner.run(now: MonotonicInstant(nanoseconds: Int64(k) * 100_000_000), lateness: .zero)
            let woke = shared.serviceWakeup.drain()
            let published = !shared.takeEvents().isEmpty || !shared.takeBlocks().isEmpty
            #expect(woke == published, "cycle \(k): woke \(woke), published \(published)")
            if woke { woken += 1 } else { quiet += 1 }
        }
        // Both kinds of cycle were seen: the start's state changes and the standby woke it, the rest did not.
        #expect(woken >= 2 && quiet >= 100, "woken \(woken), quiet \(quiet)")
    }

    @Test("SIGHUP and SIGTERM set their flag and wake the sleeper at once")
    func signalsWake() throws {
        var saved: [(number: Int32, action: sigaction)] = []
        for number in [SIGINT, SIGTERM, SIGHUP] {
            var old = sigaction()
            sigaction(number, nil, &old)
            saved.append((number, old))
        }
        defer {
            wakeOnSignals(nil)
            stopRequested.store(false, ordering: .relaxed)
            reloadRequested.store(false, ordering: .relaxed)
            for entry in saved {
                var old = entry.action
                sigaction(entry.number, &old, nil)
            }
        }
        installStopHandlers()
        let wakeup = Wakeup()
        wakeOnSignals(wakeup)
        #expect(!wakeup.drain(), "nothing pending before a signal")
        raise(SIGHUP)  // delivered to this thread before raise returns
        let reload = reloadRequested.load(ordering: .relaxed)
        #expect(reload)
        #expect(wakeup.wait(until: SystemClock.shared.now() + .seconds(5)))
        raise(SIGTERM)
        let stop = stopRequested.load(ordering: .relaxed)
        #expect(stop)
        #expect(wakeup.wait(until: SystemClock.shared.now() + .seconds(5)))
        // Detached: a signal sets its flag and wakes nothing.
        wakeOnSignals(nil)
        stopRequested.store(false, ordering: .relaxed)
        raise(SIGTERM)
        let stopAgain = stopRequested.load(ordering: .relaxed)
        #expect(stopAgain)
        #expect(!wakeup.drain())
    }

    @Test("the control server sleeps until a client, its idle timeout or stop() wakes it: no fixed tick")
    func serverSleeps() throws {
        let path = NSTemporaryDirectory() + "bessd-server-\(getpid()).sock"
        var limits = ServiceServer.Limits()
        limits.idleTimeout = .seconds(1)
        let server = try ServiceServer(controlPath: path, metricsAddress: nil, limits: limits, appliedGeneration: { 0 },
                                       handleControl: { _, _ in .now(MetricsReply(text: "")) }, renderMetrics: { "" })
        server.start()
        // A client that says nothing is closed at its idle timeout: the peer reads end of file.
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { b in for (i, c) in path.utf8.enumerated() { b[i] = c } }
        let rc = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        #expect(rc == 0)
        #expect(waitFor(seconds: 5) { server.evicted.load(ordering: .relaxed) == 1 }, "the idle client was not closed")
        var byte: UInt8 = 0
        #expect(recv(fd, &byte, 1, 0) == 0, "the client did not see its connection closed")
        // The second it idled cost a handful of wake-ups (the accept, the timeout, a rounding
        // early), not one every 100 ms as the loop's old fixed tick did (at least 10).
        let woken = server.wakeups.load(ordering: .relaxed)
        #expect(woken >= 2 && woken <= 5, "wake-ups: \(woken)")
        // Nothing open: the loop sleeps without a timeout, and stop() still ends it.
        #expect(returns(within: 5) { server.stop() }, "stop() did not end the loop's wait")
    }
}
