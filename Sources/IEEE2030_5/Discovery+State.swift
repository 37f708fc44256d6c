import ControlCore

/// What the session has read, for the worker and the reports.
extension DiscoverySession {
    /// The programs as `EventRules.resolve` takes them: every program of every DERProgramList read
    /// (once per mRID, in discovery order), with its DERControlList's controls and its DefaultDERControl
    /// as last read. Whole only when `complete`.
    public var programs: [ProgramSchedule] {
        var out: [ProgramSchedule] = []
        var seen = Set<String>()
        for node in nodes.values.sorted(by: { $0.serial < $1.serial }) {
            guard case .programs(let list) = node.committed else { continue }
            for program in list where seen.insert(program.mRID).inserted {
                var controls: [DERControl] = []
                if let href = program.controlListHref, case .controls(let read)? = nodes[href]?.committed { controls = read }
                var fallback: DefaultDERControl?
                if let href = program.defaultControlHref, case .defaultControl(let read)? = nodes[href]?.committed { fallback = read }
                out.append(ProgramSchedule(mRID: program.mRID, primacy: program.primacy, controls: controls, defaultControl: fallback))
            }
        }
        return out
    }

    /// The DeviceCapability last read.
    public var deviceCapability: DeviceCapability? {
        guard case .deviceCapability(let read)? = nodes[entryPath]?.committed else { return nil }
        return read
    }

    /// This device's EndDevice as the EndDeviceList (or, registered in band, its `Location`) last gave it.
    public var endDevice: EndDevice? { endDeviceHolder?.device }

    /// This device's EndDevice and the resource that gave it (the list first).
    var endDeviceHolder: (path: String, device: EndDevice)? {
        var found: (path: String, device: EndDevice)?
        for node in nodes.values {
            guard case .endDevices(let list) = node.committed, let mine = list.first(where: { $0.identifies(lfdi: lfdi, sfdi: sfdi) }) else { continue }
            if node.kind == .endDeviceList { return (node.path, mine) }
            found = (node.path, mine)
        }
        return found
    }

    /// The server's Time last read.
    public var time: SEP2Time? {
        for node in nodes.values { if case .time(let read) = node.committed { return read } }
        return nil
    }

    /// The Registration last read.
    public var registration: Registration? {
        for node in nodes.values { if case .registration(let read) = node.committed { return read } }
        return nil
    }

    /// The device's DERs (where its DERCapability, DERSettings, DERStatus and DERAvailability go).
    public var ders: [DER] {
        for node in nodes.values { if case .ders(let read) = node.committed { return read } }
        return []
    }

    /// The assignments of the FunctionSetAssignmentsList last read.
    public var assignments: [FunctionSetAssignments] {
        for node in nodes.values { if case .assignments(let read) = node.committed { return read } }
        return []
    }
}

extension DiscoverySession {
    mutating func addRoot(_ path: String, due: Int64) {
        serial += 1
        nodes[path] = Node(kind: .deviceCapability, path: path, parents: [], serial: serial, due: due)
    }

    /// The poll rate of `path`: its own, else the shortest of its parents', else the configured one.
    func pollRate(_ path: String) -> UInt32 {
        guard let node = nodes[path] else { return pollSeconds }
        if let own = node.ownPoll { return max(1, own) }
        return node.parents.compactMap { nodes[$0] == nil ? nil : pollRate($0) }.min() ?? pollSeconds
    }

    /// The pass over `path` abandoned; asked for again at its poll rate.
    mutating func reschedule(_ path: String, now: Int64) {
        guard nodes[path] != nil else { return }
        let due = EventRules.clampedSum(now, Int64(pollRate(path)))
        nodes[path]?.restartPass()
        nodes[path]?.due = due
    }

