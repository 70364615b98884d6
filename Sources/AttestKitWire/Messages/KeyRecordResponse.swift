/// A registered key as the API shows it (`POST /v1/attestations`, `GET /v1/keys/{keyId}`,
/// `POST /v1/keys/{keyId}/revoke`). Holds no key material beyond the public identifier.
public struct KeyRecordResponse: Codable, Sendable, Hashable {
    /// The key's current App Attest receipt.
    public struct ReceiptInfo: Codable, Sendable, Hashable {
        /// When Apple created the receipt (``APITime``).
        public var createdAt: String
        /// When the receipt may be traded again (``APITime``).
        public var refreshAt: String?

        /// Creates the receipt information.
        public init(createdAt: String, refreshAt: String? = nil) {
            self.createdAt = createdAt
            self.refreshAt = refreshAt
        }
    }

    /// One risk metric Apple reported for the key (the operator's view).
    public struct RiskEntry: Codable, Sendable, Hashable {
        /// The metric.
        public var riskMetric: Int
        /// The creation time of the receipt that carried it (``APITime``).
        public var receiptCreatedAt: String
        /// When the service recorded it (``APITime``).
        public var recordedAt: String

        /// Creates an entry.
        public init(riskMetric: Int, receiptCreatedAt: String, recordedAt: String) {
            self.riskMetric = riskMetric
            self.receiptCreatedAt = receiptCreatedAt
            self.recordedAt = recordedAt
        }
    }

    /// What the credential certificate of the key's attestation says about the key's access control (extension
    /// 1.2.840.113635.100.8.6). Only in the answer of the registration: the service does not store it.
    public struct KeyAccessControl: Codable, Sendable, Hashable {
        /// `macos_full_security` (exactly the policy Apple documents for macOS keys: System Integrity Protection
        /// and Full Security mode), `other` (another well-formed policy, such as iOS keys carry), or `malformed`.
        public var policy: String
        /// The extension's DER value as signed, Base64.
        public var value: String

        /// Creates the access-control information.
        public init(policy: String, value: String) {
            self.policy = policy
            self.value = value
        }
    }

    /// The key id, Base64.
    public var keyId: String
    /// Team id and bundle id.
    public var appId: String
    /// `production` or `development`.
    public var environment: String
    /// `active`, `revoked`, or ``expiredState`` (`expired`: active in the store, but unused for longer than the
    /// service's `keys.expire-after`, so that its next assertion is refused `key_expired`).
    public var state: String
    /// The last accepted assertion counter (0 after the attestation).
    public var counter: UInt32
    /// When the key was registered (``APITime``).
    public var createdAt: String
    /// The time of the last verified assertion; absent before the first.
    public var lastAssertionAt: String?
    /// When the key was revoked; absent unless revoked.
    public var revokedAt: String?
    /// The OS version the attestation names, when known.
    public var osVersion: String?
    /// The app's bundle version, when known.
    public var bundleVersion: String?
    /// The validation category of the attestation, when known.
    public var validationCategory: UInt32?
    /// The key's current receipt; absent when none is stored.
    public var receipt: ReceiptInfo?
    /// Apple's latest risk metric; absent when unknown.
    public var riskMetric: Int?
    /// `unknown` until Apple rated the key (its receipt traded), then `assessed`.
    public var riskStatus: String
    /// Whether the deployment's policy asks for a step-up check for this key.
    public var stepUp: Bool
    /// The risk metric history, newest first (the operator's view only).
    public var riskHistory: [RiskEntry]?
    /// The app key bound to this key by a key attestation (`POST /v1/key-attestations`); absent when none is.
    public var appKey: AppKey?
    /// The key's access control as its attestation certified it: only in the answer of a registration, and absent
    /// when the credential certificate has no access-control extension (keys attested before 2026).
    public var keyAccessControl: KeyAccessControl?
    /// The app's own bytes of the attestation's client data (what followed the challenge in the request's
    /// `clientData`, ``AttestationClientData/appData``), Base64: only in the answer of a registration that carried
    /// them; the service does not store them.
    public var appData: String?

    /// Creates a key record answer.
    public init(
        keyId: String, appId: String, environment: String, state: String, counter: UInt32, createdAt: String,
        lastAssertionAt: String? = nil, revokedAt: String? = nil, osVersion: String? = nil,
        bundleVersion: String? = nil, validationCategory: UInt32? = nil, receipt: ReceiptInfo? = nil,
        riskMetric: Int? = nil, riskStatus: String, stepUp: Bool, riskHistory: [RiskEntry]? = nil,
        appKey: AppKey? = nil, keyAccessControl: KeyAccessControl? = nil, appData: String? = nil
    ) {
        self.keyId = keyId
        self.appId = appId
        self.environment = environment
        self.state = state
        self.counter = counter
        self.createdAt = createdAt
        self.lastAssertionAt = lastAssertionAt
        self.revokedAt = revokedAt
        self.osVersion = osVersion
        self.bundleVersion = bundleVersion
        self.validationCategory = validationCategory
        self.receipt = receipt
        self.riskMetric = riskMetric
        self.riskStatus = riskStatus
        self.stepUp = stepUp
        self.riskHistory = riskHistory
        self.appKey = appKey
        self.keyAccessControl = keyAccessControl
        self.appData = appData
    }
}

extension KeyRecordResponse {
    /// The ``state`` of a key still active in the store but unused for longer than `keys.expire-after`.
    public static let expiredState = "expired"
}
