import BessBase
import ControlCore
import IEEE2030_5

extension Sep2Client {
    /// The controls of a DERControlList page, or the DefaultDERControl, just read that are taken with an
    /// element bessd does not apply (an `opModFreqDroop` inside its types but outside what bessd applies:
    /// `DERControlBase.notApplied`): each journalled as `SEP2_CONTROL_NOT_APPLIED` once while its
    /// document carries it; the rest of the control is in force. A control that sets nothing else is
    /// refused 252 instead (`RefusedControl`, journalled as `SEP2_CONTROL_REFUSED`).
    func noteNotApplied(_ request: Sep2Request, body: [UInt8]) {
        var found: [(mRID: String, why: String)] = []
        switch request.purpose {
        case .derControlList:
            for control in (try? DERControlList.read(body).resource.controls) ?? [] {
                if let why = control.base.notApplied { found.append((control.mRID, why)) }
            }
        case .defaultDERControl:
            if let control = try? DefaultDERControl.read(body).resource, let why = control.base.notApplied { found.append((control.mRID, why)) }
        default: return
        }
        let lines = Set(found.map { "control \(TextQuoting.quoted($0.mRID, limit: 40)): \($0.why)" })
        let before = notApplied[request.path] ?? []
        if notApplied.count >= 256, notApplied[request.path] == nil { notApplied = [:] }
        notApplied[request.path] = lines.isEmpty ? nil : lines
        for line in lines.sorted() where !before.contains(line) {
            log(.sep2(.controlNotApplied, "\(line) (\(TextQuoting.quoted(request.path, limit: 64)) of "
                + "\(settings.serverName)); the rest of it taken"))
        }
    }

    /// The controls that set only `opModFreqDroop` while the configured droop is disabled
    /// (`droop_settings.enabled` false): the reporter answers each 252 (not applicable) where asked and
    /// never starts it. Each is journalled as `SEP2_CONTROL_REFUSED` once, its mRID and program quoted,
    /// while it is listed and the droop stays disabled; one first seen completed is not (the reporter
    /// does not answer it either). `refusing`: the reporter's decision (`Sep2Reporter.refusesDroop`),
    /// made once per control, so a control that started before a reload disabled the droop is not
    /// said to be refused. None refused: nothing is, and a later disable says them again.
    func noteDroopDisabled(refusing: (DERControl) -> Bool, serverTime: Int64) {
        var listed: Set<ControlKey> = []
        for program in schedule.programs {
            for control in program.controls where Sep2Reporter.droopOnly(control.base) && refusing(control) {
                let key = ControlKey(program: program.mRID, control: control.mRID)
                listed.insert(key)
                guard !droopRefusals.contains(key), schedule.state(of: control.mRID, program: program.mRID, at: serverTime) != .completed else { continue }
                log(.sep2(.controlRefused, "control \(TextQuoting.quoted(control.mRID, limit: 40)) of program "
                    + "\(TextQuoting.quoted(program.mRID, limit: 40)) sets only opModFreqDroop and the configured droop is disabled "
                    + "(droop_settings.enabled false) (\(settings.serverName)); answered 252 where asked, never started"))
            }
        }
        droopRefusals = listed
    }
}
