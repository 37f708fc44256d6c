import BessBase
import ControlCore
import Foundation
import IEEE2030_5
import TestSupport
import Testing

/// The 2030.5 module against peers no one here wrote (hil/peers/sep2_peer.py on `Package.sep2Python`,
/// pyenv's newest Python >= 3.12): documents written by envoy-schema's models, and the event rules against sep2tools'
/// `condense_events` on random schedules.
@Suite("IEEE 2030.5 against envoy-schema and sep2tools", .serialized)
struct SEP2PeerTests {
    /// The peer's JSON lines.
    static func peer(_ arguments: [String]) throws -> [[String: Any]] {
        let run = try Package.tool([try Package.sep2Python(), "hil/peers/sep2_peer.py"] + arguments)
        #expect(run.status == 0, "sep2_peer.py \(arguments.first ?? ""): \(run.err.suffix(800))")
        return run.out.split(separator: "\n").compactMap {
            (try? JSONSerialization.jsonObject(with: Data($0.utf8))) as? [String: Any]
        }
    }

    static func int(_ value: Any?) -> Int? { (value as? NSNumber)?.intValue }

    /// The power a `[value, multiplier]` pair names.
    static func power(_ value: Any?) -> ActivePower? {
        guard let pair = value as? [NSNumber], pair.count == 2 else { return nil }
        return ActivePower(value: Int16(pair[0].intValue), multiplier: Int8(pair[1].intValue))
    }

    /// Every field envoy-schema was given, read back from its XML.
    static func check(_ base: DERControlBase, _ given: [String: Any], _ name: String) {
        #expect(base.exportLimitW == power(given["opModExpLimW"]), "\(name)")
        #expect(base.importLimitW == power(given["opModImpLimW"]), "\(name)")
        #expect(base.generationLimitW == power(given["opModGenLimW"]), "\(name)")
        #expect(base.loadLimitW == power(given["opModLoadLimW"]), "\(name)")
        #expect(base.storageTargetW == power(given["opModStorageTargetW"]), "\(name)")
        #expect(base.targetW == power(given["opModTargetW"]), "\(name)")
        #expect(base.connect == given["opModConnect"] as? Bool, "\(name)")
        #expect(base.energize == given["opModEnergize"] as? Bool, "\(name)")
        #expect(base.fixedWHundredthsPercent.map(Int.init) == int(given["opModFixedW"]), "\(name)")
        #expect(base.maxLimWHundredthsPercent.map(Int.init) == int(given["opModMaxLimW"]), "\(name)")
        #expect(base.rampTimeHundredthsSecond.map(Int.init) == int(given["rampTms"]), "\(name)")
    }

    static func check(_ control: DERControl, _ given: [String: Any], _ name: String) {
        #expect(control.mRID == given["mRID"] as? String, "\(name)")
        #expect(Int(control.creationTime) == int(given["creationTime"]), "\(name)")
        #expect(Int(control.start) == int(given["start"]) && Int(control.duration) == int(given["duration"]), "\(name)")
        #expect(Int(control.status.current.rawValue) == int(given["status"]), "\(name)")
        #expect(Int(control.randomizeStart) == int(given["randomizeStart"]) ?? 0, "\(name)")
        #expect(Int(control.randomizeDuration) == int(given["randomizeDuration"]) ?? 0, "\(name)")
        #expect(control.replyTo == "/rsps/1/rsp" && control.responseRequired == 3, "\(name)")
        check(control.base, given["base"] as? [String: Any] ?? [:], name)
    }

