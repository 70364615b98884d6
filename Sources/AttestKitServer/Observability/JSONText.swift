/// Tiny JSON text writer for log lines (no Foundation encoder on the logging path). Besides what JSON requires, it
/// escapes what a terminal or a log viewer would act on: DEL, the C1 controls (U+0080 to U+009F, CSI among them),
/// the line and paragraph separators and the bidirectional formatting characters, so that text from a client, a
/// database or Apple in a log line can neither move a terminal's cursor nor make the line read otherwise.
enum JSONText {
    static func string(_ value: String) -> String {
        var out = "\""
        for scalar in value.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case _ where scalar.value < 0x20 || Self.isInvisibleControl(scalar):
                let hex = String(scalar.value, radix: 16)
                out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out + "\""
    }

    /// DEL, a C1 control, U+2028 or U+2029, or a bidirectional formatting character (U+061C, U+200E, U+200F, U+202A
    /// to U+202E, U+2066 to U+2069).
    private static func isInvisibleControl(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        case 0x7F...0x9F, 0x2028, 0x2029, 0x061C, 0x200E, 0x200F, 0x202A...0x202E, 0x2066...0x2069: true
        default: false
        }
    }

    static func object(_ members: [(String, String)]) -> String {
        "{" + members.map { "\(string($0.0)):\($0.1)" }.joined(separator: ",") + "}"
    }
}
