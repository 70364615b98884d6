import ArgumentParser
import AttestKit
import Foundation

/// `attestkit inspect`: a readable dump of an attestation, assertion or receipt. Nothing is verified.
struct InspectCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "inspect",
        abstract: "Show what an attestation, assertion or receipt contains (nothing is verified).",
        discussion: """
            The input is the raw object or its Base64 / base64url text. The kind is recognised from the \
            bytes: a CBOR map with 'fmt' is an attestation, one with 'signature' an assertion, a DER/BER \
            SEQUENCE a receipt.
            """
    )

    @Argument(help: "The file to read, or - for standard input.")
    var file: String

    @Flag(name: .long, help: "Print JSON instead of text.")
    var json = false

    /// The largest input read.
    static let maximumBytes = 1 << 20

    func run() async throws {
        // At most one byte past the limit is read: an endless pipe or a huge file is refused, never held.
        let raw = try InputFile.read(file, limit: Self.maximumBytes)
        let bytes = Self.decodeIfText(Array(raw))
        let node = try Inspector.inspect(bytes)
        print(json ? try node.json() : node.text())
    }

    /// Base64 text (with or without line breaks) is decoded; anything else is taken as raw bytes.
    static func decodeIfText(_ bytes: [UInt8]) -> [UInt8] {
        let text = String(decoding: bytes, as: UTF8.self).filter { !$0.isWhitespace }
        guard !text.isEmpty,
            text.utf8.count == bytes.filter({ !($0 == 0x0A || $0 == 0x0D || $0 == 0x20 || $0 == 0x09) }).count,
            let decoded = Base64.decode(text)
        else { return bytes }
        return decoded
    }
}
