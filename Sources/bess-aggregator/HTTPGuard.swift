import BessBase
import ControlCore
import Foundation
import Hummingbird
import NIOCore
import Synchronization
import UplinkIngest

/// What the HTTP listener checks before it does any work for a request: the credential
/// (`AggregatorAccess`), a body's size (at most `IngestRules.maxPayloadBytes`, refused from its
/// Content-Length before anything is read and cut off while streaming when it has none), and how many
/// uploads run at once.
final class HTTPGuard: Sendable {
    let access: AggregatorAccess
    /// Uploads (`POST …/records`) served at once; one more is answered 503 with `Retry-After: 1`
    /// (bessd backs off and sends it again).
    let ingestLimit: Int
    private let ingesting = Atomic<Int>(0)

    init(access: AggregatorAccess, ingestLimit: Int) {
        self.access = access
        self.ingestLimit = ingestLimit
    }

    /// Nil when `request` may have `route`; else the answer: 401 (no credential or no one's) or 403
    /// (a credential not for this route).
    func refusal(_ route: AggregatorAccess.Route, _ request: Request) -> Response? {
        switch access.decide(route, authorization: request.headers[.authorization]) {
        case .allowed:
            return nil
        case .unauthorized:
            // The page's challenge makes a browser ask (Basic, the operator token as the password).
            let scheme = if case .page = route { "Basic" } else { "Bearer" }
            var response = BessAggregator.json(.unauthorized, ["error": "bad or missing token", "code": "UNAUTHORIZED"])
            response.headers[.wwwAuthenticate] = "\(scheme) realm=\"bess-aggregator\""
            return response
        case .forbidden:
            let why = switch route {
            case .records, .seqs: "a site's token is taken on its own site's paths only"
            case .commands, .metrics, .page: "only the operator token may do this"
            }
            return BessAggregator.refused(.forbidden, "FORBIDDEN", why)
        }
    }

    /// One upload more, or false when `ingestLimit` are running (then nothing is to be left).
    func enterIngest() -> Bool {
        if ingesting.wrappingAdd(1, ordering: .acquiringAndReleasing).newValue <= ingestLimit { return true }
        ingesting.wrappingSubtract(1, ordering: .acquiringAndReleasing)
        return false
    }

    func leaveIngest() { ingesting.wrappingSubtract(1, ordering: .acquiringAndReleasing) }

    static var busy: Response {
        var response = BessAggregator.refused(.serviceUnavailable, "BUSY", "too many uploads at once; send it again")
        response.headers[.retryAfter] = "1"
        return response
    }

    /// The body, or the 413 to answer: a Content-Length over the bound is refused before anything is
    /// read, and a body that has none stops being read once it passes the bound.
    static func body(_ request: Request) async throws -> Body {
        if let length = request.headers[.contentLength].flatMap({ Int($0) }),
           let refusal = IngestRules.check(payloadBytes: length) {
            return .refused(tooLarge(refusal))
        }
        do {
            return .read(try await request.body.collect(upTo: IngestRules.maxPayloadBytes))
        } catch is NIOTooManyBytesError {
            return .refused(tooLarge(IngestRefusal(.payloadTooLarge, message: "a body of more than \(IngestRules.maxPayloadBytes) bytes")))
        }
    }

    /// A request's body as read, or the answer that refuses it.
    enum Body {
        case read(ByteBuffer)
        case refused(Response)
    }

    static func tooLarge(_ refusal: IngestRefusal) -> Response {
        var response = BessAggregator.json(.contentTooLarge, ["error": refusal.description, "code": "\(refusal.code)"])
        // What was not read is not read: the connection closes after the answer.
        response.headers[.connection] = "close"
        return response
    }
}
