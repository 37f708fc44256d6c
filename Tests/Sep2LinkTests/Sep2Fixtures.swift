import BessBase
import BessSystem
import ControlCore
import IEEE2030_5
import Sep2Link
import Synchronization

/// A 2030.5 server in the test's process: path → document, or down (every exchange fails as a
/// transport error). Lists are served whole whatever page is asked for.
final class FakeSep2Server: Sep2Transport, @unchecked Sendable {
    private let guarded = Mutex<(documents: [String: String], down: Bool, requests: [String])>(([:], false, []))

    init(_ documents: [String: String]) { guarded.withLock { $0.documents = documents } }

    /// Every path asked for, in order.
    var requests: [String] { guarded.withLock { $0.requests } }
    var down: Bool {
        get { guarded.withLock { $0.down } }
        set { guarded.withLock { $0.down = newValue } }
    }

    func set(_ path: String, _ document: String) { guarded.withLock { $0.documents[path] = document } }

    /// Statuses `path` answers before its document, one per request (0: no answer, a transport failure).
    let scripted = Mutex<[String: [Int]]>([:])
    /// The bodies sent with each request other than a GET, in order.
    let posted = Mutex<[(path: String, body: [UInt8])]>([])

    /// The server's clock: `/tm` says this time when set (a test's wall clock), else its fixed document.
    let clock = Mutex<(@Sendable () -> Int64)?>(nil)

    func send(_ request: HTTPRequest) throws(HTTPClientError) -> HTTPResponse {
        let (document, down) = guarded.withLock { state in
            state.requests.append(request.path)
            let path = request.path.split(separator: "?", maxSplits: 1).first.map(String.init) ?? request.path
            return (state.documents[path], state.down)
        }
        if down { throw HTTPClientError(.connect, message: "connection refused (test)") }
        if request.method != "GET" { posted.withLock { $0.append((request.path, request.body)) } }
        let status = scripted.withLock { script -> Int? in script[request.path]?.isEmpty == false ? script[request.path]!.removeFirst() : nil }
        if status == 0 { throw HTTPClientError(.connect, message: "connection reset (test)") }
        if let status { return HTTPResponse(status: status) }
        let now = request.path == "/tm" ? clock.withLock { $0 }?() : nil
        guard let document = now.map(Sep2Fixture.time) ?? document else { return HTTPResponse(status: 404) }
        return HTTPResponse(status: 200, headers: [("Content-Type", "application/sep+xml")], body: Array(document.utf8))
    }

    func close() {}
}

/// The documents of one device's chain: DeviceCapability → Time → EndDevice → Registration → one
/// FunctionSetAssignments → one program (primacy 1) with its controls and default.
enum Sep2Fixture {
    static let ns = #"xmlns="urn:ieee:std:2030.5:ns" xmlns:csipaus="https://csipaus.org/ns/v1.3""#
    /// The device (a fixed hash, no certificate needed).
    static let identity = DeviceIdentity(sha256: [UInt8](repeating: 0x5A, count: 32))
    static let t0: Int64 = 1_795_000_000

    struct Control {
        var mRID: String
        var start: Int64
        var duration: UInt32
        var exportW: Int
        var status: UInt8 = 0
    }

    static func chain(pin: UInt32 = 111_115, serverTime: Int64 = t0, defaultExportW: Int = 5000, controls: [Control]) -> [String: String] {
        [
            "/dcap": #"<DeviceCapability \#(ns) href="/dcap" pollRate="30"><TimeLink href="/tm"/><EndDeviceListLink href="/edev" all="1"/></DeviceCapability>"#,
            "/tm": time(serverTime),
            "/edev": #"<EndDeviceList \#(ns) href="/edev" all="1" results="1"><EndDevice href="/edev/1"><lFDI>\#(identity.lfdi)</lFDI><sFDI>\#(identity.sfdi)</sFDI><changedTime>0</changedTime><FunctionSetAssignmentsListLink href="/edev/1/fsa" all="1"/><RegistrationLink href="/edev/1/rg"/></EndDevice></EndDeviceList>"#,
            "/edev/1/rg": #"<Registration \#(ns) href="/edev/1/rg"><dateTimeRegistered>0</dateTimeRegistered><pIN>\#(pin)</pIN></Registration>"#,
            "/edev/1/fsa": #"<FunctionSetAssignmentsList \#(ns) href="/edev/1/fsa" all="1" results="1"><FunctionSetAssignments href="/edev/1/fsa/1"><mRID>F1</mRID><description>fsa</description><DERProgramListLink href="/derp" all="1"/></FunctionSetAssignments></FunctionSetAssignmentsList>"#,
            "/derp": #"<DERProgramList \#(ns) href="/derp" all="1" results="1" pollRate="30"><DERProgram href="/derp/1"><mRID>B1</mRID><description>p</description><DefaultDERControlLink href="/derp/1/dderc"/><DERControlListLink href="/derp/1/derc" all="\#(controls.count)"/><primacy>1</primacy></DERProgram></DERProgramList>"#,
            "/derp/1/dderc": #"<DefaultDERControl \#(ns) href="/derp/1/dderc"><mRID>D1</mRID><description>d</description><DERControlBase>\#(exportLimit(defaultExportW))</DERControlBase></DefaultDERControl>"#,
            "/derp/1/derc": controlList(controls),
        ]
    }

    static func time(_ t: Int64) -> String {
        #"<Time \#(ns) href="/tm"><currentTime>\#(t)</currentTime><dstEndTime>0</dstEndTime><dstOffset>0</dstOffset><dstStartTime>0</dstStartTime><quality>7</quality><tzOffset>0</tzOffset></Time>"#
    }

    static func exportLimit(_ watts: Int) -> String {
        "<csipaus:opModExpLimW><multiplier>0</multiplier><value>\(watts)</value></csipaus:opModExpLimW>"
    }

    static func controlList(_ controls: [Control]) -> String {
        var out = #"<DERControlList \#(ns) href="/derp/1/derc" all="\#(controls.count)" results="\#(controls.count)">"#
        for c in controls {
            out += "<DERControl><mRID>\(c.mRID)</mRID><description>c</description><creationTime>\(t0 - 1000)</creationTime>"
                + "<EventStatus><currentStatus>\(c.status)</currentStatus><dateTime>\(t0 - 1000)</dateTime><potentiallySuperseded>false</potentiallySuperseded></EventStatus>"
                + "<interval><duration>\(c.duration)</duration><start>\(c.start)</start></interval>"
                + "<DERControlBase>\(exportLimit(c.exportW))</DERControlBase></DERControl>"
        }
        return out + "</DERControlList>"
    }
}

/// Journal lines a client wrote: (code, message, warning).
final class LogLines: @unchecked Sendable {
    private let lines = Mutex<[(code: String, message: String, warning: Bool)]>([])
    var all: [(code: String, message: String, warning: Bool)] { lines.withLock { $0 } }
    func codes(_ code: String) -> [String] { all.filter { $0.code == code }.map(\.message) }
    /// The worker's notices as lines: a warning or worse is `warning`.
    var sink: @Sendable (Notice) -> Void {
        { [self] notice in lines.withLock { $0.append((notice.code ?? "", notice.message, notice.severity >= .warning)) } }
    }
}

extension MonotonicInstant {
    /// The instant `second` whole seconds from the clock's origin: the reporter's tests count whole seconds.
    static func at(_ second: Int64) -> MonotonicInstant { MonotonicInstant(nanoseconds: second * 1_000_000_000) }
}
