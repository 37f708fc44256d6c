public import BessBase
public import BessSystem
import ControlCore
import CModbus
public import Config
public import Cycle
public import Fieldbus
import Glibc
public import Synchronization

/// Serves the site as a SunSpec device on Modbus TCP (libmodbus's server API) on a thread of its
/// own: never the cycle's, never the watchdog's. Many clients at once; each request is answered
/// from the image of the cycle's latest published state, rebuilt when a new cycle has published.
///
/// Reads (function 03) are answered from the image; a read outside it with exception 02. With
/// `scada.writes: true`, functions 06 and 16 may set the grid operator limit, the site setpoint,
/// the site var setpoint and the power factors of model 704 (`ScadaImage.writablePoints`): any other
/// register answers 02, a value out of range or beyond the site's capability 03, both with nothing
/// applied. With writes off every write answers 01 (illegal function), as do
/// functions bessd does not serve. Every write, accepted or refused, is logged and counted.
///
/// `@unchecked Sendable`: the libmodbus context, the mapping and the image are used only by the
/// server thread; counters are atomics.
public final class ScadaServer: @unchecked Sendable {
    public let configuration: ScadaConfiguration
    public private(set) var port: Int
    private let shared: SharedState
    private var image: ScadaImage
    /// The libmodbus context and the register mapping the image is copied into.
    private let server: ModbusServerContext
    private var context: OpaquePointer { server.context }
    /// The listening socket and whom it admits (`allow_from`, `max_clients`, `idle_timeout_s`):
    /// set by `start()`, then the server thread's.
    private var listener: TCPListener?
    private let worker = WorkerThread()
    /// Ends the server's wait at `stop()`: the thread sleeps until a client speaks, the first
    /// client's idle timeout or `stop()`, not on a fixed tick.
    private let stopWakeup = Wakeup()
    /// Times the server's wait returned (tests: an idle server does not tick).
    let wakeups = Atomic<UInt64>(0)
    private let log: @Sendable (Notice) -> Void
    /// Called once a write to the grid operator limit's points is committed, before it is answered:
    /// the daemon keeps the limit on disk there (`HoldKeeper`), so an answered limit survives a restart.
    private let keepLimit: (@Sendable () -> Void)?
    /// Requests answered, writes accepted and refused, connections refused (allow_from or
    /// max_clients), closed idle.
    public let answered = Atomic<UInt64>(0)
    public let writesAccepted = Atomic<UInt64>(0)
    public let writesRefused = Atomic<UInt64>(0)
    /// Writes refused with exception 01, 02 and 03.
    public let refusedIllegalFunction = Atomic<UInt64>(0)
    public let refusedIllegalAddress = Atomic<UInt64>(0)
    public let refusedIllegalValue = Atomic<UInt64>(0)
    public let connectionsRefused = Atomic<UInt64>(0)
    public let idleClosed = Atomic<UInt64>(0)
    /// Connections open now.
    public let connected = Atomic<Int>(0)
    /// What the image describes (fixed for the run; on the RTU line, with its unit id).
    public let siteDescription: ScadaSiteDescription
    private var units: [UnitStatus]
    private var site = SiteStatus()
    private var lastCycle: UInt64 = .max

    /// The serial line served, when this server is the RTU one (`scada.serial`).
    public let serial: SerialSettings?