    /// Nothing asked for until the `Retry-After` (when honoured and given) or the next step of the
    /// exponential back-off.
    mutating func backOff(now: Int64, retryAfter: UInt32?, honourRetryAfter: Bool) {
        failures = min(failures + 1, 64)
        let delay: UInt32
        if honourRetryAfter, let retryAfter {
            delay = min(max(retryAfter, limits.retryAfter.lowerBound), limits.retryAfter.upperBound)
        } else {
            var step = UInt64(limits.backoff.lowerBound)
            for _ in 1..<failures where step < UInt64(limits.backoff.upperBound) { step *= 2 }
            delay = UInt32(min(step, UInt64(limits.backoff.upperBound)))
        }
        backoffUntil = EventRules.clampedSum(now, Int64(delay))
    }

    /// `path` no longer linked from `parent` (from anywhere when nil): when nothing links to it any more
    /// it goes, with its documents and everything only it led to.
    mutating func detach(_ path: String, from parent: String?) {
        guard var node = nodes[path] else { return }
        if let parent {
            node.parents.remove(parent)
            if !node.parents.isEmpty {
                nodes[path] = node
                return
            }
        }
        nodes[path] = nil
        for key in node.documentKeys { store[key] = nil }
        if inFlight?.node == path { inFlight = nil }
        for child in nodes.values.filter({ $0.parents.contains(path) }).map(\.path) { detach(child, from: path) }
    }

    /// The resources a payload links to, each href checked.
    func children(of kind: Sep2Request.Purpose, _ payload: Payload) throws(SEP2Error) -> [(path: String, kind: Sep2Request.Purpose)] {
        var out: [(path: String, kind: Sep2Request.Purpose)] = []
        func add(_ href: String?, _ kind: Sep2Request.Purpose) {
            if let href, !out.contains(where: { $0.path == href }) { out.append((href, kind)) }
        }
        switch payload {
        case .deviceCapability(let capability):
            add(capability.timeLink, .time)
            add(capability.endDeviceListLink, .endDeviceList)
        case .endDevices(let devices):
            guard let mine = devices.first(where: { $0.identifies(lfdi: lfdi, sfdi: sfdi) }) else {
                // Registered in band where the list does not show it: read it where the server put it.
                if kind == .endDeviceList, let registeredAt { add(registeredAt, .endDevice) }
                break
            }
            add(mine.registrationLink, .registration)
            // With a PIN configured nothing below the EndDevice is asked for before the Registration agreed.
            let registered = pin == nil || mine.registrationLink.map { nodes[$0]?.read == true } ?? true
            if registered {
                add(mine.functionSetAssignmentsListLink, .fsaList)
                add(mine.derListLink, .derList)
            }
        case .assignments(let assignments):
            for assignment in assignments { add(assignment.derProgramListLink, .derProgramList) }
        case .programs(let programs):
            for program in programs {
                if let href = program.controlListHref { add(try SEP2Href.check(href, "DERControlListLink of program \(quoted(program.mRID))"), .derControlList) }
                if let href = program.defaultControlHref { add(try SEP2Href.check(href, "DefaultDERControlLink of program \(quoted(program.mRID))"), .defaultDERControl) }
            }
        default:
            break
        }
        return out
    }

    /// The resources under `parent` brought in line with its last good payload; with `dropAll`, every
    /// one of them read afresh.
    mutating func updateChildren(of parent: String, now: Int64, dropAll: Bool) throws(SEP2Error) {
        guard let node = nodes[parent] else { return }
        let wanted = try children(of: node.kind, node.committed)
        if !dropAll {
            // A resource still wanted here is kept even when another way to it goes (an EndDevice read
            // from its Location, then found in the list).
            for (path, kind) in wanted where path != parent && nodes[path]?.kind == kind { nodes[path]?.parents.insert(parent) }
        }
        for child in nodes.values where child.parents.contains(parent) {
            if dropAll || !wanted.contains(where: { $0.path == child.path && $0.kind == child.kind }) { detach(child.path, from: parent) }
        }
        for (path, kind) in wanted {
            if var existing = nodes[path] {
                // A link to a resource of another kind (or back to the parent) is not followed.
                if existing.kind == kind && path != parent {
                    existing.parents.insert(parent)
                    nodes[path] = existing
                }
                continue
            }
            guard nodes.count < limits.maximumResources else {
                throw SEP2Error(.listTooLong, message: "more than \(limits.maximumResources) resources to follow")
            }
            serial += 1
            nodes[path] = Node(kind: kind, path: path, parents: [parent], serial: serial, due: now)
        }
    }

