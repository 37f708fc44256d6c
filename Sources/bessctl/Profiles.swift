import ArgumentParser
import Config
import Foundation

/// `bessctl profiles`: the device profiles bessd can use, from the profile directories (earlier wins).
struct Profiles: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "List the device profiles (BMS, inverter, meter) bessd can use: name, kind, vendor, products, file.")

    @Flag(help: "Print a JSON list of {name, kind, vendor, products, path} (path \"built-in\" for one in bessd).")
    var json = false

    @Option(name: .customLong("profile-dir"), help: "A profile directory, earlier first (default: /etc/bessd/devices, /usr/share/bessd/devices).")
    var directories: [String] = []

    @OptionGroup var connection: IgnoredSocketOption

    func run() throws {
        let library = ProfileLibrary(directories: directories.isEmpty ? ProfileLibrary.defaultDirectories : directories)
        for diagnostic in library.diagnostics where diagnostic.severity == .error {
            FileHandle.standardError.write(Data("bessctl: \(diagnostic)\n".utf8))
        }
        print(library.listing(json: json))
    }
}
