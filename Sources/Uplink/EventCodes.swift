public import BessSystem

/// The codes outside the trip table that bessd's events carry to the aggregator (`RecordBody.event`'s
/// `code`): the IEC 104 outstation's command outcomes and the AGC signal's loss. An aggregator takes
/// an event whose code is a trip code or one of these, and refuses a batch with any other.
public enum UplinkEventCode {
    /// An IEC 104 command (select, execute, cancel) accepted (`OutstationLogCode.command`).
    public static let iec104Command = "IEC104_COMMAND"
    /// An IEC 104 command refused (`OutstationLogCode.commandRefused`); why is in the message.
    public static let iec104CommandRefused = "IEC104_COMMAND_REFUSED"
    /// AGC not refreshed within `iec104.agc.expiry_s`, and its return (`ControlEventKind.agcSignalLost`).
    public static let agcSignalLost = "AGC_SIGNAL_LOST"
    /// Every code above.
    public static let names: Set<String> = [iec104Command, iec104CommandRefused, agcSignalLost]
}

/// What the uplink senders tell the journal beside their errors' own codes (`UplinkError`): each
/// code a warning, with no catalogue entry of its own.
public enum UplinkNoticeCode: String, NoticeCode, CaseIterable {
    /// The command ledger could not be read at start: commands are refused until it can.
    case ledgerUnreadable = "MQTT_LEDGER_UNREADABLE"
    /// The command ledger could not be written.
    case ledgerUnwritable = "MQTT_LEDGER_UNWRITABLE"
    /// A command whose id is in the ledger without its answer: it may have been acted on.
    case commandUncertain = "MQTT_COMMAND_UNCERTAIN"
    /// A message on the command topic that is not a command.
    case commandMalformed = "MQTT_COMMAND_MALFORMED"
    /// The aggregator's 2xx answer is not a batch response.
    case badResponse = "UPLINK_BAD_RESPONSE"

    public var severity: NoticeSeverity { .warning }
    public var topic: NoticeTopic { .uplink }
}

extension Notice {
    /// An uplink line without a code (connected, delivering again): a notice.
    static func uplink(_ message: String) -> Notice { Notice(message, topic: .uplink) }

    /// An uplink failure with its error's code: a warning.
    static func uplink(_ message: String, failed code: some CustomStringConvertible) -> Notice {
        Notice(message, topic: .uplink, severity: .warning, code: code.description)
    }
}
