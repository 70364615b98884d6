import AttestKitTesting
import Foundation
import Testing

@testable import AttestKit

/// The table decoder accepts exactly what the earlier decoder (normalize to standard Base64, pad, then Foundation)
/// accepted, with the same bytes.
@Suite struct Base64Tests {
    /// The earlier decoder, kept as the reference.
    static func reference(_ text: String) -> [UInt8]? {
        var normalized = String()
        var padding = 0
        for scalar in text.unicodeScalars {
            switch scalar {
            case "-": guard padding == 0 else { return nil }; normalized.unicodeScalars.append("+")
            case "_": guard padding == 0 else { return nil }; normalized.unicodeScalars.append("/")
            case "=": padding += 1; normalized.unicodeScalars.append(scalar)
            case "A"..."Z", "a"..."z", "0"..."9", "+", "/":
                guard padding == 0 else { return nil }
                normalized.unicodeScalars.append(scalar)
            default: return nil
            }
        }
        guard padding <= 2 else { return nil }
        let unpadded = normalized.utf8.count - padding
        guard unpadded % 4 != 1 else { return nil }
        if padding > 0 { guard normalized.utf8.count % 4 == 0 else { return nil } }
        let remainder = normalized.utf8.count % 4
        if remainder != 0 { normalized += String(repeating: "=", count: 4 - remainder) }
        return Data(base64Encoded: normalized).map { Array($0) }
    }

    @Test(
        "edge cases",
        arguments: [
            "", "=", "==", "===", "====", "Q", "QQ", "QQ=", "QQ==", "QR==", "QQ===", "QUI", "QUI=", "QUJ=", "QUJD",
            "QUJD=", "QUJD==", "QUJDRA", "QUJDRA==", "QQ=-", "=QQ=", "Q=Q=", "-_-_", "+/+/", "a b=", "QUJD\n", "é===",
            "QUJDRA=", "Zm9vYmFy", "Zm9vYmE", "Zm9vYg", "Zm9vYg=", "Zm9vYg==",
        ])
    func edgeCases(text: String) {
        #expect(Base64.decode(text) == Self.reference(text), "\(text)")
        #expect(Base64.decode(Substring(text)) == Self.reference(text), "\(text)")
    }

    @Test("random texts over both alphabets, padding and junk decode as the reference does")
    func randomTexts() {
        var generator = SeededGenerator(seed: 19)
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/-_")
        let junk: [Character] = ["=", "=", "=", " ", "\n", ".", "é", "\0"]
        var accepted = 0
        for _ in 0..<20_000 {
            let length = Int.random(in: 0...14, using: &generator)
            var text = String((0..<length).map { _ in alphabet.randomElement(using: &generator) ?? "A" })
            if Bool.random(using: &generator) {
                let count = Int.random(in: 0...3, using: &generator)
                text += String(repeating: "=", count: count)
            }
            if Int.random(in: 0..<8, using: &generator) == 0, !text.isEmpty {
                var characters = Array(text)
                characters[Int.random(in: 0..<characters.count, using: &generator)] =
                    junk.randomElement(using: &generator) ?? "="
                text = String(characters)
            }
            let decoded = Base64.decode(text)
            #expect(decoded == Self.reference(text), "\(text)")
            if decoded != nil { accepted += 1 }
        }
        // Both outcomes were exercised.
        #expect(accepted > 1_000 && accepted < 19_000, "\(accepted)")
    }

    @Test("round trip of random bytes, padded and unpadded, standard and URL alphabets")
    func roundTrip() {
        var generator = SeededGenerator(seed: 7)
        for length in 0..<200 {
            let bytes = (0..<length).map { _ in UInt8.random(in: 0...255, using: &generator) }
            let standard = Base64.encode(bytes)
            #expect(Base64.decode(standard) == bytes)
            let url = standard.replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            #expect(Base64.decode(url.replacingOccurrences(of: "=", with: "")) == bytes)
        }
    }
}
