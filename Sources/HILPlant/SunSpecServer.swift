public import BessBase
import BessSystem
import CModbus
public import ControlCore
public import Fieldbus
import Glibc
import Synchronization

/// Which SunSpec models a simulated inverter serves.
public struct SunSpecDeviceProfile: Sendable, Equatable {
    /// 103 (three-phase integer) or 701 (DER measurement).
    public var measurementModel: UInt16
    /// 704 (DER controls) or 124 (storage).
    public var controlModel: UInt16
    /// Rated active power, W (120 `WRtg`, 121 `WMax`).
    public var ratingW: Double
    /// Model 124 `WChaMax`, W: the base of `OutWRte`/`InWRte` (the rating when nil).
    public var maxChargeRateW: Double?
    /// A meter (201–204) instead of an inverter: the image is common model 1 and this model only,
    /// and `ratingW` is the largest power it must show.
    public var meterModel: UInt16?
    /// Serves model 123 (Immediate controls, `Conn`); false: an inverter bessd cannot open.
    public var immediateControls = true

    public init(measurementModel: UInt16 = 103, controlModel: UInt16 = 704, ratingW: Double,
                maxChargeRateW: Double? = nil, meterModel: UInt16? = nil, immediateControls: Bool = true) {
        self.immediateControls = immediateControls
        self.measurementModel = measurementModel
        self.controlModel = controlModel
        self.ratingW = ratingW
        self.maxChargeRateW = maxChargeRateW
        self.meterModel = meterModel
    }

    /// A grid-connection meter serving `model` (201 single-phase, 203 wye three-phase), able to show
    /// ±`maxW`.
    public static func meter(model: UInt16 = 203, maxW: Double) -> SunSpecDeviceProfile {
        SunSpecDeviceProfile(ratingW: maxW, meterModel: model)
    }
}

/// The register image of a simulated SunSpec inverter: "SunS", 1, measurement, 120, 121, 123,
/// 124 or 704, end — laid out by each model's length as the official definitions give it.
public struct SunSpecImage: Sendable {
    public static let base = 40000
    public internal(set) var words: [UInt16]
    public private(set) var models: [SunSpecModelLocation] = []
    /// Scale factor of W in the measurement model (chosen so the rating fits an int16).
    public let wSF: Int

    public init(profile: SunSpecDeviceProfile) {
        var sf = 0
        while profile.ratingW / SunSpec.powerOfTen(sf) > 30_000 && sf < 6 { sf += 1 }
        wSF = sf
        words = [SunSpec.marker.0, SunSpec.marker.1]
        if let meter = profile.meterModel {
            for (id, length) in [(SunSpec.Common.id, SunSpec.Common.length), (meter, SunSpec.Meter.length)] {
                models.append(SunSpecModelLocation(id: id, length: length, address: Self.base + words.count))
                words += [id, length] + [UInt16](repeating: 0, count: Int(length))
            }
            words += [SunSpec.endModelID, 0]
            fillMeterStatics(meter)
            return
        }
        var lengths: [(UInt16, UInt16)] = [
            (SunSpec.Common.id, SunSpec.Common.length),
            (profile.measurementModel, profile.measurementModel == SunSpec.Measurement.id
                ? SunSpec.Measurement.length : SunSpec.Inverter.length),
            (SunSpec.Nameplate.id, SunSpec.Nameplate.length), (SunSpec.Settings.id, SunSpec.Settings.length),
            (SunSpec.Controls.id, SunSpec.Controls.length),
            (profile.controlModel, profile.controlModel == SunSpec.ACControls.id
                ? SunSpec.ACControls.length : SunSpec.Storage.length),
        ]
        if !profile.immediateControls { lengths.remove(at: 4) }
        for (id, length) in lengths {
            models.append(SunSpecModelLocation(id: id, length: length, address: Self.base + words.count))
            words += [id, length] + [UInt16](repeating: 0, count: Int(length))
        }
        words += [SunSpec.endModelID, 0]
        fillStatics(profile)
    }

