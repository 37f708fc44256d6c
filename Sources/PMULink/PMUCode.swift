public import BessSystem

/// The PMU reader's own codes, device notices of the site (`BESS_UNIT=site`); a session that ends
/// before data flowed carries its `PMULinkError`'s code instead (`PMU_CONNECT_FAILED`…).
public enum PMUCode: String, NoticeCode, CaseIterable {
    /// Data flows: the PMU, its stream and configuration.
    case connected = "PMU_CONNECTED"
    /// A session that had data ended, with its reason.
    case lost = "PMU_LOST"
    /// The PMU did not answer CFG-3 (or answered one the decoder refuses): CFG-2 from then on.
    case cfg3Unanswered = "PMU_CFG3_UNANSWERED"
    /// The PMU's configuration changed while data flowed.
    case configuration = "PMU_CONFIGURATION"
    /// A frame refused: the first, then at most one line a minute with the count.
    case frameRejected = "PMU_FRAME_REJECTED"

    public var severity: NoticeSeverity { self == .lost || self == .frameRejected ? .warning : .notice }
    public var topic: NoticeTopic { .device }
}

extension Notice {
    /// The PMU reader's notice of `code`: `CODE: message`, about the site.
    init(pmu code: PMUCode, _ message: String) {
        self.init(code, titled: message, units: ["site"])
    }
}
