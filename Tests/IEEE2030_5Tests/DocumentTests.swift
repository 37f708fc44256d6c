import BessBase
import ControlCore
import IEEE2030_5
import Testing

/// The XML reader and the DER control resources on documents written here for the edge cases the
/// utility's server never sends: every refusal coded, nothing quoted unescaped.
@Suite("IEEE 2030.5 documents")
struct DocumentTests {
    static let sep = "urn:ieee:std:2030.5:ns"

    /// A DERControl with `base` inside its DERControlBase, in namespace `csipaus` for the prefix.
    static func control(_ base: String, csipaus: String = "https://csipaus.org/ns", extra: String = "", status: Int = 0) -> [UInt8] {
        Array("""
            <?xml version="1.0" encoding="UTF-8"?>
            <!-- a comment before the root -->
            <DERControl xmlns="\(sep)" xmlns:csipaus="\(csipaus)" href="/derp/1/derc/7" replyTo="/rsps/1/rsp" responseRequired="03">
              <mRID>0A1B2C3D</mRID>
              <creationTime>1700000000</creationTime>
              <EventStatus><currentStatus>\(status)</currentStatus><dateTime>1700000000</dateTime><potentiallySuperseded>false</potentiallySuperseded></EventStatus>
              <interval><duration>300</duration><start>1700000600</start></interval>
              <randomizeStart>-60</randomizeStart>
              <DERControlBase>\(base)</DERControlBase>\(extra)
            </DERControl>
            """.utf8)
    }

    @Test("a DERControl: times, status, randomization, attributes, every CSIP-AUS limit × 10^multiplier")
    func derControl() throws {
        let base = """
            <opModConnect>true</opModConnect><opModEnergize>0</opModEnergize><opModFixedW>-2500</opModFixedW>
            <opModMaxLimW>8000</opModMaxLimW><opModTargetW><multiplier>3</multiplier><value>-5</value></opModTargetW>
            <csipaus:opModExpLimW><multiplier>2</multiplier><value>15</value></csipaus:opModExpLimW>
            <csipaus:opModImpLimW><multiplier>0</multiplier><value>7000</value></csipaus:opModImpLimW>
            <csipaus:opModGenLimW><multiplier>-1</multiplier><value>12345</value></csipaus:opModGenLimW>
            <csipaus:opModLoadLimW><multiplier>1</multiplier><value>300</value></csipaus:opModLoadLimW>
            <rampTms>6000</rampTms>
            """
        for version in CSIPAUSVersion.allCases {
            let read = try DERControl.read(Self.control(base, csipaus: version.namespace))
            #expect(read.csipaus == version)
            let control = read.resource
            #expect(control.mRID == "0A1B2C3D")
            #expect(control.creationTime == 1_700_000_000 && control.start == 1_700_000_600 && control.duration == 300)
            #expect(control.randomizeStart == -60 && control.randomizeDuration == 0)
            #expect(control.status == EventStatus(current: .scheduled, dateTime: 1_700_000_000))
            #expect(control.replyTo == "/rsps/1/rsp" && control.responseRequired == 3 && control.href == "/derp/1/derc/7")
            #expect(control.base.connect == true && control.base.energize == false)
            #expect(control.base.fixedWHundredthsPercent == -2500 && control.base.maxLimWHundredthsPercent == 8000)
            #expect(control.base.targetW?.watts == -5000)
            #expect(control.base.exportLimitW?.watts == 1500)
            #expect(control.base.importLimitW?.watts == 7000)
            #expect(control.base.generationLimitW?.watts == 1234.5)
            #expect(control.base.loadLimitW?.watts == 3000)
            #expect(control.base.storageTargetW == nil && control.base.rampTimeHundredthsSecond == 6000)
        }
    }

    @Test("prefixes are the document's own: the default namespace may be prefixed and csipaus unprefixed")
    func prefixesAreFree() throws {
        let text = """
            <s:DefaultDERControl xmlns:s="\(Self.sep)"><s:mRID>FF</s:mRID><s:DERControlBase>
            <opModExpLimW xmlns="https://csipaus.org/ns/v1.3"><s:multiplier>0</s:multiplier><s:value>5000</s:value></opModExpLimW>
            <s:opModImpLimW><s:multiplier>0</s:multiplier><s:value>1</s:value></s:opModImpLimW>
            </s:DERControlBase><s:setGradW>27</s:setGradW></s:DefaultDERControl>
            """
        let read = try DefaultDERControl.read(Array(text.utf8))
        #expect(read.csipaus == .v1_3)
        #expect(read.resource.base.exportLimitW?.watts == 5000)
        #expect(read.resource.base.importLimitW == nil, "opModImpLimW in 2030.5's namespace is not CSIP-AUS's")
        #expect(read.resource.setGradW == 27)
    }

