import BessBase
import Foundation
import Testing

/// BessBase's RFC 3339 reader and writer against Foundation's ISO 8601 formatter, an implementation
/// no one here wrote.
@Suite struct RFC3339Tests {
    nonisolated(unsafe) static let foundation: ISO8601DateFormatter = {
        let f = ISO8601DateFormatter()
        f.formatOptions = [.withInternetDateTime]
        f.timeZone = TimeZone(identifier: "UTC")
        return f
    }()

    @Test("text and back agree with Foundation's formatter from 1900 to 2200, leap days and negative times included")
    func roundTrip() {
        var generator = SystemRandomNumberGenerator()
        var samples: [Int64] = [0, -1, 86_399, 951_782_400, 951_868_799, 1_709_164_800, -2_208_988_800, 7_258_118_399]
        for _ in 0..<20_000 { samples.append(Int64.random(in: -2_208_988_800...7_258_118_399, using: &generator)) }
        for unix in samples {
            let text = RFC3339.text(unix)
            #expect(text == Self.foundation.string(from: Date(timeIntervalSince1970: Double(unix))), "\(unix)")
            #expect(RFC3339.unixSeconds(text) == unix, "\(text)")
        }
    }

    @Test("a fraction is dropped, or refused unless zero when the caller asks for whole seconds")
    func fractions() {
        #expect(RFC3339.unixSeconds("2026-11-30T00:00:00.5Z") == 1_795_996_800)
        #expect(RFC3339.unixSeconds("2026-11-30T00:00:00.5Z", fraction: .zeroOnly) == nil)
        #expect(RFC3339.unixSeconds("2026-11-30T00:00:00.000Z", fraction: .zeroOnly) == 1_795_996_800)
        #expect(RFC3339.unixSeconds("2026-11-30T05:30:00+05:30", fraction: .zeroOnly) == 1_795_996_800)
        for bad in ["2026-11-30T00:00:00", "2026-02-29T00:00:00Z", "2026-11-30T24:00:00Z", "2026-11-30T00:00:00+5:30", "x"] {
            #expect(RFC3339.unixSeconds(bad) == nil, "\(bad)")
        }
    }
}
