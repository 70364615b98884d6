public import Foundation

/// What ``AppAttestManager`` keeps about its key between launches, so that no attestation is ever spent twice.
///
/// Apple records metrics per attestation that cannot be reset and asks for one attestation per install. The
/// state therefore follows the key through every step and is saved after each one: a key generated but not yet
/// attested (with the challenge and client data hash to attest it with, which Apple asks to reuse after
/// `serverUnavailable`), a key attested but not yet registered (with its attestation object, sent again until the
/// service registers or refuses it for good), a registered key, and a key the service reports revoked. It also
/// carries the backoff: when the next device or service call may be made, and the service's deferral of the
/// attestation (its ramp): when the key may ask for an attestation challenge again. And it keeps the identifiers of
/// the install's earlier keys the service may hold (``retiredKeyIDs``), so that an erasure can name them all.
///
/// It holds no secret: the private key never leaves the Secure Enclave, and the attestation object is public
/// material sent to the service once.
public struct KeyState: Sendable, Hashable, Codable {
    /// Where the key is in its life.
    public enum Stage: String, Sendable, Hashable, Codable {
        /// No key: the next attempt generates one.
        case none
        /// Generated, not attested yet (``KeyState/challengeID`` and ``KeyState/clientDataHash`` set once a
        /// challenge was fetched).
        case generated
        /// Attested by Apple, not registered with the service yet (``KeyState/attestation`` set).
        case attested
        /// Registered with the service: assertions may be made.
        case registered
        /// The service reported the key revoked (`key_revoked`); the manager does not attest a new key on its own.
        case revoked
    }

    /// The stage.
    public var stage: Stage
    /// The key identifier (Base64), from ``Stage/generated`` on.
    public var keyID: String?
    /// The attestation challenge's id, once fetched.
    public var challengeID: String?
    /// When the attestation challenge expires by this device's clock, when the service said: its lifetime left
    /// when the answer arrived, by the answer's `Date` header, counted from then (the service's own expiry when the
    /// answer had no `Date` header, and in states stored by earlier versions).
    public var challengeExpiresAt: Date?
    /// SHA-256 of the attestation challenge: the client data hash `attestKey` is called (and called again) with.
    public var clientDataHash: Data?
    /// The attestation object, while ``Stage/attested``.
    public var attestation: Data?
    /// Whether the attestation object was posted at least once (saved before the first post), so that a
    /// `challenge_consumed` answering a later post, as after a relaunch that lost the first answer, means that the
    /// key was registered. `nil`: not posted yet (and in states stored by earlier versions).
    public var registrationPosted: Bool?
    /// Whether the service has accepted an assertion of the registered key (a key that worked, which the device
    /// or the service may later refuse, is replaced at once; one that never worked only after the backoff).
    public var asserted: Bool
    /// How many attempts failed in a row (the backoff's exponent), from the first try of a key until the service
    /// accepts an assertion of it: a key registered and then refused at once counts as one more failure.
    public var failures: Int
    /// No device or service call for the key before this time (`nil`: none pending).
    public var notBefore: Date?
    /// When the key before this one was replaced (refused by the service or the device), carried through this key's
    /// steps: a key replaced again within ``AppAttestManager/Configuration/maximumBackoff`` of that waits for the
    /// backoff even when an assertion of it was answered 2xx, and such an answer does not end the failures (a 2xx
    /// may come from a route that verifies nothing). `nil`: none (and in states stored by earlier versions).
    public var replacedAt: Date?
    /// The service deferred attesting this key (its ramp: 429 `attestation_deferred`) until this time: no
    /// attestation challenge is asked for before it, and then with the same key. Not a failure: it leaves
    /// ``failures`` and ``notBefore`` alone. `nil`: not deferred (and in states stored by earlier versions).
    public var deferredUntil: Date?
    /// The identifiers of this install's earlier keys that the service may hold, newest first, at most
    /// ``maximumRetiredKeyIDs`` (the oldest dropped first), kept so that an erasure can name them
    /// (``AppAttestManager/keyIDsForErasure()``): every key the manager replaced or reset once the service may have
    /// registered it (registered, revoked, or its attestation posted, even if then refused), and every key attested
    /// for an app key (``AppAttestManager/attestAppKey(publicKeyDER:)``, which serves that attestation only). A key
    /// whose attestation was never sent is not kept: the service has no row of it. Each is in the key's one spelling,
    /// standard Base64 with padding. Empty in states stored by earlier versions.
    public var retiredKeyIDs: [String]

