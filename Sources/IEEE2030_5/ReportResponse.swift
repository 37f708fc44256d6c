public import BessBase
import ControlCore

/// `Response.status` (2030.5 Table 27, "Response types by function set"; the numbers of envoy-schema's
/// `ResponseType`, the utility server's own). Values not listed are reserved.
public enum ResponseStatus: UInt8, Hashable, Sendable, CaseIterable {
    /// 1: the control was received.
    case received = 1
    /// 2: the control started.
    case started = 2
    /// 3: the control completed.
    case completed = 3
    /// 4: the user chose to opt out.
    case optedOut = 4
    /// 5: the user chose to opt in.
    case optedIn = 5
    /// 6: the control was cancelled.
    case cancelled = 6
    /// 7: the control was superseded.
    case superseded = 7
    /// 8: partially completed, the user opted out part of it.
    case partialOptOut = 8
    /// 9: partially completed, the user opted in part of it.
    case partialOptIn = 9
    /// 10: completed without the user's participation.
    case completedWithoutParticipation = 10
    /// 11: the user acknowledged the control.
    case acknowledged = 11
    /// 12: the control cannot be displayed.
    case cannotBeDisplayed = 12
    /// 13: aborted for another server's event.
    case abortedByOtherServer = 13
    /// 14: aborted for another program's event.
    case abortedByOtherProgram = 14
    /// 252: refused, a control parameter is not applicable to this device.
    case notApplicable = 252
    /// 253: refused, the event is invalid.
    case invalidEvent = 253
    /// 254: refused, the event was received after it ended.
    case receivedLate = 254

    /// The status that reports `state` (`EventRules.state`): scheduled → received, active → started,
    /// completed → completed, cancelled → cancelled, superseded → superseded.
    public init(_ state: ControlState) {
        switch state {
        case .scheduled: self = .received
        case .active: self = .started
        case .completed: self = .completed
        case .cancelled: self = .cancelled
        case .superseded: self = .superseded
        }
    }
}

/// A `DERControlResponse` bessd posts to a control's `replyTo`, as its `responseRequired` asks.
public struct ControlResponseReport: Hashable, Sendable {
    /// `endDeviceLFDI`: the site's LFDI, 40 hex digits (`DeviceIdentity`).
    public var endDeviceLFDI: String
    /// `status`.
    public var status: ResponseStatus
    /// `subject`: the control's mRID as the server wrote it (written escaped, never altered).
    public var subject: String
    /// `createdDateTime`: when bessd made the response, seconds since the Unix epoch on the server's time.
    public var createdDateTime: Int64
    /// The `href` attribute, nil for none (a POST carries none).
    public var href: String?

    /// A response of `status` to the control `subject`, made at `createdDateTime` by the device `endDeviceLFDI`.
    public init(endDeviceLFDI: String, status: ResponseStatus, subject: String, createdDateTime: Int64, href: String? = nil) {
        self.endDeviceLFDI = endDeviceLFDI
        self.status = status
        self.subject = subject
        self.createdDateTime = createdDateTime
        self.href = href
    }

    /// The `DERControlResponse` document (2030.5 namespace only); `SEP2_VALUE_INVALID` for an
    /// `endDeviceLFDI` that is not 40 hex digits.
    public func xml(maximumBytes: Int = XMLWriter.defaultMaximumBytes) throws(SEP2Error) -> [UInt8] {
        try ReportCheck.lfdi(endDeviceLFDI, "endDeviceLFDI")
        var writer = XMLWriter(root: "DERControlResponse", attributes: href.map { [(name: "href", value: $0)] } ?? [], maximumBytes: maximumBytes)
        writer.element("createdDateTime", createdDateTime)
        writer.element("endDeviceLFDI", endDeviceLFDI)
        writer.element("status", status.rawValue)
        writer.element("subject", subject)
        return try writer.finish()
    }
}

/// Checks of the values bessd itself puts in a report (the server's own strings, such as a response's
/// subject, are escaped and echoed, never rewritten).
enum ReportCheck {
    /// An LFDI: 40 hex digits (HexBinary160), else `SEP2_VALUE_INVALID`.
    static func lfdi(_ text: String, _ what: String) throws(SEP2Error) {
        guard text.utf8.count == 40, text.utf8.allSatisfy(\.isHexDigit) else {
            throw SEP2Error(.valueInvalid, message: "\(what) \(quoted(text)) is not 40 hex digits")
        }
    }

    /// A `String32`: at most 32 bytes of UTF-8, else `SEP2_VALUE_INVALID`.
    static func string32(_ text: String?, _ what: String) throws(SEP2Error) {
        guard let text, text.utf8.count > 32 else { return }
        throw SEP2Error(.valueInvalid, message: "\(what) \(quoted(text)) is longer than 32 bytes")
    }
}
