public import BessBase
import ControlCore

/// A link as bessd follows it: an absolute path on the server the session talks to.
public enum SEP2Href {
    /// The longest href accepted, in bytes.
    public static let maximumBytes = 255

    /// `text` when it is an absolute path (`/`, not `//`), of printable ASCII without space or `#`,
    /// 1…`maximumBytes` bytes; `SEP2_HREF_INVALID` otherwise, `what` naming where it was found.
    public static func check(_ text: String, _ what: @autoclosure () -> String) throws(SEP2Error) -> String {
        let bytes = text.utf8
        guard (1...maximumBytes).contains(bytes.count), bytes.first == UInt8(ascii: "/"),
              !text.hasPrefix("//"), bytes.allSatisfy({ $0 > 0x20 && $0 < 0x7F && $0 != UInt8(ascii: "#") && $0 != UInt8(ascii: "\\") }) else {
            throw SEP2Error(.hrefInvalid, message: "\(what()): \(quoted(text, limit: 64)) is not an absolute path of at most \(maximumBytes) printable bytes")
        }
        return text
    }
}

/// `pollRate`s and `postRate`s the readers accept, in seconds: 1 s to a week.
public let sep2RateRange: ClosedRange<Int64> = 1...604_800

extension XMLElement {
    /// The checked `href` of the child link `local`, nil when the link is absent; a link without an
    /// href is `SEP2_DOCUMENT_UNEXPECTED`.
    func checkedLink(_ local: String, csipaus: Bool = false) throws(SEP2Error) -> String? {
        guard let found = child(local, csipaus: csipaus) else { return nil }
        guard let href = found.attribute("href") else {
            throw SEP2Error(.documentUnexpected, message: "\(found.name) at byte \(found.offset) has no href")
        }
        return try SEP2Href.check(href, "\(local) at byte \(found.offset)")
    }

    /// This element's own checked `href` attribute, nil when absent.
    func checkedHref() throws(SEP2Error) -> String? {
        guard let href = attribute("href") else { return nil }
        return try SEP2Href.check(href, "\(name.local) at byte \(offset)")
    }

    /// An integer attribute in `range`, nil when absent.
    func boundedAttribute<T: FixedWidthInteger>(_ local: String, _ type: T.Type, in range: ClosedRange<Int64>) throws(SEP2Error) -> T? {
        guard let text = attribute(local) else { return nil }
        guard let value = Self.parseInteger(text), range.contains(value), let typed = T(exactly: value) else {
            throw SEP2Error(.valueInvalid, message: "\(name) at byte \(offset): attribute \(local) \(quoted(text)) is not in \(range.lowerBound) to \(range.upperBound)")
        }
        return typed
    }

    /// A list's `all` and `results` (each at most `DiscoveryLimits.maximumListAll`; `results` defaults to
    /// the items of the page, `all` to `results`).
    func listCounts(items: Int) throws(SEP2Error) -> (all: UInt32, results: UInt32) {
        let results = try boundedAttribute("results", UInt32.self, in: 0...Int64(UInt32.max)) ?? UInt32(items)
        let all = try boundedAttribute("all", UInt32.self, in: 0...Int64(UInt32.max)) ?? results
        return (all, results)
    }
}

/// The instants the readers accept, seconds since the Unix epoch: 0 through 2^40 (as `DERControl.startRange`).
let sep2TimeRange: ClosedRange<Int64> = DERControl.startRange

/// `DeviceCapability`: where discovery starts.
public struct DeviceCapability: Hashable, Sendable {
    /// The resource's own `href`.
    public var href: String?
    /// `pollRate` (s), nil when absent (the standard's default is 900 s).
    public var pollRate: UInt32?
    /// `TimeLink`.
    public var timeLink: String?
    /// `EndDeviceListLink`.
    public var endDeviceListLink: String?
    /// `MirrorUsagePointListLink`.
    public var mirrorUsagePointListLink: String?

    /// A `DeviceCapability` document.
    public static func read(_ bytes: [UInt8], limits: XMLLimits = XMLLimits()) throws(SEP2Error) -> SEP2Document<DeviceCapability> {
        try readDocument(bytes, root: "DeviceCapability", limits: limits) { (root) throws(SEP2Error) in
            DeviceCapability(href: try root.checkedHref(), pollRate: try root.boundedAttribute("pollRate", UInt32.self, in: sep2RateRange),
                             timeLink: try root.checkedLink("TimeLink"), endDeviceListLink: try root.checkedLink("EndDeviceListLink"),
                             mirrorUsagePointListLink: try root.checkedLink("MirrorUsagePointListLink"))
        }
    }
}