    public func model(_ id: UInt16) -> SunSpecModelLocation? { models.first { $0.id == id } }

    /// Index into `words` of a point at `offset` in model `id`.
    public func index(_ id: UInt16, _ offset: Int) -> Int? {
        model(id).map { $0.address - Self.base + offset }
    }

    public subscript(id: UInt16, offset: Int) -> UInt16 {
        get { index(id, offset).map { words[$0] } ?? 0 }
        set { if let i = index(id, offset) { words[i] = newValue } }
    }

    mutating func set32(_ id: UInt16, _ offset: Int, _ value: UInt32) {
        self[id, offset] = UInt16(value >> 16)
        self[id, offset + 1] = UInt16(value & 0xFFFF)
    }

    func get32(_ id: UInt16, _ offset: Int) -> UInt32 { UInt32(self[id, offset]) << 16 | UInt32(self[id, offset + 1]) }

    mutating func setString(_ id: UInt16, _ offset: Int, _ text: String, registers: Int) {
        let bytes = Array(text.utf8.prefix(registers * 2)) + [UInt8](repeating: 0, count: registers * 2)
        for i in 0..<registers { self[id, offset + i] = UInt16(bytes[2 * i]) << 8 | UInt16(bytes[2 * i + 1]) }
    }

    /// A meter's common model and sentinels: every int16 point not implemented (0x8000) until the
    /// plant publishes W and Hz; W_SF sized to the largest power, Hz_SF −2, TotWh_SF 0 (Wh).
    private mutating func fillMeterStatics(_ id: UInt16) {
        typealias M = SunSpec.Meter
        setString(SunSpec.Common.id, SunSpec.Common.manufacturer, "bessd", registers: 16)
        setString(SunSpec.Common.id, SunSpec.Common.model, "HIL meter", registers: 16)
        setString(SunSpec.Common.id, SunSpec.Common.version, "0.1.0", registers: 8)
        setString(SunSpec.Common.id, SunSpec.Common.serial, "HIL-M-0001", registers: 16)
        self[SunSpec.Common.id, SunSpec.Common.deviceAddress] = 1
        for offset in 2...(M.totWhExp - 1) { self[id, offset] = 0x8000 }
        self[id, M.wSF] = UInt16(bitPattern: Int16(wSF))
        self[id, M.reactiveSF] = UInt16(bitPattern: Int16(wSF))
        self[id, M.vSF] = UInt16(bitPattern: Int16(-1))
        self[id, M.hzSF] = UInt16(bitPattern: Int16(-2))
        self[id, M.totWhSF] = 0
        set32(id, M.event, 0)
    }

    /// Publishes a meter's reading: W and var (+ = import), Hz, V (`PhV`, line to neutral) and the
    /// energy counters in Wh (0 = not accumulated). `garbage`: W "not implemented", as a meter with a
    /// broken sensor answers. NaN var or V: "not implemented".
    public mutating func publishMeter(gridW: Double, hz: Double, importedWh: Double, exportedWh: Double, garbage: Bool,
                                      reactiveVar: Double = .nan, voltage: Double = .nan) {
        guard let id = models.last?.id, SunSpec.Meter.ids.contains(id) else { return }
        typealias M = SunSpec.Meter
        let raw = (gridW / SunSpec.powerOfTen(wSF)).rounded()
        self[id, M.w] = garbage || !raw.isFinite ? 0x8000 : UInt16(bitPattern: Int16(clamping: Int(max(-32767, min(32767, raw)))))
        let rawVar = (reactiveVar / SunSpec.powerOfTen(wSF)).rounded()
        self[id, M.reactive] = rawVar.isFinite ? UInt16(bitPattern: Int16(clamping: Int(max(-32767, min(32767, rawVar))))) : 0x8000
        self[id, M.phV] = voltage.isFinite ? UInt16(bitPattern: Int16(clamping: Int(max(0, min(32767, (voltage * 10).rounded()))))) : 0x8000
        self[id, M.hz] = hz.isFinite ? UInt16(bitPattern: Int16(clamping: Int((hz * 100).rounded()))) : 0x8000
        set32(id, M.totWhImp, UInt32(clamping: Int(max(0, importedWh).rounded())))
        set32(id, M.totWhExp, UInt32(clamping: Int(max(0, exportedWh).rounded())))
    }

