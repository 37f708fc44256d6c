public import Glibc

/// A Unix-domain socket address (`sockaddr_un`) and its length: the one place bessd builds one.
/// The control socket (server and client), the journal's socket, the site-ownership check and
/// `$NOTIFY_SOCKET` all use it.
public struct UnixSocketAddress {
    /// The address as the kernel takes it.
    public private(set) var storage: sockaddr_un
    /// The bytes of `storage` that count: the family, the path and, for a file path, its terminator.
    public let length: socklen_t

    /// The address of `path`, or nil when the path does not fit (108 bytes with its terminator).
    /// - Parameter abstractWhenAt: when true, a path starting with `@` names the abstract namespace
    ///   (a leading zero byte, no terminator), as systemd writes `$NOTIFY_SOCKET`. A control socket
    ///   path keeps `@` as a file name character.
    public init?(path: String, abstractWhenAt: Bool = false) {
        var bytes = Array(path.utf8)
        let abstract = abstractWhenAt && bytes.first == UInt8(ascii: "@")
        if abstract { bytes[0] = 0 }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        guard bytes.count < MemoryLayout.size(ofValue: address.sun_path) else { return nil }
        withUnsafeMutableBytes(of: &address.sun_path) { buffer in
            for (i, byte) in bytes.enumerated() { buffer[i] = byte }
        }
        storage = address
        length = socklen_t(MemoryLayout<sa_family_t>.size + bytes.count + (abstract ? 0 : 1))
    }

    /// Calls `body` with the address as a `sockaddr` pointer and its length, for `bind`, `connect`
    /// and `sendto`.
    public func withSockaddr<Result>(_ body: (UnsafePointer<sockaddr>, socklen_t) -> Result) -> Result {
        withUnsafePointer(to: storage) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { body($0, length) }
        }
    }

    /// Connects `fd` to this address; 0, or -1 with `errno` set. The corresponding C function is `connect`.
    public func connect(_ fd: Int32) -> Int32 {
        withSockaddr { Glibc.connect(fd, $0, $1) }
    }
}