/// `Time`: the server's clock.
public struct SEP2Time: Hashable, Sendable {
    /// `currentTime` (seconds since the Unix epoch, 0…2^40).
    public var currentTime: Int64
    /// `quality` (3 intermediate, 4 level 3, 5 level 4, 7 uncoordinated; 0…7 accepted).
    public var quality: UInt8
    /// `tzOffset` (s, ±1 day).
    public var tzOffset: Int32
    /// `dstOffset` (s, ±1 day).
    public var dstOffset: Int32
    /// `pollRate` (s), nil when absent.
    public var pollRate: UInt32?

    /// A `Time` document.
    public static func read(_ bytes: [UInt8], limits: XMLLimits = XMLLimits()) throws(SEP2Error) -> SEP2Document<SEP2Time> {
        try readDocument(bytes, root: "Time", limits: limits) { (root) throws(SEP2Error) in
            SEP2Time(currentTime: try root.requiredInteger("currentTime", Int64.self, in: sep2TimeRange),
                     quality: try root.requiredInteger("quality", UInt8.self, in: 0...7),
                     tzOffset: try root.integer("tzOffset", Int32.self, in: -86_400...86_400) ?? 0,
                     dstOffset: try root.integer("dstOffset", Int32.self, in: -86_400...86_400) ?? 0,
                     pollRate: try root.boundedAttribute("pollRate", UInt32.self, in: sep2RateRange))
        }
    }
}

/// `EndDevice`: one device the server knows, bessd's among them.
public struct EndDevice: Hashable, Sendable {
    /// The device's `href`.
    public var href: String?
    /// `lFDI` (1–40 hex digits, as written), nil when absent.
    public var lFDI: String?
    /// `sFDI` (0…999999999999: 36 bits and a check digit).
    public var sFDI: UInt64
    /// `postRate` (s), nil when absent.
    public var postRate: UInt32?
    /// `RegistrationLink`.
    public var registrationLink: String?
    /// `FunctionSetAssignmentsListLink`.
    public var functionSetAssignmentsListLink: String?
    /// `DERListLink`.
    public var derListLink: String?
    /// `csipaus:ConnectionPointLink`.
    public var connectionPointLink: String?

    init(_ element: XMLElement) throws(SEP2Error) {
        href = try element.checkedHref()
        if let found = element.child("lFDI") {
            let text = found.text.trimmingSpace
            guard (1...40).contains(text.utf8.count), text.utf8.allSatisfy(\.isHexDigit) else {
                throw SEP2Error(.valueInvalid, message: "\(found.name) at byte \(found.offset): \(quoted(found.text)) is not HexBinary160")
            }
            lFDI = text
        }
        sFDI = try element.requiredInteger("sFDI", UInt64.self, in: 0...999_999_999_999)
        postRate = try element.integer("postRate", UInt32.self, in: sep2RateRange)
        registrationLink = try element.checkedLink("RegistrationLink")
        functionSetAssignmentsListLink = try element.checkedLink("FunctionSetAssignmentsListLink")
        derListLink = try element.checkedLink("DERListLink")
        connectionPointLink = try element.checkedLink("ConnectionPointLink", csipaus: true)
    }

    /// Whether this is the device of `lfdi` and `sfdi`: its lFDI equals `lfdi` (hex, any case), or it has
    /// no lFDI and its sFDI equals `sfdi`.
    public func identifies(lfdi: String, sfdi: UInt64) -> Bool {
        guard let lFDI else { return sFDI == sfdi }
        return lFDI.lowercased() == lfdi.lowercased()
    }

    /// An `EndDevice` document.
    public static func read(_ bytes: [UInt8], limits: XMLLimits = XMLLimits()) throws(SEP2Error) -> SEP2Document<EndDevice> {
        try readDocument(bytes, root: "EndDevice", limits: limits) { (root) throws(SEP2Error) in try EndDevice(root) }
    }
}

/// `EndDeviceList`: a page of the server's devices.
public struct EndDeviceList: Hashable, Sendable {
    /// `all`.
    public var all: UInt32
    /// `results`.
    public var results: UInt32
    /// `pollRate` (s), nil when absent.
    public var pollRate: UInt32?
    /// The devices of this page.
    public var endDevices: [EndDevice]

    /// An `EndDeviceList` document.
    public static func read(_ bytes: [UInt8], limits: XMLLimits = XMLLimits()) throws(SEP2Error) -> SEP2Document<EndDeviceList> {
        try readDocument(bytes, root: "EndDeviceList", limits: limits) { (root) throws(SEP2Error) in
            var devices: [EndDevice] = []
            for element in root.all("EndDevice") { devices.append(try EndDevice(element)) }
            let counts = try root.listCounts(items: devices.count)
            return EndDeviceList(all: counts.all, results: counts.results,
                                 pollRate: try root.boundedAttribute("pollRate", UInt32.self, in: sep2RateRange), endDevices: devices)
        }
    }
}

