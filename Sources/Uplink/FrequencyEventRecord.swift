public import ControlCore
import Foundation

/// One frequency event as bessd assessed it (issue 47 §3), in a `frequency_event` record: the same
/// type, fields and JSON keys as an entry of `bessctl events --json` (ControlCore's
/// `FrequencyEventSummary`). A quantity bessd could not know (NaN in the assessment) is written as null.
public typealias FrequencyEventRecord = FrequencyEventSummary

extension FrequencyEventSummary {
    /// The event from its JSON object (what `bessctl events --json` lists for it).
    public init(json: [UInt8]) throws {
        self = try JSONDecoder().decode(Self.self, from: Data(json))
    }
}
