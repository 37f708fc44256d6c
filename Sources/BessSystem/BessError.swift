import Glibc

/// An error with a stable code and a message for a person: `CONTROL_SOCKET_UNREACHABLE: cannot
/// connect to /run/bessd/control.sock …`. The code is what journald (`BESS_CODE=`), scripts and the
/// docs match on; the message may change. Device, socket and start-up errors share this one shape
/// (`RunError` and `ControlError` are its names where they are thrown).
public struct BessError: Error, CustomStringConvertible, Equatable {
    /// Stable code, e.g. `DEVICE_UNSUPPORTED`.
    public var code: String
    public var message: String

    public init(code: String, message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { "\(code): \(message)" }
}

/// What an errno means, in words: the one place bessd turns an errno into text for a message.
public enum SystemError {
    /// The C library's description of `code` (e.g. "Connection refused").
    /// The corresponding C function is `strerror`.
    public static func text(_ code: Int32) -> String { String(cString: strerror(code)) }
}
