import Foundation
import Yams

extension Scenario {
    /// One command of the control centre, at the default IOAs of docs/iec104.md.
    enum IEC104Order: Equatable {
        /// 3101, C_SC_NA_1: AGC in or out of service.
        case agcInService(Bool)
        /// 3001, C_SE_NC_1: the AGC target, MW (+ = export).
        case agcSetpoint(Double)
        /// 3002, C_SE_NC_1: the site MW setpoint.
        case siteSetpoint(Double)
        /// 3003, C_SE_NC_1: the site Mvar setpoint (+ = injecting).
        case siteVarSetpoint(Double)
        /// 3004, C_SE_NC_1: the site power factor, signed by excitation (+ over-excited, injecting).
        case sitePowerFactor(Double)

        /// The keys of an `iec104:` action, in the order its commands are sent.
        static let keys = ["agc_in_service", "agc_setpoint_mw", "site_setpoint_mw", "site_var_setpoint_mvar", "site_power_factor"]

        var label: String {
            func kilo(_ mega: Double) -> String { (mega * 1000).formatted(.number.grouping(.never)) }
            return switch self {
            case .agcInService(let on): "AGC \(on ? "in" : "out of") service"
            case .agcSetpoint(let mw): "AGC \(kilo(mw)) kW"
            case .siteSetpoint(let mw): "104 setpoint \(kilo(mw)) kW"
            case .siteVarSetpoint(let mvar): "104 var setpoint \(kilo(mvar)) kvar"
            case .sitePowerFactor(let pf): "104 power factor \(pf.formatted(.number.grouping(.never)))"
            }
        }

        /// The commands of an `iec104:` action, in the order of `keys`; nil (and each problem
        /// given to `fail`) when it names none or one is not a number.
        static func parse(_ orders: Node.Mapping, here: String, fail: (String, String) -> Void) -> [IEC104Order]? {
            var list: [IEC104Order] = []
            for key in orders.keys.compactMap(\.string) where !keys.contains(key) {
                fail("\(here).\(key)", "unknown command; known: \(keys.joined(separator: ", "))")
            }
            if let node = orders[Node("agc_in_service")] {
                if let on = node.bool { list.append(.agcInService(on)) } else { fail("\(here).agc_in_service", "true or false") }
            }
            let numbers: [(String, (Double) -> IEC104Order, String)] = [
                ("agc_setpoint_mw", IEC104Order.agcSetpoint, "a number (MW)"), ("site_setpoint_mw", IEC104Order.siteSetpoint, "a number (MW)"),
                ("site_var_setpoint_mvar", IEC104Order.siteVarSetpoint, "a number (Mvar, + = injecting)"),
                ("site_power_factor", IEC104Order.sitePowerFactor, "a number (signed power factor)"),
            ]
            for (key, make, what) in numbers {
                guard let node = orders[Node(key)] else { continue }
                if let value = node.float, value.isFinite { list.append(make(value)) } else { fail("\(here).\(key)", what) }
            }
            if list.isEmpty { fail(here, "names no command (\(keys.joined(separator: ", ")))"); return nil }
            return list
        }
    }
}
