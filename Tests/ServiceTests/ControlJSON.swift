import BessBase
import BessSystem
import ControlCore
import ControlProtocol
import Foundation

extension ControlClient {
    /// The tests' JSON edge: the request written as a JSON object (so a test can send what bessd must
    /// refuse: an unknown verb, a unit that is a number), the answer parsed by Foundation so that a
    /// test reads any key of any answer. bessd's own code and tools decode the typed replies instead.
    static func request(_ object: [String: Any], socket path: String, timeout: Duration = .seconds(5))
        throws(ControlError) -> [String: Any]
    {
        guard let data = try? JSONSerialization.data(withJSONObject: object) else {
            throw ControlError(.badRequest, message: "request is not JSON")
        }
        let line = try exchange(Array(data), socket: path, timeout: timeout)
        guard let answer = try? JSONSerialization.jsonObject(with: Data(line)) as? [String: Any] else {
            throw ControlError(.controlNoAnswer, message: "bessd did not answer in time")
        }
        return answer
    }
}
