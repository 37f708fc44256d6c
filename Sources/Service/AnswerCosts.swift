import ControlProtocol
import Glibc
import Synchronization

/// What answering the control socket costs the service thread, per verb: how many requests, their
/// summed and largest CPU time (the thread's own clock, so time the cycle preempts it is not
/// counted). Measured from the request line to the answer's bytes in the connection's buffer; an
/// acting verb's second part, once the cycle took it, adds to the sum and not to the count.
/// /metrics shows it (`bessd_control_answer_*`), so a benchmark reads it from a running bessd.
final class AnswerCosts: Sendable {
    struct Cost: Equatable {
        var count: UInt64 = 0
        var totalNanoseconds: UInt64 = 0
        var maxNanoseconds: UInt64 = 0
    }

    /// One slot per known verb (in `ControlVerb.known` order), then one for the rest: unknown verbs
    /// and lines that are not a request.
    private let costs = Mutex([Cost](repeating: Cost(), count: ControlVerb.known.count + 1))

    /// The service thread's CPU time so far, ns. The corresponding C function is `clock_gettime`
    /// with `CLOCK_THREAD_CPUTIME_ID`.
    static func threadCPUNanoseconds() -> UInt64 {
        var now = timespec()
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now)
        return UInt64(now.tv_sec) &* 1_000_000_000 &+ UInt64(now.tv_nsec)
    }

    /// Adds the time since `started` to `verb`'s (nil: not a request); `finishing` adds the second
    /// part of an answer that waited for the cycle.
    func record(_ verb: ControlVerb?, since started: UInt64, finishing: Bool = false) {
        let spent = Self.threadCPUNanoseconds() &- started
        let slot = verb.flatMap { ControlVerb.known.firstIndex(of: $0) } ?? ControlVerb.known.count
        costs.withLock { costs in
            if !finishing { costs[slot].count &+= 1 }
            costs[slot].totalNanoseconds &+= spent
            costs[slot].maxNanoseconds = max(costs[slot].maxNanoseconds, spent)
        }
    }

    /// The costs so far of `verb` (nil: the rest).
    func cost(_ verb: ControlVerb?) -> Cost {
        let slot = verb.flatMap { ControlVerb.known.firstIndex(of: $0) } ?? ControlVerb.known.count
        return costs.withLock { $0[slot] }
    }

    /// `bessd_control_answers_total`, `bessd_control_answer_cpu_seconds_total` and
    /// `bessd_control_answer_cpu_seconds_max`, labelled `verb="status"`… and `verb="other"`.
    func metrics(into m: inout MetricsText) {
        let all = costs.withLock { $0 }
        let labels = ControlVerb.known.map { "verb=\"\($0.name)\"" } + ["verb=\"other\""]
        m.metric("bessd_control_answers_total", "counter", "Control-socket requests answered, by verb.",
                 zip(labels, all).map { ($0, Double($1.count)) })
        m.metric("bessd_control_answer_cpu_seconds_total", "counter",
                 "The service thread's CPU time answering control requests, by verb (request line to answer written).",
                 zip(labels, all).map { ($0, Double($1.totalNanoseconds) / 1e9) })
        m.metric("bessd_control_answer_cpu_seconds_max", "gauge", "The costliest control answer so far, by verb.",
                 zip(labels, all).map { ($0, Double($1.maxNanoseconds) / 1e9) })
    }
}
