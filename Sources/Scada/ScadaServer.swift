import BessSystem
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
/// Read-only for now: every write, and every function other than 03 (read holding registers), is
/// answered with exception 01 (illegal function); a read outside the image with 02.
///
/// `@unchecked Sendable`: the libmodbus context, the mapping and the image are used only by the
/// server thread; counters are atomics.
public final class ScadaServer: @unchecked Sendable {
    public let configuration: ScadaConfiguration
    public private(set) var port: Int
    private let shared: SharedState
    private var image: ScadaImage
    private let context: OpaquePointer
    private let mapping: UnsafeMutablePointer<modbus_mapping_t>
    private var listener: Int32 = -1
    private let worker = WorkerThread()
    private let log: @Sendable (String, String) -> Void
    /// Requests answered, writes refused, connections refused (allow_from or max_clients), closed idle.
    public let answered = Atomic<UInt64>(0)
    public let writesRefused = Atomic<UInt64>(0)
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

    /// `log(code, message)` is called on the server thread for refusals and closures. With
    /// `serialLine`, this server answers on `configuration.serial` (Modbus RTU) instead of TCP: one
    /// server, and one thread, per line.
    public init(configuration: ScadaConfiguration, serialLine: Bool = false, site description: ScadaSiteDescription,
                shared: SharedState, log: @escaping @Sendable (String, String) -> Void) throws(FieldbusError) {
        self.configuration = configuration
        self.shared = shared
        self.log = log
        port = configuration.port
        var site = description
        if serialLine { site.unitID = configuration.serialUnitID }
        siteDescription = site
        image = ScadaImage(site: site)
        units = [UnitStatus](repeating: UnitStatus(), count: shared.unitCount)
        serial = serialLine ? configuration.serial : nil
        let created: OpaquePointer?
        if let line = serial {
            created = modbus_new_rtu(line.device, Int32(line.baud), CChar(line.parity.letter.asciiValue ?? 0x4E),
                                     Int32(line.dataBits), Int32(line.stopBits))
            if let created { modbus_set_slave(created, Int32(configuration.serialUnitID)) }
        } else {
            created = modbus_new_tcp(configuration.host, Int32(configuration.port))
        }
        guard let context = created else {
            throw FieldbusError(code: "SCADA_SERVER_FAILED", message: "cannot create a Modbus server context", errno: errno)
        }
        self.context = context
        guard let mapping = modbus_mapping_new_start_address(0, 0, 0, 0, UInt32(ScadaImage.base), UInt32(image.words.count),
                                                             0, 0) else {
            modbus_free(context)
            throw FieldbusError(code: "SCADA_SERVER_FAILED", message: "cannot allocate the register map", errno: errno)
        }
        self.mapping = mapping
        copyImage()
    }

    deinit {
        stop()
        modbus_mapping_free(mapping)
        modbus_free(context)
    }

    /// Listens (or opens the serial line) and starts the server thread.
    public func start() throws(FieldbusError) {
        if let line = serial {
            guard modbus_connect(context) == 0 else {
                throw FieldbusError(code: "SCADA_SERIAL_FAILED", message: "cannot open \(line.device): \(SystemError.text(errno))",
                                    errno: errno)
            }
            if line.rs485, modbus_rtu_set_serial_mode(context, MODBUS_RTU_RS485) != 0 {
                modbus_close(context)
                throw FieldbusError(code: "SCADA_SERIAL_FAILED",
                                    message: "\(line.device): RS-485 mode refused: \(SystemError.text(errno))", errno: errno)
            }
            // Return from a wait every 100 ms so stop() is noticed.
            modbus_set_indication_timeout(context, 0, 100_000)
            worker.start { [self] in serveSerial(line.device) }
            return
        }
        guard let (fd, bound) = ModbusServerSocket.listen(context, port: configuration.port) else {
            throw FieldbusError(code: "SCADA_LISTEN_FAILED",
                                message: "cannot listen on \(configuration.host):\(configuration.port): \(SystemError.text(errno))",
                                errno: errno)
        }
        listener = fd
        port = bound
        worker.start { [self] in serve() }
    }

    public func stop() {
        worker.stop()
    }

    /// True when `address` (host byte order) may connect: an `allow_from` network holds it, or
    /// loopback when the list is empty.
    public static func allowed(_ address: UInt32, by networks: [IPv4Network]) -> Bool {
        if networks.isEmpty { return address >> 24 == 127 }
        return networks.contains { $0.contains(address) }
    }

    private func copyImage() {
        image.words.withUnsafeBufferPointer { source in
            mapping.pointee.tab_registers.update(from: source.baseAddress!, count: source.count)
        }
    }

