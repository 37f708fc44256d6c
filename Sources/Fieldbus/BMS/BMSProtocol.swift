public import ControlCore

/// Why a CAN frame was not used.
public enum FrameRejection: String, Sendable, CaseIterable {
    /// Shorter than the protocol requires for its identifier.
    case shortFrame = "CAN_FRAME_SHORT"
    /// A field holds a value outside what the protocol allows (or its invalid marker).
    case invalidValue = "CAN_FRAME_INVALID_VALUE"
    /// A remote, extended or error frame where a standard data frame was expected.
    case wrongKind = "CAN_FRAME_WRONG_KIND"
    /// An identifier this protocol does not use.
    case unknownID = "CAN_FRAME_UNKNOWN_ID"
}

/// Counts of frames a decoder used and refused.
public struct DecoderCounters: Sendable, Equatable {
    public var accepted: UInt64 = 0
    public var shortFrames: UInt64 = 0
    public var invalidValues: UInt64 = 0
    public var wrongKind: UInt64 = 0
    public var unknownIDs: UInt64 = 0
    public init() {}

    mutating func count(_ rejection: FrameRejection) {
        switch rejection {
        case .shortFrame: shortFrames &+= 1
        case .invalidValue: invalidValues &+= 1
        case .wrongKind: wrongKind &+= 1
        case .unknownID: unknownIDs &+= 1
        }
    }
}

/// A BMS protocol: turns received frames into the BMS snapshot the control law reads.
/// One file per protocol; adding a protocol is adding a type that conforms.
public protocol BMSDecoder: Sendable {
    /// The latest values, each group stamped with when its frame arrived.
    var snapshot: BMSSnapshot { get }
    var counters: DecoderCounters { get }
    /// Takes one received frame. Returns nil when the frame was used, else why it was not.
    mutating func ingest(_ frame: CANFrame, at instant: MonotonicInstant) -> FrameRejection?
}
