import AttestKit
import AttestKitStore
import Foundation

/// The store a replay runs the flows against: it answers exactly what the recorded verification's store answered
/// (the challenge's bytes, the key as it was, the refusal at the step it came), and refuses everything else.
struct ReplayStore: AttestationStore {
    let challenge: [UInt8]?
    /// The app the recorded challenge was issued for (its RP ID hash), if any.
    var challengeApp: [UInt8]? = nil
    let key: KeyRecord?
    let answer: RecordedStoreAnswer?

    private func refusal(at step: RecordedStoreAnswer.Step) -> StoreError? {
        guard let answer, answer.step == step else { return nil }
        let code = StoreError.Code.allCases.first { $0.rawValue == answer.code } ?? .storageUnavailable
        return StoreError(code, "as recorded")
    }

    private static let notRecorded = StoreError(.storageUnavailable, "not part of a recorded verification")

    func run() async throws {}
    func prepare() async throws(StoreError) {}
    func ping() async throws(StoreError) {}
    func databaseTime() async throws(StoreError) -> Date? { nil }
    func close() async {}
    func insertChallenge(_ challenge: StoredChallenge) async throws(StoreError) { throw Self.notRecorded }

    func consumeChallenge(
        _ id: ChallengeID, purpose: ChallengePurpose, keyID: KeyID?, now: Date
    ) async throws(StoreError) -> StoredChallenge {
        if let refusal = refusal(at: .challenge) { throw refusal }
        let bytes = challenge ?? [UInt8](repeating: 0, count: StoreLimits.minimumChallengeBytes)
        return try StoredChallenge(
            id: id, bytes: bytes, purpose: purpose, keyID: keyID, rpIDHash: challengeApp,
            createdAt: now.addingTimeInterval(-1), expiresAt: now.addingTimeInterval(1))
    }

    func deleteExpiredChallenges(now: Date) async throws(StoreError) -> Int { throw Self.notRecorded }

    func registerKey(_ registration: KeyRegistration, now: Date) async throws(StoreError) -> KeyRecord {
        if let refusal = refusal(at: .registration) { throw refusal }
        return KeyRecord(registration: registration, now: now)
    }

    func key(_ keyID: KeyID) async throws(StoreError) -> KeyRecord? {
        if let refusal = refusal(at: .key) { throw refusal }
        return key
    }

    func advanceCounter(
        of keyID: KeyID, to counter: UInt32, now: Date, usedSince: Date?
    ) async throws(StoreError) -> KeyRecord {
        if let refusal = refusal(at: .counter) { throw refusal }
        guard let key else { throw StoreError(.keyNotFound, "as recorded") }
        return key.advanced(to: counter, at: now)
    }

    func storeReceipt(_ update: ReceiptUpdate, for keyID: KeyID, now: Date) async throws(StoreError) -> KeyRecord {
        throw Self.notRecorded
    }
    func postponeReceiptRefresh(of keyID: KeyID, until refreshAt: Date?) async throws(StoreError) {
        throw Self.notRecorded
    }
    func riskHistory(of keyID: KeyID, limit: Int) async throws(StoreError) -> [RiskMetricEntry] {
        throw Self.notRecorded
    }
    func revokeKey(_ keyID: KeyID, now: Date) async throws(StoreError) -> KeyRecord { throw Self.notRecorded }
    func claimReceiptRefresh(
        now: Date, limit: Int, lease: Duration, activeSince: Date
    ) async throws(StoreError) -> [KeyRecord] {
        throw Self.notRecorded
    }
    func deleteKey(_ keyID: KeyID) async throws(StoreError) { throw Self.notRecorded }
    func acquireLease(on job: String, holder: String, duration: Duration, now: Date) async throws(StoreError) -> Bool {
        throw Self.notRecorded
    }
    func keyCounts() async throws(StoreError) -> KeyCounts { throw Self.notRecorded }
    func receiptRefreshBacklog(now: Date, countingUpTo cap: Int) async throws(StoreError) -> ReceiptRefreshBacklog {
        throw Self.notRecorded
    }
    func take(from budget: RateBudget, now: Date) async throws(StoreError) -> Int? { throw Self.notRecorded }
    func consumeToken(_ tokenID: String, expiresAt: Date, now: Date) async throws(StoreError) -> Bool {
        throw Self.notRecorded
    }
    func isTokenConsumed(_ tokenID: String) async throws(StoreError) -> Bool { throw Self.notRecorded }
    func deleteExpiredTokens(now: Date) async throws(StoreError) -> Int { throw Self.notRecorded }
    func openDashboardSession(
        _ digest: [UInt8], expiresAt: Date, capacity: Int, now: Date
    ) async throws(StoreError) { throw Self.notRecorded }
    func isDashboardSessionLive(_ digest: [UInt8], now: Date) async throws(StoreError) -> Bool {
        throw Self.notRecorded
    }
    func closeDashboardSession(_ digest: [UInt8]) async throws(StoreError) -> Bool { throw Self.notRecorded }
    func deleteExpiredDashboardSessions(now: Date) async throws(StoreError) -> Int { throw Self.notRecorded }
}
