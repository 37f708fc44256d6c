import ControlCore
import ControlProtocol
import Foundation
@testable import Service
import Testing

/// The units' contactors in the answers (docs/design/0009-utility-limits.md): `site --json`'s
/// `units[].contactor` and `status`'s `ieee2030_5.cannot_open`, left out while nothing stands.
@Suite("Contactors in the replies")
struct ContactorReplyTests {
    @Test("site --json: a unit's contactor when not closed, read back; nothing when closed")
    func siteUnit() throws {
        let closed = SiteUnitReply(id: "u1", share: "idle", pooled: true, setpointW: 0, powerW: 0, socPercent: 50,
                                   allowedChargeW: 1, allowedDischargeW: 1)
        #expect(!JSONTextTests.text(closed).contains("contactor"))
        var open = closed
        open.contactor = "cannot_open"
        let text = JSONTextTests.text(open)
        #expect(text.contains(#""allowed_discharge_w":1,"contactor":"cannot_open","id":"u1""#), "\(text)")
        #expect(JSONTextTests.keysInOrder(Array(text.utf8)))
        #expect(try JSONDecoder().decode(SiteUnitReply.self, from: Data(text.utf8)) == open)
        #expect(try JSONDecoder().decode(SiteUnitReply.self, from: Data(JSONTextTests.text(closed).utf8)).contactor == nil)
    }

    @Test("ieee2030_5: the units that cannot open, first in code-point order, read back; left out when none")
    func ieee2030_5() throws {
        var reply = IEEE2030_5Reply(lfdi: nil, sfdi: nil, server: "https://s", source: "live")
        #expect(!JSONTextTests.text(reply).contains("cannot_open"))
        reply.cannotOpen = ["u2", "u3"]
        let text = JSONTextTests.text(reply)
        #expect(text.hasPrefix(#"{"cannot_open":["u2","u3"],"controls":[]"#), "\(text)")
        #expect(JSONTextTests.keysInOrder(Array(text.utf8)))
        #expect(try JSONDecoder().decode(IEEE2030_5Reply.self, from: Data(text.utf8)).cannotOpen == ["u2", "u3"])
    }
}
