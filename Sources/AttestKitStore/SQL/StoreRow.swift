import AttestKit
import Foundation

/// One result row of a SQL backend, read by column name. The SQLite and PostgreSQL backends adapt their
/// drivers' rows to it, so both decode records the same way.
protocol StoreRow {
    /// The integer in `column`, or `nil` for NULL.
    func integer(_ column: String) throws(StoreError) -> Int64?
    /// The bytes in `column`, or `nil` for NULL.
    func bytes(_ column: String) throws(StoreError) -> [UInt8]?
    /// The text in `column`, or `nil` for NULL.
    func text(_ column: String) throws(StoreError) -> String?
}

/// The column lists the SQL backends select, in one place so every statement returns whole records.
enum StoreColumns {
    /// Every column of `keys`.
    static let key = """
        key_id, public_key, app_id, environment, counter, receipt, receipt_created_at_ms, receipt_refresh_at_ms, \
        risk_metric, os_version, bundle_version, validation_category, created_at_ms, last_assertion_at_ms, \
        revoked_at_ms, app_key, receipt_expires_at_ms, key_access_control
        """
    /// Every column of `keys` but the receipt's bytes, which verifying an assertion never reads: the request
    /// path's key read and counter advance (``KeyStore/keyWithoutReceipt(_:)``). `receipt` reads as `NULL`, so
    /// that the row decodes as any other; the receipt is often a few kilobytes, which PostgreSQL keeps compressed
    /// out of line, so reading it costs a second index lookup and its decompression.
    static func keyWithoutReceipt(_ dialect: SQLDialect) -> String {
        dialect == .postgres ? keyWithoutReceiptPostgres : keyWithoutReceiptSQLite
    }
    private static let keyWithoutReceiptPostgres = key.replacingOccurrences(
        of: " receipt,", with: " NULL::bytea AS receipt,")
    private static let keyWithoutReceiptSQLite = key.replacingOccurrences(of: " receipt,", with: " NULL AS receipt,")
    /// Every column of `challenges`.
    static let challenge = "id, challenge, purpose, key_id, rp_id_hash, created_at_ms, expires_at_ms, consumed_at_ms"
    /// The columns of `risk_metrics` a history returns.
    static let riskMetric = "risk_metric, receipt_created_at_ms, recorded_at_ms"
}

extension StoreRow {
    private func malformed(_ column: String) -> StoreError {
        StoreError(.storageUnavailable, "the database holds a malformed value in \(column)")
    }

    func requiredInteger(_ column: String) throws(StoreError) -> Int64 {
        guard let value = try integer(column) else { throw malformed(column) }
        return value
    }

    func requiredBytes(_ column: String) throws(StoreError) -> [UInt8] {
        guard let value = try bytes(column) else { throw malformed(column) }
        return value
    }

    func requiredText(_ column: String) throws(StoreError) -> String {
        guard let value = try text(column) else { throw malformed(column) }
        return value
    }

    private func uint32(_ column: String) throws(StoreError) -> UInt32? {
        guard let value = try integer(column) else { return nil }
        guard let exact = UInt32(exactly: value) else { throw malformed(column) }
        return exact
    }

    private func int(_ column: String) throws(StoreError) -> Int? {
        guard let value = try integer(column) else { return nil }
        guard let exact = Int(exactly: value) else { throw malformed(column) }
        return exact
    }

    /// The row as a key record (the columns of ``StoreColumns/key``).
    func keyRecord() throws(StoreError) -> KeyRecord {
        guard let keyID = try? KeyID(bytes: requiredBytes("key_id")) else { throw malformed("key_id") }
        guard let appID = try? StoredAppID.parse(requiredText("app_id")) else { throw malformed("app_id") }
        guard let environment = AppAttestEnvironment(rawValue: try requiredText("environment")) else {
            throw malformed("environment")
        }
        guard let counter = try uint32("counter") else { throw malformed("counter") }
        var appKey: AppKey?
        if let der = try bytes("app_key") {
            guard let parsed = try? AppKey(subjectPublicKeyInfo: der) else { throw malformed("app_key") }
            appKey = parsed
        }
        return KeyRecord(
            keyID: keyID,
            publicKeyX963: try requiredBytes("public_key"),
            appID: appID,
            environment: environment,
            counter: counter,
            receipt: try bytes("receipt"),
            receiptCreatedAt: StoreTime.date(ifPresent: try integer("receipt_created_at_ms")),
            receiptRefreshAt: StoreTime.date(ifPresent: try integer("receipt_refresh_at_ms")),
            riskMetric: try int("risk_metric"),
            osVersion: try text("os_version"),
            bundleVersion: try text("bundle_version"),
            validationCategory: try uint32("validation_category"),
            appKey: appKey,
            createdAt: StoreTime.date(try requiredInteger("created_at_ms")),
            lastAssertionAt: StoreTime.date(ifPresent: try integer("last_assertion_at_ms")),
            revokedAt: StoreTime.date(ifPresent: try integer("revoked_at_ms")),
            receiptExpiresAt: StoreTime.date(ifPresent: try integer("receipt_expires_at_ms")),
            keyAccessControl: try bytes("key_access_control"))
    }

    /// The row as a challenge (the columns of ``StoreColumns/challenge``).
    func challenge() throws(StoreError) -> StoredChallenge {
        guard let id = try? ChallengeID(bytes: requiredBytes("id")) else { throw malformed("id") }
        guard let purpose = try? ChallengePurpose(rawValue: requiredText("purpose")) else {
            throw malformed("purpose")
        }
        let keyID: KeyID?
        if let bytes = try bytes("key_id") {
            guard let parsed = try? KeyID(bytes: bytes) else { throw malformed("key_id") }
            keyID = parsed
        } else {
            keyID = nil
        }
        do {
            return try StoredChallenge(
                id: id,
                bytes: requiredBytes("challenge"),
                purpose: purpose,
                keyID: keyID,
                rpIDHash: bytes("rp_id_hash"),
                createdAt: StoreTime.date(requiredInteger("created_at_ms")),
                expiresAt: StoreTime.date(requiredInteger("expires_at_ms")),
                consumedAt: StoreTime.date(ifPresent: integer("consumed_at_ms")))
        } catch {
            throw malformed("challenges")
        }
    }

    /// The row as a risk-metric entry (the columns of ``StoreColumns/riskMetric``).
    func riskMetricEntry() throws(StoreError) -> RiskMetricEntry {
        guard let metric = try int("risk_metric") else { throw malformed("risk_metric") }
        return RiskMetricEntry(
            riskMetric: metric,
            receiptCreatedAt: StoreTime.date(try requiredInteger("receipt_created_at_ms")),
            recordedAt: StoreTime.date(try requiredInteger("recorded_at_ms")))
    }
}

extension KeyCounts {
    /// Counts from rows of `environment`, `revoked` (0 or 1) and `n`.
    init(rows: [some StoreRow]) throws(StoreError) {
        var counts: [Bucket: Int] = [:]
        for row in rows {
            guard let environment = AppAttestEnvironment(rawValue: try row.requiredText("environment")),
                let count = Int(exactly: try row.requiredInteger("n"))
            else {
                throw StoreError(.storageUnavailable, "the database holds a malformed key count")
            }
            let state: KeyState = try row.requiredInteger("revoked") == 0 ? .active : .revoked
            counts[Bucket(environment: environment, state: state), default: 0] += count
        }
        self.init(counts: counts)
    }
}
