import Cycle
public import Fieldbus
import Foundation

/// The device profiles bessd can use: every `*.yaml` of the profile directories, read in order (an
/// earlier directory wins on a name clash: `/etc/bessd/devices` before the package's
/// `/usr/share/bessd/devices`), and the built-in Pylontech LV profile when no directory has
/// `pylontech-lv`. A file that does not load is a diagnostic, not a crash, and its name is not
/// taken from a later directory: a broken local override is reported, never silently replaced.
public struct ProfileLibrary: Sendable {
    /// `profile_directories` when the configuration leaves it out.
    public static let defaultDirectories = ["/etc/bessd/devices", "/usr/share/bessd/devices"]

    /// The profiles compiled into bessd, by name, used when no directory has one of that name.
    public static let builtIn: [(name: String, text: String)] = [("pylontech-lv", BuiltInProfiles.pylontechLV)]

    /// The built-in profiles read once, by text (every configuration parse would read them again).
    static let builtInRead = Dictionary(builtIn.map { ($0.text, ProfileReader.read(text: $0.text, path: "")) },
                                        uniquingKeysWith: { first, _ in first })

    /// The directories read, in order.
    public let directories: [String]
    /// Every profile that loaded, by name.
    public private(set) var all: [DeviceProfile] = []
    /// The errors of the files that did not load (and notices of those that did), file by file.
    public private(set) var diagnostics: [ConfigDiagnostic] = []
    /// The errors of each name whose first file did not load.
    private var broken: [String: [ConfigDiagnostic]] = [:]
    /// Where each name's file is (the one that counts).
    private var paths: [String: String] = [:]

    public init(directories: [String]) {
        self.init(directories: directories, builtIn: Self.builtIn)
    }

    init(directories: [String], builtIn: [(name: String, text: String)]) {
        self.directories = directories
        var profiles: [String: DeviceProfile] = [:]
        for directory in directories {
            for path in Self.files(in: directory, diagnostics: &diagnostics) {
                let name = ProfileReader.stem(path)
                guard paths[name] == nil else { continue }  // an earlier directory has it
                paths[name] = path
                let (profile, found) = ProfileReader.read(path: path)
                diagnostics += found
                if let profile { profiles[name] = profile } else { broken[name] = found.filter { $0.severity == .error } }
            }
        }
        for (name, text) in builtIn where paths[name] == nil {
            paths[name] = ""
            let (profile, found) = Self.builtInRead[text] ?? ProfileReader.read(text: text, path: "")
            diagnostics += found
            if let profile { profiles[name] = profile } else { broken[name] = found.filter { $0.severity == .error } }
        }
        all = profiles.values.sorted { $0.name < $1.name }
    }

    /// The profile called `name`, or nil when there is none or its file does not load.
    public func profile(named name: String) -> DeviceProfile? { all.first { $0.name == name } }

    /// The errors that kept `name`'s file from loading; empty when it loaded or does not exist.
    public func errors(of name: String) -> [ConfigDiagnostic] { broken[name] ?? [] }

    /// Where `name`'s file is ("" for a built-in profile), or nil when no directory has it.
    public func path(of name: String) -> String? { paths[name] }

    /// The names of the profiles of `kind` that loaded, sorted.
    public func names(of kind: DeviceProfile.Kind) -> [String] { all.filter { $0.kind == kind }.map(\.name) }

    /// The `*.yaml` files of `directory`, sorted; none when it does not exist (the defaults need not),
    /// a diagnostic when it exists and cannot be read.
    static func files(in directory: String, diagnostics: inout [ConfigDiagnostic]) -> [String] {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: directory, isDirectory: &isDirectory) else { return [] }
        guard isDirectory.boolValue, let names = try? FileManager.default.contentsOfDirectory(atPath: directory) else {
            diagnostics.append(ConfigDiagnostic(code: .unreadable, file: directory, line: nil, keyPath: "",
                                                message: "cannot list the profile directory"))
            return []
        }
        let base = directory.hasSuffix("/") ? directory : directory + "/"
        return names.filter { $0.hasSuffix(".yaml") && !$0.hasPrefix(".") }.sorted().map { base + $0 }
    }
}

extension ProfileLibrary {
    /// One object a profile for `bessctl profiles --json`: name, kind, vendor, products, path
    /// ("built-in" for one compiled into bessd).
    public struct Entry: Codable, Sendable, Equatable {
        public var name: String
        public var kind: String
        public var vendor: String
        public var products: [String]
        public var path: String
    }

    /// Every profile that loaded, as `bessctl profiles` lists it.
    public var entries: [Entry] {
        all.map { Entry(name: $0.name, kind: $0.kind.rawValue, vendor: $0.vendor, products: $0.products,
                        path: $0.path.isEmpty ? "built-in" : $0.path) }
    }

    /// `bessctl profiles`: a JSON list of `entries` (keys sorted), or one line each:
    /// `pylontech-lv  bms  Pylontech  US2000, US3000C, US5000  built-in`.
    public func listing(json: Bool) -> String {
        if json {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
            return (try? encoder.encode(entries)).map { String(decoding: $0, as: UTF8.self) } ?? "[]"
        }
        // Columns: name and kind padded to the longest, then vendor, products and the file.
        let nameWidth = entries.map(\.name.count).max() ?? 0
        let kindWidth = entries.map(\.kind.count).max() ?? 0
        func padded(_ text: String, _ width: Int) -> String { text + String(repeating: " ", count: max(0, width - text.count)) }
        return entries.map {
            "\(padded($0.name, nameWidth))  \(padded($0.kind, kindWidth))  \($0.vendor)  \($0.products.joined(separator: ", "))  \($0.path)"
        }.joined(separator: "\n")
    }
}

extension BessdConfiguration {
    /// The profiles the units use, one line each: `U1 bms: profile test-bms (/etc/bessd/devices/test-bms.yaml)`.
    public var profileLines: [String] {
        units.flatMap { unit in
            [("bms", unit.bms.profile), ("inverter", unit.inverter.profile)].compactMap { role, profile in
                profile.map { "\(unit.id) \(role): profile \($0.name) (\($0.path.isEmpty ? "built-in" : $0.path))" }
            }
        }
    }
}
