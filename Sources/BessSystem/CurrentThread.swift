import CLinux
import Glibc

/// The calling thread's name and CPU affinity.
public enum CurrentThread {
    /// Names the thread as `ps -L`, `top -H` and /proc/PID/task/TID/comm show it (at most 15 bytes).
    public static func name(_ name: String) {
        _ = bessd_name_thread(String(name.utf8.prefix(15))!)
    }

    /// The CPUs the thread may run on, ascending (empty when the kernel refuses to say).
    public static func allowedCPUs() -> [Int] {
        var words = [UInt64](repeating: 0, count: 16)
        guard words.withUnsafeMutableBufferPointer({ bessd_thread_affinity($0.baseAddress!) }) == 0 else { return [] }
        var cpus: [Int] = []
        for (index, word) in words.enumerated() where word != 0 {
            for bit in 0..<64 where word & (1 << UInt64(bit)) != 0 { cpus.append(index * 64 + bit) }
        }
        return cpus
    }

    /// Pins the thread to one CPU; returns errno when refused (EINVAL: a CPU this process may not use).
    public static func pin(toCPU cpu: Int) -> Int32? {
        bessd_pin_thread(Int32(clamping: cpu)) == 0 ? nil : errno
    }

    /// The thread's kernel id (the TID of /proc/PID/task/TID).
    public static var id: Int32 { bessd_thread_id() }

    /// CPUs the machine has (configured, online or not).
    public static var machineCPUs: Int { max(1, sysconf(Int32(_SC_NPROCESSORS_CONF))) }
}
