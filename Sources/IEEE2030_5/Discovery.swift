public import BessBase
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
        /// A `DERCurve` a control's `DERCurveLink` (`opModVoltVar`, `opModWattVar`, `opModVoltWatt`) names.
        case derCurve
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

/// The 2030.5 discovery chain as a pure state machine: it says which GET is due at a monotonic instant,
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
/// Time: `now` is always the caller's monotonic clock. A Time reply anchors the server's
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
    let limits: DiscoveryLimits
    let options: DiscoveryOptions
    /// The path the chain starts from now (the configured one, or where it redirected).
    public internal(set) var entryPath: String
    /// The resources followed and the request in flight.
    var walk: ResourceWalk
    /// Every request held back after a 429, 503, other 5xx or a transport failure.
    var hold: RetryHold
    var redirects = 0
    /// The server's clock: the last Time reply's, else the wall clock passed in.
    var clock = ServerClock()
    /// The `/.well-known/csipaus` document the entry path was chosen from (kept with `documents`).
    var wellKnownDocument: (path: String, body: [UInt8])?
    /// The EndDevice POSTed and where the server put it (in-band registration).
    var inBand = InBandRegistration()
    /// The ConnectionPoint PUT and its read-back.
    var connectionPoint: ConnectionPointWrite
    /// The back-off after a refused write (POST or PUT): no write before its end.
    var writeHold: RetryHold
    /// True while `init(restoring:)` replays documents: nothing is written.
    var restoring = false
    /// The CSIP-AUS namespace the server's EndDevice documents use; the well-known document's choice before.
    public internal(set) var csipaus: CSIPAUSVersion?

    /// Why all traffic stopped (`SEP2_PIN_MISMATCH`), nil while the session runs.
    public internal(set) var stopped: SEP2Error?
    /// The server's `currentTime` minus the wall clock passed with the last Time reply, seconds; nil
    /// until a Time reply came with a `wallClock`.
    public var serverTimeOffset: Int64? { clock.offset }

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
        self.limits = limits
        self.options = options
        walk = ResourceWalk(pollSeconds: pollSeconds, limits: limits)
        hold = RetryHold(limits)
        writeHold = RetryHold(limits)
        connectionPoint = ConnectionPointWrite(limits: limits)
        walk.addRoot(entryPath, due: .distantPast)
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
            inBand.registeredAt = documents.keys.sorted().first { key in
                (try? EndDevice.read(documents[key] ?? []))?.resource.identifies(lfdi: lfdi, sfdi: sfdi) == true
            }
        }
        var steps = 0
        while steps <= documents.count + limits.maximumResources, let request = nextRequest(now: .distantPast), let node = walk.inFlight?.node {
            steps += 1
            if let body = documents[request.path] {
                try? handle(Sep2Reply(status: 200, body: body), to: request, now: .distantPast)
            } else {
                walk.inFlight = nil
                walk.nodes[node]?.due = .distantPast + .nanoseconds(1)
            }
        }
        walk.inFlight = nil
        clock.timeAnchor = nil
        clock.wallAnchor = nil
        restoring = false
        inBand.wanted = nil
        inBand.awaitingListing = false
        for path in Array(walk.nodes.keys) {
            walk.nodes[path]?.due = .distantPast
            walk.nodes[path]?.restartPass()
        }
    }

    /// The request due at `now` (monotonic), nil when none is (back-off, every resource read
    /// within its poll rate, or `stopped`). Until its outcome is handed back the same request is returned.
    public mutating func nextRequest(now: MonotonicInstant) -> Sep2Request? {
        guard stopped == nil else { return nil }
        if let inFlight = walk.inFlight { return inFlight.request }
        if hold.holds(at: now) { return nil }
        guard let next = wantedWrite(now: now) ?? walk.dueRead(at: now) else { return nil }
        walk.inFlight = next
        return next.request
    }

    /// The monotonic instant the next request is due (its resource's poll, or the back-off's end),
    /// nil when `stopped`.
    public var nextDue: MonotonicInstant? {
        guard stopped == nil else { return nil }
        guard var earliest = walk.earliestDue else { return nil }
        if hasWrite { earliest = min(earliest, writeHold.due) }
        if readBackWanted { earliest = min(earliest, max(writeHold.due, connectionPoint.readHold.due)) }
        return max(earliest, hold.due)
    }

    /// The outcome of a transport failure (connection refused, TLS, timeout) for the request in
    /// flight: it is asked for again after the back-off (2, 4, 8 … 300 s).
    public mutating func handleFailure(now: MonotonicInstant) {
        guard stopped == nil, let current = walk.inFlight else { return }
        walk.nodes[current.node]?.tried = true
        walk.inFlight = nil
        hold.fail(at: now)
    }

    /// The server's `reply` to `request` at `now` (monotonic); `wallClock`, the local wall clock
    /// (seconds since the Unix epoch) when the reply came, sets `serverTimeOffset` from a Time reply.
    /// Throws the reply's refusal (`SEP2_HTTP_STATUS`, a document's code, `SEP2_END_DEVICE_UNKNOWN`,
    /// `SEP2_PIN_MISMATCH`…) after the session has taken it into account: the caller logs it, nothing more.
    public mutating func handle(_ reply: Sep2Reply, to request: Sep2Request, now: MonotonicInstant, wallClock: Int64? = nil) throws(SEP2Error) {
        guard stopped == nil, let current = walk.inFlight, current.request == request, walk.nodes[current.node] != nil else { return }
        walk.inFlight = nil
        let path = current.node
        walk.nodes[path]?.tried = true
        if let wallClock { clock.wallAnchor = (wallClock, now) }
        if request.purpose == .registerEndDevice || request.purpose == .connectionPoint {
            try handleWrite(reply, to: request, parent: path, now: now)
            return
        }
        let atEntry = walk.nodes[path]?.kind == .deviceCapability && path == entryPath
        switch reply.status {
        case 200...299 where atEntry && WellKnownCSIPAUS.isJSON(reply.body):
            hold.reset()
            let chosen: WellKnownCSIPAUS
            do { chosen = try WellKnownCSIPAUS.read(reply.body) } catch {
                walk.reschedule(path, now: now)
                throw error
            }
            try redirect(from: path, now: now, code: .wellKnownInvalid) { () throws(SEP2Error) in chosen.deviceCapabilityPath }
            wellKnownDocument = (request.path, reply.body)
            csipaus = csipaus ?? chosen.version
        case 200...299:
            hold.reset()
            do {
                try accept(reply.body, key: request.path, node: path, now: now, wallClock: wallClock)
            } catch {
                if error.code != .pinMismatch, walk.nodes[path] != nil { walk.reschedule(path, now: now) }
                throw error
            }
        case 300...399 where reply.location != nil && atEntry:
            try redirect(from: path, now: now, code: .httpStatus) { () throws(SEP2Error) in
                try SEP2Href.check(reply.location ?? "", "the Location of \(quoted(request.path, limit: 64))")
            }
        case 429, 503, 500...599:
            try backOff(reply, to: request, "", now: now)
        default:
            hold.reset()
            walk.reschedule(path, now: now)
            if walk.nodes[path]?.kind == .endDevice, path == inBand.registeredAt {
                // The EndDevice is no longer where the server put it: registered afresh at the list's next read.
                inBand.registeredAt = nil
            }
            throw SEP2Error(.httpStatus, message: "HTTP \(reply.status) for \(quoted(request.path, limit: 64))")
        }
    }

    /// The entry path moved from `path` to `location` (a redirect's, or the well-known document's choice);
    /// past `maximumRedirects` (the refusal is `code`) or a location refused, the entry is read again at
    /// its poll rate.
    mutating func redirect(from path: String, now: MonotonicInstant, code: SEP2ErrorCode,
                           to target: () throws(SEP2Error) -> String) throws(SEP2Error) {
        let location: String
        do throws(SEP2Error) {
            guard redirects < limits.maximumRedirects else {
                throw SEP2Error(code, message: "more than \(limits.maximumRedirects) redirects from the entry path")
            }
            location = try target()
        } catch {
            walk.reschedule(path, now: now)
            throw error
        }
        redirects += 1
        walk.detach(path, from: nil)
        entryPath = location
        walk.addRoot(location, due: now)
    }

    /// A 429 or 503 holds every request back for its `Retry-After` (held to 1…3600 s) or else the
    /// back-off; another 5xx for the back-off. Throws the refusal, with the wait.
    mutating func backOff(_ reply: Sep2Reply, to request: Sep2Request, _ what: String, now: MonotonicInstant) throws(SEP2Error) {
        let delay = hold.fail(at: now, retryAfter: reply.status == 429 || reply.status == 503 ? reply.retryAfterSeconds : nil, rule: .replaces)
        throw SEP2Error(.httpStatus, message: "HTTP \(reply.status) for \(what)\(quoted(request.path, limit: 64)); nothing asked for \(delay) s")
    }

    /// The server's clock at monotonic `now`: the last Time reply's `currentTime` plus the whole
    /// monotonic seconds since; nil before a Time reply.
    public func serverTime(now: MonotonicInstant) -> Int64? { clock.serverTime(now: now) }

    /// Every resource of the chain read at least once since it was (re)discovered: the EndDevice found,
    /// its Registration agreed, and each list below it read to its `all` (Time, the DERList and the
    /// curves are not needed for it). Never while `stopped`.
    public var complete: Bool {
        guard stopped == nil, let mine = endDevice else { return false }
        if let assignments = mine.functionSetAssignmentsListLink, walk.nodes[assignments] == nil { return false }
        // A curve asked for once and not had (an error, a refusal) does not hold the schedule back: its
        // control is not applied until it is read (`DERControlBase.curves(in:varScale:)`), the rest taken.
        return walk.nodes.values.allSatisfy { $0.kind == .time || $0.kind == .derList || $0.read || ($0.kind == .derCurve && $0.tried) }
    }

    /// The path of this device's EndDevice, nil until found.
    public var endDevicePath: String? { endDevice?.href }

    /// Path → the last good body of every resource read (each page of a list under its own path and
    /// query), for the durable store; a resource dropped takes its documents with it.
    public var documents: [String: [UInt8]] {
        guard let wellKnownDocument else { return walk.store }
        var out = walk.store
        out[wellKnownDocument.path] = wellKnownDocument.body
        return out
    }
}

extension MonotonicInstant {
    /// Before any instant a clock gives: a resource due at once, a write never held back.
    static let distantPast = MonotonicInstant(nanoseconds: .min)
}
