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
