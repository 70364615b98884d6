public import AttestKit
public import AttestKitStore

/// The inputs of a recorded attestation: what the app sent and what the store answered.
public struct RecordedAttestation: Sendable, Hashable, Codable {
    /// The key identifier the app claimed (Base64).
    public var keyId: String
    /// The attestation object (Base64).
    public var attestation: String
    /// The challenge id the app sent back.
    public var challengeId: String
    /// The challenge's bytes (Base64) when the store handed them out; `nil` when it refused the challenge.
    public var challenge: String?
    /// The app the challenge was issued for, as its RP ID hash (Base64 of `StoredChallenge.rpIDHash`); absent for a
    /// challenge bound to no app, or a refused one.
    public var challengeApp: String?
    /// The store's refusal, if it refused.
    public var storeAnswer: RecordedStoreAnswer?
    /// For a key attestation, the app key's SubjectPublicKeyInfo DER (Base64) the client data bound; absent for a
    /// plain attestation.
    public var appKey: String?
    /// For an attestation over the challenge followed by the app's bytes, the client data as the app sent it
    /// (Base64); absent when the client data was the challenge alone.
    public var clientData: String?

    /// Creates the record of an attestation.
    public init(
        keyID: KeyID, attestation: [UInt8], challengeID: ChallengeID, challenge: [UInt8]?,
        storeAnswer: RecordedStoreAnswer?, appKey: [UInt8]? = nil, clientData: [UInt8]? = nil,
        challengeApp: [UInt8]? = nil
    ) {
        self.keyId = keyID.base64
        self.attestation = Base64.encode(attestation)
        self.challengeId = challengeID.string
        self.challenge = challenge.map { Base64.encode($0) }
        self.challengeApp = challengeApp.map { Base64.encode($0) }
        self.storeAnswer = storeAnswer
        self.appKey = appKey.map { Base64.encode($0) }
        self.clientData = clientData.map { Base64.encode($0) }
    }
}
