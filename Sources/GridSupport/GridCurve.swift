public import BessBase

/// A piecewise-linear curve of at most six points, stored inline so that evaluating it never
/// allocates: IEEE 1547-2018's volt-var curve (4 points), watt-var curve (P′3, P′2, P′1, P1, P2, P3)
/// and volt-watt curve (2 points, up to 4 accepted).
///
/// The x values never decrease (two equal x values are a vertical step, as Category A's volt-var
/// curve without deadband has at V2 = V3); the curve is flat before its first point and after its
/// last. What x and y mean, and their units, belong to the function that owns the curve.
public struct GridCurve: Sendable, Equatable, CustomStringConvertible {
    /// The most points a curve holds.
    public static let capacity = 6

    private var xs: InlineArray<6, Double>
    private var ys: InlineArray<6, Double>
    /// How many points the curve has, 1…`capacity`.
    public private(set) var count: Int

    /// A curve through `points`, in order of x. Throws `GRID_CURVE_POINTS` unless there are 1…6 of
    /// them, and `GRID_CURVE_ORDER` when a value is not finite or x decreases.
    public init(_ points: [(x: Double, y: Double)]) throws(GridSupportError) {
        guard (1...Self.capacity).contains(points.count) else {
            throw GridSupportError(.curvePoints, message: "a curve has 1 to \(Self.capacity) points, not \(points.count)")
        }
        self.init(unchecked: points)
        for i in 0..<count {
            guard xs[i].isFinite, ys[i].isFinite else {
                throw GridSupportError(.curveOrder, message: "point \(i + 1) is not a finite number")
            }
            if i > 0, xs[i] < xs[i - 1] {
                throw GridSupportError(.curveOrder, message: "point \(i + 1)'s x \(xs[i]) is below point \(i)'s \(xs[i - 1])")
            }
        }
    }

    /// The house's own curves (the profiles' defaults), known to be valid.
    init(unchecked points: [(x: Double, y: Double)]) {
        xs = InlineArray(repeating: 0)
        ys = InlineArray(repeating: 0)
        count = min(points.count, Self.capacity)
        for i in 0..<count {
            xs[i] = points[i].x
            ys[i] = points[i].y
        }
    }

    /// The point at `index` (0 ..< `count`).
    public subscript(index: Int) -> (x: Double, y: Double) {
        precondition(index >= 0 && index < count, "curve point \(index) of \(count)")
        return (xs[index], ys[index])
    }

    /// The points, for a message or a test (allocates: not for the cycle).
    public var points: [(x: Double, y: Double)] { (0..<count).map { self[$0] } }

    /// y at `x`: the first point's y at or before the first x, the last point's at or after the last
    /// x, linear in between. `x` is finite (the callers check); NaN gives NaN.
    public func value(at x: Double) -> Double {
        guard !x.isNaN else { return .nan }
        if x <= xs[0] { return ys[0] }
        let last = count - 1
        if x >= xs[last] { return ys[last] }
        // xs[i] ≤ x < xs[i + 1], so the segment is not vertical.
        var i = 0
        while i < last - 1, x >= xs[i + 1] { i += 1 }
        let fraction = (x - xs[i]) / (xs[i + 1] - xs[i])
        return ys[i] + fraction * (ys[i + 1] - ys[i])
    }

    /// The same curve moved along x by `offset` (volt-var's points follow VRef).
    func shifted(by offset: Double) -> GridCurve {
        var moved = self
        for i in 0..<count { moved.xs[i] += offset }
        return moved
    }

    public static func == (a: GridCurve, b: GridCurve) -> Bool {
        guard a.count == b.count else { return false }
        for i in 0..<a.count where a.xs[i] != b.xs[i] || a.ys[i] != b.ys[i] { return false }
        return true
    }

    /// `[[x, y], …]`, as configuration writes it.
    public var description: String {
        "[" + (0..<count).map { "[\(xs[$0]), \(ys[$0])]" }.joined(separator: ", ") + "]"
    }
}
