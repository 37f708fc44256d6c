public import Foundation

/// Paths of the package under test, and the processes tests run (shared by every test target).
public enum Package {
    /// The package root (the directory holding Package.swift).
    public static let root: URL = {
        var url = URL(fileURLWithPath: #filePath)
        while url.path != "/" {
            url.deleteLastPathComponent()
            if FileManager.default.fileExists(atPath: url.appendingPathComponent("Package.swift").path) { return url }
        }
        return URL(fileURLWithPath: FileManager.default.currentDirectoryPath)
    }()

    /// A built executable of this package (built beside the test bundle).
    public static func executable(_ name: String) -> URL? {
        var candidates: [URL] = []
        if let first = CommandLine.arguments.first {
            candidates.append(URL(fileURLWithPath: first).deletingLastPathComponent().appendingPathComponent(name))
        }
        candidates.append(root.appendingPathComponent(".build/debug/\(name)"))
        return candidates.first { FileManager.default.isExecutableFile(atPath: $0.path) }
    }

    /// Runs an executable of this package; returns exit status, stdout and stderr.
    public static func run(_ name: String, _ arguments: [String]) throws -> (status: Int32, out: String, err: String) {
        guard let url = executable(name) else { throw RunFailure(message: "\(name) is not built; run swift build first") }
        // Inside the CAN test VM the source tree may be invisible: run from wherever we are.
        let here = FileManager.default.fileExists(atPath: root.appendingPathComponent("Package.swift").path)
        return try capture(url, arguments, directory: here ? root : nil)
    }

    /// Runs `url` with `arguments` to its end and returns its exit status and output. Both pipes are
    /// drained at once (stderr on a thread of its own), so a child that fills one while the other is
    /// read never stalls; `merged` sends stderr into `out`. Standard input is /dev/null.
    public static func capture(_ url: URL, _ arguments: [String], directory: URL? = root, environment: [String: String]? = nil,
                        merged: Bool = false) throws -> (status: Int32, out: String, err: String) {
        let process = Process()
        process.executableURL = url
        process.arguments = arguments
        if let directory { process.currentDirectoryURL = directory }
        if let environment { process.environment = environment }
        process.standardInput = FileHandle.nullDevice
        let out = Pipe()
        let err = merged ? out : Pipe()
        process.standardOutput = out
        process.standardError = err
        try process.run()
        let errText = ErrText()
        let drained = DispatchSemaphore(value: 0)
        if !merged {
            Thread.detachNewThread {
                errText.data = err.fileHandleForReading.readDataToEndOfFile()
                drained.signal()
            }
        }
        let outData = out.fileHandleForReading.readDataToEndOfFile()
        if !merged { drained.wait() }
        process.waitUntilExit()
        return (process.terminationStatus, String(decoding: outData, as: UTF8.self), String(decoding: errText.data, as: UTF8.self))
    }

    /// The stderr a drain thread collected (handed over through the semaphore).
    private final class ErrText: @unchecked Sendable { var data = Data() }

    /// An executable of this package that is not built.
    public struct RunFailure: Error, CustomStringConvertible {
        public var message: String
        public var description: String { message }
        public init(message: String) { self.message = message }
    }
}

extension Package {
    /// Runs a program found on PATH (a peer: python3, mbpoll) from the package root.
    public static func tool(_ arguments: [String]) throws -> (status: Int32, out: String, err: String) {
        try capture(URL(fileURLWithPath: "/usr/bin/env"), arguments)
    }
}

/// A serial line in a test: socat joins two ptys, `directory/a` and `directory/b`.
public func ptyPair(_ directory: String, _ a: String, _ b: String) throws -> Process {
    let socat = Process()
    socat.executableURL = URL(fileURLWithPath: "/usr/bin/env")
    socat.arguments = ["socat", "pty,raw,echo=0,link=\(directory)/\(a)", "pty,raw,echo=0,link=\(directory)/\(b)"]
    socat.standardOutput = FileHandle.nullDevice
    socat.standardError = FileHandle.nullDevice
    try socat.run()
    return socat
}
