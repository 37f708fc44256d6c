public import BessBase
import ControlCore

/// `DERCurve` (2030.5 `DERCurve`, the resource a `DERControlBase`'s `opModVoltVar`, `opModWattVar` or
/// `opModVoltWatt` links to): a curve of 1…10 `CurveData` points, read at each element's type width.
/// Nothing a peer sends sizes a store: more than `maximumPoints` points, a point without its
/// `xvalue` or `yvalue`, a multiplier outside −9…9 or a value outside its type refuses the document
/// (`SEP2_DOCUMENT_UNEXPECTED`, `SEP2_VALUE_INVALID`). Whether bessd applies the curve is asked apart
/// (`DERCurve+Settings.swift`): a curve read is not yet a curve applied.
public struct DERCurve: Hashable, Sendable {
    /// The most `CurveData` points 2030.5 allows a curve (its schema's `maxOccurs`).
    public static let maximumPoints = 10

    /// One `CurveData`: `xvalue`, `yvalue` (Int32 each) and `excitation` when y is a power factor.
    public struct Point: Hashable, Sendable {
        public var x: Int32
        public var y: Int32
        /// `excitation`: present only when y is a power factor (not a curve bessd applies).
        public var excitation: Bool?

        public init(x: Int32, y: Int32, excitation: Bool? = nil) {
            self.x = x
            self.y = y
            self.excitation = excitation
        }
    }

    /// `mRID`.
    public var mRID: String
    /// `curveType` (`DERCurveType`): 11 volt-var, 12 volt-watt, 14 watt-var; the others not applied.
    public var curveType: UInt8
    /// The points, in document order (1…`maximumPoints`).
    public var points: [Point]
    /// `xMultiplier`, `yMultiplier`: powers of ten, −9…9.
    public var xMultiplier: Int8
    public var yMultiplier: Int8
    /// `yRefType` (`DERUnitRefType`): what y is a percent of (1 `setMaxW`, 2 `setMaxVar`, 3 `statVarAvail` …).
    public var yRefType: UInt8
    /// `vRef` (`PerCent`, hundredths of a percent of `setVRef`); nil: 100 %.
    public var vRefHundredthsPercent: UInt16?
    /// `autonomousVRefEnable`; nil: off.
    public var autonomousVRefEnable: Bool?
    /// `autonomousVRefTimeConstant`, s.
    public var autonomousVRefTimeConstantSeconds: UInt32?
    /// `openLoopTms`, hundredths of a second; nil: the mode's default response time.
    public var openLoopHundredthsSecond: UInt16?

    public init(mRID: String, curveType: UInt8, points: [Point], xMultiplier: Int8 = 0, yMultiplier: Int8 = 0, yRefType: UInt8,
                vRefHundredthsPercent: UInt16? = nil, autonomousVRefEnable: Bool? = nil, autonomousVRefTimeConstantSeconds: UInt32? = nil,
                openLoopHundredthsSecond: UInt16? = nil) {
        self.mRID = mRID
        self.curveType = curveType
        self.points = points
        self.xMultiplier = xMultiplier
        self.yMultiplier = yMultiplier
        self.yRefType = yRefType
        self.vRefHundredthsPercent = vRefHundredthsPercent
        self.autonomousVRefEnable = autonomousVRefEnable
        self.autonomousVRefTimeConstantSeconds = autonomousVRefTimeConstantSeconds
        self.openLoopHundredthsSecond = openLoopHundredthsSecond
    }

    /// Reads a `DERCurve` element: the points counted as they are met (the eleventh refuses the
    /// document before it is read), every element at its type's width.
    init(_ element: XMLElement) throws(SEP2Error) {
        mRID = try element.mRID()
        _ = try element.requiredInteger("creationTime", Int64.self)
        var points: [Point] = []
        for child in element.children where child.name.namespace == SEP2Namespace.sep && child.name.local == "CurveData" {
            guard points.count < Self.maximumPoints else {
                throw SEP2Error(.documentUnexpected, message: "DERCurve \(quoted(mRID)) has more than \(Self.maximumPoints) CurveData")
            }
            if points.isEmpty { points.reserveCapacity(Self.maximumPoints) }
            points.append(Point(x: try child.requiredInteger("xvalue", Int32.self), y: try child.requiredInteger("yvalue", Int32.self),
                                excitation: try child.boolean("excitation")))
        }
        guard !points.isEmpty else {
            throw SEP2Error(.documentUnexpected, message: "DERCurve \(quoted(mRID)) at byte \(element.offset) has no CurveData")
        }
        self.points = points
        curveType = try element.requiredInteger("curveType", UInt8.self)
        xMultiplier = try element.requiredInteger("xMultiplier", Int8.self, in: -9...9)
        yMultiplier = try element.requiredInteger("yMultiplier", Int8.self, in: -9...9)
        yRefType = try element.requiredInteger("yRefType", UInt8.self)
        vRefHundredthsPercent = try element.integer("vRef", UInt16.self)
        autonomousVRefEnable = try element.boolean("autonomousVRefEnable")
        autonomousVRefTimeConstantSeconds = try element.integer("autonomousVRefTimeConstant", UInt32.self)
        openLoopHundredthsSecond = try element.integer("openLoopTms", UInt16.self)
        // Read for their widths only: bessd's law has no ramps of its own for a curve.
        _ = try element.integer("rampDecTms", UInt16.self)
        _ = try element.integer("rampIncTms", UInt16.self)
        _ = try element.integer("rampPT1Tms", UInt16.self)
    }

    /// A `DERCurve` document.
    public static func read(_ bytes: [UInt8], limits: XMLLimits = XMLLimits()) throws(SEP2Error) -> SEP2Document<DERCurve> {
        try readDocument(bytes, root: "DERCurve", limits: limits) { (root) throws(SEP2Error) in try DERCurve(root) }
    }

    /// x of point `index` as written × 10^`xMultiplier`.
    public func x(_ index: Int) -> Double { scaled(Double(points[index].x), xMultiplier) }
    /// y of point `index` as written × 10^`yMultiplier`.
    public func y(_ index: Int) -> Double { scaled(Double(points[index].y), yMultiplier) }
}
