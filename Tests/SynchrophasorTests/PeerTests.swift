import Foundation
import Synchrophasor
import TestSupport
import Testing

/// Our decoder against pyPMU's encoder (PyPI `synchrophasor`, hil/peers/pmu_peer.py), run at test
/// time: CFG-2 and data frames in integer and float form and a two-PMU stream decode to the values
/// pyPMU was given, and pyPMU reads our command frames.
@Suite("C37.118.2 against pyPMU", .serialized)
struct PyPMUTests {
    /// The peer's output, one JSON object per line.
    func peer(_ arguments: [String]) throws -> [[String: Any]] {
        let run = try Package.tool(["python3", "hil/peers/pmu_peer.py"] + arguments)
        #expect(run.status == 0, "pmu_peer.py \(arguments.first ?? ""): \(run.err.suffix(600))")
        return run.out.split(separator: "\n").compactMap {
            (try? JSONSerialization.jsonObject(with: Data($0.utf8))) as? [String: Any]
        }
    }

    /// pyPMU's frames by name: bytes and what it was given.
    func frames() throws -> [String: ([UInt8], [String: Any])] {
        var out: [String: ([UInt8], [String: Any])] = [:]
        for line in try peer(["frames"]) {
            guard let name = line["name"] as? String, let text = line["hex"] as? String, let given = line["given"] as? [String: Any] else { continue }
            out[name] = (bytes(text), given)
        }
        #expect(out.count == 10, "peer printed \(out.keys.sorted())")
        return out
    }

    func number(_ value: Any?) -> Double { (value as? NSNumber)?.doubleValue ?? .nan }

    @Test("integer form: CFG-2 fields and FREQ −150 mHz from 50 Hz, DFREQ −25 → 49.850 Hz, −0.25 Hz/s")
    func integerForm() throws {
        let all = try frames()
        let (cfgBytes, cfgGiven) = try #require(all["cfg2-int"])
        let configuration = try Configuration(decoding: cfgBytes)
        #expect(configuration.header.type == .configuration2)
        #expect(Double(configuration.header.idcode) == number(cfgGiven["idcode"]))
        #expect(Double(configuration.timeBase) == number(cfgGiven["timeBase"]))
        #expect(Double(configuration.dataRate) == number(cfgGiven["rate"]))
        let pmu = try #require(configuration.pmus.first)
        #expect(pmu.stationName == cfgGiven["stn"] as? String)
        #expect(Double(pmu.nominalHz) == number(cfgGiven["fnom"]))
        #expect(Double(pmu.configurationCount) == number(cfgGiven["cfgcnt"]))
        #expect(pmu.format == DataFormat(phasorsPolar: false, phasorsFloat: false, analogsFloat: false, frequencyFloat: false))
        #expect(pmu.phasorNames == ["VA", "VB"])
        #expect(pmu.analogNames == ["ANALOG1"])
        #expect(pmu.digitalNames == (0..<16).map { "BREAKER \($0)" })
        #expect(pmu.phasorUnits == [915_527, 0x0100_0000 | 45776])

        let (dataBytes, given) = try #require(all["data-int"])
        let data = try DataFrame(decoding: dataBytes, configuration: configuration)
        let measurement = try data.measurement(idcode: 1410)
        #expect(abs((measurement.frequencyHz ?? 0) - number(given["freqHz"])) < 1e-9)
        #expect(abs((measurement.rocofHzPerSecond ?? 0) - number(given["rocof"])) < 1e-9)
        #expect(measurement.status.isUsable)
        #expect(measurement.phasors == [Phasor(first: 100, second: 200, polar: false), Phasor(first: -300, second: 400, polar: false)])
        #expect(measurement.analogs == [number(given["analog"])])
        #expect(measurement.digitals.map(Double.init) == [number(given["digital"])])
        #expect(Double(data.header.secondOfCentury) == number(given["soc"]))
        #expect(Double(data.header.fractionOfSecond) == number(given["fracsec"]))
    }

