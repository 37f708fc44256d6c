import BessSystem
import Glibc
import Testing

@Suite("UnixSocketAddress: the one sockaddr_un builder")
struct UnixSocketAddressTests {
    /// The path bytes of `address` up to `length`, after the family.
    static func pathBytes(_ address: UnixSocketAddress) -> [UInt8] {
        withUnsafeBytes(of: address.storage.sun_path) { Array($0.prefix(Int(address.length) - MemoryLayout<sa_family_t>.size)) }
    }

    @Test("a file path: family, path, terminator; `@` stays a character unless asked")
    func filePath() throws {
        let address = try #require(UnixSocketAddress(path: "/run/bessd/control.sock"))
        #expect(address.storage.sun_family == sa_family_t(AF_UNIX))
        #expect(Self.pathBytes(address) == Array("/run/bessd/control.sock".utf8) + [0])
        let at = try #require(UnixSocketAddress(path: "@notify"))
        #expect(Self.pathBytes(at) == Array("@notify".utf8) + [0])
    }

    @Test("`@` names the abstract namespace when asked: a leading zero byte, no terminator")
    func abstract() throws {
        let address = try #require(UnixSocketAddress(path: "@bessd/notify", abstractWhenAt: true))
        #expect(Self.pathBytes(address) == [0] + Array("bessd/notify".utf8))
    }

    @Test("a path that does not fit with its terminator is refused", arguments: [107, 108, 200])
    func tooLong(count: Int) {
        #expect((UnixSocketAddress(path: String(repeating: "p", count: count)) == nil) == (count >= 108))
    }

    @Test("connect reaches a listening socket and fails on a path nobody listens on")
    func connects() throws {
        let path = "/tmp/bess-unix-address-\(getpid()).sock"
        unlink(path)
        defer { unlink(path) }
        let address = try #require(UnixSocketAddress(path: path))
        let client = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(client) }
        #expect(address.connect(client) != 0)
        let server = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(server) }
        #expect(address.withSockaddr { bind(server, $0, $1) } == 0)
        #expect(listen(server, 1) == 0)
        let second = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(second) }
        #expect(address.connect(second) == 0)
    }
}
