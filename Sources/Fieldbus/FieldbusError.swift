/// A field-bus failure with a stable code for logs (`BESS_CODE=`) and the errno behind it.
public struct FieldbusError: Error, Sendable, Equatable, CustomStringConvertible {
    /// Stable code, e.g. `CAN_INTERFACE_MISSING`.
    public var code: String
    public var message: String
    /// The errno that caused it, when there is one.
    public var errno: Int32?

    public init(code: String, message: String, errno: Int32? = nil) {
        self.code = code
        self.message = message
        self.errno = errno
    }

    public var description: String { "\(code): \(message)" }
}