    private mutating func fillStatics(_ profile: SunSpecDeviceProfile) {
        let sfWord = { (sf: Int) in UInt16(bitPattern: Int16(sf)) }
        setString(SunSpec.Common.id, SunSpec.Common.manufacturer, "bessd", registers: 16)
        setString(SunSpec.Common.id, SunSpec.Common.model, "HIL inverter", registers: 16)
        setString(SunSpec.Common.id, SunSpec.Common.version, "0.1.0", registers: 8)
        setString(SunSpec.Common.id, SunSpec.Common.serial, "HIL-0001", registers: 16)
        self[SunSpec.Common.id, SunSpec.Common.deviceAddress] = 1
        // Everything not implemented carries its sentinel, as a real device's map would.
        let measurement = profile.measurementModel
        if measurement == SunSpec.Measurement.id {
            typealias M = SunSpec.Measurement
            for offset in 2...Int(M.length) + 1 { self[measurement, offset] = 0x8000 }
            self[measurement, M.state] = 1
            self[measurement, M.inverterState] = 3
            self[measurement, M.connectionState] = 1
            set32(measurement, M.alarm, 0)
            self[measurement, M.wSF] = sfWord(wSF)
            self[measurement, M.hzSF] = sfWord(-3)
            self[measurement, M.varSF] = sfWord(wSF)
            self[measurement, M.vSF] = sfWord(-1)
        } else {
            typealias M = SunSpec.Inverter
            for offset in 2...Int(M.length) + 1 { self[measurement, offset] = 0xFFFF }
            self[measurement, M.w] = 0
            self[measurement, M.wSF] = sfWord(wSF)
            self[measurement, M.hzSF] = sfWord(-2)
            self[measurement, M.vAr] = 0
            self[measurement, M.vArSF] = sfWord(wSF)
            self[measurement, M.vSF] = sfWord(-1)
            self[measurement, M.state] = 4
            set32(measurement, M.event1, 0)
        }
        self[SunSpec.Nameplate.id, SunSpec.Nameplate.derType] = 82  // storage
        self[SunSpec.Nameplate.id, SunSpec.Nameplate.wRtg] = UInt16(clamping: Int((profile.ratingW / SunSpec.powerOfTen(wSF)).rounded()))
        self[SunSpec.Nameplate.id, SunSpec.Nameplate.wRtgSF] = sfWord(wSF)
        self[SunSpec.Settings.id, SunSpec.Settings.wMax] = self[SunSpec.Nameplate.id, SunSpec.Nameplate.wRtg]
        self[SunSpec.Settings.id, SunSpec.Settings.wMaxSF] = sfWord(wSF)
        if profile.immediateControls {
            self[SunSpec.Controls.id, SunSpec.Controls.conn] = 1
            self[SunSpec.Controls.id, SunSpec.Controls.wMaxLimPct] = 100
            self[SunSpec.Controls.id, SunSpec.Controls.wMaxLimPctSF] = 0
        }
        if profile.controlModel == SunSpec.ACControls.id {
            typealias C = SunSpec.ACControls
            self[C.id, C.wSetMod] = C.modeWatts
            self[C.id, C.wSetSF] = sfWord(0)
            self[C.id, C.antiIslEna] = 1
            // VarSet in var (VarSet_SF 0): the var points are served (SimulatedSunSpecInverter).
            self[C.id, C.varSetSF] = sfWord(0)
            for sf in 53...58 where sf != C.wSetSF && sf != C.varSetSF { self[C.id, sf] = 0x8000 }
        } else {
            typealias S = SunSpec.Storage
            let wChaMax = profile.maxChargeRateW ?? profile.ratingW
            self[S.id, S.wChaMax] = UInt16(clamping: Int((wChaMax / SunSpec.powerOfTen(wSF)).rounded()))
            self[S.id, S.wChaMaxSF] = sfWord(wSF)
            self[S.id, S.inOutWRteSF] = sfWord(-2)
            self[S.id, S.chaStateSF] = sfWord(-1)
            self[S.id, S.chaSt] = 6
        }
    }
}

