@testable import Config
import ControlCore
import Cycle
import Fieldbus
import Testing

@Suite("Register-map configuration")
struct RegisterMapConfigurationTests {
    let head = "mode: hil\nbess_units:\n  - id: U1\n    capacity_kwh: 10\n    max_power_kw: 5\n"
        + "    modbus: {host: 10.0.0.5}\n    bms: {simulated: true}\n    inverter:\n      protocol: register_map\n"

    @Test("a full map loads")
    func loads() throws {
        let yaml = head + """
                  register_map:
                    power: {address: 30775, type: int32}
                    frequency: {address: 30803, type: uint32, scale: 0.01}
                    fault: {address: 30201, type: uint16}
                    fault_values: [35, 455]
                    setpoint: {address: 40149, type: int32, word_order: low_first}
                    revert_timeout: {address: 40153, type: uint16}
                    enable: {address: 40151, type: uint16}
                    enable_value: 802
                    rating_kw: 5

            """
        let c = try ConfigLoader.parse(yaml, file: "map.yaml")
        let map = try #require(c.units[0].inverter.registerMap)
        #expect(map.setpoint == MappedRegister(address: 40149, type: .int32, scale: 1, lowWordFirst: true))
        #expect(map.faultValues == [35, 455])
        #expect(map.enableValue == 802)
        #expect(map.rating == .kilowatts(5))
    }

    @Test("a map without a revert timer is refused: the revert timer is always armed")
    func revertRequired() {
        let yaml = head + "      register_map:\n        power: {address: 1}\n        setpoint: {address: 2}\n"
        let error = #expect(throws: ConfigurationError.self) { _ = try ConfigLoader.parse(yaml, file: "map.yaml") }
        #expect(error?.diagnostics.contains { $0.keyPath == "bess_units[0].inverter.register_map.revert_timeout" } == true)
    }

    @Test("protocol register_map without a map, bad types and zero scales are refused")
    func refused() {
        for body in ["", "      register_map:\n        power: {address: 1, type: float}\n        setpoint: {address: 2}\n"
                         + "        revert_timeout: {address: 3}\n",
                     "      register_map:\n        power: {address: 1, scale: 0}\n        setpoint: {address: 2}\n"
                         + "        revert_timeout: {address: 3}\n"] {
            #expect(throws: ConfigurationError.self) { _ = try ConfigLoader.parse(head + body, file: "map.yaml") }
        }
    }
}
