public import Foundation

extension Package {
    /// The Python ≥ 3.12 the IEEE 2030.5 peers (hil/peers/sep2_peer.py) run on: the newest one pyenv
    /// has, as `scripts/ensure-python-peers.sh --python` names it, so the tests run the interpreter the
    /// script installed hil/requirements-py312.txt into, whatever PATH says. Asked once per test run.
    public static func sep2Python() throws -> String {
        try sep2PythonFound.get()
    }

    private static let sep2PythonFound: Result<String, RunFailure> = {
        let script = root.appendingPathComponent("scripts/ensure-python-peers.sh")
        guard let run = try? capture(script, ["--python"]) else {
            return .failure(RunFailure(message: "\(script.path) could not be run"))
        }
        let path = run.out.trimmingCharacters(in: .whitespacesAndNewlines)
        guard run.status == 0, !path.isEmpty else {
            return .failure(RunFailure(message: "no Python >= 3.12 for the IEEE 2030.5 peers: \(run.err.trimmingCharacters(in: .whitespacesAndNewlines))"))
        }
        return .success(path)
    }()
}
