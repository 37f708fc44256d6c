/// A simulated battery inverter: follows its active-power setpoint with a short lag, inside its
/// rating and the battery's limits, and falls back to zero when its revert timer runs out.
public struct SimulatedInverter: Sendable {
    /// Rated active power, W.
    public let ratingW: Double
    /// Revert timeout: with no setpoint written for this long the inverter goes to zero power
    /// (nil: it never reverts).
    public var revertTimeout: Duration?
    /// Conversion efficiency, each way.
    public var efficiency: Double = 0.97
    /// Time constant of the power response.
    public var response: Duration = .milliseconds(200)
    /// Setpoint in force, + = discharge.
    public private(set) var setpointW: Double = 0
    /// Measured AC power, + = discharge.
    public private(set) var powerW: Double = 0
    /// True after the revert timer ran out, until the next setpoint.
    public private(set) var reverted = true
    /// Time since the last setpoint (nil: none was written yet).
    public private(set) var sinceSetpoint: Duration?
    /// A fault the simulator was told to show.
    public var faulted = false
    /// False while the contactor is open (SunSpec 123 `Conn` = 0): no power flows.
    public private(set) var connected = true
    /// The open's revert timer (`Conn_RvrtTms`): once it runs out the inverter connects again (nil: never).
    public private(set) var connectRevert: Duration?
    /// Time since the contactor was last commanded.
    public private(set) var sinceConnectCommand: Duration = .zero
    /// Reactive setpoint in force, var (+ = injecting, over-excited): 0 until one is commanded, and
    /// the revert value once its own revert timer (`reactiveRevertTimeout`) has run out.
    public private(set) var reactiveSetpointVar: Double = 0
    /// Measured reactive power, var, following its setpoint with the same lag as active power.
    public private(set) var reactiveVar: Double = 0
    /// Reactive setpoint's revert timeout and value (704 `VarSetRvrtTms`, `VarSetRvrt`; nil: never).
    public private(set) var reactiveRevertTimeout: Duration?
    public private(set) var reactiveRevertVar: Double = 0
    /// Time since the last reactive setpoint (nil: none yet).
    public private(set) var sinceReactiveSetpoint: Duration?
    /// True after the reactive revert timer ran out, until the next reactive setpoint.
    public private(set) var reactiveReverted = false

    public init(ratingW: Double, revertTimeout: Duration? = .seconds(10)) {
        self.ratingW = ratingW
        self.revertTimeout = revertTimeout
    }

    /// Writes a setpoint and restarts the revert timer.
    public mutating func command(setpointW value: Double) {
        setpointW = value.isFinite ? min(max(value, -ratingW), ratingW) : 0
        sinceSetpoint = .zero
        reverted = false
    }

    /// Writes a reactive setpoint (var, + = injecting), bounded by the rating, and restarts its
    /// revert timer: after `revert` without a new one, `revertVar` takes over.
    public mutating func command(reactiveVar value: Double, revert: Duration?, revertVar: Double = 0) {
        reactiveSetpointVar = value.isFinite ? min(max(value, -ratingW), ratingW) : 0
        reactiveRevertTimeout = revert
        reactiveRevertVar = revertVar.isFinite ? min(max(revertVar, -ratingW), ratingW) : 0
        sinceReactiveSetpoint = .zero
        reactiveReverted = false
    }

    /// Opens (`connected` false, armed with `revert`) or closes the contactor.
    public mutating func setConnected(_ value: Bool, revert: Duration? = nil) {
        connected = value
        connectRevert = value ? nil : revert
        sinceConnectCommand = .zero
    }

    /// Advances by `interval`; the DC power drawn from the battery is returned (+ = discharge).
    /// `chargeLimitW`/`dischargeLimitW` are what the battery can take or give right now.
    public mutating func step(by interval: Duration, chargeLimitW: Double, dischargeLimitW: Double) -> Double {
        guard interval > .zero else { return dcPower }
        if let since = sinceSetpoint {
            sinceSetpoint = since + interval
            if let revertTimeout, since + interval > revertTimeout, !reverted {
                reverted = true
                setpointW = 0
            }
        }
        if let since = sinceReactiveSetpoint {
            sinceReactiveSetpoint = since + interval
            if let timeout = reactiveRevertTimeout, since + interval > timeout, !reactiveReverted {
                reactiveReverted = true
                reactiveSetpointVar = reactiveRevertVar
            }
        }
        sinceConnectCommand += interval
        if !connected, let connectRevert, sinceConnectCommand > connectRevert { connected = true }
        if !connected {
            // The contactor is open: nothing flows.
            powerW = 0
            reactiveVar = 0
            return 0
        }
        let target = faulted ? 0 : min(max(setpointW, -max(0, chargeLimitW)), max(0, dischargeLimitW))
        let alpha = response > .zero ? min(1, interval / response) : 1
        powerW += alpha * (target - powerW)
        if abs(powerW) < 1e-3 { powerW = 0 }
        reactiveVar += alpha * ((faulted ? 0 : reactiveSetpointVar) - reactiveVar)
        if abs(reactiveVar) < 1e-3 { reactiveVar = 0 }
        return dcPower
    }

    /// DC power at the battery for the present AC power (losses make discharge draw more).
    public var dcPower: Double { powerW >= 0 ? powerW / efficiency : powerW * efficiency }
}
