import BessSystem
import ControlCore
import Fieldbus
import Foundation
@testable import Config
import Cycle
import TestSupport
import Testing

@Suite("Configuration")
struct ConfigurationTests {
    /// The seed design's example blocks, exactly as the issue gives them, pasted together.
    static let seedText = """
        mode: simulation  # or 'hardware'
        bess_units:
          - id: BESS_DC01_01
            campus_id: CAMPUS_MUMBAI_ANDHERI
            modbus:
              host: 192.168.1.100
              port: 502
            capacity_kwh: 250
            max_power_kw: 100
        grid_integration:
          mode: simulation  # or 'posoco', 'pmu'
          frequency_source: simulated
          scada_enabled: false
          droop_settings:
            deadband_hz: [49.9, 50.05]
            droop_percent: 5.0
        """

    @Test("the seed design's blocks load unchanged, with a notice for scada_enabled")
    func seedLoads() throws {
        let c = try ConfigLoader.parse(Self.seedText, file: "seed.yaml")
        #expect(c.mode == .simulation)
        #expect(c.units.count == 1)
        let unit = c.units[0]
        #expect(unit.id == "BESS_DC01_01")
        #expect(unit.campusID == "CAMPUS_MUMBAI_ANDHERI")
        #expect(unit.modbus == ModbusSettings(transport: .tcp(host: "192.168.1.100", port: 502), unitID: 1, timeout: .milliseconds(500)))
        #expect(unit.capacityKWh == 250 && unit.maxPowerKW == 100)
        #expect(c.grid.droop.deadbandLow == Hertz(49.9) && c.grid.droop.deadbandHigh == Hertz(50.05))
        #expect(c.grid.droop.droopUnderPercent == 5 && c.grid.droop.droopOverPercent == 5)
        #expect(c.grid.droop.reference == .edge)
        #expect(c.periodMs == 100)
        #expect(c.controlSocket == "/run/bessd/control.sock")
        #expect(c.notices.count == 1)
        #expect(c.notices.first?.keyPath == "grid_integration.scada_enabled")
        #expect(c.notices.first?.line == 13)
        // config/seed.yaml is the same text.
        let file = try String(contentsOf: Package.root.appendingPathComponent("config/seed.yaml"), encoding: .utf8)
        #expect(file.contains(Self.seedText))
    }

    @Test("cycle settings: period as a Duration, each unit's devices real or simulated by mode, the meter")
    func cycleSettings() throws {
        let c = try ConfigLoader.parse("""
            mode: hil
            period_ms: 200
            bess_units:
              - id: U1
                capacity_kwh: 100
                max_power_kw: 50
                modbus: {host: 127.0.0.1, port: 1502, unit_id: 3, timeout_ms: 250}
                bms: {simulated: true, stale_after_s: 4}
            site: {meter: {simulated: true, stale_after_s: 2.5}}
            """, file: "cycle.yaml")
        let settings = c.cycleSettings
        #expect(settings.period == .milliseconds(200) && settings.periodMilliseconds == 200)
        #expect(settings.mode == .hil && settings.usesSimulation)
        #expect(settings.devices.map(\.id) == ["U1"])
        #expect(!settings.devices[0].inverterSimulated && settings.devices[0].bmsSimulated)
        #expect(settings.devices[0].modbus?.timeout == .milliseconds(250) && settings.devices[0].modbus?.unitID == 3)
        #expect(settings.devices[0].bms.staleAfter == .seconds(4) && settings.units[0].bmsStaleAfter == .seconds(4))
        #expect(settings.meterSimulated && settings.meter?.staleAfter == .milliseconds(2500))
        #expect(settings.site.meterStaleAfter == .milliseconds(2500))
    }

    @Test("every file in config/ is valid")
    func shippedFilesValid() throws {
        let directory = Package.root.appendingPathComponent("config")
        let files = try FileManager.default.contentsOfDirectory(atPath: directory.path).filter { $0.hasSuffix(".yaml") }
        #expect(files.count >= 3)
        for file in files {
            do {
                _ = try ConfigLoader.load(path: directory.appendingPathComponent(file).path)
            } catch {
                Issue.record("config/\(file) is invalid:\n\(error)")
            }
        }
    }

