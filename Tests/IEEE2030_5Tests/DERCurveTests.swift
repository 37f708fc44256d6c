import BessBase
import ControlCore
import Foundation
import GridSupport
import IEEE2030_5
import Testing

/// `DERCurve` read from documents the 2030.5 schema accepts (checked with xmllint against the XSD, as
/// the reports are), what the site applies of it, and the documents it refuses.
@Suite("IEEE 2030.5 DERCurve")
struct DERCurveTests {
    /// A `DERCurve` document in the schema's element order; `points` (x, y), `extra` between the
    /// points and `curveType`, `tail` before `xMultiplier`.
    static func curve(_ mRID: String, type: Int, _ points: [(Int, Int)], xm: Int = 0, ym: Int = 0, yRef: Int = 2, olrt: Int? = nil,
                      vRef: Int? = nil, head: String = "", pointXML: String? = nil) -> [UInt8] {
        let data = pointXML ?? points.map { "<CurveData><xvalue>\($0.0)</xvalue><yvalue>\($0.1)</yvalue></CurveData>" }.joined()
        let tail = (olrt.map { "<openLoopTms>\($0)</openLoopTms>" } ?? "") + (vRef.map { "<vRef>\($0)</vRef>" } ?? "")
        return Array("""
            <DERCurve xmlns="urn:ieee:std:2030.5:ns" href="/derp/1/dc/\(mRID)"><mRID>\(mRID)</mRID><description>curve</description>\
            \(head)<creationTime>1760000000</creationTime>\(data)<curveType>\(type)</curveType>\(tail)\
            <xMultiplier>\(xm)</xMultiplier><yMultiplier>\(ym)</yMultiplier><yRefType>\(yRef)</yRefType></DERCurve>
            """.utf8)
    }

    static let full = DERCurve.VarScale(injecting: 1, absorbing: 1)
    static let cat = GridSupportProfile.ieee1547_2018_cat_b

    /// The schema-valid documents of this suite, by name.
    static let valid: [(name: String, xml: [UInt8])] = [
        ("vv-b", curve("A1", type: 11, [(92, 44), (98, 0), (102, 0), (108, -44)], olrt: 500, vRef: 10_000)),
        ("vv-scaled", curve("A2", type: 11, [(9200, 4400), (9800, 0), (10200, 0), (10800, -4400)], xm: -2, ym: -2,
                            head: "<autonomousVRefEnable>true</autonomousVRefEnable><autonomousVRefTimeConstant>600</autonomousVRefTimeConstant>")),
        ("vw", curve("A3", type: 12, [(106, 100), (110, 0)], yRef: 1, olrt: 1000)),
        ("wv", curve("A4", type: 14, [(20, 0), (50, 0), (100, -44)], olrt: 300)),
        ("vv-3", curve("B1", type: 11, [(92, 44), (98, 0), (108, -44)])),
        ("vv-v2", curve("B2", type: 11, [(92, 44), (96, 0), (102, 0), (108, -44)])),
        ("vv-yref", curve("B3", type: 11, [(92, 44), (98, 0), (102, 0), (108, -44)], yRef: 1)),
        ("wv-charging", curve("B4", type: 14, [(-50, 44), (50, 0), (100, -44)])),
        ("vw-rising", curve("B5", type: 12, [(106, 50), (110, 80)], yRef: 1)),
        ("vv-olrt", curve("B6", type: 11, [(92, 44), (98, 0), (102, 0), (108, -44)], olrt: 9_500)),
        ("pf", curve("B7", type: 11, [], pointXML: (0..<4).map { "<CurveData><excitation>true</excitation><xvalue>\(92 + $0 * 5)</xvalue><yvalue>95</yvalue></CurveData>" }.joined())),
        ("ten", curve("B8", type: 14, (0..<10).map { ($0 * 10, 0) })),
        ("vw-charging", curve("B9", type: 12, [(106, 100), (110, -50)], yRef: 1)),
        ("wv-2", curve("BA", type: 14, [(0, 44), (100, -44)])),
    ]

    static func read(_ name: String) throws -> DERCurve {
        let xml = try #require(valid.first { $0.name == name }?.xml)
        return try DERCurve.read(xml).resource
    }

    @Test("the suite's documents are valid 2030.5 (xmllint against the XSD)")
    func schemaValid() throws {
        #expect(try SchemaLint.validate(Self.valid.map { ($0.name, nil, $0.xml) }) == 2 * Self.valid.count)
    }

    @Test("Category B's curves, read and applied, are the profile's own")
    func applied() throws {
        let vv = try Self.read("vv-b")
        #expect(vv.mRID == "A1" && vv.curveType == 11 && vv.points.count == 4 && vv.openLoopHundredthsSecond == 500 && vv.vRefHundredthsPercent == 10_000)
        #expect(vv.applied(as: .voltVar, varScale: Self.full) == .success(.voltVar(Self.cat.voltVar)))
        let scaled = try Self.read("vv-scaled")
        var expected = Self.cat.voltVar
        expected.autonomousVRef = true
        expected.vRefTimeConstant = .seconds(600)
        #expect(scaled.applied(as: .voltVar, varScale: Self.full) == .success(.voltVar(expected)))
        #expect(try Self.read("vw").applied(as: .voltWatt, varScale: Self.full) == .success(.voltWatt(Self.cat.voltWatt)))
        // A last point below 0 % (storage charging at high voltage) is applied: the cycle charges only into
        // the site's import headroom (UtilityVoltWattTests).
        let charging = VoltWattSettings(curve: try GridCurve([(1.06, 100), (1.10, -50)]), responseTime: Self.cat.voltWatt.responseTime)
        #expect(try Self.read("vw-charging").applied(as: .voltWatt, varScale: Self.full) == .success(.voltWatt(charging)))
        // y is % of setMaxVar: a site whose var capability is half its VA asks half the % of VAMax.
        let wv = try Self.read("wv").applied(as: .wattVar, varScale: DERCurve.VarScale(injecting: 0.5, absorbing: 0.5))
        let curve = try GridCurve([(20, 0), (50, 0), (100, -22)])
        #expect(wv == .success(.wattVar(WattVarSettings(curve: curve, responseTime: .seconds(3)))), "\(wv)")
        let ten = try Self.read("ten")
        #expect(ten.points.count == DERCurve.maximumPoints)
        #expect(DERCurve.VarScale(apparentVA: 100_000, varInjecting: 44_000, varAbsorbing: .nan) == DERCurve.VarScale(injecting: 0.44, absorbing: 0))
    }

