/// The grid's voltage at a point of connection, as the HIL plant models it: a Thevenin source
/// behind an impedance, so that the site's own active and reactive power move it and a volt-var
/// curve closes a real loop. In per unit on the site's base (Σ units' apparent power ratings, the
/// nominal voltage): `V = V0 + (R·P + X·Q) / V0`, P and Q the power injected into the grid (+ =
/// export, + = over-excited). The linearised voltage drop; enough for a plant, not a load flow.
public struct GridVoltage: Sendable, Equatable {
    /// The source's voltage behind the impedance, p.u. (a scenario's `voltage_pu` steps it).
    public var sourcePU: Double
    /// The impedance to the source, p.u. on the site's base (R 0.03, X 0.10 by default: 44 % of the
    /// base's var moves V by 4.4 %).
    public var resistancePU: Double
    public var reactancePU: Double
    /// The base: line-to-neutral nominal voltage, V, and apparent power, VA.
    public let nominalV: Double
    public let baseVA: Double

    public init(nominalV: Double = 230, baseVA: Double, sourcePU: Double = 1, resistancePU: Double = 0.03, reactancePU: Double = 0.10) {
        self.nominalV = nominalV.isFinite && nominalV > 0 ? nominalV : 230
        self.baseVA = baseVA
        self.sourcePU = sourcePU
        self.resistancePU = resistancePU
        self.reactancePU = reactancePU
    }

    /// The voltage, p.u., with `injectedW` and `injectedVar` flowing into the grid. The source's
    /// voltage alone when the base is zero or an input is not a number.
    public func perUnit(injectedW: Double, injectedVar: Double) -> Double {
        let v0 = sourcePU.isFinite && sourcePU > 0 ? sourcePU : 1
        guard baseVA > 0, injectedW.isFinite, injectedVar.isFinite else { return v0 }
        return v0 + (resistancePU * injectedW / baseVA + reactancePU * injectedVar / baseVA) / v0
    }

    /// The voltage, V line to neutral, with `injectedW` and `injectedVar` flowing into the grid.
    public func volts(injectedW: Double, injectedVar: Double) -> Double {
        perUnit(injectedW: injectedW, injectedVar: injectedVar) * nominalV
    }
}