/// `Registration`: the PIN the utility registered this device with.
public struct Registration: Hashable, Sendable {
    /// `pIN` (0…999999: five digits and a check digit).
    public var pIN: UInt32
    /// `pollRate` (s), nil when absent.
    public var pollRate: UInt32?
    /// `dateTimeRegistered`, nil when absent.
    public var dateTimeRegistered: Int64?

    /// A `Registration` document.
    public static func read(_ bytes: [UInt8], limits: XMLLimits = XMLLimits()) throws(SEP2Error) -> SEP2Document<Registration> {
        try readDocument(bytes, root: "Registration", limits: limits) { (root) throws(SEP2Error) in
            Registration(pIN: try root.requiredInteger("pIN", UInt32.self, in: 0...999_999),
                         pollRate: try root.boundedAttribute("pollRate", UInt32.self, in: sep2RateRange),
                         dateTimeRegistered: try root.integer("dateTimeRegistered", Int64.self, in: sep2TimeRange))
        }
    }
}

/// `FunctionSetAssignments`: one group of programs the utility assigned to this device.
public struct FunctionSetAssignments: Hashable, Sendable {
    /// The assignment's `href`.
    public var href: String?
    /// `mRID`.
    public var mRID: String
    /// `DERProgramListLink`.
    public var derProgramListLink: String?
    /// `TimeLink`.
    public var timeLink: String?

    init(_ element: XMLElement) throws(SEP2Error) {
        href = try element.checkedHref()
        mRID = try element.mRID()
        derProgramListLink = try element.checkedLink("DERProgramListLink")
        timeLink = try element.checkedLink("TimeLink")
    }
}

/// `FunctionSetAssignmentsList`: a page of this device's assignments.
public struct FunctionSetAssignmentsList: Hashable, Sendable {
    /// `all`.
    public var all: UInt32
    /// `results`.
    public var results: UInt32
    /// `pollRate` (s), nil when absent.
    public var pollRate: UInt32?
    /// The assignments of this page.
    public var assignments: [FunctionSetAssignments]

    /// A `FunctionSetAssignmentsList` document.
    public static func read(_ bytes: [UInt8], limits: XMLLimits = XMLLimits()) throws(SEP2Error) -> SEP2Document<FunctionSetAssignmentsList> {
        try readDocument(bytes, root: "FunctionSetAssignmentsList", limits: limits) { (root) throws(SEP2Error) in
            var assignments: [FunctionSetAssignments] = []
            for element in root.all("FunctionSetAssignments") { assignments.append(try FunctionSetAssignments(element)) }
            let counts = try root.listCounts(items: assignments.count)
            return FunctionSetAssignmentsList(all: counts.all, results: counts.results,
                                              pollRate: try root.boundedAttribute("pollRate", UInt32.self, in: sep2RateRange),
                                              assignments: assignments)
        }
    }
}

/// `DER`: one DER of the device (bessd reports the site as one) and where its reports go.
public struct DER: Hashable, Sendable {
    /// The DER's `href`.
    public var href: String?
    /// `DERCapabilityLink`.
    public var capabilityLink: String?
    /// `DERSettingsLink`.
    public var settingsLink: String?
    /// `DERStatusLink`.
    public var statusLink: String?
    /// `DERAvailabilityLink`.
    public var availabilityLink: String?

    init(_ element: XMLElement) throws(SEP2Error) {
        href = try element.checkedHref()
        capabilityLink = try element.checkedLink("DERCapabilityLink")
        settingsLink = try element.checkedLink("DERSettingsLink")
        statusLink = try element.checkedLink("DERStatusLink")
        availabilityLink = try element.checkedLink("DERAvailabilityLink")
    }
}

/// `DERList`: a page of the device's DERs.
public struct DERList: Hashable, Sendable {
    /// `all`.
    public var all: UInt32
    /// `results`.
    public var results: UInt32
    /// `pollRate` (s), nil when absent.
    public var pollRate: UInt32?
    /// The DERs of this page.
    public var ders: [DER]

    /// A `DERList` document.
    public static func read(_ bytes: [UInt8], limits: XMLLimits = XMLLimits()) throws(SEP2Error) -> SEP2Document<DERList> {
        try readDocument(bytes, root: "DERList", limits: limits) { (root) throws(SEP2Error) in
            var ders: [DER] = []
            for element in root.all("DER") { ders.append(try DER(element)) }
            let counts = try root.listCounts(items: ders.count)
            return DERList(all: counts.all, results: counts.results,
                           pollRate: try root.boundedAttribute("pollRate", UInt32.self, in: sep2RateRange), ders: ders)
        }
    }
}
