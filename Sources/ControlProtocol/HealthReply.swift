/// `health` of `status`: the workers' notices the journal never got, and the threads that stopped
/// turning (docs/operations.md, "Watchdog and progress").
public struct HealthReply: Codable, Sendable, Equatable, JSONWritable {
    /// Bus and CAN worker notices dropped since start because the service thread had not taken
    /// them (a stalled journald holds it): `NOTICES_DROPPED`.
    public var noticesDropped: UInt64
    /// Each thread that has not turned for longer than it may (`WORKER_STALLED`, `SERVICE_STALLED`).
    public var stalled: [StallReply]

    public init(noticesDropped: UInt64, stalled: [StallReply]) {
        self.noticesDropped = noticesDropped
        self.stalled = stalled
    }

    enum CodingKeys: String, CodingKey { case stalled, noticesDropped = "notices_dropped" }

    public func write(to json: inout JSONText) {
        json.beginObject()
        json.field(CodingKeys.noticesDropped, noticesDropped)
        json.field(CodingKeys.stalled, stalled)
        json.endObject()
    }
}

/// One thread that stopped turning: its code, which thread, the units it carries and how long it
/// has not turned.
public struct StallReply: Codable, Sendable, Equatable, JSONWritable {
    /// `WORKER_STALLED` or `SERVICE_STALLED`.
    public var code: String
    public var sinceS: Double?
    /// `bus 127.0.0.1:1502`, `bus poller`, `CAN can0`, `service loop`.
    public var thread: String
    public var units: [String]

    public init(code: String, thread: String, units: [String], sinceS: Double?) {
        self.code = code
        self.thread = thread
        self.units = units
        self.sinceS = sinceS
    }

    enum CodingKeys: String, CodingKey { case code, thread, units, sinceS = "since_s" }

    public func write(to json: inout JSONText) {
        json.beginObject()
        json.field(CodingKeys.code, code)
        json.field(CodingKeys.sinceS, sinceS)
        json.field(CodingKeys.thread, thread)
        json.field(CodingKeys.units, units)
        json.endObject()
    }
}