    /// FREQ 59.93 Hz, DFREQ 0.75 Hz/s; STAT error, unsync, arrival, trigger 5.
    @Test("float form at 60 Hz: FREQ, DFREQ and STAT bits decode as sent")
    func floatForm() throws {
        let all = try frames()
        let configuration = try Configuration(decoding: try #require(all["cfg2-float"]).0)
        let pmu = try #require(configuration.pmus.first)
        #expect(pmu.format == DataFormat(phasorsPolar: true, phasorsFloat: true, analogsFloat: true, frequencyFloat: true))
        #expect(pmu.nominalHz == 60)
        let (dataBytes, given) = try #require(all["data-float"])
        let measurement = try DataFrame(decoding: dataBytes, configuration: configuration).measurement(idcode: 7734)
        #expect(abs((measurement.frequencyHz ?? 0) - number(given["freqHz"])) < 1e-5)
        #expect(abs((measurement.rocofHzPerSecond ?? 0) - number(given["rocof"])) < 1e-6)
        #expect(measurement.phasors == [Phasor(first: 230.5, second: 0.5, polar: true), Phasor(first: 10.25, second: -1, polar: true)])
        #expect(measurement.analogs == [number(given["analog"])])
        #expect(Double(measurement.status.dataError) == number(given["dataError"]))
        #expect(measurement.status.pmuSyncError == (given["syncError"] as? Bool))
        #expect(measurement.status.sortedByArrival == (given["sortByArrival"] as? Bool))
        #expect(measurement.status.triggerDetected == (given["trigger"] as? Bool))
        #expect(Double(measurement.status.triggerReason) == number(given["triggerReason"]))
        #expect(!measurement.status.isUsable)
    }

    @Test("two PMUs in one stream: each IDCODE's frequency by its own format and FNOM")
    func multiPMU() throws {
        let all = try frames()
        let configuration = try Configuration(decoding: try #require(all["cfg2-multi"]).0)
        #expect(configuration.pmus.map(\.idcode) == [7, 8])
        #expect(configuration.pmus.map(\.stationName) == ["PMU ONE", "PMU TWO"])
        #expect(configuration.dataRate == 25)
        let (dataBytes, given) = try #require(all["data-multi"])
        let data = try DataFrame(decoding: dataBytes, configuration: configuration)
        let frequencies = try #require(given["freqHz"] as? [NSNumber]).map(\.doubleValue)
        let rocofs = try #require(given["rocof"] as? [NSNumber]).map(\.doubleValue)
        for (index, idcode) in [UInt16(7), 8].enumerated() {
            let measurement = try data.measurement(idcode: idcode)
            #expect(abs((measurement.frequencyHz ?? 0) - frequencies[index]) < 1e-5, "IDCODE \(idcode)")
            #expect(abs((measurement.rocofHzPerSecond ?? 0) - rocofs[index]) < 1e-6, "IDCODE \(idcode)")
        }
        #expect(try data.measurement(idcode: 8).digitals == [0x00FF])
    }

    /// The peer's CFG-3 frames by name (built from the standard's field table with struct and
    /// binascii.crc_hqx: pyPMU 1.0.0a's ConfigFrame3 is an empty class).
    func configuration3Frames() throws -> [String: ([UInt8], [String: Any])] {
        var out: [String: ([UInt8], [String: Any])] = [:]
        for line in try peer(["cfg3"]) {
            guard let name = line["name"] as? String, let text = line["hex"] as? String, let given = line["given"] as? [String: Any] else { continue }
            out[name] = (bytes(text), given)
        }
        #expect(out.count == 3, "peer printed \(out.keys.sorted())")
        return out
    }

    /// A float field as given (JSON null for the standard's "unspecified", infinity).
    func float(_ value: Any?) -> Float { value is NSNull ? .infinity : Float(number(value)) }

    @Test("CFG-3 per the standard's field table; pyPMU's data frames decode as under its CFG-2")
    func configuration3() throws {
        let all = try frames()
        let extended = try configuration3Frames()
        for (name3, name2, dataName) in [("cfg3-int", "cfg2-int", "data-int"), ("cfg3-multi", "cfg2-multi", "data-multi")] {
            let (bytes3, given) = try #require(extended[name3])
            let configuration = try Configuration(decoding: bytes3)
            let plain = try Configuration(decoding: try #require(all[name2]).0)
            #expect(configuration.header.type == .configuration3 && configuration.header.version == 2, "\(name3)")
            #expect(Double(configuration.header.idcode) == number(given["idcode"]))
            #expect(Double(configuration.timeBase) == number(given["timeBase"]) && Double(configuration.dataRate) == number(given["rate"]))
            #expect(configuration.dataFrameSize == plain.dataFrameSize, "\(name3)")
            let data = try #require(all[dataName]).0
            #expect(try DataFrame(decoding: data, configuration: configuration) == DataFrame(decoding: data, configuration: plain), "\(dataName)")
            let pmusGiven = try #require(given["pmus"] as? [[String: Any]])
            #expect(configuration.pmus.count == pmusGiven.count)
            for (pmu, g) in zip(configuration.pmus, pmusGiven) {
                let more = try #require(pmu.extended)
                #expect(pmu.stationName == g["stn"] as? String)
                #expect(Double(pmu.idcode) == number(g["idcode"]) && Double(pmu.format.rawValue) == number(g["format"]))
                #expect(pmu.phasorNames == g["phasorNames"] as? [String])
                #expect(pmu.analogNames == g["analogNames"] as? [String])
                #expect(pmu.digitalNames == g["digitalNames"] as? [String])
                #expect(more.globalID.map(Int.init) == g["gpmu"] as? [Int])
                let phasorScales = try #require(g["phasorScales"] as? [[NSNumber]])
                #expect(more.phasorScales.map { [Double($0.modificationFlags), Double($0.typeIndication), Double($0.userDesignation)] }
                    == phasorScales.map { $0.prefix(3).map(\.doubleValue) })
                #expect(more.phasorScales.map { [$0.scale, $0.angleOffset] } == phasorScales.map { [$0[3].floatValue, $0[4].floatValue] })
                let analogScales = try #require(g["analogScales"] as? [[NSNumber]])
                #expect(more.analogScales.map { [$0.magnitude, $0.offset] } == analogScales.map { $0.map(\.floatValue) })
                #expect(pmu.digitalUnits.map(Int.init) == g["digitalUnits"] as? [Int])
                #expect(more.latitude == float(g["lat"]) && more.longitude == float(g["lon"]) && more.elevation == float(g["elev"]))
                #expect(more.serviceClass == (g["svc"] as? String)?.utf8.first)
                #expect(Double(more.windowMicroseconds) == number(g["window"]) && Double(more.groupDelayMicroseconds) == number(g["grpdly"]))
                #expect(Double(pmu.nominalHz) == number(g["fnom"]) && Double(pmu.configurationCount) == number(g["cfgcnt"]))
                #expect(pmu.phasorUnits.isEmpty && pmu.analogUnits.isEmpty)
                // The data layout's fields are CFG-2's.
                let twin = try #require(plain.pmus.first { $0.idcode == pmu.idcode })
                #expect(pmu.dataSize == twin.dataSize && pmu.nominalHz == twin.nominalHz && pmu.format == twin.format)
            }
        }
        let continued = try #require(extended["cfg3-continued"]).0
        #expect(code { _ = try Configuration(decoding: continued) } == .configurationFragmented)
    }

    @Test("command frames: ours byte-equal to pyPMU's, and pyPMU reads ours")
    func commands() throws {
        let all = try frames()
        for (name, command, word) in [("cmd-stop", Command.stopData, "stop"), ("cmd-start", .startData, "start"),
                                      ("cmd-cfg2", .sendConfiguration2, "cfg2"), ("cmd-cfg3", .sendConfiguration3, "cfg3")] {
            let ours = command.frame(idcode: 1410, secondOfCentury: 1_700_000_005)
            #expect(ours == all[name]?.0, "\(name)")
            let read = try #require(try peer(["read-command", ours.map { String(format: "%02x", $0) }.joined()]).first)
            #expect(read["idcode"] as? Int == 1410)
            #expect(read["command"] as? String == word, "\(name)")
            #expect(read["soc"] as? Int == 1_700_000_005)
        }
    }
}
