public import BessSystem

/// Why a run could not start (or a device could not be opened).
public typealias RunError = BessError
