public import BessBase
import ControlCore

/// 2030.5's `DeviceCategoryType` bits (HexBinary32; sep.xsd, envoy-schema's `DeviceCategory`) bessd
/// names itself by.
public enum DeviceCategory {
    /// Bit 25, "Other Storage System": a battery energy storage site.
    public static let otherStorageSystem: UInt32 = 1 << 25
}

/// The `EndDevice` bessd POSTs to the server's EndDeviceList for in-band registration (2030.5-2018
/// §6.3.3; CSIP-AUS ALL-02): the fields of envoy-schema's `EndDeviceRequest` bessd knows, in the XSD's
/// sequence (`deviceCategory`, `lFDI`, `sFDI`, `changedTime`).
public struct EndDeviceRegistration: Hashable, Sendable {
    /// `lFDI`: 40 hex digits (`DeviceIdentity`).
    public var lFDI: String
    /// `sFDI`: 36 bits and the check digit (at most 12 decimal digits).
    public var sFDI: UInt64
    /// `changedTime`: when bessd made the request, seconds since the Unix epoch on the server's time.
    public var changedTime: Int64
    /// `deviceCategory` (`DeviceCategory` bits).
    public var deviceCategory: UInt32

    /// An EndDevice of `lFDI` and `sFDI`, changed at `changedTime`, of `deviceCategory`.
    public init(lFDI: String, sFDI: UInt64, changedTime: Int64, deviceCategory: UInt32 = DeviceCategory.otherStorageSystem) {
        self.lFDI = lFDI
        self.sFDI = sFDI
        self.changedTime = changedTime
        self.deviceCategory = deviceCategory
    }

    /// The `EndDevice` document (2030.5 namespace only); `SEP2_VALUE_INVALID` for an LFDI that is not 40
    /// hex digits or an SFDI past 12 digits.
    public func xml(maximumBytes: Int = XMLWriter.defaultMaximumBytes) throws(SEP2Error) -> [UInt8] {
        try ReportCheck.lfdi(lFDI, "lFDI")
        guard sFDI <= 999_999_999_999 else { throw SEP2Error(.valueInvalid, message: "sFDI \(sFDI) is past 12 digits") }
        var writer = XMLWriter(root: "EndDevice", maximumBytes: maximumBytes)
        writer.hexElement("deviceCategory", UInt64(deviceCategory), bytes: 4)
        writer.element("lFDI", lFDI.uppercased())
        writer.element("sFDI", sFDI)
        writer.element("changedTime", changedTime)
        return try writer.finish()
    }
}

/// The `csipaus:ConnectionPoint` bessd PUTs to its EndDevice's `csipaus:ConnectionPointLink` (CSIP-AUS
/// ALL-03, class C): `connectionPointId` (String32, the NMI in Australia), the element name of
/// CSIP-AUS 1.1a onward in both namespaces (csipaus-ext.xsd of v1.2 and v1.3; envoy-schema's
/// `ConnectionPointRequest`), written in the namespace the server uses.
public struct ConnectionPointReport: Hashable, Sendable {
    /// `connectionPointId`.
    public var connectionPointId: String

    /// A ConnectionPoint of `connectionPointId`.
    public init(connectionPointId: String) { self.connectionPointId = connectionPointId }

    /// The document in `csipaus`'s namespace; `SEP2_VALUE_INVALID` for an empty id or one past 32 bytes.
    public func xml(csipaus: CSIPAUSVersion, maximumBytes: Int = XMLWriter.defaultMaximumBytes) throws(SEP2Error) -> [UInt8] {
        guard !connectionPointId.isEmpty else { throw SEP2Error(.valueInvalid, message: "connectionPointId is empty") }
        try ReportCheck.string32(connectionPointId, "connectionPointId")
        var writer = XMLWriter(root: "ConnectionPoint", csipaus: csipaus, rootInCSIPAUS: true, maximumBytes: maximumBytes)
        writer.element("connectionPointId", connectionPointId, csipaus: true)
        return try writer.finish()
    }

    /// The id of a `csipaus:ConnectionPoint` document as the server gives it back (a GET of the
    /// ConnectionPointLink): its `connectionPointId` (CSIP-AUS 1.1's `id` where that is absent), trimmed,
    /// nil when it has neither. `SEP2_DOCUMENT_UNEXPECTED` for another root, `SEP2_VALUE_INVALID` for an
    /// id past 32 bytes, the XML reader's codes for the rest.
    public static func readID(_ bytes: [UInt8], limits: XMLLimits = XMLLimits()) throws(SEP2Error) -> String? {
        let root = try XMLDocument.parse(bytes, limits: limits)
        _ = try NamespaceCheck.check(root)
        guard root.name.local == "ConnectionPoint", CSIPAUSVersion(rawValue: root.name.namespace) != nil else {
            throw SEP2Error(.documentUnexpected, message: "root element \(root.name), csipaus:ConnectionPoint expected")
        }
        guard let found = root.child("connectionPointId", csipaus: true) ?? root.child("id", csipaus: true) else { return nil }
        let id = found.text.trimmingSpace
        try ReportCheck.string32(id, "connectionPointId at byte \(found.offset)")
        return id
    }
}
