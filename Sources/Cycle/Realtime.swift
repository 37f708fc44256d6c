import BessSystem
import Glibc
public import Config

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

    /// Makes the calling thread (the cycle) SCHED_FIFO at `priority`; returns a notice when not permitted.
    package static func applyToCurrentThread(_ settings: RealtimeSettings) -> String? {
        fifo(settings.priority, for: "the cycle")
    }

    /// Makes the calling thread SCHED_FIFO at `priority`; returns a notice naming `thread` when not
    /// permitted (it then runs SCHED_OTHER). The cycle, the bus poller, the bus workers and the CAN
    /// workers each call it at the start of their loop.
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
