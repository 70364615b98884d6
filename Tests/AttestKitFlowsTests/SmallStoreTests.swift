import AttestKit
import AttestKitApple
import AttestKitFlows
import AttestKitStore
import Foundation
import Synchronization
import Testing

/// A part that needs one kind of record takes only its small store protocol: using a DeviceCheck token up needs a
/// ``ConsumedTokenStore``, not a whole ``AttestationStore``.
@Suite("Small store protocols")
struct SmallStoreTests {
    /// A store of used tokens and nothing else: what an adopter writes to keep used DeviceCheck tokens elsewhere.
    actor UsedTokens: ConsumedTokenStore {
        private(set) var records: [String: Date] = [:]
        private(set) var deleted = 0
        private(set) var writes = 0

        func consumeToken(_ tokenID: String, expiresAt: Date, now: Date) throws(StoreError) -> Bool {
            writes += 1
            guard records[tokenID] == nil else { return false }
            records[tokenID] = expiresAt
            return true
        }

        func isTokenConsumed(_ tokenID: String) throws(StoreError) -> Bool { records[tokenID] != nil }

        func deleteExpiredTokens(now: Date) throws(StoreError) -> Int {
            let expired = records.filter { $0.value <= now }.map(\.key)
            for tokenID in expired { records[tokenID] = nil }
            deleted += expired.count
            return expired.count
        }
    }

    /// A store whose every call fails, as a database that is down.
    struct DownTokens: ConsumedTokenStore {
        func consumeToken(_ tokenID: String, expiresAt: Date, now: Date) throws(StoreError) -> Bool {
            throw StoreError(.storageUnavailable, "down")
        }

        func isTokenConsumed(_ tokenID: String) throws(StoreError) -> Bool {
            throw StoreError(.storageUnavailable, "down")
        }

        func deleteExpiredTokens(now: Date) throws(StoreError) -> Int {
            throw StoreError(.storageUnavailable, "down")
        }
    }

    static let instant = Date(timeIntervalSince1970: 1_800_000_000)

    static func validator() -> DeviceTokenValidator {
        DeviceTokenValidator(usedTokenRetention: 3_600, now: { instant }) {
            (token: String) async throws(AppleServiceError) in
            if token.hasPrefix("bad") { throw AppleServiceError(.badDeviceToken, "bad") }
        }
    }

    @Test("a DeviceCheck token is used up once in a store of used tokens only, recorded by digest, never as itself")
    func deviceTokenInUsedTokensOnly() async throws {
        let store = UsedTokens()
        let validator = Self.validator()
        // Tokens as a device sends them: standard Base64 (the text "device-token-1" itself reads as base64url, and
        // as the same bytes as "device-token-2").
        let first = Data("device-token-1".utf8).base64EncodedString()
        let second = Data("device-token-2".utf8).base64EncodedString()
        try await validator.useUp(first, store: store)
        let again = await #expect(throws: FlowError.self) { try await validator.useUp(first, store: store) }
        #expect(again?.code == .deviceTokenUsed)
        try await validator.redeem(second, client: "203.0.113.9", store: store)
        let invalid = await #expect(throws: FlowError.self) {
            try await validator.redeem("bad-token", client: "203.0.113.9", store: store)
        }
        #expect(invalid?.code == .deviceTokenInvalid)
        let records = await store.records
        #expect(records.count == 2, "the invalid token is not recorded")
        #expect(records.keys.allSatisfy { $0.hasPrefix("devicecheck:") && !$0.contains("device-token") })
        #expect(records.values.allSatisfy { $0 == Self.instant.addingTimeInterval(3_600) })
        #expect(try await store.deleteExpiredTokens(now: Self.instant.addingTimeInterval(3_600)) == 2)
    }

    @Test("a replayed DeviceCheck token is refused from memory, without a store write, while the store keeps it")
    func replayWithoutStoreWrites() async throws {
        let store = UsedTokens()
        let clock = Mutex(Self.instant)
        let validator = DeviceTokenValidator(usedTokenRetention: 3_600, now: { clock.withLock { $0 } }) {
            (token: String) async throws(AppleServiceError) in
        }
        let token = Data("device-token-1".utf8).base64EncodedString()
        try await validator.useUp(token, store: store)
        for _ in 0..<20 {
            let again = await #expect(throws: FlowError.self) { try await validator.useUp(token, store: store) }
            #expect(again?.code == .deviceTokenUsed)
        }
        #expect(await store.writes == 1)
        // Used through another validator (another replica): the store refuses it once, then memory does.
        let other = DeviceTokenValidator(usedTokenRetention: 3_600, now: { clock.withLock { $0 } }) {
            (token: String) async throws(AppleServiceError) in
        }
        for _ in 0..<5 {
            await #expect(throws: FlowError.self) { try await other.useUp(token, store: store) }
        }
        #expect(await store.writes == 2)
        // Once the store may have forgotten it, the store decides again.
        clock.withLock { $0 = Self.instant.addingTimeInterval(3_600) }
        #expect(try await store.deleteExpiredTokens(now: Self.instant.addingTimeInterval(3_600)) == 1)
        try await validator.useUp(token, store: store)
        #expect(await store.writes == 3)
    }

    @Test("a token remembered as used is refused before Apple is asked: no call, even past the answer's lifetime")
    func replayAsksNoApple() async throws {
        let store = UsedTokens()
        let clock = Mutex(Self.instant)
        let calls = Mutex(0)
        let failing = Mutex(false)
        let validator = DeviceTokenValidator(ttl: 600, usedTokenRetention: 86_400, now: { clock.withLock { $0 } }) {
            (token: String) async throws(AppleServiceError) in
            calls.withLock { $0 += 1 }
            if failing.withLock({ $0 }) { throw AppleServiceError(.serviceUnavailable, "down") }
        }
        let token = Data("device-token-1".utf8).base64EncodedString()
        try await validator.redeem(token, client: "203.0.113.9", store: store)
        // Past the cached answer's ten minutes, with Apple failing: still refused as used, and Apple not asked.
        clock.withLock { $0 = Self.instant.addingTimeInterval(700) }
        failing.withLock { $0 = true }
        let again = await #expect(throws: FlowError.self) {
            try await validator.redeem(token, client: "203.0.113.9", store: store)
        }
        #expect(again?.code == .deviceTokenUsed)
        #expect(calls.withLock { $0 } == 1)
    }

    @Test("a store of used tokens that fails refuses the token (fails closed) as storage_unavailable")
    func failingStoreFailsClosed() async throws {
        let refused = await #expect(throws: FlowError.self) {
            try await Self.validator().useUp("device-token", store: DownTokens())
        }
        #expect(refused?.code.rawValue == "storage_unavailable")
    }

    @Test("an AttestationStore still passes where a ConsumedTokenStore is taken")
    func wholeStorePasses() async throws {
        let store: any AttestationStore = MemoryAttestationStore()
        let validator = Self.validator()
        try await validator.useUp("device-token", store: store)
        let again = await #expect(throws: FlowError.self) { try await validator.useUp("device-token", store: store) }
        #expect(again?.code == .deviceTokenUsed)
    }
}