    /// `log` is called on the server thread with the notices of writes, refusals and closures
    /// (`ScadaCode`); `keepLimit` after a limit write is
    /// committed, before its answer. With
    /// `serialLine`, this server answers on `configuration.serial` (Modbus RTU) instead of TCP: one
    /// server, and one thread, per line.
    public init(configuration: ScadaConfiguration, serialLine: Bool = false, site description: ScadaSiteDescription,
                shared: SharedState, keepLimit: (@Sendable () -> Void)? = nil,
                log: @escaping @Sendable (Notice) -> Void) throws(FieldbusError) {
        self.configuration = configuration
        self.shared = shared
        self.log = log
        self.keepLimit = keepLimit
        port = configuration.port
        var site = description
        if serialLine { site.unitID = configuration.serialUnitID }
        siteDescription = site
        image = ScadaImage(site: site)
        units = [UnitStatus](repeating: UnitStatus(), count: shared.unitCount)
        serial = serialLine ? configuration.serial : nil
        let endpoint: ModbusServerContext.Endpoint = if let line = serial {
            .rtu(device: line.device, baud: line.baud, parity: line.parity.letter, dataBits: line.dataBits,
                 stopBits: line.stopBits, unitID: configuration.serialUnitID)
        } else {
            .tcp(host: configuration.host, port: configuration.port)
        }
        server = try ModbusServerContext(endpoint, holdingRegistersFrom: ScadaImage.base, count: image.words.count,
                                         failure: .scadaServerFailed)
        copyImage()
    }

    /// Stops the thread before the context it uses is freed.
    deinit {
        stop()
    }

    /// Listens (or opens the serial line) and starts the server thread.
    public func start() throws(FieldbusError) {
        if let line = serial {
            guard modbus_connect(context) == 0 else {
                throw FieldbusError(.scadaSerialFailed, message: "cannot open \(line.device): \(SystemError.text(errno))",
                                    errno: errno)
            }
            if line.rs485, modbus_rtu_set_serial_mode(context, MODBUS_RTU_RS485) != 0 {
                modbus_close(context)
                throw FieldbusError(.scadaSerialFailed,
                                    message: "\(line.device): RS-485 mode refused: \(SystemError.text(errno))", errno: errno)
            }
            // The thread waits for the line's first byte in poll (beside stop()'s eventfd); once a
            // byte is there, the rest of a request has a second to arrive.
            modbus_set_indication_timeout(context, 1, 0)
            worker.start { [self] in serveSerial(line.device) }
            return
        }
        do throws(SystemCallError) {
            let listener = try TCPListener(host: configuration.host, port: configuration.port, admission: Self.admission(configuration))
            self.listener = listener
            port = listener.port
        } catch {
            throw FieldbusError(.scadaListenFailed,
                                message: "cannot listen on \(configuration.host):\(configuration.port): \(SystemError.text(error.errno))",
                                errno: error.errno)
        }
        worker.start { [self] in serve() }
    }

    public func stop() {
        worker.stop { [stopWakeup] in stopWakeup.signal() }
    }

    /// True when `address` (host byte order) may connect: an `allow_from` network holds it, or
    /// loopback when the list is empty.
    public static func allowed(_ address: UInt32, by networks: [IPv4Network]) -> Bool {
        if networks.isEmpty { return address >> 24 == 127 }
        return networks.contains { $0.contains(address) }
    }

    /// Whom the listener admits: `allow_from` (`allowed(_:by:)`), at most `max_clients` at once,
    /// each closed after `idle_timeout_s` without a request.
    static func admission(_ configuration: ScadaConfiguration) -> TCPListener.Admission {
        let networks = configuration.allowFrom
        return TCPListener.Admission(allows: { allowed($0, by: networks) }, maxClients: configuration.maxClients,
                                     idleTimeout: configuration.idleTimeout)
    }

    private func copyImage() {
        server.load(image.words)
    }

    /// Rebuilds the image when the cycle has published since the last request (704 from SCADA's
    /// commands as they stand now).
    private func refresh() {
        var frequency = Double.nan
        var view = SiteView()
        let cycle = shared.read(units: &units, site: &site, view: &view, frequency: &frequency)
        guard cycle != lastCycle else { return }
        lastCycle = cycle
        image.fill(units: units, site: site, view: view, frequency: frequency)
        image.fill(commands: shared.commands, now: SystemClock.shared.now())
        copyImage()
    }

    /// A connection the listener admitted. Its socket is closed once, when the server lets the
    /// client go; libmodbus only borrows the descriptor for a request (`ModbusServerContext.receive`).
    private final class Client {
        let socket: Socket
        let peer: String
        var lastActive: MonotonicInstant

