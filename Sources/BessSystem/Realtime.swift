import Glibc

/// Applies the real-time settings; each part that is not permitted degrades with a notice.
package enum Realtime {
    /// Process-wide parts: memory locking and the CPU latency request. Returns notices and the
    /// descriptor to keep open (the request lasts while it is open).
    package static func applyProcessWide(_ settings: RealtimeSettings) -> (notices: [String], latencyFD: Int32) {
        var notices: [String] = []
        if settings.lockMemory {
            // MCL_ONFAULT (4): lock pages as they are touched, not the whole address space up front.
            if mlockall(MCL_CURRENT | MCL_FUTURE | 4) != 0 {
                notices.append("REALTIME_DEGRADED: mlockall failed (\(SystemError.text(errno))); memory is not locked "
                               + "(grant CAP_IPC_LOCK or LimitMEMLOCK=infinity)")
            }
        }
        var fd: Int32 = -1
        if let latency = settings.cpuDMALatencyMicroseconds {
            fd = open("/dev/cpu_dma_latency", O_WRONLY)
            var value = Int32(clamping: latency)
            if fd < 0 || write(fd, &value, 4) != 4 {
                notices.append("REALTIME_DEGRADED: cannot hold /dev/cpu_dma_latency at \(latency) µs "
                               + "(\(SystemError.text(errno))); deep C-states stay allowed")
                if fd >= 0 { close(fd) }
                fd = -1
            }
        }
        return (notices, fd)
    }

    /// The CPUs bessd was started on (the unit's `CPUAffinity=`, `taskset`), read once, at the first
    /// placement: on the main thread, before any thread pins itself.
    static let startCPUs = CurrentThread.allowedCPUs()

    /// Where the cycle and the threads that feed it run: the cycle at `priority`, the bus poller, bus
    /// workers and CAN workers one below it, all on one CPU (`realtime.cpu`; nil: not pinned). The
    /// CPU is one of those bessd was started on: `last` is the highest of them, and a number outside
    /// them gives way to it with a notice (a thread may pin itself to any CPU of its cgroup, so
    /// without this `cpu: 3` would leave a `CPUAffinity=0-1` behind).
    /// - Parameter allowed: the CPUs bessd was started on (nil: `startCPUs`).
    package static func placement(_ settings: RealtimeSettings, allowed: [Int]? = nil)
        -> (cycle: RealtimeThread, workers: RealtimeThread, notice: String?)
    {
        let allowed = allowed ?? startCPUs
        var cpu: Int?
        var notice: String?
        switch settings.cpu {
        case .none: cpu = nil
        case .last: cpu = allowed.last
        case .index(let index):
            cpu = index
            if !allowed.isEmpty, !allowed.contains(index) {
                cpu = allowed.last
                notice = "REALTIME_DEGRADED: realtime.cpu \(index) is not one of the CPUs bessd was started on "
                    + "(\(allowed.map(String.init).joined(separator: ",")): CPUAffinity= or taskset); "
                    + "the cycle and its workers run on CPU \(allowed.last!)"
            }
        }
        return (RealtimeThread(priority: settings.priority, cpu: cpu),
                RealtimeThread(priority: settings.workerPriority, cpu: cpu), notice)
    }

    /// Makes the calling thread SCHED_FIFO at its priority and pins it to its CPU. Returns whether it
    /// runs SCHED_FIFO, and a notice naming `thread` for each part that was refused (the thread then
    /// runs without it).
    package static func enter(_ placement: RealtimeThread, as thread: String) -> (isFIFO: Bool, notices: [String]) {
        var notices: [String] = []
        let refused = fifo(placement.priority, for: thread)
        if let refused { notices.append(refused) }
        if let cpu = placement.cpu, let error = CurrentThread.pin(toCPU: cpu) {
            notices.append("REALTIME_DEGRADED: cannot pin \(thread) to CPU \(cpu) (\(SystemError.text(error))); it runs on "
                           + "CPUs \(CurrentThread.allowedCPUs().map(String.init).joined(separator: ","))")
        }
        return (refused == nil, notices)
    }

    /// Makes the calling thread SCHED_FIFO at `priority`; returns a notice naming `thread` when not
    /// permitted (it then runs SCHED_OTHER).
    package static func fifo(_ priority: Int, for thread: String) -> String? {
        var parameters = sched_param(sched_priority: Int32(priority))
        let result = pthread_setschedparam(pthread_self(), SCHED_FIFO, &parameters)
        guard result == 0 else {
            return "REALTIME_DEGRADED: SCHED_FIFO \(priority) refused (\(SystemError.text(result))); "
                + "\(thread) runs SCHED_OTHER (grant CAP_SYS_NICE or LimitRTPRIO)"
        }
        return nil
    }
}

/// A real-time thread's place: its SCHED_FIFO priority and the CPU it is pinned to (nil: any).
public struct RealtimeThread: Sendable, Equatable {
    public var priority: Int
    public var cpu: Int?
    public init(priority: Int, cpu: Int? = nil) {
        self.priority = priority
        self.cpu = cpu
    }
}

/// The real-time settings (`realtime:` in the configuration): priority, memory locking, DMA latency, CPU.
public struct RealtimeSettings: Sendable, Equatable {
    /// SCHED_FIFO priority of the cycle thread, 1–99.
    public var priority: Int
    /// mlockall(MCL_CURRENT | MCL_FUTURE | MCL_ONFAULT).
    public var lockMemory: Bool
    /// Held in /dev/cpu_dma_latency while running (nil = leave it).
    public var cpuDMALatencyMicroseconds: Int?
    /// The CPU the cycle and the threads that feed it (bus poller, bus and CAN workers) are pinned to.
    public var cpu: CPU = .last

    /// `realtime.cpu`: on one CPU the poller's hand-over wakes the cycle without an inter-processor
    /// interrupt.
    public enum CPU: Sendable, Equatable {
        /// The highest-numbered CPU bessd may run on (the default: CPU 0 takes most interrupts).
        case last
        /// This CPU.
        case index(Int)
        /// Not pinned: the scheduler places each thread.
        case none
    }

    public init(priority: Int, lockMemory: Bool, cpuDMALatencyMicroseconds: Int? = nil, cpu: CPU = .last) {
        self.priority = priority
        self.lockMemory = lockMemory
        self.cpuDMALatencyMicroseconds = cpuDMALatencyMicroseconds
        self.cpu = cpu
    }
    /// SCHED_FIFO priority of the threads that feed the cycle (bus poller, bus and CAN workers): one
    /// below the cycle's, so they never preempt it.
    public var workerPriority: Int { Self.workerPriority(below: priority) }
    public static func workerPriority(below cycle: Int) -> Int { max(1, cycle - 1) }
}
