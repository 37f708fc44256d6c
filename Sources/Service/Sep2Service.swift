import BessBase
import BessSystem
import Config
import ControlCore
import ControlProtocol
import Cycle
import Foundation
import IEEE2030_5
import Logging
import Sep2Link
import TLSTransport

// The utility's IEEE 2030.5 server (`ieee2030_5:`): the client's worker is built with the daemon,
// started before the cycle (whose slot it fills) and stopped after it, and answers `ieee2030_5` of
// `status` (`bessctl ieee2030-5`).

extension MessageID {
    /// The IEEE 2030.5 client: a control taken or refused, the server unreachable or back, a PIN
    /// mismatch, the schedule store (`SEP2_*`).
    public static let ieee2030_5 = "b3f0c1a27e5d4c8e9a1f6d2b4c7e8a20"
}

/// The 2030.5 worker as a service: started before the cycle, stopped after it.
extension Sep2Worker: DaemonService {
    var name: String { "IEEE 2030.5" }
}

/// What the worker's transport is when the TLS context could not be made: every exchange fails with
/// that reason, so the stored schedule still runs (never "no limit") and the journal says why.
final class UnavailableTransport: Sep2Transport {
    let reason: String
    init(reason: String) { self.reason = reason }
    func send(_ request: HTTPRequest) throws(HTTPClientError) -> HTTPResponse { throw HTTPClientError(.tls, message: reason) }
    func close() {}
}

/// The 2030.5 client's worker as `ieee2030_5:` describes it: built with the daemon, before any
/// service starts.
enum Sep2Setup {
    /// The 2030.5 client of `configuration.ieee2030_5` publishing into `slot`, nil without the block;
    /// the utility's limits are resolved against the site's rating in `view` (`SharedState.view`).
    /// A device certificate that gives no identity, or a TLS context that cannot be made, leaves a
    /// worker whose every exchange fails with the coded reason (journal, `bessctl ieee2030-5`) and that
    /// runs the stored schedule, then the stored default: after a power cut that damaged the
    /// certificate the site still follows the utility. Without a readable certificate the identity is
    /// the stored EndDevice's (`storedIdentity`).
    static func worker(_ configuration: BessdConfiguration, view: SiteView, slot: UtilityLimitSlot, logger: Logger) -> Sep2Worker? {
        guard let settings = configuration.ieee2030_5 else { return nil }
        let journal = Journal(logger)
        let server = "\(settings.serverHost):\(settings.serverPort)"
        let timeout = Duration.seconds(fromDouble: settings.timeoutSeconds)
        let store = Sep2Link.ScheduleStore(stateDirectory: configuration.stateDirectory)
        let identity: DeviceIdentity
        let transport: any Sep2Transport
        do throws(SEP2Error) {
            identity = try Self.identity(certificateFile: settings.certificateFile)
            do throws(TLSError) {
                transport = HTTPSClient(host: settings.serverHost, port: settings.serverPort, context: try settings.clientContext(), timeout: timeout)
            } catch {
                journal.write(.sep2(failure: error, "\(error): the IEEE 2030.5 client cannot reach \(server); the stored schedule runs"))
                transport = UnavailableTransport(reason: "\(error)")
            }
        } catch {
            let stored = Self.storedIdentity(store)
            journal.write(.sep2(failure: error, "\(error): the IEEE 2030.5 client cannot reach \(server); the stored schedule runs"
                + (stored == nil ? " (none is stored: no utility control)" : " as the stored EndDevice's LFDI")))
            identity = stored ?? .unknown
            transport = UnavailableTransport(reason: "\(error)")
        }
        let workerSettings = Sep2WorkerSettings(entryPath: settings.deviceCapabilityPath, pin: settings.pin, pollSeconds: settings.pollSeconds,
                                                siteRatingW: view.ratedPowerW, timeout: timeout, serverName: server,
                                                discovery: DiscoveryOptions(inBandRegistration: settings.registration == .inBand,
                                                                            connectionPointId: settings.connectionPointId))
        journal.write(.sep2(.client, plain: "IEEE 2030.5 client of \(server)\(settings.deviceCapabilityPath) "
            + (identity == .unknown ? "as no known device (LFDI and SFDI unknown)" : "as LFDI \(identity.lfdi), SFDI \(identity.sfdi)")))
        return Sep2Worker(settings: workerSettings, identity: identity, transport: transport, slot: slot, store: store, log: journal.write)
    }

    /// The identity of the device certificate in `certificateFile` (its first PEM block).
    static func identity(certificateFile: String) throws(SEP2Error) -> DeviceIdentity {
        guard let text = try? String(contentsOfFile: certificateFile, encoding: .utf8) else {
            throw SEP2Error(.certificateInvalid, message: "cannot read \(certificateFile)")
        }
        return try DeviceIdentity(certificatePEM: text)
    }

    /// The identity the stored schedule was read for, when the certificate cannot say
    /// (`StoredSchedule.deviceIdentity`); nil when the store cannot be read (its own error is journalled
    /// when the worker restores).
    static func storedIdentity(_ store: Sep2Link.ScheduleStore) -> DeviceIdentity? {
        (try? store.load())?.deviceIdentity
    }
}