        init(_ connection: consuming TCPConnection, now: MonotonicInstant) {
            peer = connection.peer
            socket = connection.takeSocket()
            lastActive = now
        }
    }

    private func serve() {
        guard let listener else { return }
        let admission = listener.admission
        var clients: [Client] = []
        var fds: [pollfd] = []
        fds.reserveCapacity(configuration.maxClients + 2)
        var query = [UInt8](repeating: 0, count: 260)
        let header = Int(modbus_get_header_length(context))
        while worker.isRunning {
            fds.removeAll(keepingCapacity: true)
            fds.append(pollfd(fd: stopWakeup.descriptor, events: Int16(POLLIN), revents: 0))
            fds.append(pollfd(fd: listener.descriptor, events: Int16(POLLIN), revents: 0))
            for client in clients { fds.append(pollfd(fd: client.socket.rawValue, events: Int16(POLLIN), revents: 0)) }
            let ready = poll(&fds, nfds_t(fds.count), Self.pollTimeout(clients.lazy.map(\.lastActive), idle: configuration.idleTimeout,
                                                                        now: SystemClock.shared.now()))
            wakeups.add(1, ordering: .relaxed)
            if fds[0].revents != 0 { stopWakeup.drain() }
            let now = SystemClock.shared.now()
            // Idle connections close whether or not anything else happened (logged before the close).
            clients.removeAll { client in
                guard admission.isIdle(since: client.lastActive, now: now) else { return false }
                idleClosed.add(1, ordering: .relaxed)
                log(Notice(ScadaCode.clientIdle, "SCADA client \(client.peer) closed after \(configuration.idleTimeout.secondsDouble) s without a request"))
                return true
            }
            connected.store(clients.count, ordering: .relaxed)
            if ready <= 0 { continue }
            var closed: [Int32] = []
            for entry in fds.dropFirst(2) where entry.revents != 0 {
                guard let client = clients.first(where: { $0.socket.rawValue == entry.fd }) else { continue }
                let count = server.receive(on: entry.fd, into: &query) { query, count in
                    client.lastActive = now
                    return answer(query, count: count, header: header, peer: client.peer)
                }
                // Failed, closed by the peer, or answered with a reply not sent whole: let go.
                if count < 0 { closed.append(entry.fd) }
            }
            // After the reads: a newcomer may reuse the number of a descriptor closed idle above, and
            // must not be read for a readiness that was its predecessor's. The failed ones still
            // count against max_clients until they are let go, as before.
            if fds[1].revents & Int16(POLLIN) != 0 { admit(from: listener, into: &clients, now: now) }
            clients.removeAll { closed.contains($0.socket.rawValue) }
            connected.store(clients.count, ordering: .relaxed)
        }
        clients.removeAll()
        connected.store(0, ordering: .relaxed)
        self.listener = nil
    }

    /// How long the server's poll may sleep (ms; -1: until a client, a connection or `stop()` wakes
    /// it): until the first client's idle timeout runs out. Nothing else in the server keeps time (a
    /// command's hold expires in the cycle, not here).
    static func pollTimeout(_ lastActive: some Sequence<MonotonicInstant>, idle: Duration, now: MonotonicInstant) -> Int32 {
        SystemClock.pollTimeout(until: lastActive.min().map { $0 + idle }, now: now)
    }

    /// The RTU line: one request at a time, as the bus allows. The thread sleeps in poll on the line
    /// and `stop()`'s eventfd; a request is read once its first byte is there.
    private func serveSerial(_ device: String) {
        var query = [UInt8](repeating: 0, count: 256)
        let header = Int(modbus_get_header_length(context))
        let line = modbus_get_socket(context)
        while worker.isRunning {
            var fds = (pollfd(fd: stopWakeup.descriptor, events: Int16(POLLIN), revents: 0),
                       pollfd(fd: line, events: Int16(POLLIN), revents: 0))
            let ready = withUnsafeMutableBytes(of: &fds) {
                poll($0.baseAddress!.assumingMemoryBound(to: pollfd.self), 2, -1)
            }
            wakeups.add(1, ordering: .relaxed)
            if fds.0.revents != 0 { stopWakeup.drain() }
            guard ready > 0, fds.1.revents != 0, worker.isRunning else { continue }
            let count = modbus_receive(context, &query)
            if count > 0 {
                _ = answer(query, count: count, header: header, peer: device)
            } else if count < 0, errno != ETIMEDOUT {
                modbus_flush(context)
                // A line in error (a hang-up) stays readable: do not spin on it.
                if fds.1.revents & Int16(POLLHUP | POLLERR) != 0 {
                    stopWakeup.wait(until: SystemClock.shared.now() + .milliseconds(100))
                }
            }
        }
        modbus_close(context)
    }

