import BessBase
import BessSystem
import ControlCore
import Glibc
import Testing

@Suite("Control-client error codes: typed, with the stable names scripts read")
struct BessErrorCodeTests {
    static let rows: [(BessError.Code, String)] = [
        (.badRequest, "BAD_REQUEST"),
        (.controlSocketFailed, "CONTROL_SOCKET_FAILED"),
        (.controlSocketUnreachable, "CONTROL_SOCKET_UNREACHABLE"),
        (.controlNoAnswer, "CONTROL_NO_ANSWER"),
    ]

    @Test("each code prints its stable name", arguments: rows)
    func names(code: BessError.Code, name: String) {
        #expect(code.description == name)
        #expect(BessError(code, message: "m").description == "\(name): m")
    }

    @Test("every code has a name of its own")
    func distinct() {
        #expect(Set(Self.rows.map(\.1)).count == Self.rows.count)
        #expect(Set(Self.rows.map(\.0)).count == Self.rows.count)
    }
}
