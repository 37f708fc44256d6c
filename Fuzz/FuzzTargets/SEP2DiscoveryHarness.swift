import BessBase
import ControlCore
import IEEE2030_5

/// The discovery half of the `sep2` target (a first byte of 0xC0 or more): the six discovery readers and
/// the `/.well-known/csipaus` reader on any document, and `DiscoverySession` driven by a server that
/// answers anything.
///
/// Readers (the first byte's low bits 0–7 pick DeviceCapability, Time, EndDeviceList, Registration,
/// FunctionSetAssignmentsList, DERList, `WellKnownCSIPAUS`, the ConnectionPoint read back): a refusal
/// carries a document or href code and a printable ASCII message; a resource read has every href an
/// absolute path of printable ASCII within `SEP2Href.maximumBytes`, every rate within `sep2RateRange`, and
/// reads the same twice; the well-known reader chooses only v1.3 or v1.2 and an absolute path; a
/// ConnectionPoint id is at most 32 bytes, trimmed.
///
/// Session (the other first bytes; bit 3 sets in-band registration with a connection point id, whose
/// server's list lacks the device until it is POSTed, bit 4 starts from `/.well-known/csipaus`): each step of the input picks a status (200 with the document the
/// chain expects, 200 with another or with the input's bytes, 3xx, 404, 429, 503, 500, a transport
/// failure), a Retry-After and how far the monotonic clock moves. After every step: a stopped session
/// asks nothing and has no `nextDue`, a running one is never held back longer than the longest rate
/// or back-off; every request is an absolute-path GET, but the EndDevice POST and the ConnectionPoint PUT; refusals are coded with printable messages.
/// After the last step (64 at most): documents and programs stay within `DiscoveryLimits`, and a
/// complete session rebuilt from its documents has the same programs.
enum SEP2DiscoveryHarness {
    /// First input bytes from this one on come here.
    static let firstPick: UInt8 = 0xC0

    static let codes: [SEP2ErrorCode] = [.xmlMalformed, .xmlOversized, .namespaceUnknown, .documentUnexpected, .valueInvalid,
                                         .hrefInvalid, .listTooLong, .httpStatus, .endDeviceUnknown, .pinMismatch,
                                         .registrationRefused, .wellKnownInvalid]

    static func run(_ pick: UInt8, _ input: inout FuzzInput) -> [String] {
        var violations = Violations()
        if pick & 0x3F < 8 {
            readers(pick & 0x3F, input.rest(), &violations)
        } else {
            session(pick & 0x3F, &input, &violations)
        }
        return violations.list
    }

    static func check(_ error: SEP2Error, _ violations: inout Violations) {
        violations.check(codes.contains(error.code), "refused with \(error.code)")
        violations.check(error.message.unicodeScalars.allSatisfy { $0.value >= 0x20 && $0.value < 0x7F || $0 == "…" },
                         "a message with unescaped text: \(error.message.unicodeScalars.map { String($0.value, radix: 16) }.prefix(40))")
    }

    static func checkHref(_ href: String?, _ violations: inout Violations) {
        guard let href else { return }
        violations.check(href.first == "/" && !href.hasPrefix("//") && href.utf8.count <= SEP2Href.maximumBytes
                            && href.utf8.allSatisfy { $0 > 0x20 && $0 < 0x7F && $0 != UInt8(ascii: "#") }, "an href accepted: \(href.utf8.count) bytes")
    }

    static func checkRate(_ rate: UInt32?, _ violations: inout Violations) {
        guard let rate else { return }
        violations.check(sep2RateRange.contains(Int64(rate)), "a rate of \(rate) s")
    }

