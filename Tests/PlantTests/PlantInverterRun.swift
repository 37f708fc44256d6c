import Fieldbus
import HILPlant
import Simulation

/// One simulated SunSpec inverter of the HIL plant on a loopback port, bessd's driver opened on it,
/// and a unit the plant steps 100 ms at a time: the setting the plant tests of the inverter's
/// control models (704, 123, the var points) share. Stops its server when released.
final class PlantInverterRun {
    let server: SunSpecServer
    var client: ModbusConnection
    let inverter: SunSpecInverter
    var unit = SimulatedUnit(capacityKWh: 250, maxPowerKW: 100, initialSOCPercent: 60)
    private let link: SunSpecPlantLink

    init(_ profile: SunSpecDeviceProfile) throws {
        server = try SunSpecServer(host: "127.0.0.1", port: 0, profile: profile)
        try server.start()
        do {
            client = try ModbusConnection(endpoint: .tcp(host: "127.0.0.1", port: server.port), unitID: 1, timeout: .seconds(2))
            inverter = try SunSpecInverter.open(&client)
        } catch {
            server.stop()
            throw error
        }
        link = SunSpecPlantLink(server: server)
    }

    deinit { server.stop() }

    /// `steps` plant periods of 100 ms at `frequencyHz`, the registers exchanged after each.
    func run(_ steps: Int, frequencyHz: Double = 50) {
        for _ in 0..<steps {
            unit.step(by: .milliseconds(100))
            link.exchange(&unit, frequencyHz: frequencyHz)
        }
    }
}
