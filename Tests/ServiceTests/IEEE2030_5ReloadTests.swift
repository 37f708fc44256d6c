@testable import Config
import Cycle
import Foundation
@testable import Service
import Testing

/// `ieee2030_5:` on a reload: the 2030.5 client keeps what it started with, and the journal says so.
@Suite("ieee2030_5 reload")
struct IEEE2030_5ReloadTests {
    /// Changed, added or removed.
    @Test("a changed ieee2030_5 block waits for restart, named alone (IEEE2030_5_RESTART_NEEDED)")
    func restartNeeded() throws {
        let old = try ConfigLoader.parse(daemonYAML.replacingOccurrences(of: "@SOCKET@", with: "/tmp/sep2-reload.sock") + """

            ieee2030_5:
              server: https://sep2.example/dcap
              cert_file: /etc/bessd/sep2/device.pem
              key_file: /etc/bessd/sep2/device.key
              ca_file: /etc/bessd/sep2/serca.pem
            """, file: "reload.yaml")
        #expect(old.ieee2030_5 != nil)
        #expect(Reloader.reloadSections.compactMap { $0.restartNeeded(from: old, to: old) }.isEmpty)
        var moved = old
        moved.ieee2030_5?.pollSeconds = 60
        var removed = old
        removed.ieee2030_5 = nil
        for new in [moved, removed] {
            let kept = Reloader.reloadSections.compactMap { section in section.restartNeeded(from: old, to: new).map { (section.outcome, $0) } }
            #expect(kept.count == 1 && kept.first?.1.description == "ieee2030_5 changed; restart bessd to apply", "\(kept.map(\.1))")
            if case let .keep(code, _)? = kept.first?.0 { #expect(code == "IEEE2030_5_RESTART_NEEDED") } else { Issue.record("\(kept.map(\.1))") }
        }
    }
}
