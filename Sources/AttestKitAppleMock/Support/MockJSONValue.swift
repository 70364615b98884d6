/// One value of a JSON object, told apart strictly: `true` is not `1`, `1.5` is not an integer, `"1"` is not a
/// number. Objects, arrays and null are ``other``.
enum MockJSONValue: Decodable, Sendable, Hashable {
    case bool(Bool)
    case integer(Int64)
    case number(Double)
    case string(String)
    case other

    init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if let value = try? container.decode(Bool.self) {
            self = .bool(value)
        } else if let value = try? container.decode(Int64.self) {
            self = .integer(value)
        } else if let value = try? container.decode(Double.self) {
            self = .number(value)
        } else if let value = try? container.decode(String.self) {
            self = .string(value)
        } else {
            self = .other
        }
    }

    /// The string, if this is one.
    var string: String? {
        if case .string(let value) = self { return value }
        return nil
    }
}