    /// Takes the next pending connection: a client, or a refusal counted and logged before the
    /// listener closes it (so whoever sees the close sees the count).
    private func admit(from listener: TCPListener, into clients: inout [Client], now: MonotonicInstant) {
        let taken = listener.admit(open: clients.count) { connection, refusal in
            connectionsRefused.add(1, ordering: .relaxed)
            log(Self.refusalNotice(refusal, peer: connection.peer))
        }
        guard let taken else { return }
        switch consume taken {
        case .admitted(let connection): clients.append(Client(connection, now: now))
        case .refused: break
        }
    }

    /// The journal line of a connection the listener refused.
    static func refusalNotice(_ refusal: TCPListener.Refusal, peer: String) -> Notice {
        switch refusal {
        case .notAllowed:
            Notice(ScadaCode.peerRefused, "SCADA connection from \(peer) refused: not in scada.allow_from", [.peer: peer])
        case .full(let maxClients):
            Notice(ScadaCode.clientsFull, "SCADA connection from \(peer) refused: \(maxClients) clients already connected (scada.max_clients)",
                   [.peer: peer])
        }
    }

    /// Answers one request; true when the reply went out whole (`ModbusServerContext.reply`).
    private func answer(_ query: [UInt8], count: Int32, header: Int, peer: String) -> Bool {
        defer { answered.add(1, ordering: .relaxed) }
        let function = query[header]
        let address = Int(query[header + 1]) << 8 | Int(query[header + 2])
        switch function {
        case 0x03:
            refresh()
            return server.reply(query, length: count)
        case 0x06, 0x10:
            if configuration.writes {
                return write(query, count: Int(count), header: header, peer: peer)
            } else {
                return refuse(query, 1, peer: peer, address: address, reason: "writes are off (scada.writes: false)")
            }
        case 0x17:
            return refuse(query, 1, peer: peer, address: address, reason: "function 23 (read/write multiple) is not served; write with 6 or 16")
        default:
            return server.replyException(query, UInt8(MODBUS_EXCEPTION_ILLEGAL_FUNCTION))
        }
    }

    /// A write (function 06 or 16): decoded against SCADA's commands as last written, applied whole
    /// or refused whole, logged point by point. True when the reply went out whole.
    private func write(_ query: [UInt8], count: Int, header: Int, peer: String) -> Bool {
        let function = query[header]
        let address = Int(query[header + 1]) << 8 | Int(query[header + 2])
        var values: [UInt16] = []
        if function == 0x06 {
            guard count >= header + 5 else { return refuse(query, 3, peer: peer, address: address, reason: "a short request") }
            values = [UInt16(query[header + 3]) << 8 | UInt16(query[header + 4])]
        } else {
            let quantity = count >= header + 6 ? Int(query[header + 3]) << 8 | Int(query[header + 4]) : 0
            let bytes = count >= header + 6 ? Int(query[header + 5]) : -1
            guard (1...123).contains(quantity), bytes == 2 * quantity, count >= header + 6 + bytes else {
                return refuse(query, 3, peer: peer, address: address, reason: "a request whose quantity and byte count disagree")
            }
            values = (0..<quantity).map { UInt16(query[header + 6 + 2 * $0]) << 8 | UInt16(query[header + 7 + 2 * $0]) }
        }
        let now = SystemClock.shared.now()
        // A var or a power factor is judged against the site's reactive capability as last published.
        let view = shared.view
        // Two servers (TCP and RTU) may write at once: commit only over what was decoded against.
        let update = shared.updateCommands { current in
            image.decodeWrite(address: address, values: values, commands: current, now: now, view: view)
                .map { (commands: $0.commands, accepted: $0) }
        }
        switch update {
        case .failure(let refusal)?:
            return refuse(query, refusal.exception, peer: peer, address: address, reason: refusal.reason)
        case .success(let accepted)?:
            if accepted.limitWritten { keepLimit?() }
            image.fill(commands: accepted.commands, now: now)
            copyImage()
            writesAccepted.add(1, ordering: .relaxed)
            let sent = server.reply(query, length: Int32(count))
            report(accepted, peer: peer, now: now)
            return sent
        case nil:
            return refuse(query, 6, peer: peer, address: address, reason: "the commands changed under eight attempts in a row")
        }
    }