    /// One page read: its payload, the list's `all` (nil for a single resource), its items and `pollRate`.
    mutating func read(_ kind: Sep2Request.Purpose, _ body: [UInt8]) throws(SEP2Error) -> (payload: Payload, all: UInt32?, items: Int, poll: UInt32?) {
        switch kind {
        case .deviceCapability:
            let read = try DeviceCapability.read(body).resource
            return (.deviceCapability(read), nil, 1, read.pollRate)
        case .time:
            let read = try SEP2Time.read(body).resource
            return (.time(read), nil, 1, read.pollRate)
        case .endDeviceList:
            let document = try EndDeviceList.read(body)
            let read = document.resource
            if let version = document.csipaus { csipaus = version }
            return (.endDevices(read.endDevices), read.all, read.endDevices.count, read.pollRate)
        case .endDevice:
            let document = try EndDevice.read(body)
            if let version = document.csipaus { csipaus = version }
            return (.endDevices([document.resource]), nil, 1, nil)
        case .registration:
            let read = try Registration.read(body).resource
            return (.registration(read), nil, 1, read.pollRate)
        case .fsaList:
            let read = try FunctionSetAssignmentsList.read(body).resource
            return (.assignments(read.assignments), read.all, read.assignments.count, read.pollRate)
        case .derProgramList:
            let read = try DERProgramList.read(body).resource
            return (.programs(read.programs), read.all, read.programs.count, min(read.pollRate, UInt32(sep2RateRange.upperBound)))
        case .derControlList:
            let read = try DERControlList.read(body).resource
            return (.controls(read.controls), read.all, read.items, nil)
        case .defaultDERControl:
            return (.defaultControl(try DefaultDERControl.read(body).resource), nil, 1, nil)
        case .derList:
            let read = try DERList.read(body).resource
            return (.ders(read.ders), read.all, read.ders.count, read.pollRate)
        case .post, .registerEndDevice, .connectionPoint:
            return (.none, nil, 0, nil)
        }
    }

    /// The pages of one pass as one payload.
    static func merged(_ pages: [Payload]) -> Payload {
        guard let first = pages.first else { return .none }
        func all<T>(_ pick: (Payload) -> [T]?) -> [T] { pages.flatMap { pick($0) ?? [] } }
        switch first {
        case .endDevices: return .endDevices(all { if case .endDevices(let x) = $0 { x } else { nil } })
        case .assignments: return .assignments(all { if case .assignments(let x) = $0 { x } else { nil } })
        case .programs: return .programs(all { if case .programs(let x) = $0 { x } else { nil } })
        case .controls: return .controls(all { if case .controls(let x) = $0 { x } else { nil } })
        case .ders: return .ders(all { if case .ders(let x) = $0 { x } else { nil } })
        default: return first
        }
    }

    /// A 2xx body for the resource `path`: a page added to the pass under way, or the pass (or the
    /// single resource) committed.
    mutating func accept(_ body: [UInt8], key: String, node path: String, now: Int64, wallClock: Int64?) throws(SEP2Error) {
        guard var node = nodes[path] else { return }
        let page = try read(node.kind, body)
        guard let all = page.all else {
            try commit(path, page.payload, documents: [(key, body)], poll: page.poll, now: now, wallClock: wallClock)
            return
        }
        if node.pages == 0 {
            node.pageAll = all
        } else if all != node.pageAll {
            // The list changed between pages: read it again from the start, a few times at most.
            node.restarts += 1
            node.restartPass()
            node.due = now
            nodes[path] = node
            guard node.restarts <= 2 else {
                nodes[path]?.restarts = 0
                throw SEP2Error(.listTooLong, message: "\(quoted(path, limit: 64)): all changed between pages three passes running")
            }
            return
        }
        guard all <= limits.maximumListAll else {
            throw SEP2Error(.listTooLong, message: "\(quoted(path, limit: 64)) has all=\(all) (at most \(limits.maximumListAll))")
        }
        node.pages += 1
        guard node.pages <= limits.maximumPages else {
            throw SEP2Error(.listTooLong, message: "\(quoted(path, limit: 64)) needs more than \(limits.maximumPages) pages")
        }
        node.pending.append(page.payload)
        node.pendingDocuments.append((key, body))
        let collected = Int(node.pageStart) + page.items
        if collected >= Int(all) {
            nodes[path] = node
            try commit(path, Self.merged(node.pending), documents: node.pendingDocuments, poll: page.poll, now: now, wallClock: wallClock)
        } else if page.items == 0 {
            throw SEP2Error(.listTooLong, message: "\(quoted(path, limit: 64)): the page at s=\(node.pageStart) is empty at \(collected) of all=\(all)")
        } else {
            node.pageStart = UInt32(collected)
            node.due = now
            nodes[path] = node
        }
    }

