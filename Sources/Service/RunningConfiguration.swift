import BessSystem
import Config

/// The configuration in force and its text as it was loaded (`bessctl diag`), not as the file is
/// now. The reloader replaces both between two cycles; every other part (the service loop, the
/// operator's surface on the server thread) only reads them.
final class RunningConfiguration: Sendable {
    private struct Loaded {
        var configuration: BessdConfiguration
        var text: String?
    }

    private let loaded: PILock<Loaded>

    init(_ configuration: BessdConfiguration, text: String?) {
        loaded = PILock(Loaded(configuration: configuration, text: text))
    }

    /// The configuration in force.
    var current: BessdConfiguration { loaded.withLock { $0.configuration } }
    /// Its text as loaded (nil when it could not be read).
    var text: String? { loaded.withLock { $0.text } }

    /// A reload's new configuration and its text, in force from now on (`Reloader`).
    func replace(with configuration: BessdConfiguration, text: String?) {
        loaded.withLock {
            $0.configuration = configuration
            $0.text = text
        }
    }
}
