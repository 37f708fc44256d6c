import BessBase
import ControlCore

/// The resources a `DiscoverySession` follows, linked from its entry path, and its one request in
/// flight: each resource's last good payload and documents, who links to it, and when it is read next
/// (its poll rate). It knows links and times, not what the chain means: which links a payload gives is
/// the session's (`DiscoverySession.children`).
struct ResourceWalk: Sendable {
    /// The poll rate where neither a resource nor an ancestor names one, s.
    let pollSeconds: UInt32
    /// Items asked for per page.
    let pageSize: UInt32
    /// Resources followed at once (`SEP2_LIST_TOO_LONG` beyond).
    let maximumResources: Int
    var nodes: [String: DiscoveryNode] = [:]
    var serial = 0
    /// The request in flight and the resource it is made for.
    var inFlight: (request: Sep2Request, node: String)?
    /// Request path → the last good body of every resource read (each page of a list under its own path).
    var store: [String: [UInt8]] = [:]

    init(pollSeconds: UInt32, limits: DiscoveryLimits) {
        self.pollSeconds = max(1, pollSeconds)
        pageSize = limits.pageSize
        maximumResources = limits.maximumResources
    }

    mutating func addRoot(_ path: String, due: MonotonicInstant) {
        serial += 1
        nodes[path] = DiscoveryNode(kind: .deviceCapability, path: path, parents: [], serial: serial, due: due)
    }

    /// The poll rate of `path`: its own, else the shortest of its parents', else the configured one.
    func pollRate(_ path: String) -> UInt32 {
        guard let node = nodes[path] else { return pollSeconds }
        if let own = node.ownPoll { return max(1, own) }
        return node.parents.compactMap { nodes[$0] == nil ? nil : pollRate($0) }.min() ?? pollSeconds
    }

    /// The pass over `path` abandoned; asked for again at its poll rate.
    mutating func reschedule(_ path: String, now: MonotonicInstant) {
        guard nodes[path] != nil else { return }
        let due = now + .seconds(pollRate(path))
        nodes[path]?.restartPass()
        nodes[path]?.due = due
    }

    /// The GET due at `now`: the resource due first (the first discovered of those due as early), at the
    /// page its pass is at; nil when none is due.
    func dueRead(at now: MonotonicInstant) -> (request: Sep2Request, node: String)? {
        var chosen: DiscoveryNode?
        for node in nodes.values where node.due <= now {
            if let best = chosen, (best.due, best.serial) <= (node.due, node.serial) { continue }
            chosen = node
        }
        guard let node = chosen else { return nil }
        var path = node.path
        if node.kind.isList {
            path += (path.contains("?") ? "&" : "?") + "s=\(node.pageStart)&l=\(pageSize)"
        }
        return (Sep2Request(method: .get, path: path, purpose: node.kind), node.path)
    }

    /// The instant the first resource is due, nil when none is followed.
    var earliestDue: MonotonicInstant? { nodes.values.map(\.due).min() }

    /// `path` no longer linked from `parent` (from anywhere when nil): when nothing links to it any more
    /// it goes, with its documents, its request in flight and everything only it led to.
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

    /// The resources under `parent` brought in line with the links its payload gives (`wanted`); with
    /// `dropAll`, every one of them read afresh. New ones are due at `now`.
    mutating func link(_ wanted: [(path: String, kind: Sep2Request.Purpose)], under parent: String, now: MonotonicInstant,
                       dropAll: Bool) throws(SEP2Error) {
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
            guard nodes.count < maximumResources else {
                throw SEP2Error(.listTooLong, message: "more than \(maximumResources) resources to follow")
            }
            serial += 1
            nodes[path] = DiscoveryNode(kind: kind, path: path, parents: [parent], serial: serial, due: now)
        }
    }

    /// `payload` becomes the last good state of `path`, its `documents` replace the old ones, and it is
    /// due again at its poll rate. Returns whether it differs from a payload read before.
    mutating func commit(_ path: String, _ payload: DiscoveryPayload, documents: [(key: String, body: [UInt8])], poll: UInt32?,
                         now: MonotonicInstant) -> Bool {
        guard var node = nodes[path] else { return false }
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
        let due = now + .seconds(pollRate(path))
        nodes[path]?.due = due
        return changed
    }

    /// The first payload `pick` takes from a resource read (in no particular order).
    func first<T>(_ pick: (DiscoveryPayload) -> T?) -> T? {
        for node in nodes.values { if let found = pick(node.committed) { return found } }
        return nil
    }

    /// The DER programs as `EventRules.resolve` takes them: every program of every DERProgramList read
    /// (once per mRID, in discovery order), with its DERControlList's controls and its DefaultDERControl
    /// as last read.
    var programs: [ProgramSchedule] {
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
}