    /// A whole resource read: it becomes the last good state, its documents replace the old ones, and
    /// what it links to is brought in line (all of it afresh when an assignment or program list changed).
    mutating func commit(_ path: String, _ payload: Payload, documents: [(key: String, body: [UInt8])], poll: UInt32?,
                         now: Int64, wallClock: Int64?) throws(SEP2Error) {
        guard var node = nodes[path] else { return }
        _ = try children(of: node.kind, payload)  // every link checked before anything changes
        let changed = node.read && node.committed != payload
        node.committed = payload
        node.read = true
        node.ownPoll = poll
        for key in node.documentKeys { store[key] = nil }
        for document in documents { store[document.key] = document.body }
        node.documentKeys = documents.map(\.key)
        node.restartPass()
        node.restarts = 0
        nodes[path] = node
        let due = EventRules.clampedSum(now, Int64(pollRate(path)))
        nodes[path]?.due = due
        switch payload {
        case .deviceCapability:
            redirects = 0
        case .time(let time):
            timeAnchor = (time.currentTime, now)
            serverTimeOffset = wallClock.map { Self.clampedDifference(time.currentTime, $0) }
        case .registration(let registration):
            if let pin, registration.pIN != pin {
                let error = SEP2Error(.pinMismatch, message: "the Registration at \(quoted(path, limit: 64)) has a pIN other than the configured one (neither is repeated here: a PIN is a secret): all traffic stopped")
                stopped = error
                inFlight = nil
                throw error
            }
            for parent in node.parents { try updateChildren(of: parent, now: now, dropAll: false) }
            return
        case .endDevices(let devices):
            try updateChildren(of: path, now: now, dropAll: false)
            let listed = devices.contains { $0.identifies(lfdi: lfdi, sfdi: sfdi) }
            if listed, connectionPointPut != nil { connectionPointCheck = true }
            if node.kind == .endDeviceList {
                if listed {
                    registeredAt = nil
                    awaitingListing = false
                    registrationWanted = nil
                } else if options.inBandRegistration && registeredAt == nil {
                    if awaitingListing {
                        // POSTed without a Location and still not listed: POST again at the list's next read.
                        awaitingListing = false
                        throw SEP2Error(.endDeviceUnknown, message: "the EndDevice POSTed to \(quoted(path, limit: 64)) is not in it: lFDI \(quoted(lfdi, limit: 40)), sFDI \(sfdi)")
                    }
                    registrationWanted = path
                    return
                }
            }
            if !listed, node.kind == .endDevice, path == registeredAt {
                // The Location names another device: registered afresh at the list's next read.
                registeredAt = nil
            }
            guard listed || (node.kind == .endDeviceList && registeredAt != nil) else {
                throw SEP2Error(.endDeviceUnknown, message: "no EndDevice in \(quoted(path, limit: 64)) has lFDI \(quoted(lfdi, limit: 40)) or sFDI \(sfdi)")
            }
            return
        default:
            break
        }
        try updateChildren(of: path, now: now, dropAll: changed && (node.kind == .fsaList || node.kind == .derProgramList))
    }
}

