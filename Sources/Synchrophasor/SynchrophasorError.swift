public import BessBase
import ControlCore

/// A frame bessd refuses: a stable code and a message that quotes nothing the PMU sent unescaped
/// (`PMU_CRC_MISMATCH: CHK 0x1234, computed 0xB103`).
public typealias SynchrophasorError = CodedError<SynchrophasorErrorCode>

/// The stable code of a `SynchrophasorError`: a struct over a private enum, so the set is closed and
/// matched by value, never by text.
public struct SynchrophasorErrorCode: Hashable, Sendable, CustomStringConvertible {
    private enum Value: Hashable, Sendable {
        case frameTooShort, frameSizeInvalid, crcMismatch, syncInvalid, frameTypeUnknown, versionUnsupported
        case frameTypeUnexpected, configurationInvalid, configurationFragmented, dataMismatch, idcodeUnknown
    }

    private let value: Value
    private init(_ value: Value) { self.value = value }

    /// `PMU_FRAME_TOO_SHORT`: fewer bytes than a header and CHK (16), or than the frame's FRAMESIZE.
    public static let frameTooShort = Self(.frameTooShort)
    /// `PMU_FRAMESIZE_INVALID`: FRAMESIZE below 16, above the decoder's maximum, or not the number of
    /// bytes handed to the decoder.
    public static let frameSizeInvalid = Self(.frameSizeInvalid)
    /// `PMU_CRC_MISMATCH`: CHK is not the CRC-CCITT of the bytes before it.
    public static let crcMismatch = Self(.crcMismatch)
    /// `PMU_SYNC_INVALID`: the first byte is not 0xAA or the second byte's reserved bit 7 is set.
    public static let syncInvalid = Self(.syncInvalid)
    /// `PMU_FRAME_TYPE_UNKNOWN`: SYNC bits 6–4 name no frame type of C37.118.2-2011 (6 or 7).
    public static let frameTypeUnknown = Self(.frameTypeUnknown)
    /// `PMU_VERSION_UNSUPPORTED`: SYNC bits 3–0 are neither 1 (2005) nor 2 (2011).
    public static let versionUnsupported = Self(.versionUnsupported)
    /// `PMU_FRAME_TYPE_UNEXPECTED`: a valid frame of another type than the decoder was asked for.
    public static let frameTypeUnexpected = Self(.frameTypeUnexpected)
    /// `PMU_CONFIGURATION_INVALID`: a configuration frame whose counts or name lengths overrun its
    /// length or the limits, with a zero TIME_BASE, NUM_PMU or DATA_RATE, a reserved FNOM or FORMAT
    /// bit, or bytes left over.
    public static let configurationInvalid = Self(.configurationInvalid)
    /// `PMU_CONFIGURATION_FRAGMENTED`: a CFG-3 that is one of several frames (CONT_IDX not 0); the
    /// decoder does not reassemble them (ask the PMU for CFG-2 instead).
    public static let configurationFragmented = Self(.configurationFragmented)
    /// `PMU_DATA_MISMATCH`: a data frame whose length is not the one its configuration implies.
    public static let dataMismatch = Self(.dataMismatch)
    /// `PMU_IDCODE_UNKNOWN`: a data frame from another stream than its configuration's, or an IDCODE
    /// asked for that the configuration does not list.
    public static let idcodeUnknown = Self(.idcodeUnknown)

    /// The stable name (`PMU_CRC_MISMATCH`).
    public var description: String {
        switch value {
        case .frameTooShort: "PMU_FRAME_TOO_SHORT"
        case .frameSizeInvalid: "PMU_FRAMESIZE_INVALID"
        case .crcMismatch: "PMU_CRC_MISMATCH"
        case .syncInvalid: "PMU_SYNC_INVALID"
        case .frameTypeUnknown: "PMU_FRAME_TYPE_UNKNOWN"
        case .versionUnsupported: "PMU_VERSION_UNSUPPORTED"
        case .frameTypeUnexpected: "PMU_FRAME_TYPE_UNEXPECTED"
        case .configurationInvalid: "PMU_CONFIGURATION_INVALID"
        case .configurationFragmented: "PMU_CONFIGURATION_FRAGMENTED"
        case .dataMismatch: "PMU_DATA_MISMATCH"
        case .idcodeUnknown: "PMU_IDCODE_UNKNOWN"
        }
    }
}
