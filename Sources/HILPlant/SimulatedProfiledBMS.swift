public import BessBase
public import ControlCore
public import Fieldbus
public import Simulation

/// A BMS described by a profile, as the plant simulates it on the same pack model as its Pylontech
/// BMS (`SimulatedUnit.pylontechState`, faults applied): over CAN it sends the profile's frames
/// (broadcast: every period; request: in answer to one of the profile's request frames), over
/// Modbus it holds the profile's registers, published every plant step. A silenced group
/// (`bms_group_silence`) drops the frames that carry its signals; `bms_silence` sends nothing.
public struct SimulatedProfiledBMS: Sendable {
    public let profile: DeviceProfile
    /// The registers a Modbus BMS serves (empty for a CAN one).
    public private(set) var image = ProfiledRegisterImage()

    public init(profile: DeviceProfile) {
        self.profile = profile
    }

    /// The state the profile encodes for `unit`.
    public static func state(of unit: SimulatedUnit) -> ProfiledDeviceState {
        ProfiledDeviceState(bms: unit.pylontechState)
    }

    /// The snapshot parts a unit's silenced groups stop.
    public static func silentParts(_ groups: BMSGroups) -> Set<ProfileGroup.Part> {
        var parts = Set<ProfileGroup.Part>()
        if groups.contains(.cells) { parts.insert(.cells) }
        if groups.contains(.protection) { parts.insert(.protection) }
        if groups.contains(.requests) { parts.insert(.requests) }
        return parts
    }

    /// One transmission's frames for `unit` (none while it is silent).
    public func frames(_ unit: SimulatedUnit) -> [CANFrame] {
        guard !unit.bmsSilent else { return [] }
        return ProfileEncoder.frames(profile, Self.state(of: unit), omitting: Self.silentParts(unit.silentGroups))
    }

    /// True for a frame the BMS answers with its burst: a request-mode profile's request frame (the
    /// id, and the kind, of one of its `keep_alive` frames).
    public func isRequest(_ frame: CANFrame) -> Bool {
        guard case .can(let transport) = profile.transport, transport.mode == .request, !frame.isError, !frame.isRemote else {
            return false
        }
        return profile.keepAlive.contains { $0.id == frame.id && $0.extended == frame.isExtended }
    }

    /// True when the profile is broadcast CAN: the BMS sends unasked.
    public var broadcasts: Bool {
        if case .can(let transport) = profile.transport { return transport.mode == .broadcast }
        return false
    }

    /// The transmission period: the shortest of its groups' periods, 1 s when it names none.
    public var period: Duration {
        profile.groups.map(\.period).filter { $0 > .zero }.min() ?? .seconds(1)
    }

    /// The receive filters the plant installs for a CAN BMS: its request or keep-alive frames. A
    /// 29-bit one carries `CAN_EFF_FLAG` (bit 31) in its id, so the kernel filter, which always
    /// compares that bit, passes the extended frame.
    public var requestFilters: [(id: UInt32, mask: UInt32)] {
        profile.keepAlive.map { $0.extended ? ($0.id | 0x8000_0000, 0x1FFF_FFFF) : ($0.id, 0x7FF) }
    }

    /// Publishes `unit`'s state into the registers (a Modbus BMS).
    public mutating func publish(_ unit: SimulatedUnit) {
        image.merge(ProfileEncoder.registers(profile, Self.state(of: unit)))
    }

    /// Publishes `state` into the registers.
    public mutating func publish(_ state: ProfiledDeviceState) {
        image.merge(ProfileEncoder.registers(profile, state))
    }

    /// A read request, as the BMS answers it.
    public func read(_ table: ModbusTable, at address: Int, count: Int) throws(DeviceError) -> [UInt16] {
        try image.read(table, at: address, count: count)
    }
}