/// The writes: the EndDevice POSTed for in-band registration and the ConnectionPoint PUT.
extension DiscoverySession {
    /// Whether a write waits (perhaps for its back-off).
    var hasWrite: Bool { wantedWrite(now: writeDue) != nil }

    /// The ConnectionPointLink the configured id is to be PUT to, and the resource holding the EndDevice:
    /// nil without an id, a link, an agreed Registration, or when it was PUT there already.
    var connectionPointTarget: (link: String, holder: String)? {
        guard options.connectionPointId != nil, let found = endDeviceHolder, let link = found.device.connectionPointLink,
              link != connectionPointPut else { return nil }
        let registered = pin == nil || found.device.registrationLink.map { nodes[$0]?.read == true } ?? true
        return registered ? (link, found.path) : nil
    }

    /// The server's time at `now` as well as the session knows it: the Time resource's, else the local
    /// wall clock last passed in counted on, else 0.
    func clockForWriting(now: Int64) -> Int64 {
        if let server = serverTime(now: now) { return server }
        guard let wallAnchor else { return 0 }
        return EventRules.clampedSum(wallAnchor.wall, Self.clampedDifference(now, wallAnchor.monotonic))
    }

    /// The write due at `now`, with the resource it is made for; nil when none is.
    func wantedWrite(now: Int64) -> (request: Sep2Request, node: String)? {
        guard !restoring, now >= writeDue else { return nil }
        if options.inBandRegistration, let list = registrationWanted, nodes[list] != nil {
            let device = EndDeviceRegistration(lFDI: lfdi, sFDI: sfdi, changedTime: clockForWriting(now: now), deviceCategory: options.deviceCategory)
            if let body = try? device.xml() {
                return (Sep2Request(method: .post, path: list, body: body, purpose: .registerEndDevice), list)
            }
        }
        if let id = options.connectionPointId, let target = connectionPointTarget,
           let body = try? ConnectionPointReport(connectionPointId: id).xml(csipaus: csipaus ?? .v1_2) {
            return (Sep2Request(method: .put, path: target.link, body: body, purpose: .connectionPoint), target.holder)
        }
        if readBackWanted, now >= connectionPointReadDue, let link = connectionPointPut, let holder = endDeviceHolder?.path {
            return (Sep2Request(method: .get, path: link, purpose: .connectionPoint), holder)
        }
        return nil
    }

    /// The ConnectionPoint PUT is to be read back (perhaps after the read-back's back-off): the EndDevice
    /// was read since, and the server did not answer an earlier read-back 405.
    var readBackWanted: Bool {
        connectionPointCheck && connectionPointReadOffered && options.connectionPointId != nil && connectionPointPut != nil
            && endDeviceHolder != nil
    }

    /// The path of a `Location`: an absolute path as it is, or an absolute URL's path; nil otherwise.
    static func locationPath(_ location: String?) -> String? {
        guard var text = location else { return nil }
        for scheme in ["https://", "http://"] where text.lowercased().hasPrefix(scheme) {
            let rest = text.dropFirst(scheme.count)
            guard let slash = rest.firstIndex(of: "/") else { return nil }
            text = String(rest[slash...])
        }
        return try? SEP2Href.check(text, "Location")
    }

