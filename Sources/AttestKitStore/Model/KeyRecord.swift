public import AttestKit
public import Foundation

/// A registered App Attest key, as the store holds it.
///
/// The ``description`` shows the App ID, environment, counter, state and times; never the key identifier,
/// the public key or the receipt.
public struct KeyRecord: Sendable, Hashable, CustomStringConvertible {
    /// The key identifier (SHA-256 of the public key).
    public let keyID: KeyID
    /// The public key as the 65-byte X9.63 point `04 ‖ X ‖ Y`.
    public let publicKeyX963: [UInt8]
    /// The App ID the key was attested for.
    public let appID: AppID
    /// The environment the key was attested in.
    public let environment: AppAttestEnvironment
    /// The last accepted assertion counter (0 right after attestation).
    public internal(set) var counter: UInt32
    /// The newest receipt: the attestation's `ATTEST` receipt, or the last `RECEIPT` Apple returned.
    public internal(set) var receipt: [UInt8]?
    /// When Apple created ``receipt``.
    public internal(set) var receiptCreatedAt: Date?
    /// When the receipt should next be exchanged with Apple, or `nil` for never.
    public internal(set) var receiptRefreshAt: Date?
    /// When ``receipt`` expires (its field 21), or `nil` when it has no expiration time or was stored before
    /// the store recorded it. Apple does not exchange an expired receipt, so the refresh skips it.
    public internal(set) var receiptExpiresAt: Date?
    /// The newest risk metric, from the newest `RECEIPT`.
    public internal(set) var riskMetric: Int?
    /// The OS version from the attestation, e.g. `"17.4"`.
    public let osVersion: String?
    /// iOS 27+: the bundle version the device reported at attestation.
    public let bundleVersion: String?
    /// iOS 27+: the launch validation category reported at attestation.
    public let validationCategory: UInt32?
    /// The app key a key attestation bound to this key, or `nil` when it was registered by a plain attestation.
    public let appKey: AppKey?
    /// The key access control its credential certificate carried (extension 1.2.840.113635.100.8.6, its DER value
    /// as signed; ``keyAccessControlReading`` parses it), or `nil`: none (keys attested before 2026), or a key
    /// registered before the store kept it (schema version 9).
    public let keyAccessControl: [UInt8]?
    /// When the key was registered.
    public let createdAt: Date
    /// When the counter last advanced, or `nil` before the first assertion.
    public internal(set) var lastAssertionAt: Date?
    /// When the key was revoked, or `nil` while it is active.
    public internal(set) var revokedAt: Date?

    /// Whether the key is active or revoked.
    public var state: KeyState { revokedAt == nil ? .active : .revoked }

    /// Creates a record from stored values; used by the backends and the replay of recorded verifications.
    package init(
        keyID: KeyID, publicKeyX963: [UInt8], appID: AppID, environment: AppAttestEnvironment, counter: UInt32,
        receipt: [UInt8]?, receiptCreatedAt: Date?, receiptRefreshAt: Date?, riskMetric: Int?,
        osVersion: String?, bundleVersion: String?, validationCategory: UInt32?, appKey: AppKey?, createdAt: Date,
        lastAssertionAt: Date?, revokedAt: Date?, receiptExpiresAt: Date? = nil, keyAccessControl: [UInt8]? = nil
    ) {
        self.keyAccessControl = keyAccessControl
        self.keyID = keyID
        self.publicKeyX963 = publicKeyX963
        self.appID = appID
        self.environment = environment
        self.counter = counter
        self.receipt = receipt
        self.receiptCreatedAt = receiptCreatedAt
        self.receiptRefreshAt = receiptRefreshAt
        self.receiptExpiresAt = receiptExpiresAt
        self.riskMetric = riskMetric
        self.osVersion = osVersion
        self.bundleVersion = bundleVersion
        self.validationCategory = validationCategory
        self.appKey = appKey
        self.createdAt = createdAt
        self.lastAssertionAt = lastAssertionAt
        self.revokedAt = revokedAt
    }

    /// The record a fresh registration creates at `now`: counter 0, active.
    package init(registration: KeyRegistration, now: Date) {
        self.init(
            keyID: registration.keyID, publicKeyX963: registration.publicKeyX963, appID: registration.appID,
            environment: registration.environment, counter: 0, receipt: registration.receipt,
            receiptCreatedAt: registration.receiptCreatedAt, receiptRefreshAt: registration.receiptRefreshAt,
            riskMetric: nil, osVersion: registration.osVersion, bundleVersion: registration.bundleVersion,
            validationCategory: registration.validationCategory, appKey: registration.appKey, createdAt: now,
            lastAssertionAt: nil,
            revokedAt: nil, receiptExpiresAt: registration.receiptExpiresAt,
            keyAccessControl: registration.keyAccessControl)
    }

