import Foundation
@testable import Config
import Testing

/// `aggregator.url` in clear (`http://`, `mqtt://`) carries the token or password, the records and
/// the commands that move the batteries: to anything but loopback it is refused, at the url's line
/// with `UPLINK_CLEARTEXT`, unless `aggregator.insecure_transport: true` says it is meant.
@Suite("Uplink transport in clear")
struct UplinkTransportConfigTests {
    /// A site whose `aggregator:` block starts at line 5.
    static func site(_ aggregator: String) -> String {
        "bess_units:\n  - id: U1\n    capacity_kwh: 250\n    max_power_kw: 100\naggregator:\n" + aggregator
    }

    @Test("http:// and mqtt:// to a host other than loopback: UPLINK_CLEARTEXT at the url's line",
          arguments: [("  url: http://10.0.0.5:8700\n", 6, "http:// to 10.0.0.5"),
                      ("  transport: mqtt\n  url: mqtt://broker.example.net:1883\n", 7, "mqtt:// to broker.example.net"),
                      ("  url: http://aggregator.example.net/bess\n  interval_s: 1\n", 6, "https://"),
                      ("  transport: mqtt\n  url: \"mqtt://[fd00::1]:1883\"\n", 7, "mqtts://"),
                      ("  url: http://127.0.0.1.example.net:8700\n", 6, "which is not loopback"),
                      ("  url: http://10.0.0.5:8700\n  insecure_transport: false\n", 6, "insecure_transport: true")])
    func refused(yaml: String, line: Int, message: String) {
        do {
            _ = try ConfigLoader.parse(Self.site(yaml), file: "site.yaml")
            Issue.record("a cleartext uplink to another host was accepted")
        } catch {
            #expect(error.diagnostics.count == 1, "\(error)")
            let first = error.diagnostics.first
            #expect(first.map { "\($0.code)" } == "UPLINK_CLEARTEXT", "\(error)")
            #expect(first?.keyPath == "aggregator.url")
            #expect(first?.line == line, "\(error)")
            #expect(first?.message.contains(message) == true, "\(error)")
        }
    }

    @Test("loopback in clear, and TLS to anywhere, load without a word",
          arguments: ["  url: http://127.0.0.1:8700\n", "  url: http://localhost:8700/\n", "  url: \"http://[::1]:8700\"\n",
                      "  url: http://127.8.9.10\n", "  url: \"http://[::ffff:127.0.0.1]:8700\"\n",
                      "  transport: mqtt\n  url: mqtt://127.0.0.1:18830\n", "  transport: mqtt\n  url: mqtt://LOCALHOST.\n",
                      "  url: https://10.0.0.5:8700\n", "  transport: mqtt\n  url: mqtts://broker.example.net:8883\n"])
    func accepted(yaml: String) throws {
        let c = try ConfigLoader.parse(Self.site(yaml), file: "site.yaml")
        #expect(c.aggregator?.insecureTransport == false)
        #expect(!c.notices.contains { "\($0.code)" == "UPLINK_CLEARTEXT" }, "\(c.notices)")
    }

    @Test("insecure_transport: true takes a cleartext uplink to another host, with a coded notice at its line")
    func meant() throws {
        let c = try ConfigLoader.parse(Self.site("  url: http://10.0.0.5:8700\n  insecure_transport: true\n"), file: "site.yaml")
        #expect(c.aggregator?.insecureTransport == true)
        let notice = try #require(c.notices.first { "\($0.code)" == "UPLINK_CLEARTEXT" }, "\(c.notices)")
        #expect(notice.severity == .notice)
        #expect(notice.line == 7 && notice.keyPath == "aggregator.insecure_transport", "\(notice)")
        #expect(notice.message.contains("http:// to 10.0.0.5") || notice.message.contains("10.0.0.5 is http://"), "\(notice)")
        // On loopback or over TLS the key changes nothing and says nothing.
        let tls = try ConfigLoader.parse(Self.site("  url: https://10.0.0.5\n  insecure_transport: true\n"), file: "site.yaml")
        #expect(tls.notices.isEmpty, "\(tls.notices)")
    }

    @Test("loopback is localhost, 127.0.0.0/8, ::1 and 127/8 mapped into IPv6; nothing else")
    func loopback() {
        for host in ["localhost", "LocalHost", "localhost.", "127.0.0.1", "127.255.0.9", "::1", "0:0:0:0:0:0:0:1", "::ffff:127.0.0.2"] {
            #expect(HostAddress.isLoopback(host), "\(host)")
        }
        for host in ["10.0.0.1", "128.0.0.1", "126.0.0.1", "::2", "::ffff:10.0.0.1", "fe80::1", "localhost.example",
                     "127.0.0.1.nip.io", "0.0.0.0", "::", ""] {
            #expect(!HostAddress.isLoopback(host), "\(host)")
        }
    }
}
