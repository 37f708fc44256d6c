public import Glibc

/// One `poll` over the first `count` entries of `fds`, for up to `timeoutMilliseconds` (-1: no
/// timeout): the number of descriptors ready, `revents` filled; 0 at the timeout, and 0 too when a
/// signal ended the wait early (EINTR), so a caller's loop comes round as after a timeout and looks
/// at its flags. Any other failure is thrown, as `systemCall` throws it. The corresponding C
/// function is `poll`.
public func pollOnce(_ fds: UnsafeMutablePointer<pollfd>, count: Int, timeoutMilliseconds: Int32) throws(SystemCallError) -> Int32 {
    let ready = poll(fds, nfds_t(count), timeoutMilliseconds)
    if ready >= 0 { return ready }
    let code = errno
    if code == EINTR { return 0 }
    throw SystemCallError(call: "poll", errno: code)
}
