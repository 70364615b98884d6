import AttestKit
import AttestKitStore
import AttestKitTesting
import Foundation
import Testing

/// Bad input is refused before it reaches SQL, the same way on every backend; text that looks like SQL is
/// stored as text.
@Suite("Input validation")
struct InputValidationTests {
    let t0 = TestKeys.t0

    @Test(
        "challenge identifiers are 22 canonical base64url characters",
        arguments: [
            "", "AAAAAAAAAAAAAAAAAAAAA", "AAAAAAAAAAAAAAAAAAAAAAA", "AAAAAAAAAAAAAAAAAAAA+A", "AAAAAAAAAAAAAAAAAAAA/A",
            "AAAAAAAAAAAAAAAAAAAAA=", "AAAAAAAAAAAAAAAAAAAAAB", "AAAAAAAAAAAAAAAAAAAA A", "AAAAAAAAAAAAAAAAAAAA'A",
            "AAAAAAAAAAAAAAAAAAAAÄ",
        ])
    func challengeIDs(text: String) {
        #expect(throws: StoreError.invalidInput) { _ = try ChallengeID(string: text) }
    }

    @Test("a challenge identifier round-trips through its text")
    func challengeIDRoundTrip() throws {
        var generator = SplitMix64(seed: 3)
        for _ in 0..<100 {
            let id = ChallengeID.random(using: &generator)
            #expect(id.string.utf8.count == 22)
            #expect(try ChallengeID(string: id.string) == id)
        }
        #expect(throws: StoreError.invalidInput) { _ = try ChallengeID(bytes: [UInt8](repeating: 0, count: 15)) }
    }

    @Test("registrations with a malformed key, receipt, version or time are refused")
    func registrations() throws {
        let key = TestKeys.key()
        let other = TestKeys.key()
        func make(
            keyID: KeyID? = nil, publicKey: [UInt8]? = nil, receipt: [UInt8]? = [1],
            receiptCreatedAt: Date? = TestKeys.t0,
            osVersion: String? = nil, bundleVersion: String? = nil, refreshAt: Date? = nil
        ) throws {
            _ = try KeyRegistration(
                keyID: keyID ?? key.keyID, publicKeyX963: publicKey ?? key.publicKeyX963, appID: TestKeys.appID,
                environment: .production, receipt: receipt, receiptCreatedAt: receiptCreatedAt,
                receiptRefreshAt: refreshAt, osVersion: osVersion, bundleVersion: bundleVersion)
        }
        try make()
        var offCurve = key.publicKeyX963
        offCurve[64] ^= 0x01
        let cases: [() throws -> Void] = [
            { try make(keyID: other.keyID) },
            { try make(publicKey: Array(key.publicKeyX963.dropLast())) },
            { try make(publicKey: [0x02] + key.publicKeyX963.dropFirst()) },
            { try make(publicKey: offCurve) },
            { try make(receipt: []) },
            { try make(receipt: [UInt8](repeating: 0, count: StoreLimits.maximumReceiptBytes + 1)) },
            { try make(receipt: [1], receiptCreatedAt: nil) },
            { try make(receipt: nil, receiptCreatedAt: TestKeys.t0) },
            { try make(osVersion: "") },
            { try make(osVersion: "17.4\u{0}") },
            { try make(osVersion: "17\n4") },
            { try make(bundleVersion: String(repeating: "9", count: StoreLimits.maximumVersionBytes + 1)) },
            { try make(refreshAt: Date(timeIntervalSince1970: -0.1)) },
            { try make(refreshAt: Date(timeIntervalSince1970: 253_402_300_800)) },
            { try make(refreshAt: Date(timeIntervalSince1970: .nan)) },
        ]
        for make in cases {
            #expect(throws: StoreError.invalidInput) { try make() }
        }
    }

    @Test("receipt updates with a bad risk metric are refused")
    func receiptUpdates() throws {
        for metric in [-1, StoreLimits.maximumRiskMetric + 1] {
            #expect(throws: StoreError.invalidInput) { _ = try TestKeys.receipt(at: 1, riskMetric: metric) }
        }
        _ = try TestKeys.receipt(at: 1, riskMetric: StoreLimits.maximumRiskMetric)
    }

    @Test("times and limits out of range are refused by every backend", arguments: await StoreBackend.all())
    func timesAndLimits(backend: StoreBackend) async throws {
        try await backend.withStore { store in
            let registration = try TestKeys.registration()
            for now in [
                Date(timeIntervalSince1970: -1), Date(timeIntervalSince1970: 1e12),
                Date(timeIntervalSince1970: .infinity),
            ] {
                await #expect(throws: StoreError.invalidInput) {
                    _ = try await store.registerKey(registration, now: now)
                }
                await #expect(throws: StoreError.invalidInput) {
                    try await store.advanceCounter(of: registration.keyID, to: 1, now: now)
                }
                await #expect(throws: StoreError.invalidInput) { _ = try await store.deleteExpiredChallenges(now: now) }
            }
            #expect(try await store.key(registration.keyID) == nil)
            for limit in [0, -1, StoreLimits.maximumListLimit + 1] {
                await #expect(throws: StoreError.invalidInput) {
                    _ = try await store.riskHistory(of: registration.keyID, limit: limit)
                }
            }
        }
    }

    @Test("text that looks like SQL is stored verbatim", arguments: await StoreBackend.all())
    func sqlLookingText(backend: StoreBackend) async throws {
        try await backend.withStore { store in
            let hostile = "1'); DROP TABLE keys; --"
            let registration = try TestKeys.registration(osVersion: "17.4 β ✓", bundleVersion: hostile)
            _ = try await store.registerKey(registration, now: t0)
            let record = try #require(try await store.key(registration.keyID))
            #expect(record.bundleVersion == hostile)
            #expect(record.osVersion == "17.4 β ✓")
            #expect(try await store.keyCounts().total == 1)
        }
    }

    @Test("every error code is distinct and snake_case")
    func codes() {
        let raw = StoreError.Code.allCases.map(\.rawValue)
        #expect(Set(raw).count == raw.count)
        #expect(raw.allSatisfy { $0.allSatisfy { $0.isLowercase || $0 == "_" } })
        #expect(StoreError(.keyExists, "a") == StoreError.keyExists)
        #expect(StoreError(.keyExists, "a").description == "key_exists: a")
    }
}
