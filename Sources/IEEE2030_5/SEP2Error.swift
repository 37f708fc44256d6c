public import BessBase
import ControlCore

/// A certificate or a document bessd refuses: a stable code and a message that quotes nothing the
/// server sent unescaped (`SEP2_XML_MALFORMED: byte 212: closing tag </DERControl> expected`).
public typealias SEP2Error = CodedError<SEP2ErrorCode>

/// The stable code of a `SEP2Error`: a struct over a private enum, so the set is closed and matched by
/// value, never by text.
public struct SEP2ErrorCode: Hashable, Sendable, CustomStringConvertible {
    private enum Value: Hashable, Sendable {
        case certificateInvalid, xmlMalformed, xmlOversized, namespaceUnknown, documentUnexpected, valueInvalid
        case hrefInvalid, listTooLong, httpStatus, endDeviceUnknown, pinMismatch
        case registrationRefused, wellKnownInvalid
    }

    private let value: Value
    private init(_ value: Value) { self.value = value }

    /// `SEP2_CERTIFICATE_INVALID`: no PEM certificate block, bad base64, or bytes that OpenSSL does
    /// not read as one whole DER X.509 certificate.
    public static let certificateInvalid = Self(.certificateInvalid)
    /// `SEP2_XML_MALFORMED`: not well-formed XML as this reader accepts it (tags that do not nest, an
    /// unbound prefix, a DOCTYPE or an entity other than the five predefined and character references).
    public static let xmlMalformed = Self(.xmlMalformed)
    /// `SEP2_XML_OVERSIZED`: past one of `XMLLimits` (bytes, depth, elements, attributes, text).
    public static let xmlOversized = Self(.xmlOversized)
    /// `SEP2_NAMESPACE_UNKNOWN`: an element or attribute in a namespace that is neither 2030.5's nor
    /// one of CSIP-AUS's two.
    public static let namespaceUnknown = Self(.namespaceUnknown)
    /// `SEP2_DOCUMENT_UNEXPECTED`: a well-formed document whose root is not the resource asked for, or
    /// that lacks an element the resource requires.
    public static let documentUnexpected = Self(.documentUnexpected)
    /// `SEP2_VALUE_INVALID`: an element or attribute whose text is not its type's (an integer out of
    /// range, a boolean that is neither true nor false, a multiplier beyond ±9).
    public static let valueInvalid = Self(.valueInvalid)
    /// `SEP2_HREF_INVALID`: a link that is not an absolute path on the server (`/` then printable
    /// ASCII, not `//`, no fragment, at most `SEP2Href.maximumBytes` bytes).
    public static let hrefInvalid = Self(.hrefInvalid)
    /// `SEP2_LIST_TOO_LONG`: a list past `DiscoveryLimits` (its `all`, its pages, or the resources
    /// discovered in all), or whose pages do not add up to its `all`.
    public static let listTooLong = Self(.listTooLong)
    /// `SEP2_HTTP_STATUS`: the server answered a request with a status other than 200 (429 and 5xx
    /// back off; a redirect is followed only for the entry path).
    public static let httpStatus = Self(.httpStatus)
    /// `SEP2_END_DEVICE_UNKNOWN`: the EndDeviceList has no EndDevice with this device's LFDI or SFDI.
    public static let endDeviceUnknown = Self(.endDeviceUnknown)
    /// `SEP2_PIN_MISMATCH`: the Registration's `pIN` is not the configured PIN; all traffic stops.
    public static let pinMismatch = Self(.pinMismatch)
    /// `SEP2_REGISTRATION_REFUSED`: the server refused the EndDevice bessd POSTed (in-band
    /// registration) or the ConnectionPoint it PUT; each is sent again after the back-off.
    public static let registrationRefused = Self(.registrationRefused)
    /// `SEP2_WELL_KNOWN_INVALID`: `/.well-known/csipaus` is not the JSON CSIP-AUS defines
    /// (`supportedSchemaVersions` → version → `dcap` paths), is past its bounds, or names no
    /// DeviceCapability for a version bessd reads (v1.3, v1.2).
    public static let wellKnownInvalid = Self(.wellKnownInvalid)

    /// The stable name (`SEP2_XML_MALFORMED`).
    public var description: String {
        switch value {
        case .certificateInvalid: "SEP2_CERTIFICATE_INVALID"
        case .xmlMalformed: "SEP2_XML_MALFORMED"
        case .xmlOversized: "SEP2_XML_OVERSIZED"
        case .namespaceUnknown: "SEP2_NAMESPACE_UNKNOWN"
        case .documentUnexpected: "SEP2_DOCUMENT_UNEXPECTED"
        case .valueInvalid: "SEP2_VALUE_INVALID"
        case .hrefInvalid: "SEP2_HREF_INVALID"
        case .listTooLong: "SEP2_LIST_TOO_LONG"
        case .httpStatus: "SEP2_HTTP_STATUS"
        case .endDeviceUnknown: "SEP2_END_DEVICE_UNKNOWN"
        case .pinMismatch: "SEP2_PIN_MISMATCH"
        case .registrationRefused: "SEP2_REGISTRATION_REFUSED"
        case .wellKnownInvalid: "SEP2_WELL_KNOWN_INVALID"
        }
    }
}

/// Text from a document or certificate made safe for a message by ControlCore's `TextQuoting` (the
/// escaper BessSystem's `PeerText` forwards to): printable ASCII kept, `"` and `\` escaped, everything
/// else as `\u{hex}`, cut to `limit` characters with `…`.
func quoted(_ text: some StringProtocol, limit: Int = 40) -> String {
    TextQuoting.quoted(text, limit: limit)
}
