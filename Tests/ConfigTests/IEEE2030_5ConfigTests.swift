@testable import Config
import Foundation
import TestSupport
import Testing

/// `ieee2030_5:`: the utility's DER server, bessd's device certificate and the rates and registration.
@Suite("ieee2030_5")
struct IEEE2030_5ConfigTests {
    static let files = "  cert_file: /etc/bessd/sep2/device.pem\n  key_file: /etc/bessd/sep2/device.key\n  ca_file: /etc/bessd/sep2/serca.pem\n"

    /// A site with `ieee2030_5:` holding `lines` and the three files; a line for a file key replaces
    /// its line (`key: -` leaves that file out).
    static func yaml(_ lines: [String], files: String = files) -> String {
        var text = IEC104ConfigTests.units + "ieee2030_5:\n"
        var body = files.split(separator: "\n").map(String.init)
        for line in lines {
            let key = "  " + line.prefix { $0 != ":" } + ":"
            if let index = body.firstIndex(where: { $0.hasPrefix(key) }) {
                body[index] = line.hasSuffix(": -") ? "" : "  \(line)"
            } else {
                text += "  \(line)\n"
            }
        }
        return text + body.filter { !$0.isEmpty }.map { "\($0)\n" }.joined()
    }

    @Test("no ieee2030_5: nil; a DeviceCapability URL gives host, 443, defaults; well_known the CSIP-AUS path")
    func defaultsAndValues() throws {
        #expect(try ConfigLoader.parse(IEC104ConfigTests.units, file: "a.yaml").ieee2030_5 == nil)
        let plain = try ConfigLoader.parse(Self.yaml(["server: https://sep2.utility.example/dcap"]), file: "b.yaml").ieee2030_5
        #expect(plain == IEEE2030_5Settings(serverHost: "sep2.utility.example", deviceCapabilityPath: "/dcap",
                                            certificateFile: "/etc/bessd/sep2/device.pem", keyFile: "/etc/bessd/sep2/device.key",
                                            caFile: "/etc/bessd/sep2/serca.pem"))
        #expect(plain?.cipherList == "ECDHE-ECDSA-AES128-CCM8" && plain?.pollSeconds == 300 && plain?.registration == .outOfBand)
        #expect(plain?.pen == nil, "no PEN configured: the mirror mRIDs end in 00000000")
        let pen = try ConfigLoader.parse(Self.yaml(["server: https://sep2.utility.example/dcap", "pen: 40732"]), file: "p.yaml").ieee2030_5
        #expect(pen?.pen == 40732)
        #expect(try ConfigLoader.parse(Self.yaml(["server: https://sep2.utility.example/dcap", "pen: \"99999999\""]), file: "p.yaml").ieee2030_5?.pen
                == 99_999_999)
        let set = try ConfigLoader.parse(Self.yaml([
            "server: https://[fd00::7]:8443", "discovery: well_known", "allow_gcm: true", "poll_s: 10", "post_s: 60",
            "registration: in_band", "pin: \"011116\"", "connection_point_id: 4102345678", "timeout_s: 2.5",
        ]), file: "c.yaml").ieee2030_5
        #expect(set?.serverHost == "fd00::7" && set?.serverPort == 8443 && set?.deviceCapabilityPath == "/.well-known/csipaus")
        #expect(set?.cipherList == "ECDHE-ECDSA-AES128-CCM8:ECDHE-ECDSA-AES128-GCM-SHA256")
        #expect(set?.pollSeconds == 10 && set?.postSeconds == 60 && set?.registration == .inBand && set?.pin == 11116)
        #expect(set?.connectionPointId == "4102345678" && set?.timeoutSeconds == 2.5)
        let query = try ConfigLoader.parse(Self.yaml(["server: https://10.0.0.9:443/api/dcap?x=1", "pin: 111115"]), file: "d.yaml")
        #expect(query.ieee2030_5?.deviceCapabilityPath == "/api/dcap?x=1" && query.ieee2030_5?.pin == 111_115)
    }

    @Test("every bad value is a coded configuration error at its key and line, never a crash", arguments: [
        (["server: http://sep2.example/dcap"], "ieee2030_5.server", "https://"),
        (["server: https://sep2.example:0/dcap"], "ieee2030_5.server", "port"),
        (["server: https://sep2.example:70000/dcap"], "ieee2030_5.server", "port"),
        (["server: https://user:pw@sep2.example/dcap"], "ieee2030_5.server", "user or password"),
        (["server: https://sep2..example/dcap"], "ieee2030_5.server", "host"),
        (["server: https://sep2.example"], "ieee2030_5.server", "DeviceCapability's path"),
        (["server: https://sep2.example/dcap", "discovery: well_known"], "ieee2030_5.server", "well_known"),
        (["server: \"https://sep2.example/d cap\""], "ieee2030_5.server", "path"),
        (["server: https://sep2.example/dcap", "discovery: dns_sd"], "ieee2030_5.discovery", "one of"),
        (["server: https://sep2.example/dcap", "cert_file: -"], "ieee2030_5.cert_file", "is required"),
        (["server: https://sep2.example/dcap", "key_file: -"], "ieee2030_5.key_file", "is required"),
        (["server: https://sep2.example/dcap", "ca_file: -"], "ieee2030_5.ca_file", "is required"),
        (["cert_file: device.pem"], "ieee2030_5.cert_file", "absolute path"),
        (["server: https://sep2.example/dcap", "poll_s: 0"], "ieee2030_5.poll_s", "from 1 to 86400"),
        (["server: https://sep2.example/dcap", "post_s: 86401"], "ieee2030_5.post_s", "from 1 to 86400"),
        (["server: https://sep2.example/dcap", "timeout_s: 0.5"], "ieee2030_5.timeout_s", "from 1 to 60"),
        (["server: https://sep2.example/dcap", "pin: 11111"], "ieee2030_5.pin", "the sixth here 5"),
        (["server: https://sep2.example/dcap", "pin: 111116"], "ieee2030_5.pin", "check digit"),
        (["server: https://sep2.example/dcap", "pin: 12a456"], "ieee2030_5.pin", "6 digits"),
        (["server: https://sep2.example/dcap", "registration: in_band"], "ieee2030_5.pin", "in_band"),
        (["server: https://sep2.example/dcap", "registration: by_post"], "ieee2030_5.registration", "one of"),
        (["server: https://sep2.example/dcap", "connection_point_id: \"NMI 41\""], "ieee2030_5.connection_point_id", "letters and digits"),
        (["server: https://sep2.example/dcap", "allow_gcm: maybe"], "ieee2030_5.allow_gcm", "true or false"),
        (["server: https://sep2.example/dcap", "ciphers: NULL"], "ieee2030_5.ciphers", "unknown key"),
        (["server: https://sep2.example/dcap", "pen: 123456789"], "ieee2030_5.pen", "1 to 8 decimal digits"),
        (["server: https://sep2.example/dcap", "pen: -40732"], "ieee2030_5.pen", "1 to 8 decimal digits"),
        (["server: https://sep2.example/dcap", "pen: 40x32"], "ieee2030_5.pen", "IANA private enterprise number"),
        (["server: https://sep2.example/dcap", "pen: \"\""], "ieee2030_5.pen", "1 to 8 decimal digits"),
    ] as [([String], String, String)])
    func refused(lines: [String], keyPath: String, message: String) {
        // A file-less line given alone needs the server too.
        let all = lines.contains { $0.hasPrefix("server:") } ? lines : ["server: https://sep2.example/dcap"] + lines
        do {
            _ = try ConfigLoader.parse(Self.yaml(all), file: "e.yaml")
            Issue.record("accepted \(lines)")
        } catch {
            #expect(error.diagnostics.count == 1, "\(error)")
            let first = error.diagnostics.first
            #expect(first?.keyPath == keyPath && first?.code == .invalid && first?.line != nil, "\(error)")
            #expect(first?.message.contains(message) == true, "\(error)")
        }
    }

    @Test("a missing key: server is required")
    func serverRequired() {
        do {
            _ = try ConfigLoader.parse(Self.yaml([]), file: "f.yaml")
            Issue.record("accepted an ieee2030_5 block without server")
        } catch {
            #expect(error.diagnostics.map(\.keyPath) == ["ieee2030_5.server"], "\(error)")
        }
    }

    @Test("the PIN's check digit is the SFDI's: the six digits sum to a multiple of 10")
    func pinCheckDigit() {
        #expect(IEEE2030_5Settings.validPIN(111_115) && IEEE2030_5Settings.validPIN(0) && IEEE2030_5Settings.validPIN(123_455))
        #expect(!IEEE2030_5Settings.validPIN(111_111) && !IEEE2030_5Settings.validPIN(1_111_150))
        #expect(IEEE2030_5Settings.checkDigit(11111) == 5 && IEEE2030_5Settings.checkDigit(12345) == 5)
    }
}
