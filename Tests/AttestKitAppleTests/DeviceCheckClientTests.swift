import AttestKit
import AttestKitApple
import AttestKitAppleMock
import Crypto
import Foundation
import Testing

/// The DeviceCheck client over real HTTP against the mock: the bits' life cycle, Apple's quirks, and how each
/// rejection of the mock comes back typed.
@Suite struct DeviceCheckClientTests {
    @Test func bothEnvironmentsUseApplesURLs() throws {
        #expect(
            DeviceCheckClient.Configuration(environment: .development).baseURL
                == "https://api.development.devicecheck.apple.com")
        #expect(
            DeviceCheckClient.Configuration(environment: .production).baseURL == "https://api.devicecheck.apple.com")
        #expect(DeviceCheckClient.Configuration(baseURL: "http://127.0.0.1:8080/").baseURL == "http://127.0.0.1:8080")
        #expect(
            ReceiptExchangeClient.Configuration(environment: .development).url
                == "https://data-development.appattest.apple.com/v1/attestationData")
        #expect(
            ReceiptExchangeClient.Configuration(environment: .production).url
                == "https://data.appattest.apple.com/v1/attestationData")
        #expect(ReceiptExchangeClient.Configuration(environment: .production).environment == .production)
    }

    @Test func bitsAreNotFoundUntilSetThenKeptPerDeviceWithTheMonth() async throws {
        let clock = TestTime()
        try await AppleFixture.mock(clock).withRunning { baseURL in
            let client = AppleFixture.deviceCheck(baseURL, tokens: try AppleFixture.tokens(clock), clock: clock)
            let device = AppleFixture.deviceToken()
            let other = AppleFixture.deviceToken()

            let never = try await client.query(deviceToken: device)
            #expect(never == .notFound)
            #expect(!never.isFound && !never.bit0 && !never.bit1 && never.lastUpdateTime == nil)

            try await client.update(deviceToken: device, bit0: true)
            #expect(
                try await client.query(deviceToken: device)
                    == .bits(bit0: true, bit1: false, lastUpdateTime: DeviceCheckMonth("2026-04")))
            #expect(try await client.query(deviceToken: other) == .notFound)

            clock.advance(by: 30 * 86_400)  // May; the token is renewed on the way
            try await client.update(deviceToken: device, bit1: true)
            #expect(
                try await client.query(deviceToken: device)
                    == .bits(bit0: true, bit1: true, lastUpdateTime: DeviceCheckMonth("2026-05")))

            try await client.update(deviceToken: device, bit0: false, bit1: false)
            let cleared = try await client.query(deviceToken: device)
            #expect(cleared.isFound && !cleared.bit0 && !cleared.bit1)
            try await client.validate(deviceToken: device)
        }
    }

    @Test(arguments: ["", "not base64!", "QUJD\nREVG", "QUJD REVG", "QUJDREVG=", "QUJD-_Ez"])
    func malformedDeviceTokensAreBadDeviceTokens(_ deviceToken: String) async throws {
        let clock = TestTime()
        try await AppleFixture.mock(clock).withRunning { baseURL in
            let client = AppleFixture.deviceCheck(baseURL, tokens: try AppleFixture.tokens(clock), clock: clock)
            for call in ["query", "update", "validate"] {
                let error = await AppleFixture.failure {
                    switch call {
                    case "query": _ = try await client.query(deviceToken: deviceToken)
                    case "update": try await client.update(deviceToken: deviceToken, bit0: true)
                    default: try await client.validate(deviceToken: deviceToken)
                    }
                }
                #expect(error?.code == .badDeviceToken, "\(call)")
                #expect(error?.status == 400)
                #expect(error?.appleText == "Missing or incorrectly formatted device token payload")
                #expect(error?.attempts == 1)
            }
        }
    }

    @Test func anUpdateWithoutBitsIsBadBits() async throws {
        let clock = TestTime()
        try await AppleFixture.mock(clock).withRunning { baseURL in
            let client = AppleFixture.deviceCheck(baseURL, tokens: try AppleFixture.tokens(clock), clock: clock)
            let error = await AppleFixture.failure { try await client.update(deviceToken: AppleFixture.deviceToken()) }
            #expect(error?.code == .badBits)
            #expect(error?.appleText == "Missing or incorrectly formatted bits")
        }
    }

    @Test func aTokenOfAnotherKeyIsUnverifiableAndDropsTheCachedToken() async throws {
        let clock = TestTime()
        try await AppleFixture.mock(clock).withRunning { baseURL in
            let tokens = try AppleFixture.tokens(clock, keyPEM: P256.Signing.PrivateKey().pemRepresentation)
            let client = AppleFixture.deviceCheck(baseURL, tokens: tokens, clock: clock)
            let error = await AppleFixture.failure {
                _ = try await client.query(deviceToken: AppleFixture.deviceToken())
            }
            #expect(error?.code == .invalidAuthorizationToken)
            #expect(error?.status == 401)
            #expect(error?.appleText == "Unable to verify authorization token")
            #expect(await tokens.issuedAt == nil)
        }
    }

    @Test(arguments: [("OTHERKEY12", AppleFixture.teamID), (AppleFixture.keyID, "OTHERTEAM1")])
    func anotherKeyIDOrTeamIsUnverifiable(keyID: String, teamID: String) async throws {
        let clock = TestTime()
        try await AppleFixture.mock(clock).withRunning { baseURL in
            let tokens = try AppleFixture.tokens(clock, keyID: keyID, teamID: teamID)
            let client = AppleFixture.deviceCheck(baseURL, tokens: tokens, clock: clock)
            let error = await AppleFixture.failure {
                try await client.validate(deviceToken: AppleFixture.deviceToken())
            }
            #expect(error?.code == .invalidAuthorizationToken)
        }
    }

    @Test func aTokenOlderThanAnHourIsExpired() async throws {
        let clock = TestTime()
        try await AppleFixture.mock(clock).withRunning { baseURL in
            let lagging = TestTime(AppleFixture.time.addingTimeInterval(-3_601))
            let client = AppleFixture.deviceCheck(baseURL, tokens: try AppleFixture.tokens(lagging), clock: clock)
            let error = await AppleFixture.failure {
                try await client.validate(deviceToken: AppleFixture.deviceToken())
            }
            #expect(error?.code == .authorizationTokenExpired)
            #expect(error?.status == 401)
        }
    }

    @Test func aTimestampADayOffIsBadTimestamp() async throws {
        let clock = TestTime()
        try await AppleFixture.mock(clock).withRunning { baseURL in
            let stale = TestTime(AppleFixture.time.addingTimeInterval(-2 * 86_400))
            let client = AppleFixture.deviceCheck(baseURL, tokens: try AppleFixture.tokens(clock), clock: stale)
            let error = await AppleFixture.failure {
                try await client.validate(deviceToken: AppleFixture.deviceToken())
            }
            #expect(error?.code == .badTimestamp)
            #expect(error?.appleText == "Missing or incorrectly formatted time stamp")
        }
    }

    @Test func oneProviderServesBothServicesWithOneToken() async throws {
        let clock = TestTime()
        try await AppleFixture.mock(clock).withRunning { baseURL in
            let tokens = try AppleFixture.tokens(clock)
            let deviceCheck = AppleFixture.deviceCheck(baseURL, tokens: tokens, clock: clock)
            let exchange = try AppleFixture.exchange(baseURL, tokens: tokens, clock: clock)
            try await deviceCheck.validate(deviceToken: AppleFixture.deviceToken())
            let issued = await tokens.issuedAt
            let (keyID, receipt) = try AppleFixture.attestReceipt(clock)
            clock.advance(by: 60)
            let result = try await exchange.exchange(receipt, appID: AppleFixture.appID, keyID: keyID)
            #expect(result.receipt?.riskMetric == 4)
            #expect(await tokens.issuedAt == issued)
        }
    }

    @Test func unexpectedQueryAnswersAreUnexpectedResponses() async throws {
        let clock = TestTime()
        let bodies = [
            "garbage", "{\"bit0\":\"yes\",\"bit1\":false}",
            "{\"bit0\":true,\"bit1\":false,\"last_update_time\":\"2026/04\"}",
        ]
        let faults = bodies.map { MockAppleFault(.status(200, text: $0), endpoint: .queryTwoBits) }
        try await AppleFixture.mock(clock, faults: faults).withRunning { baseURL in
            let client = AppleFixture.deviceCheck(baseURL, tokens: try AppleFixture.tokens(clock), clock: clock)
            for _ in bodies {
                let error = await AppleFixture.failure {
                    _ = try await client.query(deviceToken: AppleFixture.deviceToken())
                }
                #expect(error?.code == .unexpectedResponse)
                #expect(error?.status == 200)
            }
        }
    }

    @Test func bitsWithoutAMonthAndApplesOtherNotFoundTextAreRead() async throws {
        let clock = TestTime()
        let faults = [
            MockAppleFault(.status(200, text: "{\"bit0\":true,\"bit1\":true}"), endpoint: .queryTwoBits),
            MockAppleFault(.status(200, text: "Bit State Not Found\n"), endpoint: .queryTwoBits),
        ]
        try await AppleFixture.mock(clock, faults: faults).withRunning { baseURL in
            let client = AppleFixture.deviceCheck(baseURL, tokens: try AppleFixture.tokens(clock), clock: clock)
            #expect(try await client.query(deviceToken: "QUJD") == .bits(bit0: true, bit1: true, lastUpdateTime: nil))
            #expect(try await client.query(deviceToken: "QUJD") == .notFound)
        }
    }
}