    @Test("the embedded default is config/simulation.yaml, byte for byte")
    func embeddedMatchesFile() throws {
        let file = try String(contentsOf: Package.root.appendingPathComponent("config/simulation.yaml"), encoding: .utf8)
        #expect(EmbeddedConfiguration.simulationYAML + "\n" == file,
                "run scripts/embed-default-config.sh after editing config/simulation.yaml")
        let c = try ConfigLoader.parse(EmbeddedConfiguration.simulationYAML, file: "embedded")
        #expect(c.mode == .simulation)
        #expect(c.units.count >= 1)
    }

    @Test("the reference file documents every key the loader reads")
    func referenceHasEveryKey() throws {
        let text = try String(contentsOf: Package.root.appendingPathComponent("config/bessd.yaml"), encoding: .utf8)
        for section in ConfigKeys.all {
            for key in section.names {
                // Written as a key: at a line's start (commented or not, a list item's) or in a flow mapping.
                let documented = text.contains(try Regex("(?m)(^|[\\s{,#-])\(key):"))
                #expect(documented, "config/bessd.yaml lacks \(key): (\(section.section))")
            }
        }
        for kind in FaultInjection.Kind.allCases {
            let documented = text.contains(kind.rawValue)
            #expect(documented, "config/bessd.yaml lacks the fault kind \(kind.rawValue)")
        }
    }

    static let unit = "bess_units:\n  - id: U1\n    capacity_kwh: 250\n    max_power_kw: 100\n"

    @Test("every error names the line of the mistake, YAML syntax included, and nothing else", arguments: locatedCases)
    func located(bad: Located) {
        do {
            _ = try ConfigLoader.parse(bad.yaml, file: "site.yaml")
            Issue.record("accepted a bad file")
        } catch {
            #expect(error.diagnostics.count == 1, "diagnostics were:\n\(error)")
            let first = error.diagnostics.first
            #expect(first?.line == bad.line, "\(error)")
            #expect(first.map { "\($0.code)" } == bad.code, "\(error)")
            #expect(first?.description.contains(bad.message) == true, "\(error)")
            #expect(first?.description.hasPrefix("site.yaml:\(bad.line): ") == true, "\(error)")
            if let column = bad.column { #expect(first?.message.contains("at column \(column) ") == true, "\(error)") }
        }
    }

    @Test("hosts: IPv4 and IPv6 literals and RFC 1123 names are accepted wherever a host is taken",
          arguments: ["192.168.1.30", "inverter-1.site.local", "::1", "fe80::1", "fe80::1%eth0", "localhost",
                      "255.255.255.255", "a.example.", "10.0.0.1a"])
    func hostAccepted(host: String) throws {
        let url = host.contains(":") ? "[\(host)]" : host
        let c = try ConfigLoader.parse(Self.site(line: 7, "      host: \(host)")
                                       + "aggregator:\n  transport: mqtt\n  url: mqtts://\(url):8883\n", file: "site.yaml")
        let expected = host
        #expect(c.units[0].modbus?.transport == .tcp(host: expected, port: 502))
    }

    @Test("realtime.cpu: last, a number, none; a CPU this machine lacks is named with those it has")
    func realtimeCPU() throws {
        let base = Self.unit + "realtime:\n  priority: 50\n"
        #expect(try ConfigLoader.parse(base, file: "rt.yaml").realtime?.cpu == .last)
        #expect(try ConfigLoader.parse(base + "  cpu: last\n", file: "rt.yaml").realtime?.cpu == .last)
        #expect(try ConfigLoader.parse(base + "  cpu: none\n", file: "rt.yaml").realtime?.cpu == RealtimeSettings.CPU.none)
        #expect(try ConfigLoader.parse(base + "  cpu: 0\n", file: "rt.yaml").realtime?.cpu == .index(0))
        #expect(try ConfigLoader.parse(Self.unit + "realtime: {priority: 50}\n", file: "rt.yaml").realtime?.cpu == .last)
        let machine = CurrentThread.machineCPUs
        do {
            _ = try ConfigLoader.parse(base + "  cpu: \(machine)\n", file: "rt.yaml")
            Issue.record("accepted CPU \(machine) on a machine of \(machine)")
        } catch {
            let text = machine == 1 ? "CPU 0" : "CPUs 0–\(machine - 1)"
            #expect(error.diagnostics.contains {
                $0.line == 7 && $0.keyPath == "realtime.cpu" && $0.message == "CPU \(machine) does not exist: this machine has \(text)"
            }, "\(error)")
        }
        // The rule itself, for machines of one and of four CPUs.
        #expect(ConfigLoader.cpuProblem(0, machineCPUs: 1) == nil)
        #expect(ConfigLoader.cpuProblem(1, machineCPUs: 1) == "CPU 1 does not exist: this machine has CPU 0")
        #expect(ConfigLoader.cpuProblem(3, machineCPUs: 4) == nil)
        #expect(ConfigLoader.cpuProblem(4, machineCPUs: 4) == "CPU 4 does not exist: this machine has CPUs 0–3")
    }

    @Test("bad files are refused with FILE:LINE: key.path: message (got X)", arguments: badCases)
    func refused(bad: Bad) {
        do {
            _ = try ConfigLoader.parse(bad.yaml, file: "bad.yaml")
            Issue.record("accepted a bad file")
        } catch {
            let match = error.diagnostics.first { $0.keyPath == bad.keyPath && $0.message.contains(bad.message) }
            #expect(match != nil, "diagnostics were:\n\(error)")
            if let match, let line = bad.line { #expect(match.line == line, "\(match)") }
            if let match {
                #expect(match.description.hasPrefix("bad.yaml:"))
                #expect(match.description.contains(": \(match.keyPath.isEmpty ? "(file)" : match.keyPath): "))
            }
        }
    }

    /// make fuzz found grid_integration:.
    @Test("every empty top-level key means its default or is refused by name, never silently")
    func emptyKeys() {
        let keys = ["mode", "period_ms", "control_socket", "state_directory", "grid_integration", "limits", "interlocks",
                    "aggregator", "simulation", "realtime", "metrics_listen", "site", "scada", "grid_operator"]
        for key in keys {
            let yaml = "\(key):\nbess_units:\n  - {id: A, capacity_kwh: 1, max_power_kw: 1}\n"
            do {
                _ = try ConfigLoader.parse(yaml, file: "empty.yaml")
            } catch {
                #expect(!error.diagnostics.isEmpty && error.diagnostics.allSatisfy { $0.code != .unexplained },
                        "\(key): refused with \(error.diagnostics)")
                #expect(error.description.contains(key), "\(key): \(error)")
            }
        }
        #expect((try? ConfigLoader.parse("grid_integration:\nbess_units:\n  - {id: A, capacity_kwh: 1, max_power_kw: 1}\n",
                                         file: "empty.yaml")) != nil)
    }

    @Test("start-up grace and steady-state timeout: both read, both reach the control law, both bounded")
    func startupGrace() throws {
        let c = try ConfigLoader.parse("""
            mode: simulation
            bess_units:
              - id: U1
                capacity_kwh: 100
                max_power_kw: 50
                inverter: {stale_after_s: 2, startup_grace_s: 90}
                bms: {stale_after_s: 4, startup_grace_s: 300}
              - {id: U2, capacity_kwh: 100, max_power_kw: 50}
            """, file: "grace.yaml")
        #expect(c.units[0].bms.startupGrace == .seconds(300) && c.units[0].bms.staleAfter == .seconds(4))
        #expect(c.units[0].inverterStartupGrace == .seconds(90) && c.units[0].inverterStaleAfter == .seconds(2))
        #expect(c.units[1].bms.startupGrace == .seconds(30) && c.units[1].inverterStartupGrace == .seconds(30))
        let settings = c.unitSettings
        #expect(settings[0].bmsStartupGrace == .seconds(300) && settings[0].bmsStaleAfter == .seconds(4))
        #expect(settings[0].inverterStartupGrace == .seconds(90) && settings[0].inverterStaleAfter == .seconds(2))
        do {
            _ = try ConfigLoader.parse("""
                bess_units:
                  - {id: U1, capacity_kwh: 100, max_power_kw: 50, bms: {startup_grace_s: 7200}}
                """, file: "grace.yaml")
            Issue.record("a grace of 2 h was accepted")
        } catch {
            #expect(error.description.contains("grace.yaml:2: bess_units[0].bms.startup_grace_s:"), "\(error)")
        }
    }

    @Test("every error is reported, not only the first, in file order")
    func allErrors() {
        let yaml = "mode: x\nperiod_ms: 1\nbess_units:\n  - id: U1\n    capacity_kwh: -1\n    max_power_kw: 100\n"
        do {
            _ = try ConfigLoader.parse(yaml, file: "f.yaml")
            Issue.record("accepted")
        } catch {
            #expect(error.diagnostics.map(\.keyPath) == ["mode", "period_ms", "bess_units[0].capacity_kwh"])
            #expect(error.diagnostics[0].description == "f.yaml:1: mode: must be one of simulation, hil, hardware (got 'x')")
        }
    }

    @Test("interlock overrides reach the rule table")
    func overridesApplied() throws {
        let yaml = Self.unit + """
            interlocks:
              soc_high: {threshold: 90, hysteresis: 3, delay_s: 2, severity: trip}
              temperature_high_derate: {derate_start: 40, threshold: 50}
              bms_alarm: {enabled: false}
            """
        let c = try ConfigLoader.parse(yaml, file: "o.yaml")
        let rules = c.unitSettings[0].rules
        let soc = try #require(rules.first { $0.code == .socHigh })
        #expect(soc.threshold == 90 && soc.hysteresis == 3 && soc.delay == .seconds(2))
        let derate = try #require(rules.first { $0.code == .temperatureHighDerate })
        #expect(derate.severity == .derate(start: 40) && derate.threshold == 50)
        #expect(!rules.contains { $0.code == .bmsAlarm })
        #expect(rules.count == InterlockRule.defaultTable().count - 1)
    }

    @Test("RTU settings, per-direction droop and 60 Hz load")
    func rtuAndDroop() throws {
        let yaml = """
            mode: hardware
            bess_units:
              - id: U1
                capacity_kwh: 250
                max_power_kw: 100
                modbus: {device: /dev/rs485-inv1, baud: 19200, parity: none, stop_bits: 2, unit_id: 7, rs485: true}
            grid_integration:
              frequency_source: inverter
              droop_settings: {nominal_hz: 60, deadband_hz: [59.964, 60.036], droop_percent_under: 3, droop_percent_over: 4}
            """
        let c = try ConfigLoader.parse(yaml, file: "rtu.yaml")
        #expect(c.units[0].modbus == ModbusSettings(
            transport: .rtu(SerialSettings(device: "/dev/rs485-inv1", baud: 19200, parity: .none, dataBits: 8,
                                           stopBits: 2, rs485: true)), unitID: 7, timeout: .milliseconds(500)))
        #expect(c.grid.droop.nominal == Hertz(60))
        #expect(c.grid.droop.droopUnderPercent == 3 && c.grid.droop.droopOverPercent == 4)
        #expect(c.grid.frequencySource == .inverter)
    }

    /// Defaults by transport; local_port in the UDP modes.
    @Test("frequency_source pmu maps grid_integration.pmu to PMUSettings; other sources ignore it with a notice")
    func pmuSource() throws {
        let real = "mode: hardware\n" + ConfigurationTests.unit + "    modbus: {host: 10.0.0.5}\n"
        let tcp = try ConfigLoader.parse(real + "grid_integration:\n  frequency_source: pmu\n  pmu: {host: pmu.site.local, idcode: 1410}\n",
                                         file: "pmu.yaml")
        #expect(tcp.grid.frequencySource == .pmu && !tcp.usesSimulation)
        #expect(tcp.cycleSettings.pmu == PMUSettings(host: "pmu.site.local", port: 4712, transport: .tcp, idcode: 1410, pmuIdcode: nil,
                                                     maxAge: .milliseconds(100), reconnectDelay: .seconds(2)))
        let udp = try ConfigLoader.parse(real + "grid_integration:\n  frequency_source: pmu\n  pmu: {host: 10.0.0.7, transport: udp, "
                                         + "idcode: 99, pmu_idcode: 8, max_age_ms: 60, reconnect_s: 0.5}\n", file: "pmu.yaml")
        #expect(udp.cycleSettings.pmu == PMUSettings(host: "10.0.0.7", port: 4713, transport: .udp, idcode: 99, pmuIdcode: 8,
                                                     maxAge: .milliseconds(60), reconnectDelay: .milliseconds(500)))
        // Annex F's other modes: data to a local port, commands over TCP (tcp_udp) or none (udp_spontaneous).
        let mixed = try ConfigLoader.parse(real + "grid_integration:\n  frequency_source: pmu\n  pmu: {host: 10.0.0.7, transport: tcp_udp, "
                                           + "local_port: 4713, idcode: 99}\n", file: "pmu.yaml")
        #expect(mixed.cycleSettings.pmu == PMUSettings(host: "10.0.0.7", port: 4712, transport: .tcpUDP, localPort: 4713, idcode: 99))
        let unasked = try ConfigLoader.parse(real + "grid_integration:\n  frequency_source: pmu\n  pmu: {host: 10.0.0.7, "
                                             + "transport: udp_spontaneous, local_port: 4800, idcode: 99}\n", file: "pmu.yaml")
        #expect(unasked.cycleSettings.pmu == PMUSettings(host: "10.0.0.7", port: 0, transport: .udpSpontaneous, localPort: 4800, idcode: 99))
        let fixed = try ConfigLoader.parse(real + "grid_integration:\n  frequency_source: pmu\n  pmu: {host: 10.0.0.7, transport: udp, "
                                           + "local_port: 4801, idcode: 99}\n", file: "pmu.yaml")
        #expect(fixed.cycleSettings.pmu == PMUSettings(host: "10.0.0.7", port: 4713, transport: .udp, localPort: 4801, idcode: 99))
        let unread = try ConfigLoader.parse(real + "grid_integration:\n  frequency_source: inverter\n  pmu: {host: 10.0.0.7, idcode: 9}\n",
                                            file: "pmu.yaml")
        #expect(unread.cycleSettings.pmu == nil && unread.grid.pmu == nil)
        #expect(unread.notices.contains { $0.keyPath == "grid_integration.pmu" && $0.message.contains("not read") })
    }

    @Test("modes: hardware reads frequency from the inverters; hil mixes; the seed's rig names mean hil")
    func modes() throws {
        let real = ConfigurationTests.unit + "    modbus: {host: 10.0.0.5}\n"
        let hardware = try ConfigLoader.parse("mode: hardware\n" + real, file: "h.yaml")
        #expect(hardware.mode == .hardware)
        #expect(hardware.grid.frequencySource == .inverter)
        #expect(!hardware.usesSimulation)
        #expect(!hardware.isSimulated(bmsOf: hardware.units[0]) && !hardware.isSimulated(inverterOf: hardware.units[0]))
        let hil = try ConfigLoader.parse("mode: hil\n" + real + "    bms: {simulated: true}\n", file: "m.yaml")
        #expect(hil.mode == .hil)
        #expect(hil.grid.frequencySource == .inverter)
        #expect(hil.isSimulated(bmsOf: hil.units[0]) && !hil.isSimulated(inverterOf: hil.units[0]))
        #expect(hil.usesSimulation)
        let simulation = try ConfigLoader.parse(ConfigurationTests.unit, file: "s.yaml")
        #expect(simulation.mode == .simulation && simulation.grid.frequencySource == .simulated)
        for alias in ["hardware-in-loop", "grid-connected-simulation"] {
            let c = try ConfigLoader.parse("mode: \(alias)\n" + real, file: "a.yaml")
            #expect(c.mode == .hil)
            #expect(c.notices.contains { $0.keyPath == "mode" && $0.message.contains("mode hil") })
        }
    }
}
