public import ControlCore

/// One HTTP request the 2030.5 client is to send: what `DiscoverySession.nextRequest` returns and the
/// reporting writers address.
public struct Sep2Request: Hashable, Sendable {
    /// The HTTP method.
    public enum Method: String, Sendable {
        /// `GET`.
        case get = "GET"
        /// `POST`.
        case post = "POST"
        /// `PUT`.
        case put = "PUT"
    }

    /// What the request is for: the resource of the discovery chain it reads, or a report it posts.
    public enum Purpose: Hashable, Sendable {
        /// `DeviceCapability` (the entry path).
        case deviceCapability
        /// `Time`.
        case time
        /// A page of `EndDeviceList`.
        case endDeviceList
        /// `Registration`.
        case registration
        /// A page of `FunctionSetAssignmentsList`.
        case fsaList
        /// A page of a `DERProgramList`.
        case derProgramList
        /// A page of a program's `DERControlList`.
        case derControlList
        /// A program's `DefaultDERControl`.
        case defaultDERControl
        /// A page of the device's `DERList`.
        case derList
        /// This device's `EndDevice` where the server's answer to its registration put it (`Location`).
        case endDevice
        /// The `EndDevice` POSTed to the EndDeviceList (in-band registration).
        case registerEndDevice
        /// The `csipaus:ConnectionPoint` PUT to the EndDevice's `ConnectionPointLink`.
        case connectionPoint
        /// A report (a Response, a DER resource, a mirror reading), named by its writer.
        case post(String)

        /// Whether the resource is a list read in pages (`?s=&l=`).
        var isList: Bool {
            switch self {
            case .endDeviceList, .fsaList, .derProgramList, .derControlList, .derList: true
            default: false
            }
        }
    }

    /// The method.
    public var method: Method
    /// The absolute path on the server, the paging query (`?s=0&l=16`) included.
    public var path: String
    /// The body (empty for GET).
    public var body: [UInt8]
    /// What the request is for.
    public var purpose: Purpose

    /// A request.
    public init(method: Method = .get, path: String, body: [UInt8] = [], purpose: Purpose) {
        self.method = method
        self.path = path
        self.body = body
        self.purpose = purpose
    }
}

/// The server's answer to a `Sep2Request`, as the transport hands it to the session.
public struct Sep2Reply: Hashable, Sendable {
    /// The HTTP status.
    public var status: Int
    /// `Retry-After` as delta-seconds, nil when absent (or an HTTP date).
    public var retryAfterSeconds: UInt32?
    /// `Location`, nil when absent.
    public var location: String?
    /// The body.
    public var body: [UInt8]

    /// A reply.
    public init(status: Int, retryAfterSeconds: UInt32? = nil, location: String? = nil, body: [UInt8] = []) {
        self.status = status
        self.retryAfterSeconds = retryAfterSeconds
        self.location = location
        self.body = body
    }
}

/// The bounds of one `DiscoverySession`: past any of them the list or reply is refused with a coded error.
public struct DiscoveryLimits: Hashable, Sendable {
    /// Items asked for per page (`l`).
    public var pageSize: UInt32 = 16
    /// The largest `all` a list may have (`SEP2_LIST_TOO_LONG` beyond).
    public var maximumListAll: UInt32 = 256
    /// Pages read for one pass over a list (`SEP2_LIST_TOO_LONG` beyond).
    public var maximumPages = 32
    /// Resources the session follows at once (`SEP2_LIST_TOO_LONG` beyond).
    public var maximumResources = 512
    /// Redirects followed from the entry path (`/.well-known/csipaus` → the DeviceCapability).
    public var maximumRedirects = 4
    /// The `Retry-After` of a 429 or 503 honoured, seconds (held to this range).
    public var retryAfter: ClosedRange<UInt32> = 1...3600
    /// The exponential back-off after other 5xx and transport failures: its first and longest delay, seconds.
    public var backoff: ClosedRange<UInt32> = 2...300

    /// The defaults.
    public init() {}
}

/// What the session writes besides reading the chain.
public struct DiscoveryOptions: Hashable, Sendable {
    /// In-band registration: when the EndDeviceList does not hold this device, its `EndDevice` is POSTed
    /// to the list (`registration: in_band`); out of band a missing device is `SEP2_END_DEVICE_UNKNOWN`.
    public var inBandRegistration = false
    /// The `deviceCategory` of the EndDevice POSTed.
    public var deviceCategory = DeviceCategory.otherStorageSystem
    /// The connection point id PUT to the EndDevice's `csipaus:ConnectionPointLink` (nil: none).
    public var connectionPointId: String?

