/// Text from an untrusted object (a recorded bundle, an attestation or receipt being inspected) made safe to print on
/// a terminal.
enum TerminalText {
    /// `text` with every control character (escape sequences, line breaks, `DEL`, C1 controls) and format
    /// character written as `\u{…}`, so that crafted input cannot move the cursor, retitle the terminal or add lines
    /// to a report.
    static func escaped(_ text: String) -> String {
        var shown = ""
        for scalar in text.unicodeScalars {
            if scalar.properties.generalCategory == .control || scalar.properties.generalCategory == .format {
                shown += "\\u{\(String(scalar.value, radix: 16))}"
            } else {
                shown.unicodeScalars.append(scalar)
            }
        }
        return shown
    }
}
