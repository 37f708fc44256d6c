import BessBase
import ControlCore
import IEEE2030_5

/// What of the DERControlResponses survives a restart, in `state_directory/ieee2030_5-responses.bin`:
/// the outbox (the responses made and not yet taken by the server, oldest first, each as it was made:
/// path and body, so mRID, status and createdDateTime as before), the oldest one's failed answers and
/// the wall-clock second of the first (the hour it is given up after runs on across a restart), the
/// statuses sent per control and the state each control was last seen in (so nothing is answered
/// twice, and a control that completed while bessd was down is answered completed).
///
/// Payload (version 1, `Sep2StateFile`): answered u32 · answered-since (flag u8 · i64) · outbox count u16
/// · per response (method u8 · mRID text · status u8 · path text · body length u32 · body) · sent count u32
/// · per control (mRID text · count u8 · statuses) · seen count u32 · per control (mRID text · state u8);
/// a text is a length u16 and UTF-8 bytes.
struct StoredResponses: Sendable, Equatable {
    var outbox: [QueuedResponse] = []
    var answered = 0
    var answeredSince: Int64?
    var sent: [String: Set<UInt8>] = [:]
    var seen: [String: ControlState] = [:]

    /// The most controls kept in `sent` and in `seen`: twice the ledger's pruning bound.
    static let maximumControls = 2 * ResponseLedger.capacity
    /// The longest mRID kept (a HexBinary128 is 32 hex digits), path and response body.
    static let maximumMRIDBytes = 64, maximumPathBytes = 1024, maximumBodyBytes = 8192
    static let methods: [Sep2Request.Method] = [.get, .post, .put]
    static let states: [ControlState] = [.scheduled, .active, .completed, .cancelled, .superseded]

    /// The file of `stateDirectory` (at most 4 MiB: the bounds above fit within it).
    static func file(stateDirectory: String) -> Sep2StateFile {
        Sep2StateFile(stateDirectory: stateDirectory, name: "ieee2030_5-responses.bin", magic: "BESS2RSP", version: 1,
                      maximumBytes: 4 << 20, what: "the 2030.5 DERControlResponse outbox")
    }

    /// The payload.
    /// - Throws: `SEP2_STORE_TOO_LARGE` when an entry is beyond the bounds.
    func encoded() throws(ScheduleStoreError) -> [UInt8] {
        guard outbox.count <= ResponseLedger.outboxCapacity, sent.count <= Self.maximumControls, seen.count <= Self.maximumControls else {
            throw ScheduleStoreError(.tooLarge, message: "\(outbox.count) responses, \(sent.count) and \(seen.count) controls "
                                     + "(at most \(ResponseLedger.outboxCapacity), \(Self.maximumControls))")
        }
        var out: [UInt8] = []
        ScheduleStore.append(&out, UInt64(min(max(answered, 0), Int(UInt32.max))), bytes: 4)
        ScheduleStore.append(&out, optional: answeredSince.map { UInt64(bitPattern: $0) })
        ScheduleStore.append(&out, UInt64(outbox.count), bytes: 2)
        for response in outbox {
            let request = response.request
            guard response.mRID.utf8.count <= Self.maximumMRIDBytes, (1...Self.maximumPathBytes).contains(request.path.utf8.count),
                  request.body.count <= Self.maximumBodyBytes, let method = Self.methods.firstIndex(of: request.method) else {
                throw ScheduleStoreError(.tooLarge, message: "a response of \(request.body.count) bytes to a path of \(request.path.utf8.count) "
                                         + "bytes (body at most \(Self.maximumBodyBytes), path \(Self.maximumPathBytes))")
            }
            out.append(UInt8(method))
            ScheduleStore.append(&out, text: response.mRID)
            out.append(response.status)
            ScheduleStore.append(&out, text: request.path)
            ScheduleStore.append(&out, UInt64(request.body.count), bytes: 4)
            out += request.body
        }
        ScheduleStore.append(&out, UInt64(sent.count), bytes: 4)
        for (mRID, statuses) in sent.sorted(by: { $0.key < $1.key }) {
            try Self.append(&out, mRID: mRID)
            out.append(UInt8(statuses.count))
            out += statuses.sorted()
        }
        ScheduleStore.append(&out, UInt64(seen.count), bytes: 4)
        for (mRID, state) in seen.sorted(by: { $0.key < $1.key }) {
            try Self.append(&out, mRID: mRID)
            out.append(UInt8(Self.states.firstIndex(of: state) ?? 0))
        }
        return out
    }

    static func append(_ out: inout [UInt8], mRID: String) throws(ScheduleStoreError) {
        guard (1...maximumMRIDBytes).contains(mRID.utf8.count) else {
            throw ScheduleStoreError(.tooLarge, message: "an mRID of \(mRID.utf8.count) bytes (1…\(maximumMRIDBytes))")
        }
        ScheduleStore.append(&out, text: mRID)
    }