    /// Refreshes that changed nothing, per peer host and point: logged once a minute, the next line
    /// saying how many were not (a plant controller refreshing its setpoint every second must not
    /// flood the journal; every write is still counted in /metrics). A change is always logged.
    private var quietRefreshes = PeerBudget<String>(window: .seconds(60), lines: 1, keys: 1024, report: .withNextLine)

    /// One journal line per point written: peer, point, old → new, and when the command reverts.
    /// A write of the value a point already holds is logged once a minute per peer and point.
    private func report(_ write: ScadaWrite, peer: String, now: MonotonicInstant) {
        for change in write.changes {
            let key = "\(peer.split(separator: ":").first ?? "")|\(change.point)"
            let admission = quietRefreshes.admit(key, at: now, force: change.old != change.new)
            guard admission.written else { continue }
            let repeats = admission.heldBack
            guard let found = ScadaCommand.of(change.point) else { continue }
            let (command, role) = found
            let record = write.commands[keyPath: command.keyPath]
            let hold = record.remaining(at: now).secondsDouble
            let unit = command.unit(ofRole: role)
            let revertTo = record.revertEnabled
                ? command.describe(record.revertValue)
                    + (command == .limit ? "" : " for at most \(Self.number(write.commands.maxHold.secondsDouble)) s")
                : "disabled"
            var fields: [NoticeField: String] = [.peer: peer, .point: change.point, .old: Self.number(change.old),
                                                 .new: Self.number(change.new), .expiresS: Self.number(hold)]
            if repeats > 0 { fields[.suppressed] = "\(repeats)" }
            log(Notice(ScadaCode.write,
                       "SCADA write from \(peer): \(change.point) \(Self.number(change.old)) → \(Self.number(change.new))\(unit); "
                           + "\(command.noun) reverts in \(Self.number(hold)) s without a refresh (to \(revertTo))"
                           + (repeats > 0 ? " (\(repeats) unchanged refreshes before this not logged)" : ""), fields))
        }
    }

    /// Answers a refused write with `exception`, counted and logged; true when the reply went out whole.
    /// Counted before the reply goes out, so a client that has its answer sees the count.
    private func refuse(_ query: [UInt8], _ exception: UInt8, peer: String, address: Int, reason: String) -> Bool {
        writesRefused.add(1, ordering: .relaxed)
        switch exception {
        case 1: refusedIllegalFunction.add(1, ordering: .relaxed)
        case 2: refusedIllegalAddress.add(1, ordering: .relaxed)
        case 3: refusedIllegalValue.add(1, ordering: .relaxed)
        default: break
        }
        let sent = server.replyException(query, exception)
        log(Notice(ScadaCode.writeRefused,
                   "SCADA write from \(peer) at \(address) refused with exception \(exception < 10 ? "0" : "")\(exception): \(reason)",
                   [.peer: peer, .register: "\(address)", .exception: "\(exception)"]))
        return sent
    }

    /// Three decimals, no trailing zeros (`trimmed`).
    static func number(_ value: Double) -> String { trimmed(value, decimals: 3) }
}