    /// Options: out-of-band registration and no connection point unless given.
    public init(inBandRegistration: Bool = false, deviceCategory: UInt32 = DeviceCategory.otherStorageSystem, connectionPointId: String? = nil) {
        self.inBandRegistration = inBandRegistration
        self.deviceCategory = deviceCategory
        self.connectionPointId = connectionPointId
    }
}

/// The 2030.5 discovery chain as a pure state machine: it says which GET is due at a monotonic second,
/// takes the server's replies, and keeps the last good state of every resource it read.
///
/// The chain: DeviceCapability (the entry path; or `/.well-known/csipaus`, whose JSON names the
/// DeviceCapability of each CSIP-AUS version, v1.3 then v1.2 chosen: `WellKnownCSIPAUS`) → Time and
/// EndDeviceList (this device found by LFDI, or by SFDI where the EndDevice has no lFDI; with in-band
/// registration a device the list lacks POSTs its `EndDevice` there and goes on from the `Location` of
/// the answer, or from the list read again) → Registration (when a PIN is configured it is checked
/// before anything below is asked for: a wrong `pIN` sets `stopped` to `SEP2_PIN_MISMATCH` and no request
/// is ever due again) → FunctionSetAssignmentsList → each assignment's DERProgramList → each program's
/// DERControlList and DefaultDERControl; the EndDevice's DERList beside them. Lists are read in pages of
/// `?s=<start>&l=<pageSize>` until `all` items are in, within `DiscoveryLimits`. With a connection
/// point id configured, the `csipaus:ConnectionPoint` is PUT to the EndDevice's link once the
/// Registration agreed, and again after each new registration or when the link changes. A refused
/// write (4xx) is `SEP2_REGISTRATION_REFUSED` and is sent again after the back-off (2, 4 … 300 s);
/// reads go on meanwhile.
///
/// Each resource is read again at its poll rate: its own `pollRate` attribute, else the nearest
/// ancestor's, else the configured `pollSeconds`; a change the server makes is followed from the next
/// read. A FunctionSetAssignmentsList or DERProgramList that reads differently from its last good pass
/// drops every resource under it and reads them afresh (no href is kept across a change of
/// assignments); a link that disappears drops what was under it.
///
/// Failures keep the last good state: a 429 or 503 holds every request back for its `Retry-After`
/// (1…3600 s) or else the back-off; other 5xx and `handleFailure(now:)` (a transport error or timeout)
/// back off 2, 4, 8 … 300 s; a document refused or another 4xx is asked for again at its poll rate.
///
/// Time: `now` is always the caller's monotonic clock in seconds. A Time reply anchors the server's
/// clock to it, so `serverTime(now:)` counts on from the server's `currentTime` by the monotonic clock
/// (a step of the local wall clock moves nothing); `serverTimeOffset` is the server's `currentTime`
/// minus the `wallClock` the caller passed to `handle` with that reply (nil when it passed none).
///
/// One request is in flight at a time: `nextRequest` returns it until `handle` or `handleFailure` takes
/// its outcome; a reply to any other request is ignored.
public struct DiscoverySession: Sendable {
    let lfdi: String
    let sfdi: UInt64
    let pin: UInt32?
    let pollSeconds: UInt32
    let limits: DiscoveryLimits
    let options: DiscoveryOptions
    /// The path the chain starts from now (the configured one, or where it redirected).
    public internal(set) var entryPath: String
    var nodes: [String: Node] = [:]
    var serial = 0
    var inFlight: (request: Sep2Request, node: String)?
    var backoffUntil: Int64?
    var failures = 0
    var redirects = 0
    var timeAnchor: (serverTime: Int64, monotonic: Int64)?
    var store: [String: [UInt8]] = [:]
    /// The `/.well-known/csipaus` document the entry path was chosen from (kept with `documents`).
    var wellKnownDocument: (path: String, body: [UInt8])?
    /// The EndDeviceList whose lack of this device asks for a POST (in-band registration).
    var registrationWanted: String?
    /// Where the server put the EndDevice POSTed (its `Location`), followed while the list lacks it.
    var registeredAt: String?
    /// A POST answered without a `Location`: the list is read again at once to find the device.
    var awaitingListing = false
    /// The ConnectionPointLink the connection point id was last PUT to.
    var connectionPointPut: String?
    /// The EndDevice was read again since the PUT: the ConnectionPoint is read back (and PUT again when the
    /// server's id is not the configured one, or it is gone).
    var connectionPointCheck = false
    /// The read-back's own back-off after a 429 or 5xx (2, 4 … 300 s; the reads go on meanwhile): not
    /// before this monotonic second, and the failures in a row. A 2xx, 404 or 410 ends it.
    var connectionPointReadDue: Int64 = .min
    var connectionPointReadFailures = 0
    /// The server answered the read-back 405: it does not offer a GET there; never read back again.
    var connectionPointReadOffered = true
    /// No write before this monotonic second (the back-off after a refused one), and the refusals in a row.
    var writeDue: Int64 = .min
    var writeFailures = 0
    /// True while `init(restoring:)` replays documents: nothing is written.
    var restoring = false
    /// The local wall clock at a monotonic second (the last reply that came with one).
    var wallAnchor: (wall: Int64, monotonic: Int64)?
    /// The CSIP-AUS namespace the server's EndDevice documents use; the well-known document's choice before.
    public internal(set) var csipaus: CSIPAUSVersion?