    @Test("refusals are coded", arguments: [
        ("unclosed", "<DERControl xmlns=\"urn:ieee:std:2030.5:ns\"><mRID>1</mRID>", "SEP2_XML_MALFORMED"),
        ("mismatched", "<DERControl xmlns=\"urn:ieee:std:2030.5:ns\"><mRID>1</x></DERControl>", "SEP2_XML_MALFORMED"),
        ("doctype", "<!DOCTYPE d [<!ENTITY x \"y\">]><DERControl/>", "SEP2_XML_MALFORMED"),
        ("entity", "<DERControl xmlns=\"urn:ieee:std:2030.5:ns\">&x;</DERControl>", "SEP2_XML_MALFORMED"),
        ("unbound prefix", "<p:DERControl/>", "SEP2_XML_MALFORMED"),
        ("two roots", "<a xmlns=\"urn:ieee:std:2030.5:ns\"/><b/>", "SEP2_XML_MALFORMED"),
        ("repeated attribute", "<DERControl a=\"1\" a=\"2\"/>", "SEP2_XML_MALFORMED"),
        ("no namespace", "<DERControl/>", "SEP2_NAMESPACE_UNKNOWN"),
        ("other namespace", "<DERControl xmlns=\"urn:ieee:std:2030.5:nss\"/>", "SEP2_NAMESPACE_UNKNOWN"),
        ("other root", "<DERProgram xmlns=\"urn:ieee:std:2030.5:ns\"/>", "SEP2_DOCUMENT_UNEXPECTED"),
        ("missing interval", "<DERControl xmlns=\"urn:ieee:std:2030.5:ns\"><mRID>1</mRID><creationTime>1</creationTime></DERControl>", "SEP2_DOCUMENT_UNEXPECTED"),
    ])
    func refusals(_ name: String, _ text: String, _ code: String) {
        #expect(throws: SEP2Error.self, "\(name)") { try DERControl.read(Array(text.utf8)) }
        do {
            _ = try DERControl.read(Array(text.utf8))
        } catch {
            #expect(error.code.description == code, "\(name): \(error)")
        }
    }

    @Test("values out of their type's range are SEP2_VALUE_INVALID", arguments: [
        "<opModFixedW>10001</opModFixedW>",
        "<opModMaxLimW>-1</opModMaxLimW>",
        "<opModConnect>yes</opModConnect>",
        "<opModTargetW><multiplier>10</multiplier><value>1</value></opModTargetW>",
        "<opModTargetW><multiplier>0</multiplier><value>40000</value></opModTargetW>",
        "<opModTargetW><multiplier>0</multiplier><value>1e3</value></opModTargetW>",
    ])
    func valueRefusals(_ base: String) {
        do {
            _ = try DERControl.read(Self.control(base))
            Issue.record("\(base) was read")
        } catch {
            #expect(error.code == .valueInvalid, "\(error)")
        }
    }

    @Test("a status outside 0–4 and a randomization beyond an hour are refused")
    func statusAndRandomization() {
        #expect(throws: SEP2Error.self) { try DERControl.read(Self.control("", status: 5)) }
        #expect(throws: SEP2Error.self) { try DERControl.read(Self.control("", extra: "<randomizeDuration>3601</randomizeDuration>")) }
    }

    @Test("oversized: bytes, depth, elements and text past the limits are SEP2_XML_OVERSIZED")
    func oversized() {
        var limits = XMLLimits()
        limits.maximumBytes = 512
        let big = Self.control("", extra: String(repeating: " ", count: 600))
        let deep = "<DERControl xmlns=\"\(Self.sep)\">" + String(repeating: "<a>", count: 40) + String(repeating: "</a>", count: 40) + "</DERControl>"
        let many = "<DERControlList xmlns=\"\(Self.sep)\">" + String(repeating: "<x/>", count: 9000) + "</DERControlList>"
        let text = "<DERControl xmlns=\"\(Self.sep)\"><mRID>" + String(repeating: "A", count: 2000) + "</mRID></DERControl>"
        for (name, document, chosen) in [("bytes", big, limits), ("depth", Array(deep.utf8), XMLLimits()),
                                         ("elements", Array(many.utf8), XMLLimits()), ("text", Array(text.utf8), XMLLimits())] {
            do {
                _ = try XMLDocument.parse(document, limits: chosen)
                Issue.record("\(name) was read")
            } catch {
                #expect(error.code == .xmlOversized, "\(name): \(error)")
            }
        }
    }

