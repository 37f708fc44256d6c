/// `opModFreqDroop` (2030.5 `FreqDroopType`): the frequency-watt (droop) settings a control asks for,
/// in the standard's units, each bounded to what bessd applies (a value outside is `SEP2_VALUE_INVALID`
/// and the control is refused).
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

    /// Reads `opModFreqDroop`: all five elements required, each in its range.
    init(_ element: XMLElement) throws(SEP2Error) {
        deadbandOverMilliHz = try element.requiredInteger("dBOF", UInt32.self, in: Self.deadbandRange)
        deadbandUnderMilliHz = try element.requiredInteger("dBUF", UInt32.self, in: Self.deadbandRange)
        droopOverThousandths = try element.requiredInteger("kOF", UInt16.self, in: Self.droopRange)
        droopUnderThousandths = try element.requiredInteger("kUF", UInt16.self, in: Self.droopRange)
        openLoopHundredthsSecond = try element.requiredInteger("openLoopTms", UInt16.self, in: Self.openLoopRange)
    }
}
