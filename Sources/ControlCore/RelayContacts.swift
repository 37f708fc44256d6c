/// The grid operator's relay contacts (a ripple-control receiver's outputs, read through a Modbus
/// I/O module): each contact, while asserted, asks for a percent limit; the lowest asserted one
/// applies. Pure state: the reader hands it each reading with its instant.
///
/// A contact's state is taken once it has read the same for `debounce` (a bounce shorter than that
/// changes nothing). Until every contact has been read steady once, the state is unknown, and an
/// unknown contact counts as asserted: the most restrictive configured limit applies until the
/// module has answered (a gateway that restarts while the operator holds 0 % must not run at 100 %).
public struct RelayContacts: Sendable, Equatable {
    public struct Contact: Sendable, Equatable {
        /// The input (or coil) address on the module.
        public var input: Int
        public var limitPercent: Double
        public init(input: Int, limitPercent: Double) {
            self.input = input
            self.limitPercent = limitPercent
        }
    }

    public let contacts: [Contact]
    /// True: a contact is asserted when its bit reads 1 (closed); false: when it reads 0.
    public let activeHigh: Bool
    public let debounce: Duration
    /// The last bit read per contact and since when it has read so.
    private var raw: [Bool?]
    private var since: [MonotonicInstant]
    /// The debounced state per contact: asserted or not; nil until read steady once.
    public private(set) var asserted: [Bool?]

    public init(contacts: [Contact], activeHigh: Bool = true, debounce: Duration = .milliseconds(100)) {
        self.contacts = contacts
        self.activeHigh = activeHigh
        self.debounce = debounce
        raw = [Bool?](repeating: nil, count: contacts.count)
        since = [MonotonicInstant](repeating: .zero, count: contacts.count)
        asserted = [Bool?](repeating: nil, count: contacts.count)
    }

    /// The span of inputs to read in one request: the lowest address and the count up to the highest.
    public var span: (first: Int, count: Int) {
        let inputs = contacts.map(\.input)
        let first = inputs.min() ?? 0
        return (first, (inputs.max() ?? 0) - first + 1)
    }

    /// Takes one reading: `bits[i]` is input `span.first + i`. Returns true when the limit in force
    /// changed.
    @discardableResult
    public mutating func update(bits: [Bool], at now: MonotonicInstant) -> Bool {
        let before = limitPercent
        let first = span.first
        for (i, contact) in contacts.enumerated() {
            let index = contact.input - first
            guard index >= 0, index < bits.count else { continue }
            let level = bits[index]
            if raw[i] != level {
                raw[i] = level
                since[i] = now
            }
            if now.seconds(since: since[i]) >= debounce.secondsDouble - 1e-9 {
                asserted[i] = level == activeHigh
            }
        }
        return limitPercent != before
    }

    /// The limit in force, percent: the lowest of the asserted (or still unknown) contacts; nil
    /// when none is asserted.
    public var limitPercent: Double? {
        var lowest: Double?
        for (i, contact) in contacts.enumerated() where asserted[i] != false {
            lowest = min(lowest ?? .infinity, contact.limitPercent)
        }
        return lowest
    }
}
