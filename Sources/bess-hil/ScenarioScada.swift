import Fieldbus
import Scada

extension ScadaImage {
    /// Writes model 704 points to the SCADA server on 127.0.0.1:`port`, one request per run of adjacent points.
    func write704(_ points: [(point: String, value: Double)], port: Int) -> String {
        guard let m = start(of: 704) else { return "failed: no scada: block" }
        var registers: [(address: Int, words: [UInt16])] = []
        for point in SunSpecTables.M704.points {
            guard let value = points.first(where: { $0.point == point.name })?.value else { continue }
            let raw = Int((value / (point.scaleFactor == "WSet_SF" || point.scaleFactor == "VarSet_SF" ? SunSpec.powerOfTen(wSF) : 1)).rounded())
            let words: [UInt16] = point.size == 2 ? [UInt16(truncatingIfNeeded: raw >> 16), UInt16(truncatingIfNeeded: raw)]
                : [UInt16(truncatingIfNeeded: raw)]
            let address = ScadaImage.base + m + point.offset
            if let last = registers.last, last.address + last.words.count == address {
                registers[registers.count - 1].words += words
            } else {
                registers.append((address, words))
            }
        }
        do {
            let client = try ModbusConnection(endpoint: .tcp(host: "127.0.0.1", port: port), unitID: 1, timeout: .seconds(1))
            defer { client.close() }
            for run in registers { try client.writeRegisters(unit: 1, at: run.address, run.words) }
            return "ok (\(registers.count) request(s))"
        } catch {
            return "refused: \(error)"
        }
    }
}
