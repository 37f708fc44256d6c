import BessBase
import ControlCore
import Fieldbus
import HILPlant
import Simulation
import Testing

/// The HIL plant's SunSpec inverter takes 704's var setpoint as a device does: VarSet at its scale
/// factor, the revert timer, and the commanded var measured in 701 `Var`.
@Suite("HIL plant: 704 VarSet, its revert, 701 Var")
struct ReactivePlantTests {
    @Test("bessd's VARS writes reach the simulated inverter, 701 Var reports them, and the revert brings 0 var")
    func varSet() throws {
        let plant = try PlantInverterRun(SunSpecDeviceProfile(measurementModel: 701, controlModel: 704, ratingW: 100_000))
        let inverter = plant.inverter
        let control = try #require(inverter.reactiveControl)
        #expect(control.mode == .vars(scaleFactor: 0))
        func run(_ steps: Int) { plant.run(steps) }
        try inverter.command(.kilowatts(20), revert: .seconds(3), &plant.client)
        for write in control.writes(-12_000, reactivePriority: false, revert: .seconds(3), rearm: true) {
            try plant.client.writeRegisters(at: write.address, write.values)
        }
        run(20)
        #expect(plant.unit.inverter.reactiveSetpointVar == -12_000 && plant.unit.inverter.reactiveRevertTimeout == .seconds(3))
        let status = try inverter.readStatus(&plant.client)
        #expect(status.reactivePower.map { abs($0 + 12_000) <= 10 } == true, "\(status)")  // Var at W_SF 1
        // No more writes: after 3 s the revert value (0 var) takes over, and VarSet shows it.
        run(35)
        #expect(plant.unit.inverter.reactiveReverted && plant.unit.inverter.reactiveSetpointVar == 0)
        let reverted = try inverter.readStatus(&plant.client)
        #expect(reverted.reactivePower.map { abs($0) <= 10 } == true, "\(reverted)")
        let words = try plant.client.readRegisters(at: control.model.address + SunSpec.ACControls.varSetEna, count: 5)
        #expect(words == [1, SunSpec.ACControls.varModeVars, 0, 0, 0], "\(words)")
        // VarSetEna 0 (handed back): the inverter's own mode, 0 var.
        for write in control.release { try plant.client.writeRegisters(at: write.address, write.values) }
        run(2)
        #expect(plant.unit.inverter.reactiveSetpointVar == 0)
    }
}
