import BessBase
import BessSystem
import ControlCore
import Sep2Link
import Uplink

extension Sep2Setup {
    /// Issue 48 §3: each 2030.5 control taken, refused or ended goes up as a `utility_control` record.
    /// The worker's thread only posts it to the uplink recorder's inbox (bounded, O(1) under its lock;
    /// past 1024 waiting the oldest is dropped and counted as a `spool_drop`) and wakes the service
    /// loop, whose next round writes it to the spool: the worker never waits on the disk.
    static func recordUtilityControls(_ worker: Sep2Worker?, inbox: RecordInbox?, wakeup: Wakeup) {
        guard let worker, let inbox else { return }
        worker.recordControls { control in
            inbox.post(.utilityControl(control, message: control.sentence))
            wakeup.signal()
        }
    }
}
