import BessSystem
import ControlCore

// The cycle's phases, in the order `SiteCycle.runPhases` calls them:
// takeInputs → sample → decide → command → publish. Each reads what the one before it left in the
// runner (`inbox`, `inputs`, the controller's decisions); none waits on I/O, logs or allocates in
// a steady state (a reset, an operator action, may).

extension SiteRunner {
    /// 1. Every external order and reading of this cycle into `inbox`: under `shared`'s lock, the
    /// operator's mailbox (swapped for the cleared one when it holds new requests), SCADA's commands
    /// and the schedule's window when published since, AGC, the relay contacts' limit, the clock's synchronisation; then the
    /// PMU's and the utility's seqlocks. Without `shared` (a runner stepped alone) only the slots.
    func takeInputs(from shared: SharedState?, wallClock: Double) {
        inbox.wallClock = wallClock
        inbox.pending = false
        inbox.commandsChanged = false
        inbox.scheduleChanged = false
        inbox.ordersTaken = shared != nil
        shared?.contents.withLock { c in
            if c.orders.commandsGeneration != inbox.commandsTaken {
                inbox.commandsTaken = c.orders.commandsGeneration
                inbox.commands = c.orders.commands
                inbox.commandsChanged = true
            }
            inbox.inputLimitPercent = c.orders.inputLimitPercent
            inbox.agc = c.orders.agc
            inbox.clockSynchronized = c.orders.clockSynchronized
            if c.orders.scheduleGeneration != inbox.scheduleTaken {
                inbox.scheduleTaken = c.orders.scheduleGeneration
                inbox.schedule = c.orders.schedule
                inbox.scheduleChanged = true
            }
            guard c.orders.mailbox.generation != inbox.mailbox.generation else { return }
            inbox.pending = true
            // The cleared mailbox goes back for the next requests, with the generation carried on.
            inbox.mailbox.generation = c.orders.mailbox.generation
            swap(&c.orders.mailbox, &inbox.mailbox)
        }
        inbox.pmu = settings.frequencySource == .pmu ? pmuSamples?.read() : nil
        if let slot = utilityLimits {
            // A read overtaken by publications keeps the last value read; never published is none.
            if let limits = slot.read() { inbox.utility = .limits(limits) } else { inbox.utility = slot.published ? .none : .neverPublished }
        } else {
            inbox.utility = .none
        }
    }

    /// 2. The process image: every unit's inverter reading and BMS snapshot, the meter (+ = import)
    /// and a simulated frequency, from the devices; a reading taken before the previous regular
    /// cycle counted late.
    func sample<IO: ProcessImageSource>(_ io: IO, now: MonotonicInstant, extra: Bool) {
        simulatedFrequency = io.sample(now: now, into: &inputs)
        if !extra {
            if let previousStep {
                // Two periods back, subtracted twice: Duration's `*` is a generic 128-bit multiplication.
                let horizon = now - settings.period - settings.period
                for i in inputs.indices {
                    if let at = inputs[i].inverter?.takenAt, at <= previousStep, at > horizon { lateReadings &+= 1 }
                }
            }
            previousStep = now
        }
        meter = io.sampleMeter(now: now)
        if let stamped = meter, settings.meter?.importPositive == false {
            // A meter that counts export as positive (its var too): bessd's convention is + = import.
            meter = Timestamped(MeterReading(gridPower: Watts(-stamped.value.gridPower.value), frequency: stamped.value.frequency,
                                             importedEnergy: stamped.value.importedEnergy, exportedEnergy: stamped.value.exportedEnergy,
                                             reactivePower: stamped.value.reactivePower.map { -$0 }, voltage: stamped.value.voltage),
                                at: stamped.takenAt)
        }
    }

    /// 3. The inbox's orders applied, the site frequency picked, and the control law run: assess,
    /// decide, allocate (`SiteController.step`).
    func decide(now: MonotonicInstant) {
        if inbox.ordersTaken { applyOrders(now: now) }
        switch inbox.utility {
        case .none: break
        case .neverPublished: controller.utilityLimits = nil
        case .limits(let limits): controller.utilityLimits = limits
        }
        let (frequency, rocof) = siteFrequency(now: now)
        frequencyTakenAt = frequency?.takenAt
        controller.step(frequency: frequency, inputs: inputs, now: now, wallClock: inbox.wallClock, meter: meter, rocof: rocof)
    }

