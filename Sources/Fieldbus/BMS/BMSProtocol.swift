public import ControlCore

/// Why a CAN frame was not used.
public enum FrameRejection: String, Error, Sendable, CaseIterable {
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
///
/// A decoder declares which optional groups (`BMSGroups`) it carries: those its specification
/// defines are expected from the start, so absent is missing (`BMS_GROUP_MISSING`); an extension
/// some BMSs add is expected only once this link has carried it. The decoder keeps
/// `snapshot.expectedGroups` accordingly. The groups belong to the instance: a profiled decoder
/// (`ProfiledCANDecoder`) takes them from its profile's `groups`.
public protocol BMSDecoder: Sendable {
    /// The optional groups the protocol's specification defines: every conforming BMS sends them.
    var definedGroups: BMSGroups { get }
    /// The optional groups the protocol may carry as extensions: expected once the BMS has sent one.
    var extensionGroups: BMSGroups { get }
    /// The latest values, each group stamped with when its frame arrived; `expectedGroups` holds the
    /// defined groups and each extension received so far.
    var snapshot: BMSSnapshot { get }
    var counters: DecoderCounters { get }
    /// Takes one received frame. Returns nil when the frame was used, else why it was not.
    mutating func ingest(_ frame: CANFrame, at instant: MonotonicInstant) -> FrameRejection?
}

/// Says once per link, without alarm, which extension groups the BMS does not send and which rules
/// are inert for it, since their absence raises no `BMS_GROUP_MISSING`; and says so again if the BMS
/// starts sending one later. The CAN worker logs its lines.
public struct UnsentExtensionNotice: Sendable {
    /// The extensions the link's protocol may carry.
    public let extensions: BMSGroups
    /// How long after the BMS's first frame the extensions are judged (its groups arrive once a second).
    public let settle: Duration
    private var firstFrame: MonotonicInstant?
    private var judged = false
    /// Extensions announced as not sent and not seen since.
    private var unsent = BMSGroups()

    public init(extensions: BMSGroups, settle: Duration = .seconds(10)) {
        self.extensions = extensions
        self.settle = settle
    }

    /// Judges the decoder's latest snapshot at `now`; returns a line to log, or nil.
    public mutating func check(_ snapshot: BMSSnapshot, at now: MonotonicInstant) -> String? {
        guard snapshot.newestTakenAt != nil else { return nil }
        guard let first = firstFrame else {
            firstFrame = now
            return nil
        }
        if !judged {
            guard now >= first + settle else { return nil }
            judged = true
            unsent = extensions.subtracting(snapshot.expectedGroups)
            guard !unsent.isEmpty else { return nil }
            return "the BMS sends no \(unsent.list) (not defined by its protocol, not a fault): "
                + "\(Self.consequences(unsent)); no BMS_GROUP_MISSING for it unless it starts and stops"
        }
        let arrived = unsent.intersection(snapshot.expectedGroups)
        guard !arrived.isEmpty else { return nil }
        unsent.subtract(arrived)
        return "the BMS now sends \(arrived.list): its rules act; it is watched for BMS_GROUP_MISSING from now on"
    }

    static func consequences(_ groups: BMSGroups) -> String {
        groups.members.map { group -> String in
            switch group {
            case .cells: "cell-voltage rules inert, temperatures from 0x356"
            case .protection: "the BMS's protection flags unread"
            case .requests: "charge and discharge assumed allowed"
            default: "its rules inert"
            }
        }.joined(separator: "; ")
    }
}
