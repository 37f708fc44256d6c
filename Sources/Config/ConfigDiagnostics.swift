/// One problem (or notice) found in a configuration file, located by line and key path.
///
/// Printed as `FILE:LINE: key.path: what is wrong (got X)`, the form `bessd check-config` and reload
/// errors use, so an editor can jump to it and a field engineer sees the key and the bad value.
public struct ConfigDiagnostic: Error, Sendable, Equatable, CustomStringConvertible {
    public enum Severity: String, Sendable { case error, notice }
    /// Stable error code for logs: `CONFIG_INVALID`, `CONFIG_SYNTAX`, `CONFIG_UNREADABLE` or
    /// `CONFIG_NOTICE`.
    public var code: String
    public var severity: Severity
    public var file: String
    /// 1-based line, when known.
    public var line: Int?
    /// Dotted key path, e.g. `bess_units[0].modbus.port`; `(file)` for the whole file.
    public var keyPath: String
    public var message: String
    /// The offending value as written, when there is one.
    public var got: String?

    public init(
        code: String = "CONFIG_INVALID", severity: Severity = .error, file: String, line: Int?, keyPath: String,
        message: String, got: String? = nil
    ) {
        self.code = code
        self.severity = severity
        self.file = file
        self.line = line
        self.keyPath = keyPath
        self.message = message
        self.got = got
    }

    public var description: String {
        var text = file
        if let line { text += ":\(line)" }
        text += ": \(keyPath.isEmpty ? "(file)" : keyPath): \(message)"
        if let got { text += " (got \(got))" }
        return text
    }
}

/// All errors of a configuration that did not load.
public struct ConfigurationError: Error, Sendable, CustomStringConvertible {
    public var diagnostics: [ConfigDiagnostic]
    public init(_ diagnostics: [ConfigDiagnostic]) { self.diagnostics = diagnostics }
    public var description: String { diagnostics.map(\.description).joined(separator: "\n") }
}
