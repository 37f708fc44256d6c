import BessSystem

/// One problem (or notice) found in a configuration file, located by line and key path.
///
/// Printed as `FILE:LINE: key.path: what is wrong (got X)`, the form `bessd check-config` and reload
/// errors use, so an editor can jump to it and a field engineer sees the key and the bad value.
public struct ConfigDiagnostic: Error, Sendable, Equatable, CustomStringConvertible {
    public enum Severity: String, Sendable { case error, notice }

    /// A stable code for logs and scripts (`BESS_CODE=`): a struct over a private enum, matched by
    /// value; its description is the name printed.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Value: Hashable, Sendable { case invalid, syntax, unreadable, notice, unexplained, uplinkCleartext, keyPermissions }
        private let value: Value
        private init(_ value: Value) { self.value = value }
        /// `CONFIG_INVALID`: a value, key or combination the configuration does not allow.
        public static let invalid = Code(.invalid)
        /// `CONFIG_SYNTAX`: the file is not well-formed YAML.
        public static let syntax = Code(.syntax)
        /// `CONFIG_UNREADABLE`: the file cannot be read, or is not UTF-8 text.
        public static let unreadable = Code(.unreadable)
        /// `CONFIG_NOTICE`: worth knowing, not an error.
        public static let notice = Code(.notice)
        /// `CONFIG_UNEXPLAINED`: the loader refused the file without saying why (a bug in bessd).
        public static let unexplained = Code(.unexplained)
        /// `UPLINK_CLEARTEXT`: an `http://` or `mqtt://` uplink to a host other than loopback; an
        /// error unless `aggregator.insecure_transport: true`, then a notice.
        public static let uplinkCleartext = Code(.uplinkCleartext)
        /// `KEY_PERMISSIONS`: a key, token or password file that someone other than root and bessd's
        /// own user and group may read (`KeyPermissions`).
        public static let keyPermissions = Code(.keyPermissions)

        public var description: String {
            switch value {
            case .invalid: "CONFIG_INVALID"
            case .syntax: "CONFIG_SYNTAX"
            case .unreadable: "CONFIG_UNREADABLE"
            case .notice: "CONFIG_NOTICE"
            case .unexplained: "CONFIG_UNEXPLAINED"
            case .uplinkCleartext: "UPLINK_CLEARTEXT"
            case .keyPermissions: "KEY_PERMISSIONS"
            }
        }
    }

    public var code: Code
    public var severity: Severity
    public var file: String
    /// 1-based line, when known.
    public var line: Int?
    /// Dotted key path, e.g. `bess_units[0].modbus.port`; `(file)` for the whole file.
    public var keyPath: String
    public var message: String
    /// The offending value as written, when there is one; `<redacted>` under a key that names a
    /// secret (`Redaction.isSecretKey`: the 2030.5 `pin`, a password), since a diagnostic reaches the
    /// terminal and, on a reload, the journal.
    public var got: String?

    public init(
        code: Code = .invalid, severity: Severity = .error, file: String, line: Int?, keyPath: String,
        message: String, got: String? = nil
    ) {
        self.code = code
        self.severity = severity
        self.file = file
        self.line = line
        self.keyPath = keyPath
        self.message = message
        let key = keyPath.split(separator: ".").last.map { String($0.prefix { $0 != "[" }) } ?? ""
        self.got = got.map { Redaction.isSecretKey(key) ? Redaction.marker : $0 }
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
