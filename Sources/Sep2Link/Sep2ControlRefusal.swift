import IEEE2030_5

extension DERControlBase {
    /// The reactive controls bessd takes (issue 59) and the curves (volt-watt among them): none is
    /// carried out while no unit has var points; a control that sets only them is answered 252 when
    /// none applies.
    static let reactiveTypes: Set<ControlType> = [.fixedPFInject, .fixedPFAbsorb, .fixedVar, .targetVar, .voltVar, .wattVar, .voltWatt]

    /// True when it sets `opModFreqDroop` and nothing else bessd carries out: with the configured droop
    /// disabled such a control is answered 252 (not applicable), never started.
    var setsOnlyDroop: Bool { sets(.freqDroop) && !ControlType.allCases.contains { $0 != .freqDroop && sets($0) } }

    /// True when it sets a reactive control and nothing else bessd carries out: while no unit has var
    /// points such a control is answered 252 (not applicable), never started.
    var setsOnlyReactive: Bool {
        Self.reactiveTypes.contains { sets($0) } && !ControlType.allCases.contains { !Self.reactiveTypes.contains($0) && sets($0) }
    }
}

extension ResponseLedger {
    /// The decision the sent ledger holds for control `mRID`: true refused (252), false started or
    /// completed, nil none yet.
    func decided(_ mRID: String) -> Bool? {
        let sent = self.sent[mRID] ?? []
        if sent.contains(ResponseStatus.notApplicable.rawValue) { return true }
        if sent.contains(ResponseStatus.started.rawValue) || sent.contains(ResponseStatus.completed.rawValue) { return false }
        return nil
    }
}