    /// Why all traffic stopped (`SEP2_PIN_MISMATCH`), nil while the session runs.
    public internal(set) var stopped: SEP2Error?
    /// The server's `currentTime` minus the wall clock passed with the last Time reply, seconds; nil
    /// until a Time reply came with a `wallClock`.
    public internal(set) var serverTimeOffset: Int64?

    /// A session that starts at `entryPath` (the DeviceCapability's path, or `/.well-known/csipaus`,
    /// whose redirect is followed) for the device of `lfdi` (40 hex digits) and `sfdi`; `pin` is
    /// checked against the Registration's `pIN` (nil: no check); `pollSeconds` is the poll rate where
    /// the server names none.
    public init(entryPath: String, lfdi: String, sfdi: UInt64, pin: UInt32?, pollSeconds: UInt32, limits: DiscoveryLimits = DiscoveryLimits(),
                options: DiscoveryOptions = DiscoveryOptions()) {
        self.entryPath = entryPath
        self.lfdi = lfdi
        self.sfdi = sfdi
        self.pin = pin
        self.pollSeconds = max(1, pollSeconds)
        self.limits = limits
        self.options = options
        addRoot(entryPath, due: .min)
    }

    /// A session rebuilt from `documents` (what `documents` held, kept durably): the chain is read
    /// from them as if the server had answered, so `programs` holds the cached schedule at once, and
    /// every resource is due for a fresh read on the first `nextRequest`. A document missing or refused
    /// leaves what is under it unread; a stored Registration whose `pIN` is not `pin` stops the session.
    public init(entryPath: String, lfdi: String, sfdi: UInt64, pin: UInt32?, pollSeconds: UInt32,
                limits: DiscoveryLimits = DiscoveryLimits(), options: DiscoveryOptions = DiscoveryOptions(), restoring documents: [String: [UInt8]]) {
        self.init(entryPath: entryPath, lfdi: lfdi, sfdi: sfdi, pin: pin, pollSeconds: pollSeconds, limits: limits, options: options)
        restoring = true
        if options.inBandRegistration {
            // An EndDevice registered in band may be found only where the server put it.
            registeredAt = documents.keys.sorted().first { key in
                (try? EndDevice.read(documents[key] ?? []))?.resource.identifies(lfdi: lfdi, sfdi: sfdi) == true
            }
        }
        var steps = 0
        while steps <= documents.count + limits.maximumResources, let request = nextRequest(now: .min), let node = inFlight?.node {
            steps += 1
            if let body = documents[request.path] {
                try? handle(Sep2Reply(status: 200, body: body), to: request, now: .min)
            } else {
                inFlight = nil
                nodes[node]?.due = .min + 1
            }
        }
        inFlight = nil
        timeAnchor = nil
        wallAnchor = nil
        restoring = false
        registrationWanted = nil
        awaitingListing = false
        for path in Array(nodes.keys) {
            nodes[path]?.due = .min
            nodes[path]?.restartPass()
        }
    }

