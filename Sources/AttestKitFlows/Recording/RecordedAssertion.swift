public import AttestKit
public import AttestKitStore
public import AttestKitWire

/// The inputs of a recorded assertion: what the app sent, the key as the gate read it (its cache of keys may lag
/// the store on a fleet), and the store's answers.
public struct RecordedAssertion: Sendable, Hashable, Codable {
    /// The key as stored when the assertion was verified.
    public struct Key: Sendable, Hashable, Codable {
        /// The public key, the 65-byte X9.63 point (Base64).
        public var publicKey: String
        /// The key's App ID.
        public var appId: String
        /// The key's environment.
        public var environment: String
        /// The stored counter the assertion's had to exceed.
        public var counter: UInt32
        /// `active` or `revoked`.
        public var state: String
        /// iOS 27+: the bundle version its attestation reported, which the assertion policy compares with; `nil`
        /// when it reported none (or in a bundle recorded before this was kept).
        public var bundleVersion: String?
        /// iOS 27+: the validation category its attestation reported, which the assertion policy compares with.
        public var validationCategory: UInt32?

        /// The record of `record`.
        public init(_ record: KeyRecord) {
            publicKey = Base64.encode(record.publicKeyX963)
            appId = record.appID.description
            environment = record.environment.rawValue
            counter = record.counter
            state = record.state == .active ? "active" : "revoked"
            bundleVersion = record.bundleVersion
            validationCategory = record.validationCategory
        }
    }

    /// The key identifier (Base64).
    public var keyId: String
    /// The assertion (Base64).
    public var assertion: String
    /// The client data the app hashed (Base64): for AttestKit's canonical form, the method, target and SHA-256 of
    /// the body, never the body.
    public var clientData: String?
    /// The client data hash the caller forwarded instead (Base64).
    public var clientDataHash: String?
    /// `challenge:<id>`, `timestamp:<milliseconds>` or `vouched`.
    public var freshness: String
    /// The key as stored, `nil` when the store knew no such key.
    public var key: Key?
    /// The store's refusal after verification, if any.
    public var storeAnswer: RecordedStoreAnswer?

    /// Creates the record of an assertion.
    public init(
        keyID: KeyID, assertion: [UInt8], clientData: ClientDataInput, freshness: Freshness, key: KeyRecord?,
        storeAnswer: RecordedStoreAnswer?
    ) {
        keyId = keyID.base64
        self.assertion = Base64.encode(assertion)
        switch clientData {
        case .clientData(let bytes): self.clientData = Base64.encode(bytes)
        case .clientDataHash(let hash): clientDataHash = Base64.encode(hash)
        }
        self.freshness =
            switch freshness {
            case .challenge(let id): "challenge:\(id)"
            case .timestamp(let milliseconds): "timestamp:\(milliseconds)"
            case .vouchedByCaller: "vouched"
            }
        self.key = key.map(Key.init)
        self.storeAnswer = storeAnswer
    }

    /// The recorded freshness.
    func recordedFreshness() throws(FlowError) -> Freshness {
        if freshness == "vouched" { return .vouchedByCaller }
        if freshness.hasPrefix("challenge:") { return .challenge(String(freshness.dropFirst("challenge:".count))) }
        if freshness.hasPrefix("timestamp:"), let milliseconds = Int64(freshness.dropFirst("timestamp:".count)) {
            return .timestamp(milliseconds: milliseconds)
        }
        throw FlowError(.bundleInvalid, .malformed, "the freshness is not challenge:, timestamp: or vouched")
    }

    /// The recorded client data.
    func recordedClientData() throws(FlowError) -> ClientDataInput {
        switch (clientData, clientDataHash) {
        case (let text?, nil): return .clientData(try VerificationReplay.bytes(text, "clientData"))
        case (nil, let text?): return .clientDataHash(try VerificationReplay.bytes(text, "clientDataHash"))
        default: throw FlowError(.bundleInvalid, .malformed, "exactly one of clientData and clientDataHash")
        }
    }
}
