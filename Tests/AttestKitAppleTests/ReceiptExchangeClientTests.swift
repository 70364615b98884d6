import AttestKit
import AttestKitApple
import AttestKitAppleMock
import AttestKitTesting
import Crypto
import Foundation
import Testing

/// The receipt exchange over HTTP against the mock: a new verified `RECEIPT` with the risk metric, 304 before Not
/// Before, Apple's 30 days, environments, tokens of another team, and new receipts that must not be trusted.
@Suite struct ReceiptExchangeClientTests {
    @Test func anAttestReceiptIsRefreshedThenNotModifiedUntilNotBefore() async throws {
        let clock = TestTime()
        let mock = try AppleFixture.mock(clock, riskMetric: 7)
        try await mock.withRunning { baseURL in
            let client = try AppleFixture.exchange(baseURL, tokens: try AppleFixture.tokens(clock), clock: clock)
            let (keyID, attest) = try AppleFixture.attestReceipt(clock)
            clock.advance(by: 3_600)

            let first = try #require(try await client.exchange(attest, appID: AppleFixture.appID, keyID: keyID).receipt)
            #expect(first.type == .receipt)
            #expect(first.riskMetric == 7)
            #expect(first.appID == AppleFixture.appID.description)
            #expect(first.environment == "sandbox")
            #expect(first.creationTime == clock.now())
            let notBefore = try #require(first.notBefore)
            #expect(notBefore == clock.now().addingTimeInterval(86_400))

            // The new receipt cannot be exchanged before its Not Before: keep it, retry after.
            #expect(
                try await client.exchange(first.bytes, appID: AppleFixture.appID, keyID: keyID)
                    == .notModified(retryAfter: notBefore))
            clock.advance(by: 86_399)
            #expect(
                try await client.exchange(first.bytes, appID: AppleFixture.appID, keyID: keyID)
                    == .notModified(retryAfter: notBefore))
            clock.advance(by: 1)
            let second = try #require(
                try await client.exchange(first.bytes, appID: AppleFixture.appID, keyID: keyID).receipt)
            #expect(second.creationTime == notBefore)
            #expect(second.bytes != first.bytes)
            #expect(await mock.state.requestCount(.attestationData) == 4)
        }
    }

    @Test func aReceiptTheMockDoesNotKnowHasNoData() async throws {
        let clock = TestTime()
        try await AppleFixture.mock(clock).withRunning { baseURL in
            let client = try AppleFixture.exchange(baseURL, tokens: try AppleFixture.tokens(clock), clock: clock)
            let device = SimulatedDevice(
                apple: AppleFixture.apple, configuration: .init(appID: AppleFixture.appID, environment: .development))
            let keyID = device.generateKey()
            _ = try device.attestKey(keyID, clientDataHash: [1, 2, 3], fault: .strangerReceiptSigner, at: clock.now())
            let stranger = try #require(device.receipt(for: keyID))
            let error = await AppleFixture.failure {
                _ = try await client.exchange(stranger, appID: AppleFixture.appID, keyID: keyID)
            }
            #expect(error?.code == .noData)
            #expect(error?.status == 404)
            #expect(error?.appleText == "No Data Found")
            #expect(error?.attempts == 1)
        }
    }

    @Test func dataIsKeptThirtyDaysAfterTheAttestation() async throws {
        let clock = TestTime()
        try await AppleFixture.mock(clock).withRunning { baseURL in
            let client = try AppleFixture.exchange(baseURL, tokens: try AppleFixture.tokens(clock), clock: clock)
            let (keyID, attest) = try AppleFixture.attestReceipt(clock)
            clock.advance(by: 29 * 86_400)
            let refreshed = try #require(
                try await client.exchange(attest, appID: AppleFixture.appID, keyID: keyID).receipt)
            clock.advance(by: 2 * 86_400)
            let error = await AppleFixture.failure {
                _ = try await client.exchange(refreshed.bytes, appID: AppleFixture.appID, keyID: keyID)
            }
            #expect(error?.code == .noData)
        }
    }

    @Test func aReceiptOfTheOtherEnvironmentIsRefused() async throws {
        let clock = TestTime()
        try await AppleFixture.mock(clock, environment: .production).withRunning { baseURL in
            let client = try AppleFixture.exchange(
                baseURL, tokens: try AppleFixture.tokens(clock), clock: clock, environment: nil)
            let (keyID, attest) = try AppleFixture.attestReceipt(clock, environment: .development)
            let error = await AppleFixture.failure {
                _ = try await client.exchange(attest, appID: AppleFixture.appID, keyID: keyID)
            }
            #expect(error?.code == .incorrectEnvironment)
            #expect(error?.appleText == "Incorrect Environment")
        }
    }

    @Test func bytesThatAreNotAReceiptAreABadPayload() async throws {
        let clock = TestTime()
        try await AppleFixture.mock(clock).withRunning { baseURL in
            let client = try AppleFixture.exchange(baseURL, tokens: try AppleFixture.tokens(clock), clock: clock)
            let (keyID, _) = try AppleFixture.attestReceipt(clock)
            let error = await AppleFixture.failure {
                _ = try await client.exchange([0x30, 0x03, 1, 2, 3], appID: AppleFixture.appID, keyID: keyID)
            }
            #expect(error?.code == .badPayload)
            #expect(error?.status == 400)
        }
    }

    @Test func aTokenOfAnotherTeamThanTheReceiptsIsUnauthorized() async throws {
        let clock = TestTime()
        let mock = try MockAppleServer(
            configuration: .init(verificationKeyPEM: AppleFixture.publicKeyPEM, now: clock.closure),
            softwareApple: AppleFixture.apple)
        try await mock.withRunning { baseURL in
            let tokens = try AppleFixture.tokens(clock, teamID: "OTHERTEAM1")
            let client = try AppleFixture.exchange(baseURL, tokens: tokens, clock: clock)
            let (keyID, attest) = try AppleFixture.attestReceipt(clock)
            let error = await AppleFixture.failure {
                _ = try await client.exchange(attest, appID: AppleFixture.appID, keyID: keyID)
            }
            #expect(error?.code == .invalidAuthorizationToken)
            #expect(error?.appleText == "Unauthorized")
            #expect(await tokens.issuedAt == nil)
        }
    }

    @Test func aNewReceiptThatDoesNotVerifyIsRefused() async throws {
        let clock = TestTime()
        try await AppleFixture.mock(clock).withRunning { baseURL in
            let tokens = try AppleFixture.tokens(clock)
            let (keyID, attest) = try AppleFixture.attestReceipt(clock)
            let otherKey = KeyID(publicKey: P256.Signing.PrivateKey().publicKey)
            let otherApp = try AppID("\(AppleFixture.teamID).com.example.other")
            let cases: [(ReceiptExchangeClient, AppID, KeyID, String)] = [
                (
                    try AppleFixture.exchange(
                        baseURL, tokens: tokens, clock: clock, anchor: AppleFixture.apple.trustAnchors.attestation),
                    AppleFixture.appID, keyID, "receipt_certificate_untrusted"
                ),
                (
                    try AppleFixture.exchange(baseURL, tokens: tokens, clock: clock), AppleFixture.appID, otherKey,
                    "receipt_key_mismatch"
                ),
                (
                    try AppleFixture.exchange(baseURL, tokens: tokens, clock: clock), otherApp, keyID,
                    "receipt_app_id_mismatch"
                ),
                (
                    try AppleFixture.exchange(baseURL, tokens: tokens, clock: clock, environment: .production),
                    AppleFixture.appID, keyID, "environment_mismatch"
                ),
                (
                    try AppleFixture.exchange(
                        baseURL, tokens: tokens, clock: TestTime(clock.now().addingTimeInterval(3_600))),
                    AppleFixture.appID, keyID, "receipt_too_old"
                ),
            ]
            for (client, appID, key, code) in cases {
                let error = await AppleFixture.failure {
                    _ = try await client.exchange(attest, appID: appID, keyID: key)
                }
                #expect(error?.code == .receiptInvalid, "\(code)")
                #expect(error?.reason.contains(code) == true, "\(error?.reason ?? "")")
                #expect(error?.status == 200)
            }
        }
    }

    @Test func anAnswerThatIsNotBase64IsUnexpected() async throws {
        let clock = TestTime()
        let fault = MockAppleFault(.status(200, text: "%%% not base64 %%%"), endpoint: .attestationData)
        try await AppleFixture.mock(clock, faults: [fault]).withRunning { baseURL in
            let client = try AppleFixture.exchange(baseURL, tokens: try AppleFixture.tokens(clock), clock: clock)
            let (keyID, attest) = try AppleFixture.attestReceipt(clock)
            let error = await AppleFixture.failure {
                _ = try await client.exchange(attest, appID: AppleFixture.appID, keyID: keyID)
            }
            #expect(error?.code == .unexpectedResponse)
            #expect(error?.appleText == nil)
        }
    }

    @Test func aServiceUnavailableAndADroppedConnectionAreRetried() async throws {
        let clock = TestTime()
        let faults = [
            MockAppleFault(.status(503), endpoint: .attestationData), MockAppleFault(.drop, endpoint: .attestationData),
        ]
        let mock = try AppleFixture.mock(clock, faults: faults)
        try await mock.withRunning { baseURL in
            let client = try AppleFixture.exchange(baseURL, tokens: try AppleFixture.tokens(clock), clock: clock)
            let (keyID, attest) = try AppleFixture.attestReceipt(clock)
            let result = try await client.exchange(attest, appID: AppleFixture.appID, keyID: keyID)
            #expect(result.receipt?.type == .receipt)
            #expect(await mock.state.requestCount(.attestationData) == 3)
        }
    }

    @Test func theResultDescriptionLeavesTheBytesOut() async throws {
        let clock = TestTime()
        try await AppleFixture.mock(clock).withRunning { baseURL in
            let client = try AppleFixture.exchange(baseURL, tokens: try AppleFixture.tokens(clock), clock: clock)
            let (keyID, attest) = try AppleFixture.attestReceipt(clock)
            let result = try await client.exchange(attest, appID: AppleFixture.appID, keyID: keyID)
            let receipt = try #require(result.receipt)
            #expect("\(result)".hasPrefix("refreshed(Receipt(type: RECEIPT"))
            #expect(!"\(result)".contains(receipt.token))
            #expect(!"\(result)".contains(Data(receipt.bytes).base64EncodedString().prefix(40)))
        }
    }
}
