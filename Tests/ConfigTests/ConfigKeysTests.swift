@testable import Config
import Testing

/// Each configuration section declares its keys once (`ConfigKeys`); these tests hold the decoders to
/// them. config/bessd.yaml is held to them by `ConfigurationTests.referenceHasEveryKey`.
@Suite("Configuration keys")
struct ConfigKeysTests {
    /// Every section, and each branch that reads keys of its own taken once: an RTU line, both register
    /// maps, the fault kinds that read bms and group, both application blocks.
    static let everySection = """
        mode: hil
        period_ms: 100
        control_socket: /run/bessd/control.sock
        state_directory: /var/lib/bessd
        metrics_listen: 127.0.0.1:9464
        bess_units:
          - id: U1
            campus_id: C1
            capacity_kwh: 250
            max_power_kw: 100
            max_apparent_power_kva: 110
            modbus: {device: /dev/ttyS1, baud: 9600, parity: even, data_bits: 8, stop_bits: 1, rs485: false,
                     unit_id: 1, timeout_ms: 500, port: 502}
            inverter:
              protocol: register_map
              simulated: false
              stale_after_s: 3
              startup_grace_s: 30
              register_map:
                power: {address: 1, type: int32, scale: 1, word_order: high_first}
                frequency: {address: 3}
                fault: {address: 4}
                fault_values: [1]
                setpoint: {address: 5}
                revert_timeout: {address: 6}
                enable: {address: 7}
                enable_value: 1
                rating_kw: 100
            bms: {simulated: true, interface: can0, protocol: pylontech, bitrate: 500000, stale_after_s: 3,
                  startup_grace_s: 30, cells_in_series: 16, manage_interface: false, restart_ms: 100}
        grid_integration:
          mode: simulation
          frequency_source: meter
          frequency_events: {entry_delay_s: 1, exit_delay_s: 5}
          scada_enabled: false
          pmu: {host: 10.0.0.7, port: 4712, transport: udp, local_port: 4713, idcode: 1410, pmu_idcode: 1411, max_age_ms: 100,
                reconnect_s: 2}
          droop_settings: {enabled: true, nominal_hz: 50, deadband_hz: [49.9, 50.1], droop_percent: 5,
                           droop_percent_under: 5, droop_percent_over: 5, reference: edge, response_time_s: 5,
                           profile: seed, sustain_s: 300, response_power_percent: 100}
          reactive_power:
            mode: constant_pf
            profile: ieee1547_2018_cat_b
            nominal_voltage_v: 230
            reactive_priority: true
            pf: 0.95
            excitation: absorbing
            pf_absorb: 0.95
            excitation_absorb: injecting
            var_percent: 0
            response_time_s: 10
            volt_var: {points: [[0.92, 44], [0.98, 0], [1.02, 0], [1.08, -44]], v_ref_pu: 1, olrt_s: 5, autonomous_v_ref: false,
                       v_ref_time_constant_s: 300, v_ref_limits_pu: [0.95, 1.05]}
            watt_var: {points: [[-100, 44], [100, -44]], olrt_s: 10}
            volt_watt: {enabled: true, points: [[1.06, 100], [1.1, 0]], olrt_s: 10}
        limits: {ramp_percent_per_s: 10, schedule_ramp_percent_per_s: 10}
        interlocks:
          overtemperature: {enabled: true, threshold: 55, hysteresis: 5, delay_s: 1, hold_s: 0, severity: derate,
                            derate_start: 50, direction: both}
        aggregator: {transport: mqtt, url: "mqtts://broker.example:8883", token_file: /t, interval_s: 1, site_id: S1,
                     ca_file: /ca, client_cert_file: /c, client_key_file: /k, spool_max_mb: 64, username: u,
                     password_file: /p, keepalive_s: 30, session_expiry_s: 86400}
        realtime: {priority: 60, lock_memory: true, cpu_dma_latency_us: 0, cpu: none}
        simulation:
          initial_soc_percent: 60
          initial_soc_percent_by_unit: {U1: 50}
          ambient_c: 25
          frequency_profile: walk
          base_hz: 50
          amplitude_hz: 0.1
          step_period_s: 30
          seed: 1
          ramp_to_hz: 50
          ramp_start_s: 0
          ramp_duration_s: 60
          trace_file: trace.csv
          hottest_cell_above_pack_c: 2
          meter_model: 203
          load: {profile: steps, base_kw: 10, levels_kw: [20], step_period_s: 30, trace_file: load.csv}
          pv: {profile: steady, base_kw: 5}
          faults:
            - {kind: bms_values, unit: U1, at_s: 1, duration_s: 1, delay_s: 0,
               bms: {soc_percent: 50, pack_voltage_v: 52, pack_current_a: 0, cell_voltage_min_v: 3.2,
                     cell_voltage_max_v: 3.3, temperature_min_c: 20, temperature_max_c: 25, charge_current_limit_a: 100,
                     discharge_current_limit_a: 100, charge_enabled: true, discharge_enabled: true,
                     protections: [overtemperature], alarms: [system_error]}}
            - {kind: bms_group_silence, at_s: 2, group: cells}
        site:
          meter:
            simulated: false
            modbus: {host: 10.0.0.2, unit_id: 2}
            protocol: register_map
            register_map: {power: {address: 1}, frequency: {address: 2}, imported_energy: {address: 3},
                           exported_energy: {address: 5}}
            import_positive: true
            stale_after_s: 3
            max_lag_s: 1
          grid_limits: {import_max_kw: 500, export_max_kw: 500}
          application: peak_shaving
          peak_shaving: {import_max_kw: 400, recharge_below_kw: 300}
          self_consumption: {target_grid_kw: 0}
          soc_reserve_percent: 10
          reactive_power:
            mode: volt_var
            profile: ieee1547_2018_cat_a
            nominal_voltage_v: 6350
            reactive_priority: false
            pf: 1
            excitation: injecting
            pf_absorb: 1
            excitation_absorb: absorbing
            var_percent: 0
            response_time_s: 10
            volt_var: {points: [[0.9, 25], [1, 0], [1, 0], [1.1, -25]], v_ref_pu: 1, olrt_s: 10, autonomous_v_ref: true,
                       v_ref_time_constant_s: 300, v_ref_limits_pu: [0.95, 1.05]}
            watt_var: {points: [[-100, 25], [100, -25]], olrt_s: 10}
            volt_watt: {enabled: false, points: [[1.06, 100], [1.1, 0]], olrt_s: 10}
        scada:
          listen: 0.0.0.0:502
          unit_id: 1
          allow_from: [10.0.0.0/24]
          writes: false
          max_hold_s: 60
          idle_timeout_s: 60
          max_clients: 32
          serial: {device: /dev/ttyS2, unit_id: 1}
        grid_operator:
          inputs:
            modbus: {host: 10.0.0.3, unit_id: 1}
            function: discrete_inputs
            active: high
            debounce_ms: 100
            poll_ms: 200
            lost_after_s: 3
            contacts: [{input: 0, limit_percent: 0}]
        iec104:
          agc: {expiry_s: 12, upper_limit_kw: 50, lower_limit_kw: -50}
          listen: 127.0.0.1:2404
          common_address: 1
          t0_s: 30
          t1_s: 15
          t2_s: 10
          t3_s: 20
          k: 12
          w: 8
          time_zone_offset_minutes: 0
          max_command_delay_s: 10
          select_timeout_s: 10
          max_connections: 8
          event_queue: 1000
          groups: [{name: sldc, allow_from: [10.0.0.5], commands: [agc]}]
          points: [{signal: net_mw, ioa: 1101, deadband: 0.002}]
          tls:
            cert_file: /etc/bessd/iec104/bessd.pem
            key_file: /etc/bessd/iec104/bessd.key
            ca_file: /etc/bessd/iec104/ca.pem
            allow_certificates: []
            crl_file: /etc/bessd/iec104/crl.pem
            handshake_timeout_s: 10
        ieee2030_5: {server: "https://sep2.example/dcap", discovery: device_capability, cert_file: /c, key_file: /k, ca_file: /ca,
                     allow_gcm: false, poll_s: 300, post_s: 300, registration: in_band, pin: "111115",
                     connection_point_id: NMI1, timeout_s: 10, pen: 40732}
        schedule: {block_s: 900, fallback: zero, revision_gate_blocks: 6, revision_gate_align: 2}
        optimiser:
          enabled: true
          horizon_blocks: 96
          time_zone: Asia/Kolkata
          forecast_file: /var/lib/bessd/forecast.csv
          wear_per_kwh: 0.5
          demand_charge_per_kw: 300
          demand_threshold_kw: 80
          value_end_per_kwh: 4
          end_soc_percent: 50
          efficiency: {charge: 0.96, discharge: 0.94}
          tariff:
            weekdays: [{from: "00:00", to: "24:00", import_per_kwh: 6, export_per_kwh: 3}]
            weekends: [{from: "00:00", to: "24:00", import_per_kwh: 5, export_per_kwh: 2}]
        """

    @Test("each section's decoder reads exactly the keys it declares, and every section is declared")
    func declaredKeys() {
        let read = ConfigLoader.keysRead(Self.everySection, file: "every-section.yaml")
        let sections = ConfigKeys.all.map(\.section)
        #expect(Set(sections).count == sections.count, "a section is declared twice")
        #expect(Set(read.keys).subtracting(sections).isEmpty, "sections read but not in ConfigKeys.all")
        for keys in ConfigKeys.all {
            let declared = Set(keys.names)
            let got = read[keys.section] ?? []
            #expect(declared.count == keys.names.count, "\(keys.section) declares a key twice")
            #expect(got.subtracting(declared).isEmpty, "\(keys.section) reads \(got.subtracting(declared).sorted()), undeclared")
            #expect(declared.subtracting(got).isEmpty, "\(keys.section) declares \(declared.subtracting(got).sorted()), never read")
        }
    }
}
