import ControlCore
public import IEEE2030_5

// The metering mirror (CSIP-AUS Annex A): the usage points made once, then each post interval's
// averages posted to each.

extension Sep2Reporter {
    /// The purpose naming the POST of the usage point at `location`.
    static func mirrorPurpose(_ location: MirrorLocation) -> String {
        location == .site ? "MirrorUsagePoint site" : "MirrorUsagePoint der"
    }

    /// The quantities mirrored at `location`: W, var, V and Hz at the site; W, var and V of the DER
    /// (V: where a site has no meter, the units' is the only voltage), and its stored energy in CSIP-AUS 1.3.
    func quantities(at location: MirrorLocation) -> [MirrorQuantity] {
        switch location {
        case .site: [.activePowerW, .reactivePowerVar, .voltageV, .frequencyHz]
        case .der: settings.csipaus == .v1_3 ? [.activePowerW, .reactivePowerVar, .voltageV, .storedEnergyWh]
            : [.activePowerW, .reactivePowerVar, .voltageV]
        }
    }

    func mrid(_ location: MirrorLocation, _ quantity: MirrorQuantity? = nil) -> String {
        MirrorMRID.make(lfdi: settings.lfdi, location: location, quantity: quantity, pen: settings.pen)
    }

    /// The `MirrorUsagePoint` of `location`.
    func usagePoint(_ location: MirrorLocation) -> MirrorUsagePointReport {
        let readings = quantities(at: location).map {
            MirrorMeterReadingDefinition(mRID: mrid(location, $0), quantity: $0, intervalSeconds: postSeconds)
        }
        var point = MirrorUsagePointReport(mRID: mrid(location), location: location, deviceLFDI: settings.lfdi, readings: readings)
        point.postRateSeconds = postSeconds
        return point
    }

    /// The usage points not made yet (at most once per post interval), then the readings of an
    /// interval that has ended. An interval that ends before its usage point exists is dropped: the
    /// next one starts afresh.
    mutating func mirrorRequests(now: MonotonicInstant, serverTime: Int64, into out: inout [Sep2Request]) {
        if let list = mirrorListPath.flatMap(Self.path(of:)), mirrorPaths.count < MirrorLocation.allCases.count,
           mirrorPostedAt.map({ now - $0 >= .seconds(postSeconds) }) ?? true {
            mirrorPostedAt = now
            for location in MirrorLocation.allCases where mirrorPaths[location] == nil {
                do throws(SEP2Error) {
                    out.append(Sep2Request(method: .post, path: list, body: try usagePoint(location).xml(),
                                           purpose: .post(Self.mirrorPurpose(location))))
                } catch {
                    refused(error, Self.mirrorPurpose(location))
                }
            }
        }
        guard let start = accumulator.start, serverTime - start >= Int64(postSeconds) else { return }
        let closed = accumulator
        accumulator = Sep2MirrorAccumulator()
        // The next interval follows on, unless the clock jumped past it.
        let next = start + Int64(postSeconds)
        accumulator.start = serverTime - next < Int64(postSeconds) ? next : serverTime
        for location in MirrorLocation.allCases {
            guard let path = mirrorPaths[location] else { continue }
            var readings: [MirrorReading] = []
            for quantity in quantities(at: location) {
                guard let mean = closed.mean(quantity, at: location) else { continue }
                readings.append(MirrorReading(mRID: mrid(location, quantity), location: location, quantity: quantity, average: mean,
                                              start: start, durationSeconds: postSeconds))
            }
            guard !readings.isEmpty else { continue }
            do throws(SEP2Error) {
                out.append(Sep2Request(method: .post, path: path, body: try MirrorReadingsReport(readings: readings).xml(),
                                       purpose: .post("MirrorMeterReadingList")))
            } catch {
                refused(error, "MirrorMeterReadingList")
            }
        }
    }
}
