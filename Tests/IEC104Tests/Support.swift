import BessBase
import ControlCore
import IEC104
import Testing

/// Octets from hex text with any spaces: `"68 04 07 00 00 00"`.
func hex(_ text: String) -> [UInt8] {
    let digits = text.filter { !$0.isWhitespace }
    precondition(digits.count % 2 == 0, "odd hex text \(text)")
    var bytes: [UInt8] = []
    var index = digits.startIndex
    while index < digits.endIndex {
        let next = digits.index(index, offsetBy: 2)
        bytes.append(UInt8(digits[index..<next], radix: 16)!)
        index = next
    }
    return bytes
}

/// The code of the IEC104Error `work` throws, or nil when it throws none (any other error fails the test).
func code(_ work: () throws -> Void) -> IEC104Error.Code? {
    do {
        try work()
        return nil
    } catch let error as IEC104Error {
        return error.code
    } catch {
        Issue.record("not an IEC104Error: \(error)")
        return nil
    }
}
