public import IEEE2030_5

extension StoredSchedule {
    /// The identity the stored schedule was read for, for when the device certificate cannot say: the
    /// stored device (a 40-digit `lFDI`) whose FunctionSetAssignmentsList was read too, found in a stored
    /// EndDeviceList or in a stored EndDevice (a device registered in band that the server gives only at
    /// its Location); nil when none or more than one is. A device the server names by its `sFDI` alone
    /// is not found: the LFDI cannot be made from an SFDI.
    public var deviceIdentity: DeviceIdentity? {
        var found: Set<DeviceIdentity> = []
        for body in documents.values {
            let devices: [EndDevice]
            if let list = try? EndDeviceList.read(body) {
                devices = list.resource.endDevices
            } else if let device = try? EndDevice.read(body) {
                devices = [device.resource]
            } else {
                continue
            }
            for device in devices {
                guard let lfdi = device.lFDI, let fsa = device.functionSetAssignmentsListLink,
                      documents.keys.contains(where: { $0 == fsa || $0.hasPrefix(fsa + "?") }),
                      let identity = DeviceIdentity(lfdi: lfdi, sfdi: device.sFDI) else { continue }
                found.insert(identity)
            }
        }
        return found.count == 1 ? found.first : nil
    }
}
