import BessBase
import ControlCore
import Glibc
import Testing
@testable import Uplink

@Suite("Spool and uplink error codes: typed, with the stable names operators read")
struct UplinkErrorCodeTests {
    static let spoolRows: [(SpoolError.Code, String, SpoolError.Kind)] = [
        (.io, "SPOOL_IO", .io),
        (.full, "SPOOL_FULL", .storageFull),
        (.recordTooLarge, "SPOOL_RECORD_TOO_LARGE", .valueInvalid),
        (.sequenceExhausted, "SPOOL_SEQ_EXHAUSTED", .valueInvalid),
    ]

    @Test("each spool code prints its stable name and has its kind", arguments: spoolRows)
    func spoolNames(code: SpoolError.Code, name: String, kind: SpoolError.Kind) {
        #expect(code.description == name)
        #expect(code.kind == kind)
        #expect(SpoolError(code, message: "m").description == "\(name): m")
    }

    static let failedRows: [(Int32, String)] = [
        (ENOSPC, "SPOOL_FULL"), (EDQUOT, "SPOOL_FULL"), (EFBIG, "SPOOL_FULL"),
        (EIO, "SPOOL_IO"), (EBADF, "SPOOL_IO"), (EROFS, "SPOOL_IO"),
    ]

    @Test("a failed call on the spool's files is SPOOL_FULL when the disk or a quota is full", arguments: failedRows)
    func failedCall(errno: Int32, name: String) {
        let error = SpoolError.failed("writing", errno: errno)
        #expect(error.code.description == name)
        #expect(error.errno == errno)
        #expect(error.message.hasPrefix("writing: "))
    }

    static let uplinkRows: [(UplinkError.Code, String, UplinkError.Kind)] = [
        (.configInvalid, "CONFIG_INVALID", .config),
        (.tlsConfig, "UPLINK_TLS_CONFIG", .config),
        (.tokenUnreadable, "UPLINK_TOKEN_UNREADABLE", .config),
        (.unreachable, "UPLINK_UNREACHABLE", .linkLost),
        (.http(503), "UPLINK_HTTP_503", .refused),
        (.mqttClient, "MQTT_CLIENT", .system),
        (.mqttWill, "MQTT_WILL", .config),
        (.mqttCredentials, "MQTT_CREDENTIALS", .config),
        (.mqttUnreachable, "MQTT_UNREACHABLE", .linkLost),
        (.mqttConnectionLost, "MQTT_CONNECTION_LOST", .linkLost),
        (.mqttPublish, "MQTT_PUBLISH", .linkLost),
        (.mqttSubscribe, "MQTT_SUBSCRIBE", .linkLost),
        (.mqttRefused, "MQTT_REFUSED", .refused),
        (.mqttSubscribeRefused, "MQTT_SUBSCRIBE_REFUSED", .refused),
        (.mqttPublishRefused, "MQTT_PUBLISH_REFUSED", .refused),
        (.mqttNoSubscriber, "MQTT_NO_SUBSCRIBER", .refused),
        (.mqttEpoll, "MQTT_EPOLL", .system),
        (.spool(.full), "SPOOL_FULL", .spool(.storageFull)),
        (.spool(.io), "SPOOL_IO", .spool(.io)),
    ]

    @Test("each uplink code prints its stable name and has its kind", arguments: uplinkRows)
    func uplinkNames(code: UplinkError.Code, name: String, kind: UplinkError.Kind) {
        #expect(code.description == name)
        #expect(code.kind == kind)
        #expect(UplinkError(code, message: "m").description == "\(name): m")
    }

    @Test("a spool failure reported by the sender keeps the spool's code and message")
    func spoolThroughSender() {
        let error = UplinkError(spool: SpoolError(.full, message: "writing the spool: No space left on device", errno: ENOSPC))
        #expect(error.description == "SPOOL_FULL: writing the spool: No space left on device")
        #expect(error.code.spoolCode == .full && error.kind == .spool(.storageFull))
        #expect(UplinkError.Code.http(404).httpStatus == 404 && UplinkError.Code.spool(.io).httpStatus == nil)
        #expect(UplinkError.Code.spool(.io) != .spool(.full))
    }
}
