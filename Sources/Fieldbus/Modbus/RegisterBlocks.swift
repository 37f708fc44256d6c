public import BessBase
import ControlCore

/// Registers already read, answering `readRegisters` from memory: how a reply taken off the wire by
/// a poller is decoded with the same code that reads a device directly. A read outside the block is
/// `MODBUS_INVALID_REQUEST`; writes are refused.
public struct PrefetchedRegisters: RegisterAccess {
    public let address: Int
    public let words: [UInt16]

    public init(address: Int, words: [UInt16]) {
        self.address = address
        self.words = words
    }

    public mutating func readRegisters(at address: Int, count: Int) throws(DeviceError) -> [UInt16] {
        let start = address - self.address
        guard start >= 0, count >= 0, start + count <= words.count else {
            throw DeviceError(.invalidRequest, message: "read of \(count) registers at \(address) outside the block read")
        }
        // The whole block (a poll answer read as it was asked): shared, not copied.
        if start == 0, count == words.count { return words }
        return Array(words[start..<(start + count)])
    }

    public mutating func writeRegisters(at address: Int, _ values: [UInt16]) throws(DeviceError) {
        throw DeviceError(.invalidRequest, message: "write to registers already read")
    }
}

/// Takes writes without sending them: how the requests a command needs are worked out before a
/// poller puts them on the wire, in the order the command makes them.
public struct RecordedWrites: RegisterAccess {
    public private(set) var writes: [(address: Int, values: [UInt16])] = []

    public init() {}

    public mutating func readRegisters(at address: Int, count: Int) throws(DeviceError) -> [UInt16] {
        throw DeviceError(.invalidRequest, message: "a command that reads cannot be recorded")
    }

    public mutating func writeRegisters(at address: Int, _ values: [UInt16]) throws(DeviceError) {
        writes.append((address, values))
    }
}