/// A simulated SunSpec inverter on Modbus TCP, built on libmodbus's server API. Any number of
/// clients (bessd, pysunspec2, mbpoll) may connect at once. The same server, made with
/// `init(transport:serving:holding:input:)`, serves a profiled device's `ProfiledRegisterImage`
/// instead (holding and input registers over the ranges given; `exchangeProfiled` is the plant's
/// side), and `profile` and `withImage` then concern nothing it serves.
///
/// `@unchecked Sendable`: the register mapping is touched only under `lock`; the libmodbus server
/// context is used only by the server thread.
public final class SunSpecServer: @unchecked Sendable {
    /// Where the server listens: Modbus TCP (port 0 picks a free port; read `port` after `start()`),
    /// or Modbus RTU on a serial device (or one end of a pty pair), answering its unit id.
    public typealias Transport = ModbusServerContext.Endpoint

    public let transport: Transport
    public var host: String { if case .tcp(let host, _) = transport { host } else { "" } }
    public private(set) var port: Int = 0
    public let profile: SunSpecDeviceProfile
    private let lock = PILock<Void>(())
    private var image: SunSpecImage
    /// A profiled device's registers, served instead of `image` (nil: a SunSpec server).
    private var profiled: ProfiledRegisters?
    /// Requests answered when `exchangeProfiled` last ran.
    private var requestsExchanged: UInt64 = 0
    /// The libmodbus context and register mapping (the mapping only under `lock`).
    private let server: ModbusServerContext
    private var context: OpaquePointer { server.context }
    /// The listening socket (Modbus TCP): set by `start()`, then the server thread's.
    private var listener: TCPListener?
    private let worker = WorkerThread()
    /// Model offsets written by clients since the last `takeWrites()`.
    private var written = Set<Int>()
    /// Requests answered.
    public private(set) var requests: UInt64 = 0
    private let silence = Atomic<Bool>(false)
    private let delayMicroseconds = Atomic<Int>(0)
    /// Called on the server thread, under the register lock, after every write request with the
    /// image as written and the instant it was answered: how benchmarks time setpoints on the wire.
    /// Set before `start()`.
    public var writeObserver: (@Sendable (SunSpecImage, MonotonicInstant) -> Void)?

    /// While true, requests are read and dropped unanswered (a dead device as bessd sees it).
    public var silent: Bool {
        get { silence.load(ordering: .relaxed) }
        set { silence.store(newValue, ordering: .relaxed) }
    }

    /// How long every answer is held back (a slow device), at most a minute, to the microsecond.
    public var responseDelay: Duration {
        get { .microseconds(delayMicroseconds.load(ordering: .relaxed)) }
        set { delayMicroseconds.store(Int(min(max(.zero, newValue), .seconds(60)).nanosecondsClamped / 1000), ordering: .relaxed) }
    }

