import BessBase
import ControlCore

/// The writes: the EndDevice POSTed for in-band registration and the ConnectionPoint PUT.
extension DiscoverySession {
    /// Whether a write waits (perhaps for its back-off).
    var hasWrite: Bool { wantedWrite(now: writeHold.due) != nil }

    /// The ConnectionPointLink the configured id is to be PUT to, and the resource holding the EndDevice:
    /// nil without an id, a link, an agreed Registration, or when it was PUT there already.
    var connectionPointTarget: (link: String, holder: String)? {
        guard options.connectionPointId != nil, let found = endDeviceHolder, let link = found.device.connectionPointLink,
              link != connectionPoint.put else { return nil }
        return registered(found.device) ? (link, found.path) : nil
    }

    /// The write due at `now`, with the resource it is made for; nil when none is.
    func wantedWrite(now: MonotonicInstant) -> (request: Sep2Request, node: String)? {
        guard !restoring, !writeHold.holds(at: now) else { return nil }
        if options.inBandRegistration, let list = inBand.wanted, walk.nodes[list] != nil {
            let device = EndDeviceRegistration(lFDI: lfdi, sFDI: sfdi, changedTime: clock.forWriting(now: now), deviceCategory: options.deviceCategory)
            if let body = try? device.xml() {
                return (Sep2Request(method: .post, path: list, body: body, purpose: .registerEndDevice), list)
            }
        }
        if let id = options.connectionPointId, let target = connectionPointTarget,
           let body = try? ConnectionPointReport(connectionPointId: id).xml(csipaus: csipaus ?? .v1_2) {
            return (Sep2Request(method: .put, path: target.link, body: body, purpose: .connectionPoint), target.holder)
        }
        if readBackWanted, !connectionPoint.readHold.holds(at: now), let link = connectionPoint.put, let holder = endDeviceHolder?.path {
            return (Sep2Request(method: .get, path: link, purpose: .connectionPoint), holder)
        }
        return nil
    }

    /// The ConnectionPoint PUT is to be read back (perhaps after the read-back's back-off): the EndDevice
    /// was read since, and the server did not answer an earlier read-back 405.
    var readBackWanted: Bool {
        connectionPoint.check && connectionPoint.readOffered && options.connectionPointId != nil && connectionPoint.put != nil
            && endDeviceHolder != nil
    }

    /// The answer to a write (the ConnectionPoint read back: `ConnectionPointWrite.handleRead`). A refused
    /// write (4xx) is `SEP2_REGISTRATION_REFUSED` and is sent again after the back-off (2, 4 … 300 s).
    mutating func handleWrite(_ reply: Sep2Reply, to request: Sep2Request, parent: String, now: MonotonicInstant) throws(SEP2Error) {
        if request.method == .get {
            try connectionPoint.handleRead(reply, from: request.path, configured: options.connectionPointId, now: now)
            return
        }
        let what = request.purpose == .registerEndDevice ? "the EndDevice POSTed to" : "the ConnectionPoint PUT to"
        switch reply.status {
        case 200...299:
            hold.reset()
            writeHold.reset()
            guard request.purpose == .registerEndDevice else {
                connectionPoint.accepted(at: request.path)
                return
            }
            connectionPoint.put = nil
            if inBand.accepted(location: reply.location) {
                try updateChildren(of: parent, now: now, dropAll: false)
            } else {
                walk.nodes[parent]?.restartPass()
                walk.nodes[parent]?.due = now
            }
        case 429, 503, 500...599:
            try backOff(reply, to: request, what + " ", now: now)
        default:
            writeHold.fail(at: now)
            throw SEP2Error(.registrationRefused, message: "HTTP \(reply.status) for \(what) \(quoted(request.path, limit: 64)); sent again after the back-off")
        }
    }
}