    /// 200 controls at 2 KiB of white space.
    @Test("a pretty-printed list's indentation is not text")
    func indentationIsNotText() throws {
        let control = String(decoding: Self.control("<opModConnect>true</opModConnect>"), as: UTF8.self)
            .split(separator: "\n").dropFirst(2).joined(separator: "\n")
            .replacing(" xmlns=\"\(Self.sep)\" xmlns:csipaus=\"https://csipaus.org/ns\"", with: "")
        let indent = "\n" + String(repeating: " ", count: 12)
        let list = "<DERControlList xmlns=\"\(Self.sep)\" all=\"200\" results=\"200\">"
            + String(repeating: indent + control, count: 200) + indent + "</DERControlList>"
        let read = try DERControlList.read(Array(list.utf8))
        #expect(read.resource.controls.count == 200 && read.resource.all == 200)
        #expect(read.resource.controls.allSatisfy { $0.base.connect == true })
    }

    @Test("white space before an element's first child is not text either; text and white space alone are kept")
    func indentationBeforeFirstChild() throws {
        let indent = "\n" + String(repeating: " ", count: 2000)
        let root = try XMLDocument.parse(Array("<a xmlns=\"\(Self.sep)\">\(indent)<b> x </b>\n  <c>  </c>\n</a>".utf8))
        #expect(root.text == "", "\(root.text.utf8.count) bytes of indentation kept as text")
        #expect(root.children.map(\.text) == [" x ", "  "])
        let mixed = try XMLDocument.parse(Array("<a xmlns=\"\(Self.sep)\"> y &amp; <b/></a>".utf8))
        #expect(mixed.text == " y &", "white space next to a child is dropped, text kept")
    }

    /// Controls and non-ASCII as \u{…}, quotes with a backslash.
    @Test("document text reaches messages escaped as TextQuoting does")
    func messagesEscaped() {
        let hostile = "<DERControl xmlns=\"\(Self.sep)\" xmlns:e=\"urn:évil\n\u{1B}[31m\"><e:x/></DERControl>"
        do {
            _ = try DERControl.read(Array(hostile.utf8))
            Issue.record("read")
        } catch {
            #expect(error.code == .namespaceUnknown)
            #expect(!error.message.contains("\n") && !error.message.contains("\u{1B}") && !error.message.contains("é"), "\(error)")
            #expect(error.message.contains("\\u{e9}") && error.message.contains("\\u{a}"), "\(error)")
        }
        let value = Self.control("<opModConnect>\"1\"\r\n</opModConnect>")
        do {
            _ = try DERControl.read(value)
            Issue.record("read")
        } catch {
            #expect(!error.message.contains("\r") && error.message.contains(#"\"1\""#), "\(error)")
        }
    }

    @Test("references, CDATA and comments inside elements are read as XML says")
    func xmlDetails() throws {
        let text = """
            <r xmlns="\(Self.sep)" a='x&amp;&#x3C;&#62;'><!-- c --><t><![CDATA[<b>]]>&lt;&quot;&apos;&#233;</t><?pi x?></r>
            """
        let root = try XMLDocument.parse(Array(text.utf8))
        #expect(root.attributes[XMLName("", "a")] == "x&<>")
        #expect(root.children.first?.text == "<b><\"'é")
        #expect(root.children.count == 1)
        #expect(throws: SEP2Error.self) { try XMLDocument.parse(Array("<r>&#0;</r>".utf8)) }
        #expect(throws: SEP2Error.self) { try XMLDocument.parse(Array("<r><!-- a -- b --></r>".utf8)) }
        #expect(throws: SEP2Error.self) { try XMLDocument.parse([0x3C, 0x72, 0x3E, 0xFF, 0x3C, 0x2F, 0x72, 0x3E]) }
    }
}
