public import BessBase

/// Why an optimiser input was refused: `PLAN_TARIFF_INVALID: line 12: …`. The message quotes nothing
/// from a file unescaped (text from the input goes through `TextQuoting`'s rules first).
public typealias PlanningError = CodedError<PlanningErrorCode>

/// The stable code of a `PlanningError`: a struct over a private enum, matched by value.
public struct PlanningErrorCode: Hashable, Sendable, CustomStringConvertible {
    private enum Value: Hashable, Sendable { case problemInvalid, tariffInvalid, forecastInvalid, forecastTooLarge, priceMissing }
    private let value: Value
    private init(_ value: Value) { self.value = value }

    /// `PLAN_PROBLEM_INVALID`: a number not finite or out of its range, no slots, or too many.
    public static let problemInvalid = Self(.problemInvalid)
    /// `PLAN_TARIFF_INVALID`: a band's time is not `HH:MM`, bands overlap or leave part of the day
    /// uncovered, or a price is not finite.
    public static let tariffInvalid = Self(.tariffInvalid)
    /// `PLAN_FORECAST_INVALID`: a forecast file line that is not `start,load_kw,pv_kw` with an RFC 3339
    /// start (with its offset) later than the line before and finite, non-negative powers.
    public static let forecastInvalid = Self(.forecastInvalid)
    /// `PLAN_FORECAST_TOO_LARGE`: more rows or bytes than a forecast file may hold.
    public static let forecastTooLarge = Self(.forecastTooLarge)
    /// `PLAN_PRICE_MISSING`: a slot that neither the price series nor a tariff prices.
    public static let priceMissing = Self(.priceMissing)

    /// The stable name.
    public var description: String {
        switch value {
        case .problemInvalid: "PLAN_PROBLEM_INVALID"
        case .tariffInvalid: "PLAN_TARIFF_INVALID"
        case .forecastInvalid: "PLAN_FORECAST_INVALID"
        case .forecastTooLarge: "PLAN_FORECAST_TOO_LARGE"
        case .priceMissing: "PLAN_PRICE_MISSING"
        }
    }
}
