import CLinux

/// Process-wide memory settings.
public enum Memory {
    /// Caps glibc's malloc arenas at `count`; call before any thread starts. With one arena per
    /// thread (glibc's default), freed memory stays in whichever thread's arena held it, and a
    /// long-running daemon's RSS can ratchet up with bursts of allocation on different threads.
    @discardableResult
    public static func limitMallocArenas(_ count: Int32) -> Bool { bessd_limit_malloc_arenas(count) == 1 }
}
