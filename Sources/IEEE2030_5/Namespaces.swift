import BessBase
import ControlCore
/// The namespaces a 2030.5 document may use: the standard's own and CSIP-AUS's two.
public enum SEP2Namespace {
    /// IEEE 2030.5's namespace (`urn:ieee:std:2030.5:ns`).
    public static let sep = "urn:ieee:std:2030.5:ns"
    /// XML Schema instance attributes (`xsi:type`), which a server may add.
    static let schemaInstance = "http://www.w3.org/2001/XMLSchema-instance"
}

/// Which CSIP-AUS namespace a server writes its extensions in; bessd reads both and writes back the one
/// the server used.
public enum CSIPAUSVersion: String, Hashable, Sendable, CaseIterable {
    /// `https://csipaus.org/ns`: CSIP-AUS v1.1a and v1.2.
    case v1_2 = "https://csipaus.org/ns"
    /// `https://csipaus.org/ns/v1.3`: CSIP-AUS v1.3 (adds `opModStorageTargetW`).
    case v1_3 = "https://csipaus.org/ns/v1.3"

    /// The namespace URI.
    public var namespace: String { rawValue }
}

/// A resource read from a document, and the CSIP-AUS namespace the document used (nil when it used none).
public struct SEP2Document<Resource: Sendable>: Sendable {
    /// The resource.
    public var resource: Resource
    /// The CSIP-AUS namespace of the document's extension elements, if any.
    public var csipaus: CSIPAUSVersion?
}

extension SEP2Document: Equatable where Resource: Equatable {}

/// Every element and attribute of a document checked against the known namespaces.
enum NamespaceCheck {
    /// The CSIP-AUS namespace the tree uses; throws `SEP2_NAMESPACE_UNKNOWN` for an element in any
    /// namespace but 2030.5's and CSIP-AUS's, or an attribute in one but those and XML Schema instance's.
    /// `apart`: the root's children of that name (in 2030.5's namespace) are left out, for their reader
    /// to check one by one (a `DERControlList`'s controls, each refused alone).
    static func check(_ root: XMLElement, apart: String? = nil) throws(SEP2Error) -> CSIPAUSVersion? {
        var found: CSIPAUSVersion?
        var pending = [root]
        if let apart {
            try check(root, &found)
            pending = root.children.filter { !($0.name.local == apart && $0.name.namespace == SEP2Namespace.sep) }
        }
        while let element = pending.popLast() {
            try check(element, &found)
            pending.append(contentsOf: element.children)
        }
        return found
    }

    /// `element`'s own name and attributes.
    private static func check(_ element: XMLElement, _ found: inout CSIPAUSVersion?) throws(SEP2Error) {
        if element.name.namespace != SEP2Namespace.sep {
            guard let version = CSIPAUSVersion(rawValue: element.name.namespace) else {
                throw SEP2Error(.namespaceUnknown, message: "element \(element.name) at byte \(element.offset)")
            }
            found = found ?? version
        }
        for name in element.attributes.keys where !name.namespace.isEmpty {
            guard name.namespace == SEP2Namespace.schemaInstance || name.namespace == XMLDocument.xmlNamespace
                    || name.namespace == SEP2Namespace.sep || CSIPAUSVersion(rawValue: name.namespace) != nil else {
                throw SEP2Error(.namespaceUnknown, message: "attribute \(name) at byte \(element.offset)")
            }
        }
    }
}
