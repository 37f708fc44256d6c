import BessBase
import ControlCore
import Testing
import UplinkIngest

@Suite("Ingest refusal codes: typed, with the stable names the aggregator answers")
struct IngestRefusalCodeTests {
    static let rows: [(IngestRefusal.Code, String)] = [
        (.siteIDInvalid, "SITE_ID_INVALID"),
        (.unitIDInvalid, "UNIT_ID_INVALID"),
        (.unitStateInvalid, "UNIT_STATE_INVALID"),
        (.tripCodeInvalid, "TRIP_CODE_INVALID"),
        (.statusStateInvalid, "STATUS_STATE_INVALID"),
        (.statusSessionInvalid, "STATUS_SESSION_INVALID"),
        (.frequencyEventInvalid, "FREQUENCY_EVENT_INVALID"),
        (.utilityControlInvalid, "UTILITY_CONTROL_INVALID"),
        (.payloadTooLarge, "PAYLOAD_TOO_LARGE"),
    ]

    @Test("each code prints its stable name", arguments: rows)
    func names(code: IngestRefusal.Code, name: String) {
        #expect(code.description == name)
        #expect(IngestRefusal(code, message: "m").description == "\(name): m")
    }

    @Test("every code has a name of its own")
    func distinct() {
        #expect(Set(Self.rows.map(\.1)).count == Self.rows.count)
        #expect(Set(Self.rows.map(\.0)).count == Self.rows.count)
    }
}
