import AttestKit
import AttestKitStore
import Foundation
import ServiceLifecycle
import Synchronization

/// A store that forwards every call to another and counts the calls of the operations a test watches: what shows
/// that `/ready` pings the store and never counts its keys.
final class CountingStore: AttestationStore {
    private let base: any AttestationStore
    private let counts = Mutex<[String: Int]>([:])

    /// Awaited before each `storeReceipt` is forwarded, in the caller's task.
    private let beforeStoreReceipt: (@Sendable () async -> Void)?
    /// Asked before each `postponeReceiptRefresh` is forwarded: what it throws is the call's failure.
    private let beforePostpone: (@Sendable () async throws(StoreError) -> Void)?
    /// Asked before each `insertChallenge` is forwarded: what it throws is the call's failure.
    private let beforeInsertChallenge: (@Sendable () async throws(StoreError) -> Void)?
    /// Asked before `prepare` is forwarded: what it throws is the call's failure.
    private let beforePrepare: (@Sendable () async throws(StoreError) -> Void)?
    /// Awaited before each `keyCounts` is forwarded, in the caller's task.
    private let beforeKeyCounts: (@Sendable () async -> Void)?

    init(
        _ base: any AttestationStore, beforeStoreReceipt: (@Sendable () async -> Void)? = nil,
        beforePostpone: (@Sendable () async throws(StoreError) -> Void)? = nil,
        beforeInsertChallenge: (@Sendable () async throws(StoreError) -> Void)? = nil,
        beforePrepare: (@Sendable () async throws(StoreError) -> Void)? = nil,
        beforeKeyCounts: (@Sendable () async -> Void)? = nil
    ) {
        self.beforeKeyCounts = beforeKeyCounts
        self.beforePrepare = beforePrepare
        self.base = base
        self.beforeStoreReceipt = beforeStoreReceipt
        self.beforePostpone = beforePostpone
        self.beforeInsertChallenge = beforeInsertChallenge
    }

    /// How many times `operation` (`ping`, `keyCounts`, `acquireLease`, `claimReceiptRefreshBatch`) was called.
    func calls(_ operation: String) -> Int { counts.withLock { $0[operation, default: 0] } }

    private func count(_ operation: String) { counts.withLock { $0[operation, default: 0] += 1 } }

    func run() async throws { try await base.run() }
    func prepare() async throws(StoreError) {
        count("prepare")
        try await beforePrepare?()
        try await base.prepare()
    }
    func close() async { await base.close() }

    func ping() async throws(StoreError) {
        count("ping")
        try await base.ping()
    }

    func databaseTime() async throws(StoreError) -> Date? {
        count("ping")
        return try await base.databaseTime()
    }

    func keyCounts() async throws(StoreError) -> KeyCounts {
        count("keyCounts")
        await beforeKeyCounts?()
        return try await base.keyCounts()
    }

    func insertChallenge(_ challenge: StoredChallenge) async throws(StoreError) {
        try await beforeInsertChallenge?()
        try await base.insertChallenge(challenge)
    }

    func consumeChallenge(
        _ id: ChallengeID, purpose: ChallengePurpose, keyID: KeyID?, now: Date
    ) async throws(StoreError) -> StoredChallenge {
        try await base.consumeChallenge(id, purpose: purpose, keyID: keyID, now: now)
    }

    func deleteExpiredChallenges(now: Date) async throws(StoreError) -> Int {
        try await base.deleteExpiredChallenges(now: now)
    }

    func registerKey(_ registration: KeyRegistration, now: Date) async throws(StoreError) -> KeyRecord {
        try await base.registerKey(registration, now: now)
    }

    func key(_ keyID: KeyID) async throws(StoreError) -> KeyRecord? { try await base.key(keyID) }

    func advanceCounter(
        of keyID: KeyID, to counter: UInt32, now: Date, usedSince: Date?
    ) async throws(StoreError) -> KeyRecord {
        try await base.advanceCounter(of: keyID, to: counter, now: now, usedSince: usedSince)
    }

    func storeReceipt(_ update: ReceiptUpdate, for keyID: KeyID, now: Date) async throws(StoreError) -> KeyRecord {
        await beforeStoreReceipt?()
        return try await base.storeReceipt(update, for: keyID, now: now)
    }

    func postponeReceiptRefresh(of keyID: KeyID, until refreshAt: Date?) async throws(StoreError) {
        count("postponeReceiptRefresh")
        try await beforePostpone?()
        try await base.postponeReceiptRefresh(of: keyID, until: refreshAt)
    }

    func riskHistory(of keyID: KeyID, limit: Int) async throws(StoreError) -> [RiskMetricEntry] {
        try await base.riskHistory(of: keyID, limit: limit)
    }

    func revokeKey(_ keyID: KeyID, now: Date) async throws(StoreError) -> KeyRecord {
        try await base.revokeKey(keyID, now: now)
    }

    func claimReceiptRefresh(
        now: Date, limit: Int, lease: Duration, activeSince: Date
    ) async throws(StoreError) -> [KeyRecord] {
        try await base.claimReceiptRefresh(now: now, limit: limit, lease: lease, activeSince: activeSince)
    }
    func claimReceiptRefreshBatch(
        now: Date, limit: Int, lease: Duration, activeSince: Date
    ) async throws(StoreError) -> ReceiptRefreshClaim {
        count("claimReceiptRefreshBatch")
        return try await base.claimReceiptRefreshBatch(now: now, limit: limit, lease: lease, activeSince: activeSince)
    }

    func deleteKey(_ keyID: KeyID) async throws(StoreError) { try await base.deleteKey(keyID) }
    func receiptRefreshBacklog(now: Date, countingUpTo cap: Int) async throws(StoreError) -> ReceiptRefreshBacklog {
        try await base.receiptRefreshBacklog(now: now, countingUpTo: cap)
    }

    func acquireLease(on job: String, holder: String, duration: Duration, now: Date) async throws(StoreError) -> Bool {
        count("acquireLease")
        return try await base.acquireLease(on: job, holder: holder, duration: duration, now: now)
    }

    func openDashboardSession(_ digest: [UInt8], expiresAt: Date, capacity: Int, now: Date) async throws(StoreError) {
        try await base.openDashboardSession(digest, expiresAt: expiresAt, capacity: capacity, now: now)
    }

    func isDashboardSessionLive(_ digest: [UInt8], now: Date) async throws(StoreError) -> Bool {
        try await base.isDashboardSessionLive(digest, now: now)
    }

    func closeDashboardSession(_ digest: [UInt8]) async throws(StoreError) -> Bool {
        try await base.closeDashboardSession(digest)
    }

    func deleteExpiredDashboardSessions(now: Date) async throws(StoreError) -> Int {
        try await base.deleteExpiredDashboardSessions(now: now)
    }

    func take(from budget: RateBudget, now: Date) async throws(StoreError) -> Int? {
        try await base.take(from: budget, now: now)
    }

    func consumeToken(_ tokenID: String, expiresAt: Date, now: Date) async throws(StoreError) -> Bool {
        try await base.consumeToken(tokenID, expiresAt: expiresAt, now: now)
    }

    func isTokenConsumed(_ tokenID: String) async throws(StoreError) -> Bool {
        try await base.isTokenConsumed(tokenID)
    }

    func deleteExpiredTokens(now: Date) async throws(StoreError) -> Int {
        try await base.deleteExpiredTokens(now: now)
    }
}
