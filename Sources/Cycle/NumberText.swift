// Numbers as the status lines print them, without Foundation's formatters.

/// `value` with `digits` decimals, rounded half away from zero; `--` when not finite (status lines).
public func fixed(_ value: Double, _ digits: Int) -> String {
    guard value.isFinite else { return "--" }
    var scale = 1.0
    for _ in 0..<digits { scale *= 10 }
    let scaled = (abs(value) * scale).rounded()
    let whole = Int64(scaled / scale)
    var fraction = String(Int64(scaled) - whole * Int64(scale))
    while fraction.count < digits { fraction = "0" + fraction }
    return (value < 0 && scaled != 0 ? "-" : "") + String(whole) + (digits > 0 ? "." + fraction : "")
}

/// `value` with one decimal and its sign: `+1.5`, `-0.3`, `0.0`.
public func signed(_ value: Double) -> String {
    let text = fixed(value, 1)
    return text.hasPrefix("-") || text == "0.0" ? text : "+" + text
}

/// `value` rounded to `decimals` decimals and printed without trailing zeros: `12`, `0.5`, `-3.125`
/// (the numbers of journal lines: SCADA writes, relay contacts, IEC 104 setpoints).
public func trimmed(_ value: Double, decimals: Int) -> String {
    var scale = 1.0
    for _ in 0..<max(0, decimals) { scale *= 10 }
    let rounded = (value * scale).rounded() / scale
    return rounded == rounded.rounded() && abs(rounded) < 1e15 ? "\(Int(rounded))" : "\(rounded)"
}