    /// Answers one request unless silenced, after the configured delay. False when the reply did not
    /// go out whole (`ModbusServerContext.reply`); true when it did or none was due.
    private func answer(_ query: [UInt8], count: Int32, headerLength: Int) -> Bool {
        if silence.load(ordering: .relaxed) { return true }
        let delay = delayMicroseconds.load(ordering: .relaxed)
        if delay > 0 { usleep(UInt32(delay)) }
        return lock.withLock { _ in
            if let profiled {
                server.load(profiled.holdingWords)
                server.loadInput(profiled.inputWords)
            } else {
                server.load(image.words)
            }
            // Counted before the answer goes out: a client that has its answer sees the count.
            requests &+= 1
            let sent = server.reply(query, length: count)
            let wrote = recordWrite(query, headerLength: headerLength)
            if profiled != nil {
                if wrote { profiled?.storeWrites(server, written) }
                return sent
            }
            server.store(into: &image.words)
            if wrote, let observer = writeObserver { observer(image, SystemClock.shared.now()) }
            return sent
        }
    }

    public convenience init(host: String, port: Int, profile: SunSpecDeviceProfile) throws(FieldbusError) {
        try self.init(transport: .tcp(host: host, port: port), profile: profile)
    }

    public init(transport: Transport, profile: SunSpecDeviceProfile) throws(FieldbusError) {
        self.transport = transport
        self.profile = profile
        image = SunSpecImage(profile: profile)
        if case .tcp(_, let port) = transport { self.port = port }
        server = try ModbusServerContext(transport, holdingRegistersFrom: SunSpecImage.base, count: image.words.count,
                                         failure: .modbusServerFailed)
        server.load(image.words)
    }

    /// A server of a profiled device's registers: `holding` and `input` (nil: none of that table)
    /// served from `image`, every other address refused (Modbus exception 2).
    public init(transport: Transport, serving image: ProfiledRegisterImage, holding: ClosedRange<Int>?,
                input: ClosedRange<Int>?) throws(FieldbusError) {
        self.transport = transport
        profile = SunSpecDeviceProfile(ratingW: 0)
        self.image = SunSpecImage(profile: profile)
        if case .tcp(_, let port) = transport { self.port = port }
        let registers = ProfiledRegisters(image: image, holding: holding, input: input)
        profiled = registers
        server = try ModbusServerContext(transport, holdingRegistersFrom: holding?.lowerBound ?? 0, count: holding?.count ?? 0,
                                         inputRegistersFrom: input?.lowerBound ?? 0, inputCount: input?.count ?? 0,
                                         failure: .modbusServerFailed)
        server.load(registers.holdingWords)
        server.loadInput(registers.inputWords)
    }

    /// Stops the thread before the context it uses is freed.
    deinit {
        stop()
    }

    /// Starts listening and serving on a thread of its own.
    public func start() throws(FieldbusError) {
        if case .rtu(let device, _, _, _, _, _) = transport {
            guard modbus_connect(context) == 0 else {
                throw FieldbusError(.modbusSerialFailed,
                                    message: "cannot open \(device): \(SystemError.text(errno))", errno: errno)
            }
            // Return from a wait every 100 ms so stop() is noticed.
            modbus_set_indication_timeout(context, 0, 100_000)
            startThread()
            return
        }
        do throws(SystemCallError) {
            let listener = try TCPListener(host: host, port: port)
            self.listener = listener
            port = listener.port
        } catch {
            throw FieldbusError(.modbusListenFailed,
                                message: "cannot listen on \(host):\(port): \(SystemError.text(error.errno))", errno: error.errno)
        }
        startThread()
    }

    private func startThread() {
        worker.start { [self] in serve() }
    }

    /// Stops serving and closes every connection.
    public func stop() {
        worker.stop()
    }

