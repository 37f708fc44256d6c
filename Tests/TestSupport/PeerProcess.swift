public import Foundation

/// A peer process (`openssl s_client` or `s_server` by default, or any `executable`) with its
/// standard input written up front and its output collected; stopped when the test is done with it.
public final class PeerProcess {
    public let process = Process()
    private let output = Pipe()
    private let collected = Collected()

    /// Standard input while it is held open.
    private var input: Pipe?

    public init(_ arguments: [String], executable: URL = URL(fileURLWithPath: "/usr/bin/openssl"), input: String = "",
                keepInputOpen: Bool = false, directory: URL) throws {
        process.executableURL = executable
        process.arguments = arguments
        process.currentDirectoryURL = directory
        let stdin = Pipe()
        process.standardInput = stdin
        process.standardOutput = output
        process.standardError = output
        try process.run()
        let handle = output.fileHandleForReading
        let collected = collected
        Thread.detachNewThread {
            while case let data = handle.availableData, !data.isEmpty { collected.append(data) }
            collected.finish()
        }
        stdin.fileHandleForWriting.write(Data(input.utf8))
        // s_server ends at the end of its input: a server's stays open until `stop()`.
        if keepInputOpen { self.input = stdin } else { try stdin.fileHandleForWriting.close() }
    }

    /// Everything it printed so far.
    public var text: String { collected.text }

    /// Waits up to `seconds` for it to end and for all it printed to be collected; true when it did.
    public func ended(within seconds: Double = 10) -> Bool { waitFor(seconds: seconds) { !process.isRunning && collected.isFinished } }

    /// Ends it if it still runs. SIGKILL: a child inherits the test runner's signal mask, in which
    /// SIGTERM may be blocked.
    public func stop() {
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        process.waitUntilExit()
        try? input?.fileHandleForWriting.close()
    }

    /// Raw bytes, for output that is not text (an IEC 104 answer).
    public var bytes: [UInt8] { collected.bytes }

    private final class Collected: @unchecked Sendable {
        private let lock = NSLock()
        private var data = Data()
        private var finished = false
        func append(_ more: Data) { lock.withLock { data.append(more) } }
        /// The output reached its end (the process and its children closed it).
        func finish() { lock.withLock { finished = true } }
        var isFinished: Bool { lock.withLock { finished } }
        var text: String { lock.withLock { String(decoding: data, as: UTF8.self) } }
        var bytes: [UInt8] { lock.withLock { [UInt8](data) } }
    }
}