    /// The responses a payload holds; anything beyond the bounds or not as written is `SEP2_STORE_CORRUPT`.
    static func decode(_ reader: inout ScheduleStore.Reader) throws(ScheduleStoreError) -> StoredResponses {
        var stored = StoredResponses()
        let answered = try reader.integer(4)
        guard answered <= UInt64(ResponseLedger.answeredAttempts) else { throw ScheduleStore.corrupt("\(answered) answers to the oldest response") }
        stored.answered = Int(answered)
        stored.answeredSince = try reader.optional().map { Int64(bitPattern: $0) }
        let count = try reader.integer(2)
        guard count <= UInt64(ResponseLedger.outboxCapacity) else {
            throw ScheduleStore.corrupt("\(count) responses (at most \(ResponseLedger.outboxCapacity))")
        }
        for _ in 0..<count {
            let method = Int(try reader.integer(1))
            guard method < methods.count else { throw ScheduleStore.corrupt("a method of \(method)") }
            let mRID = try reader.text(maximum: maximumMRIDBytes, empty: true)
            let status = UInt8(try reader.integer(1))
            let path = try reader.text(maximum: maximumPathBytes)
            let length = Int(try reader.integer(4))
            guard length <= maximumBodyBytes else { throw ScheduleStore.corrupt("a response of \(length) bytes") }
            let request = Sep2Request(method: methods[method], path: path, body: try reader.take(length), purpose: .post("DERControlResponse"))
            stored.outbox.append(QueuedResponse(request: request, mRID: mRID, status: status))
        }
        let sent = try reader.integer(4)
        guard sent <= UInt64(maximumControls) else { throw ScheduleStore.corrupt("\(sent) controls answered (at most \(maximumControls))") }
        for _ in 0..<sent {
            let mRID = try reader.text(maximum: maximumMRIDBytes)
            let statuses = Set(try reader.take(Int(try reader.integer(1))))
            guard !statuses.isEmpty, stored.sent.updateValue(statuses, forKey: mRID) == nil else {
                throw ScheduleStore.corrupt("control \(TextQuoting.quoted(mRID, limit: 64)) answered twice or with nothing")
            }
        }
        let seen = try reader.integer(4)
        guard seen <= UInt64(maximumControls) else { throw ScheduleStore.corrupt("\(seen) controls seen (at most \(maximumControls))") }
        for _ in 0..<seen {
            let mRID = try reader.text(maximum: maximumMRIDBytes)
            let state = Int(try reader.integer(1))
            guard state < states.count, stored.seen.updateValue(states[state], forKey: mRID) == nil else {
                throw ScheduleStore.corrupt("control \(TextQuoting.quoted(mRID, limit: 64)) seen twice or in state \(state)")
            }
        }
        return stored
    }
}

extension Sep2Reporter {
    /// What of the responses survives a restart.
    var storedResponses: StoredResponses {
        StoredResponses(outbox: responses.outbox, answered: responses.answered, answeredSince: responses.answeredSince,
                        sent: responses.sent, seen: responses.seen)
    }

    /// Takes up what a restart kept: the outbox in its order, before anything made since.
    mutating func restore(_ stored: StoredResponses) {
        responses.outbox = Array(stored.outbox.prefix(ResponseLedger.outboxCapacity)) + responses.outbox
        responses.outbox = Array(responses.outbox.prefix(ResponseLedger.outboxCapacity))
        responses.answered = stored.answered
        responses.answeredSince = stored.answeredSince
        responses.sent.merge(stored.sent) { $0.union($1) }
        responses.seen.merge(stored.seen) { current, _ in current }
    }
}

extension Sep2Client {
    /// Takes up the responses (Sep2Reporter+Store.swift) and the controls in force
    /// (Sep2ControlRecords+Store.swift) kept beside the schedule store; a damaged file is said with its
    /// code and ignored (bessd goes on with none).
    func restoreKept() {
        guard let store else { return }
        if var r = reporting {
            do throws(ScheduleStoreError) {
                if let stored = try StoredResponses.file(stateDirectory: store.directory).load(StoredResponses.decode) { r.reporter.restore(stored) }
            } catch {
                log(.sep2(failure: error, "\(error); the DERControlResponses not yet sent before the restart are lost"))
            }
            r.savedRevision = r.reporter.responses.revision
            reporting = r
        }
        restoreInForce(store.directory)
    }

    /// Writes the responses when they changed since the last write (on the worker's thread); a failure is
    /// said once until a write succeeds.
    func saveResponses(_ r: inout Sep2Reporting) {
        guard let store, r.savedRevision != r.reporter.responses.revision else { return }
        r.savedRevision = r.reporter.responses.revision
        do throws(ScheduleStoreError) {
            let bytes = try r.reporter.storedResponses.encoded()
            let checksum = ScheduleStore.fnv1a(bytes[...])
            guard checksum != r.savedChecksum || r.storeFailed else { return }
            try StoredResponses.file(stateDirectory: store.directory).save(bytes)
            r.savedChecksum = checksum
            r.storeFailed = false
        } catch {
            if !r.storeFailed { log(.sep2(failure: error, "\(error); the DERControlResponses not yet sent would not survive a restart")) }
            r.storeFailed = true
        }
    }
}
