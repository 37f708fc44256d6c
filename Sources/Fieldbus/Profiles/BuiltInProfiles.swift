/// Profiles bessd carries in its binary, the last resort of a profile library: the text of each is the
/// file of the same name in devices/ (a test checks they are equal).
public enum BuiltInProfiles {
    /// devices/pylontech-lv.yaml: Pylontech LV over CAN, as `PylontechDecoder` reads it.
    public static let pylontechLV = """
        # Pylontech low-voltage BMS over CAN (the SMA Sunny Island "0x35x" family), as bessd's built-in
        # decoder reads it. Little endian; the BMS sends every frame once a second.
        bessd_profile: 1
        name: pylontech-lv
        kind: bms
        vendor: Pylontech
        products: [US2000, US3000C, US5000]
        sources:
          - "Pylontech PYLON CANBUS Protocol low voltage V1.2 (2018-04-08), table 1"
          - "SMA FSS-ConnectingBat-TI-en-10 v1.0 section 5: invalid markers, high-resolution SOC in 0x355 bytes 4-5"
          - "Victron extension 0x373 (cell extremes in mV and K): broglep/pylontech-victron-bms-canbus-reader can_messages.py"
        transport:
          can:
            bitrate: 500000
            extended: false
            mode: broadcast
            filters: [{id: 0x350, mask: 0x7F0}, {id: 0x370, mask: 0x7F0}]
        identity:
          can_frame: 0x359
        signals:
          # 0x351 limits. A negative charge limit means 0; some emulators send the discharge limit negative.
          - name: charge_voltage_limit
            quantity: charge_voltage_limit
            can: {id: 0x351, byte: 0, bits: 16, order: little}
            scale: 0.1
            invalid: [0xFFFF]
          - name: charge_current_limit
            quantity: charge_current_limit
            can: {id: 0x351, byte: 2, bits: 16, order: little}
            signed: true
            scale: 0.1
            invalid: [-32768]
            clamp_min: 0
          - name: discharge_current_limit
            quantity: discharge_current_limit
            can: {id: 0x351, byte: 4, bits: 16, order: little}
            signed: true
            scale: 0.1
            invalid: [-32768]
            magnitude: true
          # Not in V1.2: absent from a 6-byte frame; 0 means not sent.
          - name: discharge_voltage_limit
            quantity: discharge_voltage_limit
            can: {id: 0x351, byte: 6, bits: 16, order: little}
            scale: 0.1
            invalid: [0xFFFF, 0]
            optional: true
          # 0x355 state of charge and health.
          - name: soc
            quantity: soc
            can: {id: 0x355, byte: 0, bits: 16, order: little}
            valid: [0, 100]
          - name: soh
            quantity: soh
            can: {id: 0x355, byte: 2, bits: 16, order: little}
            valid: [0, 100]
          # Empty in V1.2 (a BMS may pad it with zeros): used only within 1 % of the whole-percent SOC.
          - name: soc_fine
            quantity: soc_fine
            can: {id: 0x355, byte: 4, bits: 16, order: little}
            scale: 0.01
            invalid: [0xFFFF]
            valid: [0, 100]
            agree_within: 1
            optional: true
          # 0x356 pack measurements; current + while charging.
          - name: pack_voltage
            quantity: pack_voltage
            can: {id: 0x356, byte: 0, bits: 16, order: little}
            signed: true
            scale: 0.01
            invalid: [-32768]
            valid: [0, 400]
          - name: pack_current
            quantity: pack_current
            can: {id: 0x356, byte: 2, bits: 16, order: little}
            signed: true
            scale: 0.1
            invalid: [-32768]
          - name: temperature
            quantity: temperature
            can: {id: 0x356, byte: 4, bits: 16, order: little}
            signed: true
            scale: 0.1
            invalid: [-32768]
          # 0x359 protection (bytes 0-1) and alarm (bytes 2-3) flags, module count, "PN".
          - name: protection_lo
            can: {id: 0x359, byte: 0, bits: 8, order: little}
          - name: protection_hi
            can: {id: 0x359, byte: 1, bits: 8, order: little}
          - name: alarm_lo
            can: {id: 0x359, byte: 2, bits: 8, order: little}
          - name: alarm_hi
            can: {id: 0x359, byte: 3, bits: 8, order: little}
          - name: module_count
            can: {id: 0x359, byte: 4, bits: 8, order: little}
            optional: true
          # 0x35C request flags.
          - name: charge_enabled
            quantity: charge_enabled
            can: {id: 0x35C, byte: 0, bit: 7, bits: 1, order: little}
          - name: discharge_enabled
            quantity: discharge_enabled
            can: {id: 0x35C, byte: 0, bit: 6, bits: 1, order: little}
          - name: force_charge
            quantity: force_charge
            can: {id: 0x35C, byte: 0, bit: 4, bits: 2, order: little}
          - name: full_charge_request
            can: {id: 0x35C, byte: 0, bit: 3, bits: 1, order: little}
          # 0x35E manufacturer name.
          - name: manufacturer
            can: {id: 0x35E, byte: 0, bits: 64, order: little}
            text: true
          # 0x373 cell extremes (Victron extension): voltages below 10 V, temperatures 174-472 K.
          - name: min_cell_voltage
            quantity: min_cell_voltage
            can: {id: 0x373, byte: 0, bits: 16, order: little}
            scale: 0.001
            valid: [0, 9.999]
          - name: max_cell_voltage
            quantity: max_cell_voltage
            can: {id: 0x373, byte: 2, bits: 16, order: little}
            scale: 0.001
            valid: [0, 9.999]
          - name: min_cell_temperature
            quantity: min_cell_temperature
            can: {id: 0x373, byte: 4, bits: 16, order: little}
            offset: -273.15
            valid: [-100, 199]
          - name: max_cell_temperature
            quantity: max_cell_temperature
            can: {id: 0x373, byte: 6, bits: 16, order: little}
            offset: -273.15
            valid: [-100, 199]
        groups:
          - {part: status, presence: required, period_s: 1}
          - {part: limits, presence: required, period_s: 1}
          - {part: measurements, presence: required, period_s: 1}
          - {part: protection, presence: required, period_s: 1}
          - {part: requests, presence: required, period_s: 1}
          # A genuine Pylontech never sends 0x373: missing only once seen.
          - {part: cells, presence: once_seen, period_s: 1}
        alarms:
          - {signal: protection_lo, bit: 1, condition: cell_overvoltage, severity: protection}
          - {signal: protection_lo, bit: 2, condition: cell_undervoltage, severity: protection}
          - {signal: protection_lo, bit: 3, condition: overtemperature, severity: protection}
          - {signal: protection_lo, bit: 4, condition: undertemperature, severity: protection}
          - {signal: protection_lo, bit: 7, condition: discharge_overcurrent, severity: protection}
          - {signal: protection_hi, bit: 0, condition: charge_overcurrent, severity: protection}
          # System error: bit 3 in V1.2, bit 7 in several implementations.
          - {signal: protection_hi, bit: 3, condition: system_error, severity: protection}
          - {signal: protection_hi, bit: 7, condition: system_error, severity: protection}
          - {signal: alarm_lo, bit: 1, condition: cell_overvoltage, severity: alarm}
          - {signal: alarm_lo, bit: 2, condition: cell_undervoltage, severity: alarm}
          - {signal: alarm_lo, bit: 3, condition: overtemperature, severity: alarm}
          - {signal: alarm_lo, bit: 4, condition: undertemperature, severity: alarm}
          - {signal: alarm_lo, bit: 7, condition: discharge_overcurrent, severity: alarm}
          - {signal: alarm_hi, bit: 0, condition: charge_overcurrent, severity: alarm}
          - {signal: alarm_hi, bit: 3, condition: internal_communication, severity: alarm}
          - {signal: alarm_hi, bit: 7, condition: system_error, severity: alarm}
        keep_alive:
          - {id: 0x305, extended: false, data: [0, 0, 0, 0, 0, 0, 0, 0], period_s: 1}

        """
}