    /// The most ``retiredKeyIDs`` a state keeps: 16.
    public static let maximumRetiredKeyIDs = 16

    /// A state at `stage`, empty otherwise.
    public init(stage: Stage = .none, keyID: String? = nil) {
        self.stage = stage
        self.keyID = keyID
        self.challengeID = nil
        self.challengeExpiresAt = nil
        self.clientDataHash = nil
        self.attestation = nil
        self.registrationPosted = nil
        self.asserted = false
        self.failures = 0
        self.notBefore = nil
        self.deferredUntil = nil
        self.replacedAt = nil
        self.retiredKeyIDs = []
    }

    /// Reads a state as ``encoded()`` writes it. The optional fields and ``retiredKeyIDs`` may be absent, as in
    /// states stored by earlier versions: `nil` or empty then (a longer list than ``maximumRetiredKeyIDs`` is cut).
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        stage = try container.decode(Stage.self, forKey: .stage)
        keyID = try container.decodeIfPresent(String.self, forKey: .keyID)
        challengeID = try container.decodeIfPresent(String.self, forKey: .challengeID)
        challengeExpiresAt = try container.decodeIfPresent(Date.self, forKey: .challengeExpiresAt)
        clientDataHash = try container.decodeIfPresent(Data.self, forKey: .clientDataHash)
        attestation = try container.decodeIfPresent(Data.self, forKey: .attestation)
        registrationPosted = try container.decodeIfPresent(Bool.self, forKey: .registrationPosted)
        asserted = try container.decode(Bool.self, forKey: .asserted)
        failures = try container.decode(Int.self, forKey: .failures)
        notBefore = try container.decodeIfPresent(Date.self, forKey: .notBefore)
        replacedAt = try container.decodeIfPresent(Date.self, forKey: .replacedAt)
        deferredUntil = try container.decodeIfPresent(Date.self, forKey: .deferredUntil)
        let retired = try container.decodeIfPresent([String].self, forKey: .retiredKeyIDs) ?? []
        retiredKeyIDs = Array(retired.prefix(Self.maximumRetiredKeyIDs))
    }

    /// A registered key, as stored by earlier versions (a bare key identifier).
    public static func registered(_ keyID: String) -> KeyState { KeyState(stage: .registered, keyID: keyID) }

    /// The stored form: JSON.
    public func encoded() throws -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        encoder.dateEncodingStrategy = .millisecondsSince1970
        return try encoder.encode(self)
    }

    /// Reads the stored form; a bare key identifier (what earlier versions stored) is a registered key.
    /// - Throws: `DecodingError` for anything else.
    public static func decoded(_ data: Data) throws -> KeyState {
        if data.first == UInt8(ascii: "{") {
            let decoder = JSONDecoder()
            decoder.dateDecodingStrategy = .millisecondsSince1970
            return try decoder.decode(KeyState.self, from: data)
        }
        let text = String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        guard !text.isEmpty, text.utf8.count <= 256, Data(base64Encoded: text) != nil else {
            throw DecodingError.dataCorrupted(.init(codingPath: [], debugDescription: "not a key state"))
        }
        return .registered(text)
    }
}

extension KeyState {
    /// Whether the service may hold this state's key: registered, revoked, or its attestation posted at least once
    /// (a post whose answer was lost may have registered it; one refused did not, and naming it is harmless).
    var keyMayBeRegistered: Bool {
        keyID != nil && (stage == .registered || stage == .revoked || registrationPosted == true)
    }

    /// Puts `keyID` first in ``retiredKeyIDs`` (once), dropping the oldest beyond ``maximumRetiredKeyIDs``.
    mutating func retire(_ keyID: String) {
        var retired = retiredKeyIDs.filter { $0 != keyID }
        retired.insert(keyID, at: 0)
        retiredKeyIDs = Array(retired.prefix(Self.maximumRetiredKeyIDs))
    }

    /// A state without a key (``Stage/none``, nothing else set) that keeps ``retiredKeyIDs``, with this state's key
    /// put first when the service may hold it (``keyMayBeRegistered``).
    func withoutKey() -> KeyState {
        var next = KeyState()
        next.retiredKeyIDs = retiredKeyIDs
        if keyMayBeRegistered, let keyID { next.retire(keyID) }
        return next
    }
}
