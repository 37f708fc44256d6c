import BessBase
import Cycle
import Fieldbus
internal import Yams

/// The profiles a configuration names (`bess_units[].bms.profile`, `.inverter.profile`), looked up in
/// the library of `profile_directories`; collects the errors of a named profile whose file does not
/// load, which the configuration's check reports with its own.
final class ProfileResolver {
    private(set) var library = ProfileLibrary(directories: [], builtIn: [])
    /// The errors of the named profiles' files, each file once.
    private(set) var fileErrors: [ConfigDiagnostic] = []
    private var named: Set<String> = []

    /// Reads the profile directories (`profile_directories`, in order).
    func load(directories: [String]) { library = ProfileLibrary(directories: directories) }

    /// The notices of the library: files that load with notices, and files no unit names that do not load.
    var notices: [ConfigDiagnostic] {
        var notices = library.diagnostics.filter { $0.severity == .notice }
        var seen: Set<String> = []
        for error in library.diagnostics where error.severity == .error && !named.contains(ProfileReader.stem(error.file)) {
            guard seen.insert(error.file).inserted else { continue }
            notices.append(ConfigDiagnostic(code: .notice, severity: .notice, file: error.file, line: nil, keyPath: "",
                                            message: "this profile does not load (bessd check-config \(error.file) lists why); no unit names it"))
        }
        return notices
    }

    /// The profile named by `key` of `f`, of `kind`; nil (with an error at its line) when it is unknown,
    /// of another kind or does not load, and nil without one when the key is absent.
    func resolve(_ f: ConfigReader.Fields, _ key: String, kind: DeviceProfile.Kind, _ r: ConfigReader) -> DeviceProfile? {
        guard let name = f.string(key, pattern: IdentifierRule.accepts, rule: "must be a profile name: \(IdentifierRule.text)")
        else { return nil }
        return resolve(name, at: f.mark(key), f.child(key), kind: kind, r)
    }

    /// The profile `name`, reported at `node` under `path`.
    func resolve(_ name: String, at node: Node?, _ path: String, kind: DeviceProfile.Kind, _ r: ConfigReader) -> DeviceProfile? {
        named.insert(name)
        if let profile = library.profile(named: name) {
            guard profile.kind == kind else {
                r.error(node, path, "'\(name)' is a\(profile.kind == .inverter ? "n" : "") \(profile.kind.rawValue) profile; "
                        + "this needs a\(kind == .inverter ? "n" : "") \(kind.rawValue) profile", got: "'\(name)'")
                return nil
            }
            return profile
        }
        let errors = library.errors(of: name)
        if !errors.isEmpty {
            let file = library.path(of: name).map { $0.isEmpty ? "the built-in profile" : $0 } ?? name
            r.error(node, path, "\(file) does not load: \(errors.count) error\(errors.count == 1 ? "" : "s"), listed after these",
                    got: "'\(name)'")
            if !fileErrors.contains(where: { $0.file == errors[0].file }) { fileErrors += errors }
            return nil
        }
        let names = library.names(of: kind)
        r.error(node, path, "no such profile; \(kind.rawValue) profiles found: \(names.isEmpty ? "none" : names.joined(separator: ", "))"
                + " (profile_directories: \(library.directories.joined(separator: ", ")))", got: "'\(name)'")
        return nil
    }

    /// An error when a Modbus TCP-only profile is given a serial endpoint.
    static func checkLink(_ profile: DeviceProfile, _ settings: ModbusSettings?, at node: Node?, _ path: String, _ r: ConfigReader) {
        guard case .modbus(let transport) = profile.transport, let settings else { return }
        // An RTU device behind a TCP gateway is common; a TCP-only device on a serial line is not.
        if transport.link == .tcp, case .rtu = settings.transport {
            r.error(node, path, "'\(profile.name)' speaks Modbus TCP only; this endpoint is a serial line (device)")
        }
    }
}
