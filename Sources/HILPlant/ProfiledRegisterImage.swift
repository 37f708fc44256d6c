public import BessBase
public import Fieldbus

/// The registers a simulated profiled Modbus device holds: holding and input tables, sparse (a
/// register never written reads 0, as a libmodbus mapping's do). What the plant serves and what its
/// tests read through `RegisterAccess`.
public struct ProfiledRegisterImage: Sendable, Equatable {
    public private(set) var words: [RegisterKey: UInt16] = [:]

    public init() {}

    public subscript(table: ModbusTable, address: Int) -> UInt16 {
        get { words[RegisterKey(table, address)] ?? 0 }
        set { words[RegisterKey(table, address)] = newValue }
    }

    /// Sets every word of `update`.
    public mutating func merge(_ update: [RegisterKey: UInt16]) {
        for (key, word) in update { words[key] = word }
    }

    /// `count` (1–125) registers of `table` from `address`; Modbus exception 2 (illegal data address)
    /// outside 0…65535, 3 (illegal data value) for a count out of range.
    public func read(_ table: ModbusTable, at address: Int, count: Int) throws(DeviceError) -> [UInt16] {
        guard (1...125).contains(count) else { throw DeviceError(.exception(3), message: "read of \(count) registers") }
        guard address >= 0, address + count <= 0x10000 else {
            throw DeviceError(.exception(2), message: "no register at \(address)")
        }
        return (address..<address + count).map { self[table, $0] }
    }

    /// The lowest and highest address of `table` that holds a word, nil when none does.
    public func span(_ table: ModbusTable) -> ClosedRange<Int>? {
        let addresses = words.keys.lazy.filter { $0.table == table }.map(\.address)
        guard let low = addresses.min(), let high = addresses.max() else { return nil }
        return low...high
    }
}