    private func serve() {
        if case .rtu = transport {
            serveSerial()
            return
        }
        guard let listener else { return }
        // Each client's socket closes once, when it leaves this list; libmodbus only borrows it.
        var clients: [Client] = []
        var query = [UInt8](repeating: 0, count: 260)
        let headerLength = Int(modbus_get_header_length(context))
        while worker.isRunning {
            var fds = [pollfd(fd: listener.descriptor, events: Int16(POLLIN), revents: 0)]
            fds += clients.map { pollfd(fd: $0.socket.rawValue, events: Int16(POLLIN), revents: 0) }
            let ready = poll(&fds, nfds_t(fds.count), 100)
            if ready <= 0 { continue }
            if fds[0].revents & Int16(POLLIN) != 0, let connection = listener.acceptConnection() {
                clients.append(Client(socket: connection.takeSocket()))
            }
            var closed: [Int32] = []
            for entry in fds.dropFirst() where entry.revents != 0 {
                let count = server.receive(on: entry.fd, into: &query) { query, count in
                    answer(query, count: count, headerLength: headerLength)
                }
                // Failed, closed by the peer, or answered with a reply not sent whole: let go.
                if count < 0 { closed.append(entry.fd) }
            }
            clients.removeAll { closed.contains($0.socket.rawValue) }
        }
        clients.removeAll()
        self.listener = nil
    }

    /// A connection being served; its socket closes when the server lets it go.
    private final class Client {
        let socket: Socket
        init(socket: consuming Socket) { self.socket = socket }
    }

    private func serveSerial() {
        var query = [UInt8](repeating: 0, count: 256)
        let headerLength = Int(modbus_get_header_length(context))
        while worker.isRunning {
            let count = modbus_receive(context, &query)
            if count > 0 {
                _ = answer(query, count: count, headerLength: headerLength)
            } else if count < 0, errno != ETIMEDOUT {
                modbus_flush(context)
            }
        }
        modbus_close(context)
    }

    @discardableResult
    private func recordWrite(_ query: [UInt8], headerLength: Int) -> Bool {
        let function = query[headerLength]
        guard function == 0x06 || function == 0x10 else { return false }
        let address = Int(query[headerLength + 1]) << 8 | Int(query[headerLength + 2])
        let count = function == 0x06 ? 1 : Int(query[headerLength + 3]) << 8 | Int(query[headerLength + 4])
        for a in address..<address + count { written.insert(a) }
        return true
    }

    /// Runs `body`, under the lock, on a profiled server's registers (the plant's side) with the
    /// holding registers written and the requests answered since the last call; what `body` leaves
    /// in the image is served from then on. Does nothing on a SunSpec server.
    public func exchangeProfiled(_ body: (inout ProfiledRegisterImage, _ written: Set<Int>, _ requests: UInt64) -> Void) {
        lock.withLock { _ in
            guard var registers = profiled else { return }
            let arrived = requests &- requestsExchanged
            requestsExchanged = requests
            body(&registers.image, written, arrived)
            written.removeAll(keepingCapacity: true)
            registers.render()
            profiled = registers
        }
    }

    /// Runs `body` on the register image under the lock (the plant's side).
    public func withImage<R>(_ body: (inout SunSpecImage, _ written: inout Set<Int>) -> R) -> R {
        lock.withLock { _ in body(&image, &written) }
    }
}

/// A profiled device's registers as a server holds them: the image, and its holding and input ranges
/// laid out as the libmodbus mapping takes them.
private struct ProfiledRegisters {
    var image: ProfiledRegisterImage
    let holding: ClosedRange<Int>?
    let input: ClosedRange<Int>?
    private(set) var holdingWords: [UInt16] = []
    private(set) var inputWords: [UInt16] = []

    init(image: ProfiledRegisterImage, holding: ClosedRange<Int>?, input: ClosedRange<Int>?) {
        self.image = image
        self.holding = holding
        self.input = input
        render()
    }

    /// Lays the image out over the served ranges.
    mutating func render() {
        holdingWords = holding.map { $0.map { image[.holding, $0] } } ?? []
        inputWords = input.map { $0.map { image[.input, $0] } } ?? []
    }

    /// Takes the holding registers a client wrote (`written`, absolute addresses) from the mapping
    /// into the image.
    mutating func storeWrites(_ server: borrowing ModbusServerContext, _ written: Set<Int>) {
        guard let holding else { return }
        server.store(into: &holdingWords)
        for address in written where holding.contains(address) {
            image[.holding, address] = holdingWords[address - holding.lowerBound]
        }
    }
}