    /// ``keyAccessControl`` parsed as AttestKit reads it at registration: `absent` when none is stored, `present`,
    /// or `malformed` with the stored value.
    public var keyAccessControlReading: AppAttestKeyAccessControl.Reading {
        guard let keyAccessControl else { return .absent }
        do {
            return .present(try AppAttestKeyAccessControl(extensionValue: keyAccessControl))
        } catch {
            return .malformed(extensionValue: keyAccessControl)
        }
    }

    /// The record with its receipt's bytes left out (``KeyStore/keyWithoutReceipt(_:)``).
    func withoutReceipt() -> KeyRecord {
        var record = self
        record.receipt = nil
        return record
    }

    /// When the key was last used: its last accepted assertion, or its registration before any.
    public var lastUsedAt: Date { lastAssertionAt ?? createdAt }

    /// The App ID, environment, counter, state and times; never the key, its identifier, the app key or the receipt.
    public var description: String {
        var text = "KeyRecord(appID: \(appID), environment: \(environment.rawValue), counter: \(counter), "
        text += "state: \(state), createdAt: \(createdAt)"
        if let riskMetric { text += ", riskMetric: \(riskMetric)" }
        if let revokedAt { text += ", revokedAt: \(revokedAt)" }
        return text + ")"
    }
}

/// Whether a registered key may still be used.
///
/// A revoked key stays in the store (so its keyId can never be registered again) but every counter
/// advance and receipt update for it is refused with ``StoreError/Code/keyRevoked``.
public struct KeyState: Sendable, Hashable, CustomStringConvertible {
    /// The stable name: `active` or `revoked`.
    public let rawValue: String

    private init(_ rawValue: String) {
        self.rawValue = rawValue
    }

    /// The key is registered and in use.
    public static let active = KeyState("active")
    /// The key was revoked; it can no longer advance its counter.
    public static let revoked = KeyState("revoked")

    /// Both states.
    public static let allCases: [KeyState] = [.active, .revoked]

    public var description: String { rawValue }
}

extension KeyRecord {
    /// This record as an accepted assertion with `counter` at `time` leaves it (what the store now holds, unless a
    /// later assertion overtook it), without reading the store again.
    package func advanced(to counter: UInt32, at time: Date) -> KeyRecord {
        var record = self
        record.counter = counter
        record.lastAssertionAt = time
        return record
    }

    /// The reason a compare-and-set that changed nothing was refused, from a read of the key after it: a key
    /// last used before `usedSince` (when given) is expired, whatever its counter.
    static func counterRefusal(for existing: KeyRecord?, usedSince: Date?) -> StoreError {
        guard let existing else { return StoreError(.keyNotFound, "no key has this identifier") }
        if existing.revokedAt != nil { return StoreError(.keyRevoked, "the key was revoked") }
        if existing.isExpired(usedSince: usedSince) {
            return StoreError(.keyExpired, "the key was not used for longer than idle keys are kept")
        }
        return StoreError(.counterNotIncreasing, "the counter is not greater than the stored one")
    }

    /// The reason a receipt update that changed nothing was refused, from a read of the key after it.
    static func receiptRefusal(for existing: KeyRecord?) -> StoreError {
        guard let existing else { return StoreError(.keyNotFound, "no key has this identifier") }
        if existing.revokedAt != nil { return StoreError(.keyRevoked, "the key was revoked") }
        return StoreError(.receiptNotNewer, "the stored receipt is as new or newer")
    }
}

extension KeyRecord {
    /// Whether the key was last used (its last accepted assertion, or its registration) before `usedSince`
    /// (`nil`: keys never expire).
    public func isExpired(usedSince: Date?) -> Bool {
        guard let usedSince else { return false }
        return lastUsedAt < usedSince
    }

    /// What a due key's receipt refresh claim does with it at `now`: trade its receipt (the key was used at or
    /// after `activeSince` and its receipt has not expired), or park it, the same on every backend.
    enum RefreshClaim: Equatable {
        /// Claimed for the lease: its receipt is traded.
        case claim
        /// Its receipt has expired: Apple would refuse it, so it is never due again (refresh time `nil`).
        case expired
        /// Not used since `activeSince`: due again after ``StoreLimits/idleRefreshPause``, and traded then if
        /// used in between.
        case idle
    }

    /// What a claim at `now` does with this due key.
    func refreshClaim(now: Date, activeSince: Date) -> RefreshClaim {
        if let receiptExpiresAt, receiptExpiresAt <= now { return .expired }
        return lastUsedAt < activeSince ? .idle : .claim
    }

    /// Claimed keys in the order every backend returns them: oldest receipt first, ties by identifier bytes (a
    /// claim's `RETURNING` has no order of its own).
    static func claimOrder(_ records: [KeyRecord]) -> [KeyRecord] {
        records.sorted { lhs, rhs in
            let left = lhs.receiptCreatedAt ?? .distantPast
            let right = rhs.receiptCreatedAt ?? .distantPast
            guard left == right else { return left < right }
            return lhs.keyID.bytes.lexicographicallyPrecedes(rhs.keyID.bytes)
        }
    }
}
