import Sep2Link
import Testing

/// The request and response values the worker reads: header lookup, Retry-After, Location.
@Suite("HTTP messages")
struct HTTPMessageTests {
    @Test("headers are found case-insensitively; Retry-After is delta-seconds only")
    func headerLookup() {
        let response = HTTPResponse(status: 429, headers: [("retry-after", "120"), ("LOCATION", "/edev/3")])
        #expect(response.header("Retry-After") == "120")
        #expect(response.retryAfterSeconds == 120)
        #expect(response.location == "/edev/3")
        let dated = HTTPResponse(status: 503, headers: [("Retry-After", "Fri, 27 Nov 2026 21:00:00 GMT")])
        #expect(dated.retryAfterSeconds == nil)
        #expect(HTTPResponse(status: 503, headers: [("Retry-After", "-5")]).retryAfterSeconds == nil)
        #expect(HTTPResponse(status: 200).location == nil)
    }
}