    @Test("a curve read but outside what bessd applies is not applied, and says why")
    func notApplied() throws {
        let cases: [(String, DERCurve.Control, String)] = [
            ("vv-3", .voltVar, "opModVoltVar not applied: its curve has 3 points, not 4"),
            ("vv-v2", .voltVar, "opModVoltVar not applied: GRID_VOLT_VAR_RANGE"),
            ("vv-yref", .voltVar, "opModVoltVar not applied: its curve's yRefType 1 is not 2 (setMaxVar) or 3 (statVarAvail)"),
            ("wv-charging", .wattVar, "opModWattVar not applied: GRID_WATT_VAR_RANGE watt-var P1 -50.0 % is outside 0…100 % of setMaxW"),
            ("vw-rising", .voltWatt, "opModVoltWatt not applied: GRID_VOLT_WATT_RANGE"),
            ("vv-olrt", .voltVar, "opModVoltVar not applied: GRID_RESPONSE_TIME_RANGE"),
            ("pf", .voltVar, "opModVoltVar not applied: its curve's y is a power factor (excitation set)"),
            ("vw", .voltVar, "opModVoltVar not applied: its curve has curveType 12, not 11"),
            ("ten", .wattVar, "opModWattVar not applied: its curve has 10 points, not 3"),
            ("wv-2", .wattVar, "opModWattVar not applied: its curve has 2 points, not 3"),
        ]
        for (name, control, prefix) in cases {
            let result = try Self.read(name).applied(as: control, varScale: Self.full)
            guard case .failure(let why) = result else {
                Issue.record("\(name) applied: \(result)")
                continue
            }
            #expect(why.reason.hasPrefix(prefix), "\(name): \(why.reason)")
        }
        // No unit with var points: no unit runs a law (volt-watt neither).
        let none = DERCurve.VarScale(injecting: 0, absorbing: 0)
        #expect(try Self.read("vv-b").applied(as: .voltVar, varScale: none) == .failure(CurveNotApplied(.voltVar, "no unit has var points")))
        #expect(try Self.read("vw").applied(as: .voltWatt, varScale: none) == .failure(CurveNotApplied(.voltWatt, "no unit has var points")))
    }

    @Test("a document that breaks the schema's bounds is refused, its count or width never trusted")
    func refused() throws {
        let four = [(92, 44), (98, 0), (102, 0), (108, -44)]
        let cases: [(String, [UInt8], SEP2ErrorCode)] = [
            ("eleven points", Self.curve("F1", type: 14, (0..<11).map { ($0 * 10, 0) }), .documentUnexpected),
            ("a thousand points", Self.curve("F2", type: 14, (0..<1000).map { ($0, 0) }), .documentUnexpected),
            ("no points", Self.curve("F3", type: 11, []), .documentUnexpected),
            ("xvalue past Int32", Self.curve("F4", type: 11, [(2_147_483_648, 0)] + four.dropFirst()), .valueInvalid),
            ("yvalue not a number", Self.curve("F5", type: 11, [], pointXML: "<CurveData><xvalue>1</xvalue><yvalue>1e3</yvalue></CurveData>"), .valueInvalid),
            ("no yvalue", Self.curve("F6", type: 11, [], pointXML: "<CurveData><xvalue>1</xvalue></CurveData>"), .documentUnexpected),
            ("xMultiplier 10", Self.curve("F7", type: 11, four, xm: 10), .valueInvalid),
            ("yMultiplier -10", Self.curve("F8", type: 11, four, ym: -10), .valueInvalid),
            ("curveType 256", Self.curve("F9", type: 256, four), .valueInvalid),
            ("openLoopTms past UInt16", Self.curve("FA", type: 11, four, olrt: 65_536), .valueInvalid),
            ("vRef negative", Self.curve("FB", type: 11, four, vRef: -1), .valueInvalid),
            ("excitation not a boolean", Self.curve("FC", type: 11, [], pointXML: "<CurveData><excitation>yes</excitation><xvalue>1</xvalue><yvalue>1</yvalue></CurveData>"), .valueInvalid),
            ("a bad mRID", Array(String(decoding: Self.curve("FD", type: 11, four), as: UTF8.self).replacingOccurrences(of: "<mRID>FD</mRID>", with: "<mRID>curve</mRID>").utf8), .valueInvalid),
        ]
        for (name, xml, code) in cases {
            do {
                let read = try DERCurve.read(xml)
                Issue.record("\(name) read: \(read.resource.points.count) points")
            } catch {
                #expect(error.code == code, "\(name): \(error)")
            }
        }
        // Not a DERCurve at all.
        #expect(throws: SEP2Error.self) { try DERCurve.read(Array("<DERControl xmlns=\"urn:ieee:std:2030.5:ns\"/>".utf8)) }
    }
}
