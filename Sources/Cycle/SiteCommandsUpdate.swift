public import ControlCore

extension SharedState {
    /// How many times `updateCommands` decides again when another writer committed in between.
    public static let commandAttempts = 8

    /// Changes SCADA's commands without losing another writer's change (SCADA's TCP and RTU
    /// servers, the IEC 104 site set-point): `decide` gets the commands as last written and returns
    /// the commands to store with what it accepted, or why it refuses; they are stored only if
    /// nothing was written since they were read, else `decide` runs again on the newer commands, at
    /// most `commandAttempts` times. Returns the acceptance or the refusal, or nil when every
    /// attempt lost its race (the caller refuses: "the commands changed under eight attempts in a row").
    public func updateCommands<Accepted, Refusal: Error>(
        _ decide: (SiteCommands) -> Result<(commands: SiteCommands, accepted: Accepted), Refusal>
    ) -> Result<Accepted, Refusal>? {
        for _ in 0..<Self.commandAttempts {
            var generation: UInt64 = 0
            let current = commands(generation: &generation)
            switch decide(current) {
            case .failure(let refusal):
                return .failure(refusal)
            case .success(let decided):
                if commit(decided.commands, ifGeneration: generation) { return .success(decided.accepted) }
            }
        }
        return nil
    }
}