    /// The request due at `now` (monotonic seconds), nil when none is (back-off, every resource read
    /// within its poll rate, or `stopped`). Until its outcome is handed back the same request is returned.
    public mutating func nextRequest(now: Int64) -> Sep2Request? {
        guard stopped == nil else { return nil }
        if let inFlight { return inFlight.request }
        if let backoffUntil, now < backoffUntil { return nil }
        if let write = wantedWrite(now: now) {
            inFlight = write
            return write.request
        }
        var chosen: Node?
        for node in nodes.values where node.due <= now {
            if let best = chosen, (best.due, best.serial) <= (node.due, node.serial) { continue }
            chosen = node
        }
        guard let node = chosen else { return nil }
        var path = node.path
        if node.kind.isList {
            path += (path.contains("?") ? "&" : "?") + "s=\(node.pageStart)&l=\(limits.pageSize)"
        }
        let request = Sep2Request(method: .get, path: path, purpose: node.kind)
        inFlight = (request, node.path)
        return request
    }

    /// The monotonic second the next request is due (its resource's poll, or the back-off's end),
    /// nil when `stopped`.
    public var nextDue: Int64? {
        guard stopped == nil else { return nil }
        guard var earliest = nodes.values.map(\.due).min() else { return nil }
        if hasWrite { earliest = min(earliest, writeDue) }
        if readBackWanted { earliest = min(earliest, max(writeDue, connectionPointReadDue)) }
        return max(earliest, backoffUntil ?? .min)
    }

    /// The outcome of a transport failure (connection refused, TLS, timeout) for the request in
    /// flight: it is asked for again after the back-off (2, 4, 8 … 300 s).
    public mutating func handleFailure(now: Int64) {
        guard stopped == nil, inFlight != nil else { return }
        inFlight = nil
        backOff(now: now, retryAfter: nil, honourRetryAfter: false)
    }

    /// The server's `reply` to `request` at `now` (monotonic seconds); `wallClock`, the local wall clock
    /// (seconds since the Unix epoch) when the reply came, sets `serverTimeOffset` from a Time reply.
    /// Throws the reply's refusal (`SEP2_HTTP_STATUS`, a document's code, `SEP2_END_DEVICE_UNKNOWN`,
    /// `SEP2_PIN_MISMATCH`…) after the session has taken it into account: the caller logs it, nothing more.
    public mutating func handle(_ reply: Sep2Reply, to request: Sep2Request, now: Int64, wallClock: Int64? = nil) throws(SEP2Error) {
        guard stopped == nil, let current = inFlight, current.request == request, nodes[current.node] != nil else { return }
        inFlight = nil
        let path = current.node
        if let wallClock { wallAnchor = (wallClock, now) }
        if request.purpose == .registerEndDevice || request.purpose == .connectionPoint {
            try handleWrite(reply, to: request, parent: path, now: now)
            return
        }
        switch reply.status {
        case 200...299 where nodes[path]?.kind == .deviceCapability && path == entryPath && WellKnownCSIPAUS.isJSON(reply.body):
            failures = 0
            backoffUntil = nil
            let chosen: WellKnownCSIPAUS
            do { chosen = try WellKnownCSIPAUS.read(reply.body) } catch {
                reschedule(path, now: now)
                throw error
            }
            guard redirects < limits.maximumRedirects else {
                reschedule(path, now: now)
                throw SEP2Error(.wellKnownInvalid, message: "more than \(limits.maximumRedirects) redirects from the entry path")
            }
            redirects += 1
            detach(path, from: nil)
            wellKnownDocument = (request.path, reply.body)
            csipaus = csipaus ?? chosen.version
            entryPath = chosen.deviceCapabilityPath
            addRoot(chosen.deviceCapabilityPath, due: now)
        case 200...299:
            failures = 0
            backoffUntil = nil
            do {
                try accept(reply.body, key: request.path, node: path, now: now, wallClock: wallClock)
            } catch {
                if error.code != .pinMismatch, nodes[path] != nil { reschedule(path, now: now) }
                throw error
            }
        case 300...399 where reply.location != nil && nodes[path]?.kind == .deviceCapability && path == entryPath:
            guard redirects < limits.maximumRedirects else {
                reschedule(path, now: now)
                throw SEP2Error(.httpStatus, message: "more than \(limits.maximumRedirects) redirects from the entry path")
            }
            let location: String
            do { location = try SEP2Href.check(reply.location ?? "", "the Location of \(quoted(request.path, limit: 64))") } catch {
                reschedule(path, now: now)
                throw error
            }
            redirects += 1
            detach(path, from: nil)
            entryPath = location
            addRoot(location, due: now)
        case 429, 503:
            backOff(now: now, retryAfter: reply.retryAfterSeconds, honourRetryAfter: true)
            throw SEP2Error(.httpStatus, message: "HTTP \(reply.status) for \(quoted(request.path, limit: 64)); nothing asked for \(backoffUntil.map { $0 - now } ?? 0) s")
        case 500...599:
            backOff(now: now, retryAfter: nil, honourRetryAfter: false)
            throw SEP2Error(.httpStatus, message: "HTTP \(reply.status) for \(quoted(request.path, limit: 64)); nothing asked for \(backoffUntil.map { $0 - now } ?? 0) s")
        default:
            failures = 0
            backoffUntil = nil
            reschedule(path, now: now)
            if nodes[path]?.kind == .endDevice, path == registeredAt {
                // The EndDevice is no longer where the server put it: registered afresh at the list's next read.
                registeredAt = nil
            }
            throw SEP2Error(.httpStatus, message: "HTTP \(reply.status) for \(quoted(request.path, limit: 64))")
        }
    }

