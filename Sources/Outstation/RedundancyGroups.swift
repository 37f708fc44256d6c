import IEC104

/// The redundancy groups of controlling stations (`iec104.groups`, IEC 60870-5-104 edition 2):
/// each with its settings (addresses, certificates, rights), its started connection (one at a
/// time; the others stand by) and its bounded queue of events, kept across disconnects, for the
/// group's next started connection. A value the server thread owns.
struct RedundancyGroups {
    struct Group {
        var settings: IEC104Group
        /// Encoded event ASDUs, oldest first.
        var queue: [[UInt8]] = []
        /// The id of the group's started connection.
        var started: Int?
    }

    private(set) var all: [Group]
    /// `event_queue`: the events each group keeps (the oldest dropped past it).
    let queueLimit: Int

    init(_ settings: [IEC104Group], queueLimit: Int) {
        all = settings.map { Group(settings: $0) }
        self.queueLimit = queueLimit
    }

    subscript(group: Int) -> Group { all[group] }

    /// The group's name, for the journal.
    func name(_ group: Int) -> String { all[group].settings.name }

    /// The first group that admits a client at `address` showing the certificate `certificate`
    /// (lower-case hex SHA-256; nil before the TLS handshake, or without TLS: the address alone).
    func placement(of address: UInt32, certificate: String?) -> Int? {
        Self.placement(of: address, certificate: certificate, in: all.map(\.settings))
    }

    /// The first of `groups` that admits a client at `address` with `certificate`.
    static func placement(of address: UInt32, certificate: String?, in groups: [IEC104Group]) -> Int? {
        groups.firstIndex { group in
            group.admits(address: address) && (certificate.map { group.admits(certificate: $0) } ?? true)
        }
    }

    /// Whether `connection` is `group`'s started connection.
    func isStarted(_ connection: Int, in group: Int) -> Bool { all[group].started == connection }

    /// `connection` becomes `group`'s started connection; returns the one started before it, if any.
    mutating func start(_ connection: Int, in group: Int) -> Int? {
        defer { all[group].started = connection }
        return all[group].started
    }

    /// `connection` is no longer `group`'s started one (STOPDT, or closed).
    mutating func stop(_ connection: Int, in group: Int) {
        if all[group].started == connection { all[group].started = nil }
    }

    /// Appends one event to every group's queue; returns how many events full queues dropped.
    mutating func enqueue(_ event: [UInt8]) -> Int {
        var dropped = 0
        for group in all.indices {
            all[group].queue.append(event)
            dropped += bound(group)
        }
        return dropped
    }

    /// Puts a connection's unacknowledged events back at `group`'s queue head, in order; returns
    /// how many events the full queue dropped.
    mutating func requeue(_ events: [[UInt8]], in group: Int) -> Int {
        guard !events.isEmpty else { return 0 }
        all[group].queue.insert(contentsOf: events, at: 0)
        return bound(group)
    }

    /// The next event for `connection` to send: only the group's started connection takes them.
    mutating func nextEvent(for connection: Int, in group: Int) -> [UInt8]? {
        guard all[group].started == connection, !all[group].queue.isEmpty else { return nil }
        return all[group].queue.removeFirst()
    }

    /// The groups of a reloaded file: each keeps its queue and started connection under its name.
    mutating func replace(with settings: [IEC104Group]) {
        let old = all
        all = settings.map { settings in
            var group = Group(settings: settings)
            if let was = old.first(where: { $0.settings.name == settings.name }) {
                group.queue = was.queue
                group.started = was.started
            }
            return group
        }
    }

    /// Drops the oldest events past `queueLimit`; returns how many.
    private mutating func bound(_ group: Int) -> Int {
        let excess = all[group].queue.count - queueLimit
        guard excess > 0 else { return 0 }
        all[group].queue.removeFirst(excess)
        return excess
    }
}
