import BessBase
import ControlCore

/// What the session has read, for the worker and the reports.
extension DiscoverySession {
    /// The programs as `EventRules.resolve` takes them: every program of every DERProgramList read
    /// (once per mRID, in discovery order), with its DERControlList's controls and its DefaultDERControl
    /// as last read. Whole only when `complete`.
    public var programs: [ProgramSchedule] { walk.programs }

    /// The DeviceCapability last read.
    public var deviceCapability: DeviceCapability? {
        guard case .deviceCapability(let read)? = walk.nodes[entryPath]?.committed else { return nil }
        return read
    }

    /// This device's EndDevice as the EndDeviceList (or, registered in band, its `Location`) last gave it.
    public var endDevice: EndDevice? { endDeviceHolder?.device }

    /// This device's EndDevice and the resource that gave it (the list first).
    var endDeviceHolder: (path: String, device: EndDevice)? {
        var found: (path: String, device: EndDevice)?
        for node in walk.nodes.values {
            guard case .endDevices(let list) = node.committed, let mine = list.first(where: { $0.identifies(lfdi: lfdi, sfdi: sfdi) }) else { continue }
            if node.kind == .endDeviceList { return (node.path, mine) }
            found = (node.path, mine)
        }
        return found
    }

    /// The server's Time last read.
    public var time: SEP2Time? { walk.first { if case .time(let read) = $0 { read } else { nil } } }

    /// The Registration last read.
    public var registration: Registration? { walk.first { if case .registration(let read) = $0 { read } else { nil } } }

    /// The device's DERs (where its DERCapability, DERSettings, DERStatus and DERAvailability go).
    public var ders: [DER] { walk.first { if case .ders(let read) = $0 { read } else { nil } } ?? [] }

    /// The curves read, by the href the controls link to them with (`DERCurveLink`).
    public var curves: [String: DERCurve] {
        var out: [String: DERCurve] = [:]
        for node in walk.nodes.values { if case .curve(let curve) = node.committed { out[node.path] = curve } }
        return out
    }

    /// The assignments of the FunctionSetAssignmentsList last read.
    public var assignments: [FunctionSetAssignments] { walk.first { if case .assignments(let read) = $0 { read } else { nil } } ?? [] }
}

/// The chain's links: which resources a payload leads to, a page's pass, a resource committed.
extension DiscoverySession {
    /// The resources a payload links to, each href checked.
    func children(of kind: Sep2Request.Purpose, _ payload: DiscoveryPayload) throws(SEP2Error) -> [(path: String, kind: Sep2Request.Purpose)] {
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
                if kind == .endDeviceList, let registeredAt = inBand.registeredAt { add(registeredAt, .endDevice) }
                break
            }
            add(mine.registrationLink, .registration)
            // With a PIN configured nothing below the EndDevice is asked for before the Registration agreed.
            if registered(mine) {
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
        case .controls(let controls):
            for control in controls { for href in control.base.curveHrefs { add(href, .derCurve) } }
        case .defaultControl(let control):
            for href in control.base.curveHrefs { add(href, .derCurve) }
        default:
            break
        }
        return out
    }

    /// Whether `device`'s Registration agreed (always without a PIN configured, or without a link to it).
    func registered(_ device: EndDevice) -> Bool {
        pin == nil || device.registrationLink.map { walk.nodes[$0]?.read == true } ?? true
    }

    /// The resources under `parent` brought in line with its last good payload; with `dropAll`, every
    /// one of them read afresh.
    mutating func updateChildren(of parent: String, now: MonotonicInstant, dropAll: Bool) throws(SEP2Error) {
        guard let node = walk.nodes[parent] else { return }
        try walk.link(try children(of: node.kind, node.committed), under: parent, now: now, dropAll: dropAll)
    }

    /// A 2xx body for the resource `path`: a page added to the pass under way, or the pass (or the
    /// single resource) committed.
    mutating func accept(_ body: [UInt8], key: String, node path: String, now: MonotonicInstant, wallClock: Int64?) throws(SEP2Error) {
        guard var node = walk.nodes[path] else { return }
        let page = try DiscoveryPayload.read(node.kind, body)
        if let version = page.csipaus { csipaus = version }
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
            walk.nodes[path] = node
            guard node.restarts <= 2 else {
                walk.nodes[path]?.restarts = 0
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
            walk.nodes[path] = node
            try commit(path, DiscoveryPayload.merged(node.pending), documents: node.pendingDocuments, poll: page.poll, now: now, wallClock: wallClock)
        } else if page.items == 0 {
            throw SEP2Error(.listTooLong, message: "\(quoted(path, limit: 64)): the page at s=\(node.pageStart) is empty at \(collected) of all=\(all)")
        } else {
            node.pageStart = UInt32(collected)
            node.due = now
            walk.nodes[path] = node
        }
    }

    /// A whole resource read: it becomes the last good state, its documents replace the old ones, and
    /// what it links to is brought in line (all of it afresh when an assignment or program list changed).
    mutating func commit(_ path: String, _ payload: DiscoveryPayload, documents: [(key: String, body: [UInt8])], poll: UInt32?,
                         now: MonotonicInstant, wallClock: Int64?) throws(SEP2Error) {
        guard let node = walk.nodes[path] else { return }
        _ = try children(of: node.kind, payload)  // every link checked before anything changes
        let changed = walk.commit(path, payload, documents: documents, poll: poll, now: now)
        switch payload {
        case .deviceCapability:
            redirects = 0
        case .time(let time):
            clock.anchor(time.currentTime, at: now, wallClock: wallClock)
        case .registration(let read):
            if let pin, read.pIN != pin {
                let error = SEP2Error(.pinMismatch, message: "the Registration at \(quoted(path, limit: 64)) has a pIN other than the configured one (neither is repeated here: a PIN is a secret): all traffic stopped")
                stopped = error
                walk.inFlight = nil
                throw error
            }
            for parent in node.parents { try updateChildren(of: parent, now: now, dropAll: false) }
            return
        case .endDevices(let devices):
            try updateChildren(of: path, now: now, dropAll: false)
            let listed = devices.contains { $0.identifies(lfdi: lfdi, sfdi: sfdi) }
            if listed, connectionPoint.put != nil { connectionPoint.check = true }
            try inBand.found(listed: listed, at: path, list: node.kind == .endDeviceList, inBand: options.inBandRegistration,
                                   lfdi: lfdi, sfdi: sfdi)
            return
        default:
            break
        }
        try updateChildren(of: path, now: now, dropAll: changed && (node.kind == .fsaList || node.kind == .derProgramList))
    }
}
