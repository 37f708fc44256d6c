import ControlCore

/// What a resource's last good pass read.
enum DiscoveryPayload: Hashable, Sendable {
    case none
    case deviceCapability(DeviceCapability)
    case time(SEP2Time)
    case endDevices([EndDevice])
    case registration(Registration)
    case assignments([FunctionSetAssignments])
    case programs([DERProgram])
    case controls([DERControl])
    case defaultControl(DefaultDERControl)
    case curve(DERCurve)
    case ders([DER])

    /// One page (or single resource) read: its payload, the list's `all` (nil for a single resource), its
    /// items, its `pollRate`, and the CSIP-AUS namespace an EndDevice document used.
    struct Page {
        var payload: DiscoveryPayload
        var all: UInt32?
        var items: Int
        var poll: UInt32?
        var csipaus: CSIPAUSVersion?
    }

    /// The page `body` of a resource of `kind`; a document refused is its coded error.
    static func read(_ kind: Sep2Request.Purpose, _ body: [UInt8]) throws(SEP2Error) -> Page {
        switch kind {
        case .deviceCapability:
            let read = try DeviceCapability.read(body).resource
            return Page(payload: .deviceCapability(read), items: 1, poll: read.pollRate)
        case .time:
            let read = try SEP2Time.read(body).resource
            return Page(payload: .time(read), items: 1, poll: read.pollRate)
        case .endDeviceList:
            let document = try EndDeviceList.read(body)
            let read = document.resource
            return Page(payload: .endDevices(read.endDevices), all: read.all, items: read.endDevices.count, poll: read.pollRate,
                        csipaus: document.csipaus)
        case .endDevice:
            let document = try EndDevice.read(body)
            return Page(payload: .endDevices([document.resource]), items: 1, csipaus: document.csipaus)
        case .registration:
            let read = try Registration.read(body).resource
            return Page(payload: .registration(read), items: 1, poll: read.pollRate)
        case .fsaList:
            let read = try FunctionSetAssignmentsList.read(body).resource
            return Page(payload: .assignments(read.assignments), all: read.all, items: read.assignments.count, poll: read.pollRate)
        case .derProgramList:
            let read = try DERProgramList.read(body).resource
            return Page(payload: .programs(read.programs), all: read.all, items: read.programs.count,
                        poll: min(read.pollRate, UInt32(sep2RateRange.upperBound)))
        case .derControlList:
            let read = try DERControlList.read(body).resource
            return Page(payload: .controls(read.controls), all: read.all, items: read.items)
        case .defaultDERControl:
            return Page(payload: .defaultControl(try DefaultDERControl.read(body).resource), items: 1)
        case .derCurve:
            return Page(payload: .curve(try DERCurve.read(body).resource), items: 1)
        case .derList:
            let read = try DERList.read(body).resource
            return Page(payload: .ders(read.ders), all: read.all, items: read.ders.count, poll: read.pollRate)
        case .post, .registerEndDevice, .connectionPoint:
            return Page(payload: .none, items: 0)
        }
    }

    /// The pages of one pass as one payload.
    static func merged(_ pages: [DiscoveryPayload]) -> DiscoveryPayload {
        guard let first = pages.first else { return .none }
        func all<T>(_ pick: (DiscoveryPayload) -> [T]?) -> [T] { pages.flatMap { pick($0) ?? [] } }
        switch first {
        case .endDevices: return .endDevices(all { if case .endDevices(let x) = $0 { x } else { nil } })
        case .assignments: return .assignments(all { if case .assignments(let x) = $0 { x } else { nil } })
        case .programs: return .programs(all { if case .programs(let x) = $0 { x } else { nil } })
        case .controls: return .controls(all { if case .controls(let x) = $0 { x } else { nil } })
        case .ders: return .ders(all { if case .ders(let x) = $0 { x } else { nil } })
        default: return first
        }
    }
}

/// One resource a `DiscoverySession` follows.
struct DiscoveryNode: Sendable {
    var kind: Sep2Request.Purpose
    var path: String
    /// The resources whose links lead here (none for the entry path).
    var parents: Set<String>
    var serial: Int
    var due: MonotonicInstant
    /// The `pollRate` of its own last document.
    var ownPoll: UInt32?
    var committed = DiscoveryPayload.none
    var read = false
    /// An answer (or a transport failure) came for it at least once: a curve tried and not had does not
    /// hold the schedule back (`DiscoverySession.complete`).
    var tried = false
    /// The request paths of its committed documents.
    var documentKeys: [String] = []
    // The pass over a list's pages under way.
    var pageStart: UInt32 = 0
    var pageAll: UInt32 = 0
    var pages = 0
    var restarts = 0
    var pending: [DiscoveryPayload] = []
    var pendingDocuments: [(key: String, body: [UInt8])] = []

    mutating func restartPass() {
        pageStart = 0
        pages = 0
        pending = []
        pendingDocuments = []
    }
}
