public import BessBase

/// Why grid-support settings are refused: a curve or a number outside what IEEE 1547-2018 allows
/// (its ranges of adjustability as EPRI's OpenDER checks them, ../shared/reference/reactive-power.md
/// §2), or a rating that cannot be a base. Configuration reports it with the key path.
public typealias GridSupportError = CodedError<GridSupportErrorCode>

/// The stable code of a `GridSupportError`: a struct over a private enum, so the set is closed.
public struct GridSupportErrorCode: Hashable, Sendable, CustomStringConvertible {
    private enum Value: Hashable, Sendable {
        case curvePoints, curveOrder, voltVarRange, wattVarRange, voltWattRange, powerFactorRange, varRange,
             responseTimeRange, rating
    }

    private let value: Value
    private init(_ value: Value) { self.value = value }

    /// `GRID_CURVE_POINTS`: a curve with too few or too many points for its function.
    public static let curvePoints = Self(.curvePoints)
    /// `GRID_CURVE_ORDER`: a curve whose x values decrease, or a value that is not a finite number.
    public static let curveOrder = Self(.curveOrder)
    /// `GRID_VOLT_VAR_RANGE`: a volt-var point, VRef or its adjustment outside IEEE 1547-2018 Table 8.
    public static let voltVarRange = Self(.voltVarRange)
    /// `GRID_WATT_VAR_RANGE`: a watt-var point outside IEEE 1547-2018 Table 9.
    public static let wattVarRange = Self(.wattVarRange)
    /// `GRID_VOLT_WATT_RANGE`: a volt-watt point outside IEEE 1547-2018 Table 10.
    public static let voltWattRange = Self(.voltWattRange)
    /// `GRID_POWER_FACTOR_RANGE`: a power factor that is not in (0, 1].
    public static let powerFactorRange = Self(.powerFactorRange)
    /// `GRID_VAR_RANGE`: a reactive power outside ±100 % of the apparent power rating.
    public static let varRange = Self(.varRange)
    /// `GRID_RESPONSE_TIME_RANGE`: an open-loop response time outside the function's range.
    public static let responseTimeRange = Self(.responseTimeRange)
    /// `GRID_RATING_INVALID`: a rating that is not a positive finite number.
    public static let rating = Self(.rating)

    /// The stable name the journal and configuration diagnostics print.
    public var description: String {
        switch value {
        case .curvePoints: "GRID_CURVE_POINTS"
        case .curveOrder: "GRID_CURVE_ORDER"
        case .voltVarRange: "GRID_VOLT_VAR_RANGE"
        case .wattVarRange: "GRID_WATT_VAR_RANGE"
        case .voltWattRange: "GRID_VOLT_WATT_RANGE"
        case .powerFactorRange: "GRID_POWER_FACTOR_RANGE"
        case .varRange: "GRID_VAR_RANGE"
        case .responseTimeRange: "GRID_RESPONSE_TIME_RANGE"
        case .rating: "GRID_RATING_INVALID"
        }
    }
}

/// Checks one number against its range; the message names it (`V2 1.1 outside 0.97 … 1.0`).
@inline(__always)
func require(
    _ value: Double, in range: ClosedRange<Double>, _ name: String, _ code: GridSupportErrorCode, slack: Double = 1e-9
) throws(GridSupportError) {
    guard value.isFinite, value >= range.lowerBound - slack, value <= range.upperBound + slack else {
        throw GridSupportError(code, message: "\(name) \(value) outside \(range.lowerBound) … \(range.upperBound)")
    }
}
