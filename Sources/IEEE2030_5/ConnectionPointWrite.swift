import BessBase
import ControlCore

/// The ConnectionPoint a `DiscoverySession` PUTs to the EndDevice's `csipaus:ConnectionPointLink`, and
/// its read-back (CSIP-AUS ALL-03): where it was PUT, whether it is to be read back, and the read-back's
/// own back-off.
struct ConnectionPointWrite: Sendable {
    /// The ConnectionPointLink the configured id was last PUT to.
    var put: String?
    /// The EndDevice was read again since the PUT: the ConnectionPoint is read back (and PUT again when the
    /// server's id is not the configured one, or it is gone).
    var check = false
    /// The read-back's own back-off after a 429 or 5xx (the reads go on meanwhile). A 2xx, 404 or 410 ends it.
    var readHold: RetryHold
    /// False once the server answered the read-back 405 (it offers no GET there): never read back again.
    var readOffered = true

    init(limits: DiscoveryLimits) { readHold = RetryHold(limits) }

    /// The PUT to `path` accepted. A ConnectionPoint at a new path is another resource: a 405 of the old
    /// one says nothing of it.
    mutating func accepted(at path: String) {
        if put != path {
            readOffered = true
            readHold.release()
        }
        put = path
    }

    /// The answer to the ConnectionPoint read back from `path` at `now`: an id not `configured`, none, or
    /// the resource gone (404, 410) is PUT again at once; a document that cannot be read is its coded
    /// error. 405: the server offers no GET there; `SEP2_HTTP_STATUS` once, and it is not read back again
    /// this session (the PUT stands). 429 and 5xx: `SEP2_HTTP_STATUS`, read back again after its own
    /// back-off (2, 4 … 300 s, a 429's or 503's `Retry-After` when longer) while the reads go on; another
    /// status is `SEP2_HTTP_STATUS` and read back at the EndDevice's next read. Each message is the same
    /// for the same status, so the worker journals it once until an answer is taken.
    mutating func handleRead(_ reply: Sep2Reply, from path: String, configured: String?, now: MonotonicInstant) throws(SEP2Error) {
        let what = "HTTP \(reply.status) for the ConnectionPoint read back from \(quoted(path, limit: 64))"
        switch reply.status {
        case 429, 500...599:
            readHold.fail(at: now, retryAfter: reply.status == 429 || reply.status == 503 ? reply.retryAfterSeconds : nil, rule: .lengthens)
            throw SEP2Error(.httpStatus, message: "\(what); read back again after a back-off of 2 to 300 s, the reads go on")
        default:
            break
        }
        check = false
        readHold.reset()
        switch reply.status {
        case 200...299:
            if try ConnectionPointReport.readID(reply.body) != configured, put == path { put = nil }
        case 404, 410:
            if put == path { put = nil }
        case 405:
            readOffered = false
            throw SEP2Error(.httpStatus, message: "\(what): the server does not offer it; not read back again this session, the PUT stands")
        default:
            throw SEP2Error(.httpStatus, message: "\(what); read back again at the EndDevice's next read")
        }
    }
}
