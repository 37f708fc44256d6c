import Foundation

/// Paths of the package under test.
enum Package {
    /// The package root (the directory holding Package.swift).
    static let root: URL = {
        var url = URL(fileURLWithPath: #filePath)
        while url.path != "/" {
            url.deleteLastPathComponent()
            if FileManager.default.fileExists(atPath: url.appendingPathComponent("Package.swift").path) { return url }
        }
        return URL(fileURLWithPath: FileManager.default.currentDirectoryPath)
    }()

    /// A built executable of this package (built beside the test bundle).
    static func executable(_ name: String) -> URL? {
        var candidates: [URL] = []
        if let first = CommandLine.arguments.first {
            candidates.append(URL(fileURLWithPath: first).deletingLastPathComponent().appendingPathComponent(name))
        }
        candidates.append(root.appendingPathComponent(".build/debug/\(name)"))
        return candidates.first { FileManager.default.isExecutableFile(atPath: $0.path) }
    }

    /// Runs an executable of this package; returns exit status, stdout and stderr.
    static func run(_ name: String, _ arguments: [String]) throws -> (status: Int32, out: String, err: String) {
        guard let url = executable(name) else { throw RunFailure(message: "\(name) is not built; run swift build first") }
        let process = Process()
        process.executableURL = url
        process.arguments = arguments
        // Inside the CAN test VM the source tree may be invisible: run from wherever we are.
        if FileManager.default.fileExists(atPath: root.appendingPathComponent("Package.swift").path) {
            process.currentDirectoryURL = root
        }
        let out = Pipe()
        let err = Pipe()
        process.standardOutput = out
        process.standardError = err
        try process.run()
        let outData = out.fileHandleForReading.readDataToEndOfFile()
        let errData = err.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (process.terminationStatus, String(decoding: outData, as: UTF8.self), String(decoding: errData, as: UTF8.self))
    }

    struct RunFailure: Error, CustomStringConvertible {
        var message: String
        var description: String { message }
    }
}

extension Package {
    /// Runs a program found on PATH (a peer: python3, mbpoll) from the package root.
    static func tool(_ arguments: [String]) throws -> (status: Int32, out: String, err: String) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = arguments
        process.currentDirectoryURL = root
        let out = Pipe()
        let err = Pipe()
        process.standardOutput = out
        process.standardError = err
        process.standardInput = FileHandle.nullDevice
        try process.run()
        let outData = out.fileHandleForReading.readDataToEndOfFile()
        let errData = err.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (process.terminationStatus, String(decoding: outData, as: UTF8.self), String(decoding: errData, as: UTF8.self))
    }
}

/// A serial line in a test: socat joins two ptys, `directory/a` and `directory/b`.
func ptyPair(_ directory: String, _ a: String, _ b: String) throws -> Process {
    let socat = Process()
    socat.executableURL = URL(fileURLWithPath: "/usr/bin/env")
    socat.arguments = ["socat", "pty,raw,echo=0,link=\(directory)/\(a)", "pty,raw,echo=0,link=\(directory)/\(b)"]
    socat.standardOutput = FileHandle.nullDevice
    socat.standardError = FileHandle.nullDevice
    try socat.run()
    return socat
}
