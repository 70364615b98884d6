import AttestKit
@testable import AttestKitClient
import AttestKitClientSimulator
import AttestKitWire
import Foundation
import Testing
#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A device whose clock is off the service's (set by hand, no network time): the service's expiry times are counted
/// on the device's clock from the answers' `Date` header, so that a clock ahead neither throws fresh challenges and
/// tokens away nor loops, and a clock behind does not keep a challenge the service no longer takes.
@Suite("AttestKitClient with the device's clock off the service's (simulated device, scripted service)")
struct ServiceClockTests {
    typealias App = AppleRulesTests.App

    /// An app whose service's clock is `offset` seconds from the device's.
    static func app(serviceAhead offset: TimeInterval) -> App {
        let app = App()
        let clock = app.clock
        app.service.serviceClock { clock.now.addingTimeInterval(offset) }
        return app
    }

    /// `body`'s result, or a failure when it has not answered within `seconds` (answered, not fast: a client that
    /// loops would never answer).
    static func answered<Value: Sendable>(
        within seconds: Int = 30, _ body: @escaping @Sendable () async throws -> Value
    ) async throws -> Value {
        try await withThrowingTaskGroup(of: Value?.self) { group in
            group.addTask { try await body() }
            group.addTask {
                try await Task.sleep(for: .seconds(seconds))
                return nil
            }
            defer { group.cancelAll() }
            guard let first = try await group.next(), let value = first else {
                throw AttestKitClientError(.unavailable, reason: "no answer within \(seconds) s")
            }
            return value
        }
    }

    @Test("a device clock an hour ahead attests with its first challenge, once")
    func clockAhead() async throws {
        let app = Self.app(serviceAhead: -3_600)
        let manager = app.manager
        let keyID = try await Self.answered { try await manager.attestedKeyID() }
        #expect(app.keyID == keyID)
        #expect(app.service.challenges("attest") == 1)
        #expect(app.provider.calls.generateKey == 1 && app.provider.calls.attestKey == 1)
        #expect(app.service.registrationAttempts.count == 1)
        // The challenge's life, counted on the device's clock from the answer: the service's 300 s, less the
        // second the Date header cannot tell.
        #expect(try await app.order() == .appAttest)
    }

    @Test("a device clock ahead keeps an attestation whose post was lost, and sends it again")
    func clockAheadKeepsPendingAttestation() async throws {
        let app = Self.app(serviceAhead: -3_600)
        app.service.scriptRegistrations([.drop])
        let lost = await #expect(throws: AttestKitClientError.self) {
            try await app.manager.attestKey(appData: ClientDataTests.appData)
        }
        #expect(lost?.code == .unavailable)
        app.clock.advance(10)
        let answer = try await app.manager.attestKey(appData: ClientDataTests.appData)
        let sent = app.service.registrationAttempts
        #expect(sent.count == 2 && Set(sent.map(\.attestation)).count == 1 && sent[1].keyID == answer.keyId)
        #expect(app.provider.calls.generateKey == 1 && app.provider.calls.attestKey == 1)
    }

    @Test("a device clock an hour behind fetches a new challenge once the kept one's life is over")
    func clockBehind() async throws {
        let app = Self.app(serviceAhead: 3_600)
        app.provider.fail(.attestKey, with: .serverUnavailable, times: 1)
        #expect(try await app.order() == .deviceCheck)
        let kept = try #require(await app.manager.keyState)
        #expect(kept.stage == .generated)
        // By the device's clock, the challenge expires 299 s after its answer (not an hour and 300 s later).
        let expiry = try #require(kept.challengeExpiresAt)
        #expect(abs(expiry.timeIntervalSince(app.clock.now) - 299) < 2)

        // Within its life, Apple's retry uses the same client data hash; after it, a new challenge.
        app.clock.advance(400)
        #expect(try await app.order() == .appAttest)
        #expect(app.service.challenges("attest") == 2)
        let keyID = try #require(kept.keyID)
        let hashes = app.provider.attestationHashes(for: keyID)
        #expect(hashes.count == 2 && hashes[0] != hashes[1])
        #expect(app.provider.calls.generateKey == 1)
    }

    @Test("a session token is kept by the device's clock: ahead, it is used and cached; behind, refreshed in time")
    func sessionTokens() async throws {
        for offset: TimeInterval in [-3_600, 3_600] {
            let app = Self.app(serviceAhead: offset)
            let clock = app.clock
            // The service's token expires 300 s after the service's time.
            app.service.answerTokens { number in
                .token("eyJhbGciOiJFUzI1NiJ9.eyJzdWIiOiJrIn0.c2lnbmF0dXJl\(number)", clock.now + offset + 300)
            }
            let first = try await app.client.sessionToken()
            #expect(abs(first.expiresAt.timeIntervalSince(clock.now) - 299) < 2)
            app.clock.advance(200)
            #expect(try await app.client.sessionToken() == first)
            #expect(app.service.tokenRequests.count == 1)
            app.clock.advance(45)  // 54 s left by the service's clock: inside the minute's refresh margin
            #expect(try await app.client.sessionToken() != first)
            #expect(app.service.tokenRequests.count == 2)
        }
    }

    @Test("the Date header: an IMF-fixdate gives the lifetime from the end of its second; anything else, none")
    func lifetimeFromDateHeader() throws {
        let url = try #require(URL(string: "https://attest.example/v1/challenges"))
        func response(_ date: String?) throws -> HTTPURLResponse {
            try #require(
                HTTPURLResponse(
                    url: url, statusCode: 201, httpVersion: "HTTP/1.1", headerFields: date.map { ["Date": $0] }))
        }
        let expiresAt = Date(timeIntervalSince1970: 784_111_777 + 300)  // Sun, 06 Nov 1994 08:49:37 GMT + 300 s
        func lifetime(_ date: String?) throws -> TimeInterval? {
            ServiceClock.lifetime(until: expiresAt, answeredBy: try response(date))
        }
        #expect(try lifetime("Sun, 06 Nov 1994 08:49:37 GMT") == 299)
        #expect(try lifetime("Sun, 06 Nov 1994 08:59:37 GMT") == 0)
        for bad in [nil, "", "Mon, 06 Nov 1994 08:49:37 GMT", "Sunday, 06-Nov-94 08:49:37 GMT", "784111777"] {
            #expect(try lifetime(bad) == nil)
        }
    }
}