    /// The answer to the ConnectionPoint read back (CSIP-AUS ALL-03): an id not the configured one, none,
    /// or the resource gone (404, 410) is PUT again at once; a document that cannot be read is its coded
    /// error. 405: the server offers no GET there; `SEP2_HTTP_STATUS` once, and it is not read back again
    /// this session (the PUT stands). 429 and 5xx: `SEP2_HTTP_STATUS`, read back again after its own
    /// back-off (2, 4 … 300 s, a 429's or 503's `Retry-After` when longer) while the reads go on; another
    /// status is `SEP2_HTTP_STATUS` and read back at the EndDevice's next read. Each message is the same
    /// for the same status, so the worker journals it once until an answer is taken.
    mutating func handleConnectionPointRead(_ reply: Sep2Reply, to request: Sep2Request, now: Int64) throws(SEP2Error) {
        let what = "HTTP \(reply.status) for the ConnectionPoint read back from \(quoted(request.path, limit: 64))"
        switch reply.status {
        case 429, 500...599:
            connectionPointReadFailures = min(connectionPointReadFailures + 1, 64)
            var step = UInt64(limits.backoff.lowerBound)
            for _ in 1..<connectionPointReadFailures where step < UInt64(limits.backoff.upperBound) { step *= 2 }
            var delay = min(step, UInt64(limits.backoff.upperBound))
            if let after = reply.retryAfterSeconds, reply.status == 429 || reply.status == 503 {
                delay = max(delay, UInt64(min(max(after, limits.retryAfter.lowerBound), limits.retryAfter.upperBound)))
            }
            connectionPointReadDue = EventRules.clampedSum(now, Int64(delay))
            throw SEP2Error(.httpStatus, message: "\(what); read back again after a back-off of 2 to 300 s, the reads go on")
        default:
            break
        }
        connectionPointCheck = false
        connectionPointReadFailures = 0
        connectionPointReadDue = .min
        switch reply.status {
        case 200...299:
            if try ConnectionPointReport.readID(reply.body) != options.connectionPointId, connectionPointPut == request.path {
                connectionPointPut = nil
            }
        case 404, 410:
            if connectionPointPut == request.path { connectionPointPut = nil }
        case 405:
            connectionPointReadOffered = false
            throw SEP2Error(.httpStatus, message: "\(what): the server does not offer it; not read back again this session, the PUT stands")
        default:
            throw SEP2Error(.httpStatus, message: "\(what); read back again at the EndDevice's next read")
        }
    }

    /// The answer to a write.
    mutating func handleWrite(_ reply: Sep2Reply, to request: Sep2Request, parent: String, now: Int64) throws(SEP2Error) {
        if request.method == .get {
            try handleConnectionPointRead(reply, to: request, now: now)
            return
        }
        let what = request.purpose == .registerEndDevice ? "the EndDevice POSTed to" : "the ConnectionPoint PUT to"
        switch reply.status {
        case 200...299:
            failures = 0
            backoffUntil = nil
            writeFailures = 0
            writeDue = .min
            guard request.purpose == .registerEndDevice else {
                // A ConnectionPoint at a new path is another resource: a 405 of the old one says nothing of it.
                if connectionPointPut != request.path {
                    connectionPointReadOffered = true
                    connectionPointReadDue = .min
                }
                connectionPointPut = request.path
                return
            }
            registrationWanted = nil
            connectionPointPut = nil
            if let location = Self.locationPath(reply.location) {
                registeredAt = location
                try updateChildren(of: parent, now: now, dropAll: false)
            } else {
                awaitingListing = true
                nodes[parent]?.restartPass()
                nodes[parent]?.due = now
            }
        case 429, 503:
            backOff(now: now, retryAfter: reply.retryAfterSeconds, honourRetryAfter: true)
            throw SEP2Error(.httpStatus, message: "HTTP \(reply.status) for \(what) \(quoted(request.path, limit: 64)); nothing asked for \(backoffUntil.map { $0 - now } ?? 0) s")
        case 500...599:
            backOff(now: now, retryAfter: nil, honourRetryAfter: false)
            throw SEP2Error(.httpStatus, message: "HTTP \(reply.status) for \(what) \(quoted(request.path, limit: 64)); nothing asked for \(backoffUntil.map { $0 - now } ?? 0) s")
        default:
            writeFailures = min(writeFailures + 1, 64)
            var step = UInt64(limits.backoff.lowerBound)
            for _ in 1..<writeFailures where step < UInt64(limits.backoff.upperBound) { step *= 2 }
            writeDue = EventRules.clampedSum(now, Int64(min(step, UInt64(limits.backoff.upperBound))))
            throw SEP2Error(.registrationRefused, message: "HTTP \(reply.status) for \(what) \(quoted(request.path, limit: 64)); sent again after the back-off")
        }
    }
}
