public import BessBase
public import BessSystem
import ControlCore
public import Cycle
import ControlProtocol
import Foundation
import Glibc

/// One bessd per site: the lock on `state_directory/bessd.lock` and the control socket's owner.
///
/// Two control loops on one site write the same inverters, share `latches.json` and the spool, and
/// the second to stop deletes the first one's control socket, so `bessctl mode standby` can no
/// longer reach the loop that still drives power. bessd therefore takes an exclusive `flock` on a
/// file in its state directory before it opens anything there, and refuses a control socket on
/// which a live process answers. The kernel drops the lock when the holder exits, however it exits
/// (SIGKILL, a crash, a power cut), so a stale lock file or socket never blocks a restart.
public final class SiteOwnership {
    /// The lock file: `state_directory/bessd.lock`, holding the owner's PID as text.
    public let lockPath: String
    private let fd: Int32

    /// Takes the state directory's lock; creates the directory (0750) when it does not exist.
    /// - Throws: `ALREADY_RUNNING` naming the PID that holds the lock; `STATE_DIRECTORY_FAILED`
    ///   when the directory or the lock file cannot be created.
    public init(stateDirectory: String) throws(RunError) {
        lockPath = stateDirectory + "/bessd.lock"
        do {
            try FileManager.default.createDirectory(atPath: stateDirectory, withIntermediateDirectories: true,
                                                    attributes: [.posixPermissions: 0o750])
        } catch {
            throw RunError(.stateDirectoryFailed, message: "cannot create state_directory \(stateDirectory): \(error.localizedDescription)")
        }
        let fd = open(lockPath, O_RDWR | O_CREAT | O_CLOEXEC, 0o640)
        guard fd >= 0 else {
            throw RunError(.stateDirectoryFailed, message: "cannot open \(lockPath): \(SystemError.text(errno))")
        }
        // The corresponding C function is `flock` (an interrupted call is retried by `systemCall`).
        do throws(SystemCallError) {
            _ = try systemCall("flock", lockPath) { flock(fd, LOCK_EX | LOCK_NB) }
        } catch {
            let owner = Self.recordedOwner(fd)
            close(fd)
            guard error.errno == EWOULDBLOCK else {
                throw RunError(.stateDirectoryFailed, message: "cannot lock \(lockPath): \(SystemError.text(error.errno))")
            }
            throw RunError(.alreadyRunning,
                           message: "another bessd\(owner.map { " (pid \($0))" } ?? "") already controls this site: it holds \(lockPath). "
                               + "One bessd per state_directory; stop that one first (systemctl stop bessd), or read it with bessctl status")
        }
        self.fd = fd
        let text = Array("\(getpid())\n".utf8)
        _ = ftruncate(fd, 0)
        _ = text.withUnsafeBytes { pwrite(fd, $0.baseAddress, $0.count, 0) }
    }

    deinit { close(fd) }

    /// The PID written into the lock file by its holder, if it reads as one.
    static func recordedOwner(_ fd: Int32) -> Int32? {
        var buffer = [UInt8](repeating: 0, count: 32)
        let n = buffer.withUnsafeMutableBytes { pread(fd, $0.baseAddress, $0.count, 0) }
        guard n > 0 else { return nil }
        return Int32(String(decoding: buffer.prefix(n), as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines))
    }

    /// Refuses a control socket on which a live process answers; a socket file left by a process
    /// that is gone (nothing accepts on it) is stale and may be replaced.
    /// - Throws: `CONTROL_SOCKET_IN_USE` naming the PID that listens there, when the kernel says.
    public static func claimControlSocket(_ path: String) throws(RunError) {
        guard let address = UnixSocketAddress(path: path) else { return }
        // SOCK_STREAM | SOCK_CLOEXEC written out (1, 0o2000000): a release build does not see Glibc's
        // SOCK_* constants (as ServiceServer.streamSocketFlags says).
        let fd = socket(AF_UNIX, 1 | 0o2000000, 0)
        guard fd >= 0 else { return }
        defer { close(fd) }
        guard address.connect(fd) == 0 else { return }  // ENOENT: none; ECONNREFUSED: stale
        var credentials = PeerCredentials()
        var length = socklen_t(MemoryLayout<PeerCredentials>.size)
        let owner = getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &credentials, &length) == 0 ? " (pid \(credentials.pid))" : ""
        throw RunError(.controlSocketInUse,
                       message: "control socket \(path) belongs to a running process\(owner); another bessd controls a site through it. "
                           + "Give this configuration its own control_socket, or stop that one first")
    }
}
