// The numbers of journal lines, without Foundation's formatters: one spelling for every module.

/// `value` rounded to `decimals` decimals and printed without trailing zeros: `12`, `0.5`, `-3.125`
/// (the numbers of journal lines: SCADA writes, relay contacts, IEC 104 setpoints and commands, the
/// PMU's pauses). Not finite, or 10^15 and beyond: Swift's own text (`nan`, `inf`, `2000000000000000.0`).
public func trimmed(_ value: Double, decimals: Int) -> String {
    var scale = 1.0
    for _ in 0..<max(0, decimals) { scale *= 10 }
    let rounded = (value * scale).rounded() / scale
    return rounded == rounded.rounded() && abs(rounded) < 1e15 ? "\(Int(rounded))" : "\(rounded)"
}
