@testable import Config
import Fieldbus
import Foundation
import Testing

@Suite("Profile library")
struct ProfileLibraryTests {
    @Test("an earlier directory wins on a name clash; the later one's other profiles still count")
    func precedence() throws {
        let local = try ProfileFixtures.Directory([
            "test-bms.yaml": ProfileFixtures.bms.replacingOccurrences(of: "vendor: Example", with: "vendor: Local")])
        let package = try ProfileFixtures.Directory([
            "test-bms.yaml": ProfileFixtures.bms, "test-inverter.yaml": ProfileFixtures.inverter, "README.md": "not a profile"])
        let library = ProfileLibrary(directories: [local.path, package.path])
        #expect(library.diagnostics.isEmpty, "\(library.diagnostics)")
        #expect(library.profile(named: "test-bms")?.vendor == "Local")
        #expect(library.profile(named: "test-bms")?.path == local.path + "/test-bms.yaml")
        #expect(library.profile(named: "test-inverter")?.path == package.path + "/test-inverter.yaml")
        #expect(library.all.map(\.name) == ["pylontech-lv", "test-bms", "test-inverter"])
        #expect(library.names(of: .inverter) == ["test-inverter"])
    }

    @Test("a broken file is a diagnostic at its line, and does not fall through to a later directory's file")
    func broken() throws {
        let local = try ProfileFixtures.Directory([
            "test-bms.yaml": ProfileFixtures.replacing(ProfileFixtures.bms, line: 16, with: "cells_in_series: many"),
            "garbage.yaml": "name: [unclosed\n", "huge.yaml": String(repeating: "#", count: ProfileReader.maxFileBytes + 1)])
        let package = try ProfileFixtures.Directory(["test-bms.yaml": ProfileFixtures.bms])
        let library = ProfileLibrary(directories: [local.path, package.path])
        #expect(library.profile(named: "test-bms") == nil)
        let errors = library.errors(of: "test-bms")
        #expect(errors.map(\.line) == [16] && errors.first?.file == local.path + "/test-bms.yaml")
        #expect(library.errors(of: "garbage").first?.code == .syntax)
        #expect(library.errors(of: "huge").first?.code == .unreadable)
        #expect(library.diagnostics.count == 3)
        #expect(library.all.map(\.name) == ["pylontech-lv"])
    }

    @Test("the built-in Pylontech LV profile reads cleanly and serves when no directory has one; a directory's wins")
    func builtIn() throws {
        let none = ProfileLibrary(directories: ["/nonexistent/bessd/devices"])
        #expect(none.diagnostics.isEmpty, "\(none.diagnostics)")
        let builtIn = try #require(none.profile(named: "pylontech-lv"))
        #expect(builtIn.path == "" && builtIn.kind == .bms)
        #expect(none.path(of: "pylontech-lv") == "")
        let local = try ProfileFixtures.Directory([
            "pylontech-lv.yaml": BuiltInProfiles.pylontechLV.replacingOccurrences(of: "vendor: Pylontech", with: "vendor: Local")])
        let library = ProfileLibrary(directories: [local.path])
        #expect(library.profile(named: "pylontech-lv")?.path == local.path + "/pylontech-lv.yaml")
        #expect(library.profile(named: "pylontech-lv")?.vendor == "Local")
    }

    @Test("the listing bessctl profiles prints: a JSON list of name, kind, vendor, products, path; one line each")
    func listing() throws {
        let directory = try ProfileFixtures.Directory(["test-inverter.yaml": ProfileFixtures.inverter])
        let library = ProfileLibrary(directories: [directory.path])
        let data = Data(library.listing(json: true).utf8)
        let objects = try #require(try JSONSerialization.jsonObject(with: data) as? [[String: Any]])
        #expect(objects.count == 2)
        #expect(Set(objects[1].keys) == ["name", "kind", "vendor", "products", "path"])
        #expect(objects[0]["path"] as? String == "built-in" && objects[0]["kind"] as? String == "bms")
        #expect(objects[1]["name"] as? String == "test-inverter" && objects[1]["products"] as? [String] == ["INV-10"])
        #expect(objects[1]["path"] as? String == directory.path + "/test-inverter.yaml")
        let lines = library.listing(json: false).split(separator: "\n")
        #expect(lines.last == "test-inverter  inverter  Example  INV-10  \(directory.path)/test-inverter.yaml")
        // Name and kind are columns: the built-in's line pads both to the longest.
        #expect(lines.first?.hasPrefix("pylontech-lv   bms       Pylontech") == true, "\(lines)")
    }

    @Test("a path that is not a directory is a diagnostic; one that does not exist is none")
    func directories() throws {
        let directory = try ProfileFixtures.Directory(["file.yaml": ProfileFixtures.bms])
        let library = ProfileLibrary(directories: [directory.path + "/file.yaml", directory.path + "/absent"])
        #expect(library.diagnostics.map(\.code) == [.unreadable])
    }
}
