import BessBase
import ControlCore
import COpenSSL

/// OpenSSL's per-thread error queue, read into bessd's coded errors. Every call into OpenSSL that can
/// fail starts with `clear()` so that what is read afterwards belongs to that call.
enum OpenSSLErrors {
    /// Empties this thread's error queue. The corresponding C function is `ERR_clear_error`.
    static func clear() { ERR_clear_error() }

    /// Takes every error queued on this thread: the first one's library and reason (what classifies
    /// the failure), and every reason text joined with "; ".
    static func drain() -> (library: Int32, reason: Int32, text: String) {
        var first: UInt = 0
        var texts: [String] = []
        while case let error = ERR_get_error(), error != 0 {
            if first == 0 { first = error }
            texts.append(reasonText(error))
        }
        guard first != 0 else { return (0, 0, "") }
        return (ERR_GET_LIB(first), ERR_GET_REASON(first), texts.joined(separator: "; "))
    }

    /// OpenSSL's words for one queued error, or its number when the library has none.
    static func reasonText(_ error: UInt) -> String {
        if let text = ERR_reason_error_string(error) { return String(cString: text) }
        return "error \(error)"
    }

    /// A context-making failure: `what` failed, with whatever OpenSSL queued as the reason.
    static func contextError(_ what: String) -> TLSError {
        let drained = drain()
        return TLSError(.contextFailed, message: drained.text.isEmpty ? what : "\(what) (\(drained.text))")
    }
}
