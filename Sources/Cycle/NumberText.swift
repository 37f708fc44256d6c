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
