import BessBase
import BessSystem
import Testing

@Suite("ListenAddress: the one IPV4:PORT parser")
struct ListenAddressTests {
    @Test("IPV4:PORT gives the host as written, the address and the port")
    func parses() throws {
        let listen = try #require(ListenAddress("10.1.2.3:2404"))
        #expect(listen.host == "10.1.2.3")
        #expect(listen.address == 0x0A01_0203)
        #expect(listen.port == 2404)
        #expect(listen.description == "10.1.2.3:2404")
    }

    @Test("port 0 only where the caller allows the kernel's choice")
    func portZero() {
        #expect(ListenAddress("127.0.0.1:0") == nil)
        #expect(ListenAddress("127.0.0.1:0", allowsPortZero: true)?.port == 0)
    }

    @Test("not IPV4:PORT is refused", arguments: ["localhost:502", "1.2.3:502", "1.2.3.256:502", "1.2.3.4", "1.2.3.4:65536",
                                                  "1.2.3.4:x", "[::1]:502", "", "1.2.3.4:5:6"])
    func refuses(text: String) {
        #expect(ListenAddress(text, allowsPortZero: true) == nil)
    }

    @Test("dotted quad round trip")
    func dotted() {
        #expect(ListenAddress.dotted(0xC0A8_0001) == "192.168.0.1")
        #expect(ListenAddress.dottedQuad("192.168.0.1") == 0xC0A8_0001)
        #expect(ListenAddress.dottedQuad("192.168..1") == nil)
    }
}
