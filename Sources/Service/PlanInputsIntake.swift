import BessBase
import BessSystem
import Foundation
import Logging
import Planning
import Uplink

extension DispatchIntake {
    /// The aggregator's `prices` and `forecast` commands (HTTP and MQTT alike, once per command id
    /// through the transport's `CommandLedger`), checked by `PlanInputsValidator` before they come
    /// here: handed to the optimiser, which plans again on them. Refused `OPTIMISER_DISABLED` when
    /// `optimiser.enabled` is not set: nothing would use them.
    func planInputs(_ command: DispatchCommand) -> CommandAck {
        let id = PeerText.quoted(command.id, limit: 128)
        guard let optimiser else {
            let reason = "OPTIMISER_DISABLED: this site's optimiser is not enabled; the \(command.kind) are not taken"
            logger.warning("dispatch \(id) refused: \(reason)", metadata: ["BESS_CODE": "OPTIMISER_DISABLED", "MESSAGE_ID": "\(MessageID.site)"])
            return CommandAck(id: command.id, accepted: false, reason: reason)
        }
        var count = 0
        if let prices = command.prices {
            let points = prices.compactMap { p in
                RFC3339.unixSeconds(p.start).map { PricePoint(startUnixSeconds: $0, importPerKWh: p.importPerKWh, exportPerKWh: p.exportPerKWh) }
            }
            optimiser.push(prices: points)
            count = points.count
        }
        if let forecast = command.forecast {
            let points = forecast.compactMap { f in
                RFC3339.unixSeconds(f.start).map { ForecastPoint(startUnixSeconds: $0, loadKW: f.loadKW, pvKW: f.pvKW) }
            }
            optimiser.push(forecast: points)
            count = points.count
        }
        logger.notice("dispatch \(id) applied: \(count) block(s) of \(command.kind) for the optimiser; planning again",
                      metadata: ["MESSAGE_ID": "\(MessageID.site)", "BESS_DISPATCH_ID": "\(command.id)"])
        return CommandAck(id: command.id, accepted: true)
    }
}
