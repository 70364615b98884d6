import ArgumentParser
import AsyncHTTPClient
import AttestKit
import AttestKitApple
import AttestKitServer
import Crypto
import Foundation
import SwiftASN1
import X509

/// `attestkit receipt refresh`: trade an App Attest receipt with Apple for a new one and its risk metric.
struct ReceiptCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "receipt",
        abstract: "Exchange App Attest receipts with Apple for the fraud risk metric.",
        subcommands: [Refresh.self]
    )

    /// `refresh`: one exchange.
    struct Refresh: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Trade a stored receipt for a new RECEIPT and print its fields and risk metric.",
            discussion: """
                --receipt is the raw receipt or its Base64 text (an ATTEST receipt from an attestation, or a \
                RECEIPT from a previous exchange). It is verified first, which gives the App ID and key the new \
                receipt must match; the new one is verified before it is printed (and written with --out, Base64). \
                Before the receipt's Not Before Apple answers 304: 'refreshed: false' is printed and the exit code is 0. \
                The Apple key and the exchange's URL are the settings of attestkit serve: the flags, else \
                ATTESTKIT_APPLE_KEY_FILE, ATTESTKIT_APPLE_KEY_ID, ATTESTKIT_APPLE_TEAM_ID, \
                ATTESTKIT_APPLE_RECEIPT_URL and ATTESTKIT_APPLE_TIMEOUT, else the apple section of --config. The \
                exchange is the receipt's own environment's unless --environment says otherwise. The answer \
                prints as 'name: value' lines, or with --json as one JSON object, in the API's field names \
                (refreshed, receiptType, appId, keyId, environment, riskMetric, createdAt, notBefore, expiresAt; \
                retryAfter when not modified; times as RFC 3339 with milliseconds).
                """)

        @Option(name: .long, help: "The receipt file: raw bytes or Base64.")
        var receipt: String

        @Option(name: .long, help: "Write the new receipt here, Base64.")
        var out: String?

        @Flag(name: .long, help: "Print the answer as one line of JSON, in the API's field names.")
        var json = false

        @OptionGroup var apple: AppleOptions
        @OptionGroup var roots: RootOptions

        func run() async throws {
            let bytes = try readReceipt()
            let anchor = try roots.anchors().receipt
            let stored: Receipt
            do {
                stored = try await ReceiptVerifier(anchor: anchor).verify(
                    bytes, appID: try Self.appID(in: bytes), keyID: try Self.keyID(in: bytes), maximumAge: nil)
            } catch {
                throw AppleCommandFailure("the receipt to refresh does not verify: \(error)")
            }
            let appID = try AppID(stored.appID)
            let keyID = try Self.keyID(in: bytes)
            let settings = try await apple.apple()
            let tokens = try settings.tokenProvider()
            guard let environment = apple.chosenEnvironment ?? Self.environment(of: stored) else {
                throw AppleCommandFailure("the receipt names no environment: give --environment")
            }
            let configuration = settings.receiptExchangeConfiguration(
                environment: environment, receiptAnchor: anchor, leeway: 300)
            let result = try await HTTPClient.withHTTPClient(configuration: AppleOptions.httpConfiguration) {
                http in
                try await ReceiptExchangeClient(configuration: configuration, tokens: tokens, httpClient: http)
                    .exchange(bytes, appID: appID, keyID: keyID)
            }
            let answer: ReceiptRefreshAnswer
            switch result {
            case .refreshed(let receipt):
                answer = ReceiptRefreshAnswer(refreshed: receipt, keyID: keyID)
                if let out {
                    try Data(Base64.encode(receipt.bytes).utf8).write(to: URL(fileURLWithPath: out))
                }
            case .notModified(let retryAfter):
                answer = ReceiptRefreshAnswer(notModifiedUntil: retryAfter)
            }
            if json {
                try AppleOptions.printJSON(answer)
            } else {
                answer.printText()
                if case .refreshed = result, let out { print("wrote the new receipt to \(out)") }
            }
        }

        /// The environment a receipt names (field 7: `production`, or `sandbox` for development).
        private static func environment(of receipt: Receipt) -> AppAttestEnvironment? {
            switch receipt.environment {
            case "production": .production
            case "sandbox", "development": .development
            default: nil
            }
        }

        /// The file's receipt: raw BER, or Base64 text.
        private func readReceipt() throws -> [UInt8] {
            InspectCommand.decodeIfText(Array(try InputFile.read(receipt)))
        }

        /// The App ID the receipt names (read unverified; the verification that follows checks it).
        private static func appID(in bytes: [UInt8]) throws -> AppID {
            try AppID(try Receipt.parseUnverified(bytes).1.appID)
        }

        /// The key identifier of the receipt's attested certificate (read unverified; checked by verification).
        private static func keyID(in bytes: [UInt8]) throws -> KeyID {
            let der = try Receipt.parseUnverified(bytes).1.attestedCertificateDER
            guard let certificate = try? Certificate(derEncoded: der),
                let key = P256.Signing.PublicKey(certificate.publicKey)
            else {
                throw AppleCommandFailure("the receipt's attested certificate holds no P-256 key")
            }
            return KeyID(publicKey: key)
        }
    }
}