    /// 4. Each unit's setpoint and contactor to its device, then the word to write now.
    func command<IO: ProcessImageSource>(_ io: IO) {
        // opModConnect / opModEnergize false: the units are at zero; their contactors open where
        // they can (the bus workers, ContactorPlanner) and close when the control ends. A latch
        // (zero power both ways) opens its own unit the same way until the operator's reset clears it.
        let connect = !controller.siteDecision.utility.disconnected
        for i in inputs.indices {
            let decision = controller.decision(unit: i)
            io.command(unit: i, setpoint: decision.setpoint, reactive: decision.reactive)
            io.connect(unit: i, connect && !decision.disconnectRequested)
        }
        io.commandsIssued()
    }

    /// 5. Status (and the site's view of it), statistics, events, closed blocks, frequency assessments and the mailbox's
    /// outcome into the outbox (one lock); then the service loop and a watching reader are woken.
    func publish(to shared: SharedState, now: MonotonicInstant) {
        var published = false
        shared.contents.withLock { c in
            c.outbox.publishStatus { units, site in
                for i in units.indices { fill(&units[i], unit: i, now: now) }
                fill(&site, now: now)
            }
            // SCADA's commands as this cycle settled them go back into the record SCADA reads and
            // writes against, unless written since: the cycle is the one judge of their expiry.
            if c.orders.commandsGeneration == inbox.commandsTaken { c.orders.commands = controller.commands }
            fill(&c.outbox.stats, now: now)
            controller.events.drain {
                c.outbox.events.push($0)
                published = true
            }
            controller.drainClosedBlocks { block in
                if c.outbox.blocks.count < c.outbox.blocks.capacity { c.outbox.blocks.append(block) }
                published = true
            }
            if controller.schedule.reportCount > 0 {
                controller.schedule.drainReports { report in
                    if c.outbox.scheduleReports.count < c.outbox.scheduleReports.capacity { c.outbox.scheduleReports.append(report) }
                    published = true
                }
            }
            controller.drainFrequencyAssessments { assessment in
                c.outbox.frequencyEvents.publish(assessment)
                published = true
            }
            if inbox.pending {
                for i in outcomes.indices where inbox.mailbox.reset[i] { c.outbox.resetOutcomes[i] = outcomes[i] }
                c.outbox.appliedGeneration = inbox.mailbox.generation
            }
        }
        if inbox.pending { inbox.mailbox.clear() }
        // Outside the lock: the service loop wakes to log and record what was published.
        if published { shared.serviceWakeup.signal() }
        if shared.publicationsAreWatched { shared.publicationWakeup.signal() }
    }
}

extension SiteRunner {
    /// The orders `takeInputs` took, handed to the controller (part of `decide`): SCADA's commands
    /// when written since, the schedule's window when published since, the relay limit, AGC, the
    /// clock's synchronisation, and the mailbox's requests when it held new ones.
    func applyOrders(now: MonotonicInstant) {
        if inbox.commandsChanged { controller.commands = inbox.commands }
        if inbox.scheduleChanged { controller.schedule.window = inbox.schedule }
        controller.inputLimitPercent = inbox.inputLimitPercent
        controller.agc = inbox.agc
        controller.clockSynchronized = inbox.clockSynchronized
        guard inbox.pending else { return }
        let taken = inbox.mailbox
        if let siteMode = taken.siteMode { controller.setOperatorMode(siteMode) }
        for i in inputs.indices {
            if let mode = taken.mode[i] { controller.setOperatorMode(mode, unit: i) }
            if let r = taken.remoteMode[i] { controller.setRemoteMode(r.mode, until: now + r.lasting, emergency: r.emergency, unit: i) }
            if let o = taken.override[i] { setOverride(PowerCommand(power: o.power, expiresAt: now + o.lasting), unit: i) }
            if taken.clearOverride[i] { setOverride(nil, unit: i) }
            if let d = taken.dispatch[i] {
                setDispatch(PowerCommand(power: d.power, reactive: d.reactive, expiresAt: now + d.lasting, pinned: d.pinned), unit: i)
            }
            if taken.clearDispatch[i] { setDispatch(nil, unit: i) }
            // A reset is an operator action, not the steady state: its small result array may allocate.
            if taken.reset[i] { outcomes[i] = controller.reset(unit: i, now: now).first?.outcome ?? ResetOutcome() }
        }
    }
}