    /// Rebuilds the image when the cycle has published since the last request.
    private func refresh() {
        var frequency = Double.nan
        let cycle = shared.read(units: &units, site: &site, frequency: &frequency)
        guard cycle != lastCycle else { return }
        lastCycle = cycle
        image.fill(units: units, site: site, frequency: frequency)
        copyImage()
    }

    private struct Client {
        var fd: Int32
        var peer: String
        var lastActive: Int64
    }

    private func serve() {
        var clients: [Client] = []
        var query = [UInt8](repeating: 0, count: 260)
        let header = Int(modbus_get_header_length(context))
        let idleNs = Int64(configuration.idleTimeoutSeconds * 1e9)
        while worker.isRunning {
            var fds = [pollfd(fd: listener, events: Int16(POLLIN), revents: 0)]
            fds += clients.map { pollfd(fd: $0.fd, events: Int16(POLLIN), revents: 0) }
            let ready = poll(&fds, nfds_t(fds.count), 100)
            let now = MonotonicClockReading.now()
            // Idle connections close whether or not anything else happened.
            clients.removeAll { client in
                guard now - client.lastActive > idleNs else { return false }
                idleClosed.add(1, ordering: .relaxed)
                log("SCADA_CLIENT_IDLE", "SCADA client \(client.peer) closed after \(configuration.idleTimeoutSeconds) s without a request")
                close(client.fd)
                return true
            }
            connected.store(clients.count, ordering: .relaxed)
            if ready <= 0 { continue }
            if fds[0].revents & Int16(POLLIN) != 0 { accept(into: &clients, now: now) }
            var closed: [Int32] = []
            for entry in fds.dropFirst() where entry.revents != 0 {
                guard let index = clients.firstIndex(where: { $0.fd == entry.fd }) else { continue }
                modbus_set_socket(context, entry.fd)
                let count = modbus_receive(context, &query)
                if count > 0 {
                    clients[index].lastActive = now
                    answer(query, count: count, header: header, peer: clients[index].peer)
                } else if count < 0 {
                    closed.append(entry.fd)
                }
            }
            for fd in closed {
                close(fd)
                clients.removeAll { $0.fd == fd }
            }
            connected.store(clients.count, ordering: .relaxed)
        }
        for client in clients { close(client.fd) }
        connected.store(0, ordering: .relaxed)
        close(listener)
        listener = -1
    }

    /// The RTU line: one request at a time, as the bus allows.
    private func serveSerial(_ device: String) {
        var query = [UInt8](repeating: 0, count: 256)
        let header = Int(modbus_get_header_length(context))
        while worker.isRunning {
            let count = modbus_receive(context, &query)
            if count > 0 {
                answer(query, count: count, header: header, peer: device)
            } else if count < 0, errno != ETIMEDOUT {
                modbus_flush(context)
            }
        }
        modbus_close(context)
    }

    private func accept(into clients: inout [Client], now: Int64) {
        var address = sockaddr_in()
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let fd = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.accept(listener, $0, &length) }
        }
        guard fd >= 0 else { return }
        let host = UInt32(bigEndian: address.sin_addr.s_addr)
        let peer = "\(host >> 24).\(host >> 16 & 255).\(host >> 8 & 255).\(host & 255):\(UInt16(bigEndian: address.sin_port))"
        // Counted and logged before the close, so whoever sees the close sees the count.
        guard Self.allowed(host, by: configuration.allowFrom) else {
            connectionsRefused.add(1, ordering: .relaxed)
            log("SCADA_PEER_REFUSED", "SCADA connection from \(peer) refused: not in scada.allow_from")
            close(fd)
            return
        }
        guard clients.count < configuration.maxClients else {
            connectionsRefused.add(1, ordering: .relaxed)
            log("SCADA_CLIENTS_FULL", "SCADA connection from \(peer) refused: \(configuration.maxClients) clients already connected (scada.max_clients)")
            close(fd)
            return
        }
        clients.append(Client(fd: fd, peer: peer, lastActive: now))
    }

    private func answer(_ query: [UInt8], count: Int32, header: Int, peer: String) {
        let function = query[header]
        guard function == 0x03 else {
            _ = modbus_reply_exception(context, query, UInt32(MODBUS_EXCEPTION_ILLEGAL_FUNCTION))
            if function == 0x06 || function == 0x10 || function == 0x17 {
                writesRefused.add(1, ordering: .relaxed)
                let address = Int(query[header + 1]) << 8 | Int(query[header + 2])
                log("SCADA_WRITE_REFUSED", "SCADA write from \(peer) at \(address) refused with exception 01: writes are off")
            }
            answered.add(1, ordering: .relaxed)
            return
        }
        refresh()
        _ = modbus_reply(context, query, count, mapping)
        answered.add(1, ordering: .relaxed)
    }
}
