public import AttestKit
public import AttestKitStore
public import Foundation

/// The operator's view of registered keys: a key's record with its risk history, revocation and deletion.
///
/// A key that does not exist is `key_not_found` of kind `notFound` here (an operator asking about a key is not a
/// device presenting one, which the gate refuses as `refused`).
public struct KeyAdministration: Sendable {
    /// A key's record and the risk metrics Apple gave it, newest first.
    public struct Report: Sendable {
        /// The key.
        public let key: KeyRecord
        /// Its risk history, newest first.
        public let riskHistory: [RiskMetricEntry]
    }

    /// The state.
    public let store: any AttestationStore
    private let now: @Sendable () -> Date

    /// Creates the administration of `store`'s keys.
    public init(store: any AttestationStore, now: @escaping @Sendable () -> Date = { Date() }) {
        self.store = store
        self.now = now
    }

    /// The record of `keyID` with at most `historyLimit` entries of its risk history.
    /// - Throws: `key_not_found` (not found); the store's codes.
    public func report(of keyID: KeyID, historyLimit: Int = 100) async throws(FlowError) -> Report {
        let found: Report?
        do throws(StoreError) {
            if let key = try await store.key(keyID) {
                found = Report(key: key, riskHistory: try await store.riskHistory(of: keyID, limit: historyLimit))
            } else {
                found = nil
            }
        } catch {
            throw FlowError(error)
        }
        guard let found else { throw Self.notFound }
        return found
    }

    /// Revokes `keyID`: every later assertion by it is refused (`key_revoked`), and it cannot be registered again.
    /// - Returns: The revoked key.
    /// - Throws: `key_not_found` (not found); the store's codes.
    public func revoke(_ keyID: KeyID) async throws(FlowError) -> KeyRecord {
        do throws(StoreError) {
            return try await store.revokeKey(keyID, now: now())
        } catch {
            throw error.code == .keyNotFound ? Self.notFound : FlowError(error)
        }
    }

    /// Deletes `keyID` with everything stored about it (its receipt and risk history): the device's data is erased.
    /// Later assertions by it are refused (`key_not_found`), and the app attests a new key. Call the gate's
    /// `AssertionGate.forget(_:)` after it, so that the key's record kept in memory for its assertions goes too.
    /// - Throws: `key_not_found` (not found); the store's codes.
    public func delete(_ keyID: KeyID) async throws(FlowError) {
        do throws(StoreError) {
            try await store.deleteKey(keyID)
        } catch {
            throw error.code == .keyNotFound ? Self.notFound : FlowError(error)
        }
    }

    private static var notFound: FlowError {
        FlowError(.keyNotFound, .notFound, "no key has this identifier")
    }
}
