import CModbus

/// Facts about the libmodbus bessd is linked against.
public enum ModbusLibrary {
    /// The linked library's version, e.g. `3.1.6`.
    /// The corresponding C symbols are `libmodbus_version_major`/`_minor`/`_micro`.
    public static var version: String {
        "\(libmodbus_version_major).\(libmodbus_version_minor).\(libmodbus_version_micro)"
    }

    /// Largest number of registers one read may ask for (`MODBUS_MAX_READ_REGISTERS`).
    public static let maxReadRegisters = 125
}
