package import AttestKit
package import Foundation

/// A store that takes registered keys in bulk: the population of a benchmark (`attestkit load --population`),
/// written straight into the tables before the server starts.
///
/// Never reachable from `attestkit serve`: a key registers through a verified attestation. The SQL stores conform.
package protocol KeySeedingStore: AttestationStore {
    /// Inserts `keys` as registered, unrevoked keys of `appID` in `environment` with counter 0 and no receipt, in
    /// one transaction of multi-row `INSERT`s, and keeps the key counts in step.
    /// - Throws: ``StoreError/Code/invalidInput`` for a key identifier that is not 32 bytes or a public key that is
    ///   not a 65-byte uncompressed point; ``StoreError/Code/storageUnavailable`` when one is registered already.
    func seedKeys(
        _ keys: [SeededKey], appID: AppID, environment: AppAttestEnvironment, now: Date
    ) async throws(StoreError)

    /// Ends a bulk load as a database administrator would: PostgreSQL vacuums and analyzes `keys` (`VACUUM
    /// (ANALYZE)`: the rows' visibility settled and the planner's statistics taken, which autovacuum would otherwise
    /// do in the middle of the benchmark that follows), SQLite analyzes it.
    func settleSeededKeys() async throws(StoreError)
}

/// One key of a benchmark's population: its identifier and its public key (X9.63).
package struct SeededKey: Sendable {
    /// The key identifier, 32 bytes.
    package let keyID: [UInt8]
    /// The public key, a 65-byte uncompressed P-256 point.
    package let publicKeyX963: [UInt8]

    /// A key of the population.
    package init(keyID: [UInt8], publicKeyX963: [UInt8]) {
        self.keyID = keyID
        self.publicKeyX963 = publicKeyX963
    }
}