    static func readers(_ which: UInt8, _ bytes: [UInt8], _ violations: inout Violations) {
        do {
            switch which {
            case 0:
                let read = try DeviceCapability.read(bytes).resource
                for href in [read.href, read.timeLink, read.endDeviceListLink, read.mirrorUsagePointListLink] { checkHref(href, &violations) }
                checkRate(read.pollRate, &violations)
                let again = try DeviceCapability.read(bytes).resource
                violations.check(again == read, "a second read differs")
            case 1:
                let read = try SEP2Time.read(bytes).resource
                violations.check((0...(1 << 40)).contains(read.currentTime) && read.quality <= 7 && abs(Int(read.tzOffset)) <= 86_400
                                    && abs(Int(read.dstOffset)) <= 86_400, "a time out of range: \(read)")
                checkRate(read.pollRate, &violations)
            case 2:
                let read = try EndDeviceList.read(bytes).resource
                checkRate(read.pollRate, &violations)
                for device in read.endDevices {
                    for href in [device.href, device.registrationLink, device.functionSetAssignmentsListLink, device.derListLink, device.connectionPointLink] {
                        checkHref(href, &violations)
                    }
                    checkRate(device.postRate, &violations)
                    violations.check(device.sFDI <= 999_999_999_999 && (device.lFDI.map { (1...40).contains($0.utf8.count) } ?? true), "an identity out of range")
                }
                let again = try EndDeviceList.read(bytes).resource
                violations.check(again == read, "a second read differs")
            case 3:
                let read = try Registration.read(bytes).resource
                violations.check(read.pIN <= 999_999, "a pIN of \(read.pIN)")
                checkRate(read.pollRate, &violations)
            case 4:
                let read = try FunctionSetAssignmentsList.read(bytes).resource
                checkRate(read.pollRate, &violations)
                for assignment in read.assignments {
                    for href in [assignment.href, assignment.derProgramListLink, assignment.timeLink] { checkHref(href, &violations) }
                }
            case 6:
                let read = try WellKnownCSIPAUS.read(bytes)
                checkHref(read.deviceCapabilityPath, &violations)
                violations.check(CSIPAUSVersion.allCases.contains(read.version), "a version of \(read.version)")
                let again = try WellKnownCSIPAUS.read(bytes)
                violations.check(again == read, "a second read differs")
            case 7:
                let id = try ConnectionPointReport.readID(bytes)
                let space: [UInt8] = [0x20, 0x09, 0x0A, 0x0D]
                violations.check(id.map { $0.utf8.count <= 32 && !space.contains($0.utf8.first ?? 0) && !space.contains($0.utf8.last ?? 0) } ?? true,
                                 "a ConnectionPoint id of \(id?.utf8.count ?? 0) bytes, or untrimmed")
                let again = try ConnectionPointReport.readID(bytes)
                violations.check(again == id, "a second read differs")
            default:
                let read = try DERList.read(bytes).resource
                checkRate(read.pollRate, &violations)
                for der in read.ders {
                    for href in [der.href, der.capabilityLink, der.settingsLink, der.statusLink, der.availabilityLink] { checkHref(href, &violations) }
                }
            }
        } catch {
            check(error, &violations)
        }
    }

    /// The documents of a small whole chain, by the purpose that asks for them.
    static let chain: [(purpose: Sep2Request.Purpose, document: String)] = {
        let ns = "xmlns=\"urn:ieee:std:2030.5:ns\" xmlns:csipaus=\"https://csipaus.org/ns\""
        let base = "<DERControlBase><csipaus:opModExpLimW><multiplier>0</multiplier><value>1500</value></csipaus:opModExpLimW></DERControlBase>"
        return [
            (.deviceCapability, "<DeviceCapability \(ns) pollRate=\"60\"><TimeLink href=\"/tm\"/><EndDeviceListLink href=\"/edev\"/></DeviceCapability>"),
            (.time, "<Time \(ns)><currentTime>1760000000</currentTime><quality>7</quality></Time>"),
            (.endDeviceList, "<EndDeviceList \(ns) all=\"1\" results=\"1\" pollRate=\"120\"><EndDevice href=\"/edev/1\"><lFDI>\(lfdi)</lFDI><sFDI>\(sfdi)</sFDI>"
                + "<RegistrationLink href=\"/rg\"/><FunctionSetAssignmentsListLink href=\"/fsa\"/><DERListLink href=\"/der\"/></EndDevice></EndDeviceList>"),
            (.registration, "<Registration \(ns)><pIN>111115</pIN></Registration>"),
            (.fsaList, "<FunctionSetAssignmentsList \(ns) all=\"1\" results=\"1\"><FunctionSetAssignments><mRID>F1</mRID><DERProgramListLink href=\"/derp\"/>"
                + "</FunctionSetAssignments></FunctionSetAssignmentsList>"),
            (.derProgramList, "<DERProgramList \(ns) all=\"1\" results=\"1\" pollRate=\"30\"><DERProgram><mRID>A1</mRID><DERControlListLink href=\"/derc\"/>"
                + "<DefaultDERControlLink href=\"/dderc\"/><primacy>1</primacy></DERProgram></DERProgramList>"),
            (.derControlList, "<DERControlList \(ns) all=\"1\" results=\"1\"><DERControl><mRID>C1</mRID><creationTime>1760000000</creationTime>"
                + "<EventStatus><currentStatus>0</currentStatus><dateTime>1760000000</dateTime></EventStatus><interval><duration>300</duration>"
                + "<start>1760000060</start></interval>\(base)</DERControl></DERControlList>"),
            (.defaultDERControl, "<DefaultDERControl \(ns)><mRID>D1</mRID>\(base)</DefaultDERControl>"),
            (.derList, "<DERList \(ns) all=\"1\" results=\"1\"><DER href=\"/der/1\"><DERStatusLink href=\"/der/1/ders\"/></DER></DERList>"),
        ]
    }()

