/// Why a device profile cannot be compiled into a decoder: a profile that check-config would refuse
/// (`bessd check-config PROFILE.yaml` says where), or one given to the wrong decoder.
public struct ProfileError: Error, Sendable, CustomStringConvertible, Equatable {
    /// Stable, e.g. `PROFILE_SIGNAL_OUTSIDE_FRAME`.
    public var code: String
    /// What is wrong, naming the profile and the signal, alarm or group.
    public var message: String

    public init(code: String, message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { "\(code): \(message)" }

    /// The profile is for another transport or kind than the decoder compiling it.
    static func wrongDecoder(_ profile: DeviceProfile, _ what: String) -> ProfileError {
        ProfileError(code: "PROFILE_WRONG_DECODER", message: "profile \(profile.name): \(what)")
    }

    /// A signal's location, scale or markers cannot be read as written.
    static func signal(_ name: String, _ what: String) -> ProfileError {
        ProfileError(code: "PROFILE_SIGNAL_INVALID", message: "signal \(name): \(what)")
    }

    /// An alarm, a group or a quantity that does not fit the profile's signals.
    static func structure(_ profile: DeviceProfile, _ what: String) -> ProfileError {
        ProfileError(code: "PROFILE_STRUCTURE", message: "profile \(profile.name): \(what)")
    }
}
