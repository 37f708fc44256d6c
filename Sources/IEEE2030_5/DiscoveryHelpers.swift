import BessBase
import ControlCore

/// The server's clock as a `DiscoverySession` knows it: the last Time reply's `currentTime` anchored to
/// the monotonic clock (a step of the local wall clock moves nothing), else the local wall clock passed
/// with the last reply, counted on the same way.
struct ServerClock: Sendable {
    var timeAnchor: (serverTime: Int64, monotonic: MonotonicInstant)?
    /// The local wall clock at a monotonic instant (the last reply that came with one).
    var wallAnchor: (wall: Int64, monotonic: MonotonicInstant)?
    /// The server's `currentTime` minus the wall clock passed with the last Time reply, seconds; nil
    /// until a Time reply came with a wall clock.
    var offset: Int64?

    /// The server's clock at monotonic `now`: the last Time reply's `currentTime` plus the whole
    /// monotonic seconds since; nil before a Time reply.
    func serverTime(now: MonotonicInstant) -> Int64? {
        timeAnchor.map { EventRules.clampedSum($0.serverTime, Self.wholeSeconds(now, after: $0.monotonic)) }
    }

    /// The server's time at `now` as well as it is known: the Time resource's, else the local wall clock
    /// last passed in counted on, else 0.
    func forWriting(now: MonotonicInstant) -> Int64 {
        if let server = serverTime(now: now) { return server }
        guard let wallAnchor else { return 0 }
        return EventRules.clampedSum(wallAnchor.wall, Self.wholeSeconds(now, after: wallAnchor.monotonic))
    }

    /// A Time reply's `currentTime` taken at `now`, with the local `wallClock` of its reply.
    mutating func anchor(_ currentTime: Int64, at now: MonotonicInstant, wallClock: Int64?) {
        timeAnchor = (currentTime, now)
        offset = wallClock.map { Self.clampedDifference(currentTime, $0) }
    }

    /// The whole seconds from `earlier` to `later`, held at the nearer bound of `Int64` nanoseconds
    /// where the clocks are at their ends.
    static func wholeSeconds(_ later: MonotonicInstant, after earlier: MonotonicInstant) -> Int64 {
        clampedDifference(later.nanoseconds, earlier.nanoseconds) / 1_000_000_000
    }

    /// `a − b`, held at the nearer bound where it would overflow.
    static func clampedDifference(_ a: Int64, _ b: Int64) -> Int64 {
        let (difference, overflow) = a.subtractingReportingOverflow(b)
        return overflow ? (b < 0 ? .max : .min) : difference
    }
}

/// In-band registration (`registration: in_band`): the EndDevice POSTed to the EndDeviceList that lacks
/// this device, then followed where the server put it until the list shows it.
struct InBandRegistration: Sendable {
    /// The EndDeviceList whose lack of this device asks for a POST.
    var wanted: String?
    /// Where the server put the EndDevice POSTed (its `Location`), followed while the list lacks it.
    var registeredAt: String?
    /// A POST answered without a `Location`: the list is read again at once to find the device.
    var awaitingListing = false

    /// This device `listed` or not in the EndDevices read at `path` (an EndDeviceList when `list`, else
    /// the EndDevice where the server put it). Throws `SEP2_END_DEVICE_UNKNOWN` when it is neither listed
    /// nor registered in band (nor to be).
    mutating func found(listed: Bool, at path: String, list: Bool, inBand: Bool, lfdi: String, sfdi: UInt64) throws(SEP2Error) {
        if list {
            if listed {
                registeredAt = nil
                awaitingListing = false
                wanted = nil
            } else if inBand && registeredAt == nil {
                if awaitingListing {
                    // POSTed without a Location and still not listed: POST again at the list's next read.
                    awaitingListing = false
                    throw SEP2Error(.endDeviceUnknown, message: "the EndDevice POSTed to \(quoted(path, limit: 64)) is not in it: lFDI \(quoted(lfdi, limit: 40)), sFDI \(sfdi)")
                }
                wanted = path
                return
            }
        }
        if !listed, !list, path == registeredAt {
            // The Location names another device: registered afresh at the list's next read.
            registeredAt = nil
        }
        guard listed || (list && registeredAt != nil) else {
            throw SEP2Error(.endDeviceUnknown, message: "no EndDevice in \(quoted(path, limit: 64)) has lFDI \(quoted(lfdi, limit: 40)) or sFDI \(sfdi)")
        }
    }

    /// The POST accepted with `location`: true when it names where the device is (followed from now on);
    /// false when it names none (the list is to be read again at once).
    mutating func accepted(location: String?) -> Bool {
        wanted = nil
        guard let path = Self.locationPath(location) else {
            awaitingListing = true
            return false
        }
        registeredAt = path
        return true
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
}