    static let lfdi = "3E4F45AB31EDFE5B67E343E5E4562E31984E23E5"
    static let sfdi: UInt64 = 167_261_211_391
    static let wellKnownPath = "/.well-known/csipaus"
    static let wellKnown = "{\"supportedSchemaVersions\": {\"null\": {\"dcap\": [\"/x\"]}, \"https://csipaus.org/ns/v1.3\": {\"dcap\": [\"/dcap\"]}}}"
    /// In band: the list before the POST (another device only) and the EndDevice at its Location.
    static let otherDevices = "<EndDeviceList xmlns=\"urn:ieee:std:2030.5:ns\" all=\"1\" results=\"1\"><EndDevice href=\"/edev/9\"><sFDI>5</sFDI></EndDevice></EndDeviceList>"
    static let located = "<EndDevice xmlns=\"urn:ieee:std:2030.5:ns\" xmlns:csipaus=\"https://csipaus.org/ns/v1.3\" href=\"/edev/1\"><lFDI>\(lfdi)</lFDI>"
        + "<sFDI>\(sfdi)</sFDI><changedTime>1</changedTime><RegistrationLink href=\"/rg\"/><FunctionSetAssignmentsListLink href=\"/fsa\"/>"
        + "<DERListLink href=\"/der\"/><csipaus:ConnectionPointLink href=\"/edev/1/cp\"/></EndDevice>"

    static func session(_ pick: UInt8, _ input: inout FuzzInput, _ violations: inout Violations) {
        var limits = DiscoveryLimits()
        limits.pageSize = UInt32(1 + input.u8() % 4)
        limits.maximumResources = 32
        let pin: UInt32? = input.u8() % 4 == 0 ? nil : 111_115
        let inBand = pick & 0x08 != 0
        let options = DiscoveryOptions(inBandRegistration: inBand, connectionPointId: inBand ? "NMI0123456" : nil)
        var session = DiscoverySession(entryPath: pick & 0x10 != 0 ? wellKnownPath : "/dcap", lfdi: lfdi, sfdi: sfdi, pin: pin,
                                       pollSeconds: 300, limits: limits, options: options)
        var registered = false
        var now = MonotonicInstant(nanoseconds: (Int64(input.u16()) - 1_000) * 1_000_000_000)
        let longest = Int64(max(sep2RateRange.upperBound, Int64(limits.retryAfter.upperBound), Int64(limits.backoff.upperBound)))
        var steps = 0
        while !input.isEmpty && steps < 64 {
            steps += 1
            let op = input.u8()
            now = now + .seconds(input.u16() >> (op >> 6 == 0 ? 8 : 0))
            guard let request = session.nextRequest(now: now) else {
                if let due = session.nextDue { now = max(now, due) }
                continue
            }
            // The EndDevice is POSTed; the ConnectionPoint is PUT, then read back (GET); all else is read.
            let methodFits = switch request.purpose {
            case .registerEndDevice: request.method == .post
            case .connectionPoint: request.method == .put || request.method == .get
            default: request.method == .get
            }
            violations.check(methodFits && request.path.first == "/" && request.path.utf8.count <= SEP2Href.maximumBytes + 32,
                             "a \(request.method) request for \(request.purpose) of \(request.path.utf8.count) bytes of path")
            violations.check(inBand || request.method == .get, "a \(request.method) without in-band registration or a connection point")
            violations.check(request.method == .get ? request.body.isEmpty : request.body.count < 1_024, "a body of \(request.body.count) bytes")
            if op % 16 == 15 {
                session.handleFailure(now: now)
            } else {
                let reply = self.reply(op % 16, to: request, inBand: inBand && !registered, &input)
                if request.purpose == .registerEndDevice && (200...299).contains(reply.status) { registered = true }
                do { try session.handle(reply, to: request, now: now, wallClock: now.nanoseconds / 1_000_000_000 + 1_700_000_000) } catch { check(error, &violations) }
            }
            if session.stopped != nil {
                violations.check(session.nextDue == nil && session.nextRequest(now: MonotonicInstant(nanoseconds: .max)) == nil, "a stopped session still asks")
            } else if let due = session.nextDue {
                violations.check(due <= now + .seconds(longest), "held back to \(due) at \(now)")
            } else {
                violations.check(false, "a running session with nothing ever due")
            }
        }
        violations.check(session.documents.count <= limits.maximumResources * limits.maximumPages, "\(session.documents.count) documents kept")
        violations.check(session.programs.count <= Int(limits.maximumListAll), "\(session.programs.count) programs")
        if session.complete {
            let rebuilt = DiscoverySession(entryPath: session.entryPath, lfdi: lfdi, sfdi: sfdi, pin: pin, pollSeconds: 300, limits: limits,
                                           options: options, restoring: session.documents)
            violations.check(rebuilt.programs == session.programs && rebuilt.complete, "a session rebuilt from its documents differs")
        }
    }

