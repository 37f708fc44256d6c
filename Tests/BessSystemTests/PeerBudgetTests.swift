import BessSystem
import ControlCore
import Testing

@Suite("PeerBudget: journal lines per key and window")
struct PeerBudgetTests {
    static let t0 = MonotonicInstant(nanoseconds: 1_000_000_000)

    @Test("a window's lines past the budget are held, and summed up once when it ends")
    func summaryAtWindowEnd() {
        var budget = PeerBudget<String>(window: .seconds(10), lines: 2)
        var ended: [PeerBudget<String>.Ended] = []
        let verdicts = (0..<5).map { budget.admit("a", at: Self.t0 + .seconds($0), marked: $0 == 4) { ended.append($0) } }
        #expect(verdicts == [.write(heldBack: 0), .write(heldBack: 0), .held, .held, .held])
        #expect(ended.isEmpty)
        budget.endWindows(at: Self.t0 + .seconds(9)) { ended.append($0) }
        #expect(ended.isEmpty, "the window is not over yet")
        budget.endWindows(at: Self.t0 + .seconds(10)) { ended.append($0) }
        #expect(ended.map(\.key) == ["a"] && ended.map(\.heldBack) == [3] && ended.map(\.marked) == [1])
        #expect(budget.count == 0)
        #expect(budget.admit("a", at: Self.t0 + .seconds(11)) == .write(heldBack: 0), "a fresh window")
    }

    @Test("each kind has its own lines, one summary for the key")
    func kinds() {
        var budget = PeerBudget<Int>(window: .seconds(10), lines: 1, kinds: 2)
        #expect(budget.admit(1, kind: 0, at: Self.t0).written)
        #expect(budget.admit(1, kind: 1, at: Self.t0).written)
        #expect(!budget.admit(1, kind: 0, at: Self.t0).written)
        #expect(!budget.admit(1, kind: 1, at: Self.t0).written)
        var ended: [Int] = []
        #expect(budget.admit(1, at: Self.t0 + .seconds(10)) { ended.append($0.heldBack) }.written, "the next window")
        #expect(ended == [2])
    }

    @Test("past the key bound the least recently used key is summed up and forgotten")
    func leastRecentlyUsed() {
        var budget = PeerBudget<Int>(window: .seconds(10), lines: 1, keys: 2)
        _ = budget.admit(1, at: Self.t0)
        _ = budget.admit(1, at: Self.t0)
        _ = budget.admit(2, at: Self.t0 + .seconds(1))
        var ended: [Int] = []
        #expect(budget.admit(3, at: Self.t0 + .seconds(2)) { ended.append($0.key) }.written)
        #expect(ended == [1] && budget.count == 2)
    }

    @Test("with the next line: held lines are said by the key's next written line, across windows")
    func withNextLine() {
        var budget = PeerBudget<String>(window: .seconds(60), lines: 1, report: .withNextLine)
        #expect(budget.admit("p", at: Self.t0) == .write(heldBack: 0))
        #expect(budget.admit("p", at: Self.t0 + .seconds(30)) == .held)
        #expect(budget.admit("p", at: Self.t0 + .seconds(59)) == .held)
        budget.endWindows(at: Self.t0 + .seconds(100))
        #expect(budget.admit("p", at: Self.t0 + .seconds(120)) == .write(heldBack: 2))
        #expect(budget.admit("p", at: Self.t0 + .seconds(121)) == .held)
        #expect(budget.admit("p", at: Self.t0 + .seconds(122), force: true) == .write(heldBack: 1), "a forced line starts a window")
        #expect(budget.admit("p", at: Self.t0 + .seconds(181)) == .held, "the window runs from the forced line")
        #expect(budget.admit("p", at: Self.t0 + .seconds(182)) == .write(heldBack: 1))
    }
}
