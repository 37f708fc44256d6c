import BessSystem
internal import Yams

extension RealtimeSettings {
    /// The keys of `realtime`.
    static let keys = ConfigKeys("realtime", [
        "priority", "lock_memory", "cpu_dma_latency_us", "cpu",
    ])

    /// `realtime:` — SCHED_FIFO priority, memory locking, the DMA latency held and the CPU pin.
    static func decode(_ rt: ConfigReader.Fields, _ r: ConfigReader) -> RealtimeSettings {
        let priority = rt.int("priority", default: 60, range: 1...99)!
        let lock = rt.bool("lock_memory", default: true)
        let latency = rt.int("cpu_dma_latency_us", range: 0...10_000, unit: "µs")
        let cpu = decodeCPU(rt, r)
        rt.finish(Self.keys)
        return RealtimeSettings(priority: priority, lockMemory: lock,
                                cpuDMALatencyMicroseconds: rt.has("cpu_dma_latency_us") ? latency : 0, cpu: cpu)
    }

    /// `realtime.cpu`: a CPU number this machine has, `last` (the default) or `none`.
    static func decodeCPU(_ rt: ConfigReader.Fields, _ r: ConfigReader) -> RealtimeSettings.CPU {
        guard let node = rt.node("cpu") else { return .last }
        let machine = CurrentThread.machineCPUs
        if case .scalar(let scalar) = node {
            switch scalar.string.lowercased() {
            case "last": return .last
            case "none": return .none
            default: break
            }
            if let number = node.int, number >= 0 {
                if let problem = ConfigLoader.cpuProblem(number, machineCPUs: machine) {
                    r.error(node, rt.child("cpu"), problem, got: ConfigReader.shown(node))
                    return .last
                }
                return .index(number)
            }
        }
        r.error(node, rt.child("cpu"), "must be a CPU number (\(ConfigLoader.cpuList(machine)) here), last or none", got: ConfigReader.shown(node))
        return .last
    }
}

extension ConfigLoader {
    /// Why CPU `number` cannot be used on a machine of `machineCPUs`, or nil.
    static func cpuProblem(_ number: Int, machineCPUs: Int) -> String? {
        // The pin's mask holds CPUs 0–1023 (the C library's CPU_SETSIZE).
        number < min(machineCPUs, 1024) ? nil : "CPU \(number) does not exist: this machine has \(cpuList(min(machineCPUs, 1024)))"
    }

    static func cpuList(_ machineCPUs: Int) -> String { machineCPUs == 1 ? "CPU 0" : "CPUs 0–\(machineCPUs - 1)" }
}