    /// The reply step `op` makes to `request`.
    static func reply(_ op: UInt8, to request: Sep2Request, inBand unregistered: Bool, _ input: inout FuzzInput) -> Sep2Reply {
        let document = switch request.purpose {
        case _ where request.path == wellKnownPath: wellKnown
        case .endDeviceList where unregistered: otherDevices
        case .endDevice: located
        default: chain.first { $0.purpose == request.purpose }?.document ?? ""
        }
        let expected = Array(document.utf8)
        switch op {
        case 0...6 where request.purpose == .registerEndDevice: return Sep2Reply(status: 201, location: op % 2 == 0 ? "/edev/1" : nil)
        case 0...6: return Sep2Reply(status: 200, body: expected)
        case 7: return Sep2Reply(status: 200, body: input.take(Int(input.u8()) * 4))
        case 8:
            // The expected document with a few bytes replaced.
            var body = expected
            for _ in 0..<(1 + input.u8() % 4) where !body.isEmpty { body[Int(input.u16()) % body.count] = input.u8() }
            return Sep2Reply(status: 200, body: body)
        case 9: return Sep2Reply(status: 200, body: Array(chain[Int(input.u8()) % chain.count].document.utf8))
        case 10: return Sep2Reply(status: 300 + Int(input.u8() % 9), location: String(decoding: input.take(Int(input.u8() % 40)), as: UTF8.self))
        case 11: return Sep2Reply(status: 404)
        case 12: return Sep2Reply(status: 429, retryAfterSeconds: input.u8() % 2 == 0 ? nil : UInt32(input.u16()) * 100)
        case 13: return Sep2Reply(status: 503, retryAfterSeconds: UInt32(input.u8()))
        default: return Sep2Reply(status: 500 + Int(input.u8() % 100))
        }
    }

    /// One document per reader, and sessions that walk the chain (with a 429, a 500 and a changed
    /// assignment on the way).
    static func seeds() -> [[UInt8]] {
        let readers: [(UInt8, Sep2Request.Purpose)] = [(0, .deviceCapability), (1, .time), (2, .endDeviceList), (3, .registration), (4, .fsaList), (5, .derList)]
        var out = readers.map { pick, purpose in [firstPick + pick] + Array((chain.first { $0.purpose == purpose }?.document ?? "").utf8) }
        out.append([firstPick + 6] + Array(wellKnown.utf8))
        // A session: page size 1, a PIN, t = 0, then steps of (op, clock u16): 0 serves the expected document.
        var walk: [UInt8] = [firstPick + 7, 0, 1, 0x03, 0xE8]
        for _ in 0..<12 { walk += [0, 0, 0] }
        out.append(walk)
        // In band from the well-known document: POSTed (201 with a Location), the ConnectionPoint PUT.
        var inBand: [UInt8] = [firstPick + 0x1F, 0, 1, 0x03, 0xE8]
        for _ in 0..<18 { inBand += [0, 0, 0] }
        out.append(inBand)
        out.append([firstPick + 0x0F, 0, 1, 0x03, 0xE8] + [0, 0, 0, 0, 0, 0, 0, 0, 0] + [11, 0, 0] + [0x40, 0, 5] + Array(repeating: 0, count: 30))
        out.append(walk + [12, 0, 0, 1, 0, 2] + [0x40, 0, 60] + [14, 0, 0, 7] + [0x40, 1, 0x2C] + Array(repeating: 0, count: 24))
        out.append(walk + [8, 0, 0, 2, 0, 40, 0x41] + [15, 0, 0] + [0x40, 0, 30])
        return out
    }
}