    /// The server's clock at monotonic `now`: the last Time reply's `currentTime` plus the monotonic
    /// seconds since; nil before a Time reply.
    public func serverTime(now: Int64) -> Int64? {
        timeAnchor.map { EventRules.clampedSum($0.serverTime, Self.clampedDifference(now, $0.monotonic)) }
    }

    /// `a − b`, held at the nearer bound where it would overflow.
    static func clampedDifference(_ a: Int64, _ b: Int64) -> Int64 {
        let (difference, overflow) = a.subtractingReportingOverflow(b)
        return overflow ? (b < 0 ? .max : .min) : difference
    }

    /// Every resource of the chain read at least once since it was (re)discovered: the EndDevice found,
    /// its Registration agreed, and each list below it read to its `all` (Time and the DERList are not
    /// needed for it). Never while `stopped`.
    public var complete: Bool {
        guard stopped == nil, let mine = endDevice else { return false }
        if let assignments = mine.functionSetAssignmentsListLink, nodes[assignments] == nil { return false }
        return nodes.values.allSatisfy { $0.kind == .time || $0.kind == .derList || $0.read }
    }

    /// The path of this device's EndDevice, nil until found.
    public var endDevicePath: String? { endDevice?.href }

    /// Path → the last good body of every resource read (each page of a list under its own path and
    /// query), for the durable store; a resource dropped takes its documents with it.
    public var documents: [String: [UInt8]] {
        guard let wellKnownDocument else { return store }
        var out = store
        out[wellKnownDocument.path] = wellKnownDocument.body
        return out
    }
}

extension DiscoverySession {
    /// What a resource's last good pass read.
    enum Payload: Hashable, Sendable {
        case none
        case deviceCapability(DeviceCapability)
        case time(SEP2Time)
        case endDevices([EndDevice])
        case registration(Registration)
        case assignments([FunctionSetAssignments])
        case programs([DERProgram])
        case controls([DERControl])
        case defaultControl(DefaultDERControl)
        case ders([DER])
    }

    /// One resource the session follows.
    struct Node: Sendable {
        var kind: Sep2Request.Purpose
        var path: String
        /// The resources whose links lead here (none for the entry path).
        var parents: Set<String>
        var serial: Int
        var due: Int64
        /// The `pollRate` of its own last document.
        var ownPoll: UInt32?
        var committed = Payload.none
        var read = false
        /// The request paths of its committed documents.
        var documentKeys: [String] = []
        // The pass over a list's pages under way.
        var pageStart: UInt32 = 0
        var pageAll: UInt32 = 0
        var pages = 0
        var restarts = 0
        var pending: [Payload] = []
        var pendingDocuments: [(key: String, body: [UInt8])] = []

        mutating func restartPass() {
            pageStart = 0
            pages = 0
            pending = []
            pendingDocuments = []
        }
    }
}