    /// DERControlList, DERControl, DefaultDERControl and DERProgramList.
    @Test("envoy-schema DER control documents decode in both CSIP-AUS namespaces")
    func envoyDocuments() throws {
        let documents = try Self.peer(["documents"])
        #expect(documents.count == 8, "\(documents.map { $0["name"] ?? "?" })")
        for document in documents {
            let name = try #require(document["name"] as? String)
            let xml = Array(try #require(document["xml"] as? String).utf8)
            let given = try #require(document["given"] as? [String: Any])
            let version: CSIPAUSVersion = name.hasSuffix("v1.3") ? .v1_3 : .v1_2
            switch name.split(separator: "-").first {
            case "controlList":
                let read = try DERControlList.read(xml)
                #expect(read.csipaus == version, "\(name)")
                #expect(Int(read.resource.all) == Self.int(given["all"]) && Int(read.resource.results) == Self.int(given["results"]))
                let controls = try #require(given["controls"] as? [[String: Any]])
                #expect(read.resource.controls.count == controls.count, "\(name)")
                for (control, values) in zip(read.resource.controls, controls) { Self.check(control, values, name) }
            case "control":
                let read = try DERControl.read(xml)
                #expect(read.csipaus == version, "\(name)")
                Self.check(read.resource, given, name)
            case "default":
                let read = try DefaultDERControl.read(xml)
                #expect(read.csipaus == version, "\(name)")
                #expect(read.resource.mRID == given["mRID"] as? String && Int(read.resource.setGradW ?? 0) == Self.int(given["setGradW"]))
                Self.check(read.resource.base, given["base"] as? [String: Any] ?? [:], name)
            case "programList":
                let read = try DERProgramList.read(xml)
                let programs = try #require(given["programs"] as? [[String: Any]])
                #expect(read.resource.programs.map(\.mRID) == programs.compactMap { $0["mRID"] as? String }, "\(name)")
                #expect(read.resource.programs.map { Int($0.primacy) } == programs.compactMap { Self.int($0["primacy"]) }, "\(name)")
                #expect(Int(read.resource.pollRate) == Self.int(given["pollRate"]))
                #expect(read.resource.programs.first?.defaultControlHref == "/edev/1/derp/0/dderc")
                #expect(read.resource.programs.first?.controlListHref == "/edev/1/derp/0/derc")
            default:
                Issue.record("unexpected document \(name)")
            }
        }
    }

    @Test("envoy-schema list: invalid and not-applicable controls refused alone (253, 252), the sibling taken")
    func controlsRefusedAlone() throws {
        let document = try #require(try Self.peer(["refusals"]).first)
        let given = try #require(document["given"] as? [String: Any])
        let read = try DERControlList.read(Array(try #require(document["xml"] as? String).utf8)).resource
        #expect(read.controls.map(\.mRID) == given["taken"] as? [String])
        #expect(read.controls.first?.base.exportLimitW == ActivePower(value: 1500, multiplier: 0))
        let refused = try #require(given["refused"] as? [[Any]])
        #expect(read.refused.map { $0.mRID ?? "" } == refused.compactMap { $0.first as? String })
        #expect(read.refused.map { Int($0.status.rawValue) } == refused.compactMap { Self.int($0.last) })
        #expect(read.refused.allSatisfy { $0.replyTo == "/rsps/1/rsp" && $0.responseRequired == 3 })
        #expect(read.refused.first?.reason.contains("SEP2_VALUE_INVALID") == true, "\(read.refused)")
        #expect(read.refused.last?.reason.contains("opModFixedVar not applied: refType 0") == true, "\(read.refused)")
        #expect(read.items == Self.int(given["all"]) && Int(read.results) == Self.int(given["all"]), "paging counts every control, refused or taken")
    }

    @Test("the mirror's mRIDs end in the PEN as sep2tools' generate_mrid writes it (8 decimal digits)")
    func penAsSep2toolsWritesIt() throws {
        for pen: UInt32 in [40732, 12345, 0] {
            let theirs = try #require(try Self.peer(["mrid", String(pen)]).first?["mRID"] as? String)
            let ours = MirrorMRID.make(lfdi: "3E4F45AB31EDFE5B67E343E5E4562E31984E23E5", location: .site, pen: pen)
            #expect(theirs.count == 32 && ours.count == 32)
            #expect(ours.suffix(8) == theirs.suffix(8), "\(ours) \(theirs)")
        }
    }

    @Test("the envoy-schema documents in an unknown CSIP-AUS namespace are SEP2_NAMESPACE_UNKNOWN")
    func unknownNamespace() throws {
        let document = try #require(try Self.peer(["documents"]).first { $0["name"] as? String == "control-v1.3" })
        let xml = try #require(document["xml"] as? String).replacingOccurrences(of: "https://csipaus.org/ns/v1.3", with: "https://csipaus.org/ns/v9")
        #expect { try DERControl.read(Array(xml.utf8)) } throws: { ($0 as? SEP2Error)?.code == .namespaceUnknown }
    }

    /// A seeded generator (SplitMix64), so a failing case can be named and rerun.
    struct Seeded {
        var state: UInt64
        mutating func next(_ bound: Int) -> Int {
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return Int((z ^ (z >> 31)) % UInt64(bound))
        }
    }

    /// Random programs of distinct primacy; within a program, controls that set the same type do not
    /// overlap (where they do, the standard supersedes the older one for good and sep2tools resumes it
    /// after the newer ends: EventRuleTests holds that case).
    static func schedule(_ random: inout Seeded, creation: inout Int64) -> [ProgramSchedule] {
        let types: [ControlType] = [.exportLimitW, .importLimitW, .generationLimitW]
        var primacies = Array(0...9)
        var programs: [ProgramSchedule] = []
        for index in 0..<(1 + random.next(3)) {
            let primacy = primacies.remove(at: random.next(primacies.count))
            var controls: [DERControl] = []
            for number in 0..<(1 + random.next(5)) {
                var base = DERControlBase()
                for type in types where random.next(2) == 0 {
                    let power = ActivePower(value: Int16(random.next(10_000)), multiplier: 0)
                    switch type {
                    case .exportLimitW: base.exportLimitW = power
                    case .importLimitW: base.importLimitW = power
                    default: base.generationLimitW = power
                    }
                }
                if !types.contains(where: base.sets) { base.exportLimitW = ActivePower(value: 1, multiplier: 0) }
                let start = Int64(random.next(200)), duration = UInt32(1 + random.next(120))
                let clash = controls.contains { other in
                    types.contains { base.sets($0) && other.base.sets($0) } && other.start < start + Int64(duration) && start < other.start + Int64(other.duration)
                }
                if clash { continue }
                creation += Int64(1 + random.next(5))
                controls.append(DERControl(mRID: "C\(index)\(number)", creationTime: creation, status: EventStatus(current: .scheduled, dateTime: 0),
                                           start: start, duration: duration, base: base))
            }
            programs.append(ProgramSchedule(mRID: "P\(index)", primacy: UInt8(primacy), controls: controls.shuffled(using: &random)))
        }
        return programs
    }

    @Test("the control in force per type equals sep2tools' condense_events on 300 random schedules")
    func againstSep2tools() throws {
        var random = Seeded(state: 0x2030_0005)
        var creation: Int64 = 1000
        var cases: [[ProgramSchedule]] = []
        for _ in 0..<300 { cases.append(Self.schedule(&random, creation: &creation)) }
        let times = Array(stride(from: Int64(0), through: 330, by: 3))
        let json: [String: Any] = ["cases": cases.map { programs in
            ["times": times, "events": programs.flatMap { program in program.controls.map { control in
                ["mRID": control.mRID, "program": program.mRID, "primacy": Int(program.primacy), "creationTime": control.creationTime,
                 "start": control.start, "duration": Int(control.duration),
                 "controls": Dictionary(uniqueKeysWithValues: ControlType.allCases.filter(control.base.sets).map { ($0.rawValue, 1) })] as [String: Any]
            } }] as [String: Any]
        }]
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("sep2-events-\(UUID().uuidString).json")
        defer { try? FileManager.default.removeItem(at: file) }
        try JSONSerialization.data(withJSONObject: json).write(to: file)
        let lines = try Self.peer(["events", file.path])
        var compared = 0, active = 0
        var mismatches: [String] = []
        for line in lines {
            let index = try #require(Self.int(line["case"])), time = Int64(try #require(Self.int(line["time"])))
            let mode = try #require(line["mode"] as? String)
            let type = try #require(ControlType(rawValue: mode))
            let ours: String?
            switch EventRules.resolve(cases[index], now: time).sources[type] {
            case .event(_, let control, _): ours = control
            default: ours = nil
            }
            if ours != line["mRID"] as? String {
                mismatches.append("case \(index) at \(time) s, \(type.rawValue): ours \(ours ?? "none"), sep2tools \(line["mRID"] ?? "none"); \(cases[index])")
            }
            compared += 1
            if ours != nil { active += 1 }
        }
        #expect(mismatches.isEmpty, "\(mismatches.count) of \(compared) differ; the first: \(mismatches.prefix(3).joined(separator: "\n"))")
        #expect(compared > 300 * times.count, "compared \(compared)")
        #expect(active > compared / 4, "the schedules keep controls in force often enough to mean something: \(active)/\(compared)")
    }

    /// `scripts/ensure-python-peers.sh --python` against a stand-in pyenv (a script on PATH) with the
    /// versions `listed`, each but `absent` given a bin/python3: its output and exit status.
    static func pick(_ listed: [String], absent: Set<String> = []) throws -> (status: Int32, out: String, err: String) {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("pyenv-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: root) }
        let bin = root.appendingPathComponent("bin")
        try FileManager.default.createDirectory(at: bin, withIntermediateDirectories: true)
        for version in listed where !absent.contains(version) {
            let python = root.appendingPathComponent("versions/\(version)/bin")
            try FileManager.default.createDirectory(at: python, withIntermediateDirectories: true)
            FileManager.default.createFile(atPath: python.appendingPathComponent("python3").path, contents: Data("#!/bin/sh\n".utf8),
                                           attributes: [.posixPermissions: 0o755])
        }
        let pyenv = "#!/bin/sh\nif [ \"$1\" = root ]; then echo \(root.path); else printf '\(listed.joined(separator: "\\n"))\\n'; fi\n"
        FileManager.default.createFile(atPath: bin.appendingPathComponent("pyenv").path, contents: Data(pyenv.utf8), attributes: [.posixPermissions: 0o755])
        let run = try Package.capture(Package.root.appendingPathComponent("scripts/ensure-python-peers.sh"), ["--python"],
                                      environment: ["PATH": "\(bin.path):/usr/bin:/bin", "PYENV_ROOT": root.path])
        return (run.status, run.out.replacingOccurrences(of: root.path, with: "ROOT"), run.err)
    }

    @Test("ensure-python-peers picks pyenv's newest Python >= 3.12 whatever PATH says, names what is missing")
    func interpreterChoice() throws {
        let newest = try Self.pick(["3.11.7", "3.12.1", "3.12.10", "3.13.2", "3.13.2/envs/tools", "3.14.0a1", "3.9.18"])
        #expect(newest.status == 0 && newest.out == "ROOT/versions/3.13.2/bin/python3\n", "\(newest)")
        let none = try Self.pick(["3.10.13", "3.11.7", "3.12.1/envs/tools"])
        #expect(none.status != 0 && none.out.isEmpty, "\(none)")
        #expect(none.err.contains("pyenv has no Python >= 3.12") && none.err.contains("3.11.7"), "\(none.err)")
        let missing = try Self.pick(["3.12.1", "3.12.4"], absent: ["3.12.4"])
        #expect(missing.status != 0 && missing.err.contains("3.12.4"), "\(missing)")
        #expect(try Package.sep2Python().hasSuffix("/bin/python3"), "the tests' interpreter comes from the same script")
    }
}

extension SEP2PeerTests.Seeded: RandomNumberGenerator {
    mutating func next() -> UInt64 {
        UInt64(next(Int.max)) << 1 ^ UInt64(next(2))
    }
}
