/// `opModFreqDroop` (2030.5 `FreqDroopType`): the frequency-watt (droop) settings a control asks for,
/// in the standard's units. Each element is read at its type's width (`dBOF`, `dBUF` UInt32; `kOF`,
/// `kUF`, `openLoopTms` UInt16): a value outside its type is `SEP2_VALUE_INVALID` and the control is
/// refused (253). A value inside its type but outside what bessd applies (`notApplied`) leaves the
/// droop unapplied and the rest of the control taken (`DERControlBase.notApplied` says why).
public struct FreqDroop: Hashable, Sendable {
    /// `dBOF`: the over-frequency dead-band, thousandths of a hertz (0…1000: up to 1 Hz).
    public var deadbandOverMilliHz: UInt32
    /// `dBUF`: the under-frequency dead-band, thousandths of a hertz (0…1000).
    public var deadbandUnderMilliHz: UInt32
    /// `kOF`: the per-unit frequency change for a per-unit power change over frequency, thousandths
    /// (10…200: a droop of 1 % to 20 %).
    public var droopOverThousandths: UInt16
    /// `kUF`: the same under frequency, thousandths (10…200).
    public var droopUnderThousandths: UInt16
    /// `openLoopTms`: the open-loop response time (to 90 % of a step), hundredths of a second
    /// (0…6000: up to 60 s).
    public var openLoopHundredthsSecond: UInt16

    /// The ranges bessd applies.
    public static let deadbandRange: ClosedRange<Int64> = 0...1_000
    public static let droopRange: ClosedRange<Int64> = 10...200
    public static let openLoopRange: ClosedRange<Int64> = 0...6_000

    /// Settings as given.
    public init(deadbandOverMilliHz: UInt32, deadbandUnderMilliHz: UInt32, droopOverThousandths: UInt16, droopUnderThousandths: UInt16,
                openLoopHundredthsSecond: UInt16) {
        self.deadbandOverMilliHz = deadbandOverMilliHz
        self.deadbandUnderMilliHz = deadbandUnderMilliHz
        self.droopOverThousandths = droopOverThousandths
        self.droopUnderThousandths = droopUnderThousandths
        self.openLoopHundredthsSecond = openLoopHundredthsSecond
    }

    /// Reads `opModFreqDroop`: all five elements required, each at its type's width.
    init(_ element: XMLElement) throws(SEP2Error) {
        deadbandOverMilliHz = try element.requiredInteger("dBOF", UInt32.self)
        deadbandUnderMilliHz = try element.requiredInteger("dBUF", UInt32.self)
        droopOverThousandths = try element.requiredInteger("kOF", UInt16.self)
        droopUnderThousandths = try element.requiredInteger("kUF", UInt16.self)
        openLoopHundredthsSecond = try element.requiredInteger("openLoopTms", UInt16.self)
    }

    /// Why bessd does not apply these settings (the first element outside the ranges it applies,
    /// e.g. "opModFreqDroop not applied: kOF 250 is outside 10…200"); nil when it applies them.
    public var notApplied: String? {
        let checks: [(String, Int64, ClosedRange<Int64>)] = [
            ("dBOF", Int64(deadbandOverMilliHz), Self.deadbandRange), ("dBUF", Int64(deadbandUnderMilliHz), Self.deadbandRange),
            ("kOF", Int64(droopOverThousandths), Self.droopRange), ("kUF", Int64(droopUnderThousandths), Self.droopRange),
            ("openLoopTms", Int64(openLoopHundredthsSecond), Self.openLoopRange),
        ]
        guard let bad = checks.first(where: { !$0.2.contains($0.1) }) else { return nil }
        return "opModFreqDroop not applied: \(bad.0) \(bad.1) is outside \(bad.2.lowerBound)…\(bad.2.upperBound)"
    }
}
