public import AttestKit
import Crypto
public import Foundation

/// A simulated object as a conformance vector, in the schema of `Tests/AttestKitTests/Vectors` (see its
/// README): `attestkit verify --jsonl FILE --attestation-root PEM --receipt-root PEM` and the test suites read it
/// unchanged. A vector built with a fault expects `reject:<check>` of that fault; otherwise `valid`.
public struct SimulatedVector: Codable, Sendable, Hashable {
    /// The challenge an attestation's client data hash was made from.
    public struct Challenge: Codable, Sendable, Hashable {
        /// The challenge as text, when it is UTF-8.
        public var utf8: String?
        /// The challenge, Base64.
        public var b64: String
    }

    /// A name unique enough to be a file name.
    public var name: String
    /// `attestation`, `assertion` or `receipt`.
    public var kind: String
    /// `valid` or `reject:<check>`.
    public var expect: String
    /// The object, Base64.
    public var data: String
    /// The App ID the verifier is configured with.
    public var appId: String?
    /// The environment the verifier requires.
    public var environment: String?
    /// The moment to verify at, ISO-8601 with milliseconds.
    public var verifyAt: String?
    /// The key identifier, Base64.
    public var keyId: String?
    /// Attestations: the exact bytes passed as clientDataHash; assertions: SHA-256 of ``clientData``. Base64.
    public var clientDataHash: String?
    /// Attestations: how ``clientDataHash`` was made (`SHA256` of the challenge, or `RAW`).
    public var clientDataHashRule: String?
    /// Attestations: the challenge, when the hash was made from one.
    public var challenge: Challenge?
    /// Assertions: the signed client data, Base64.
    public var clientData: String?
    /// Assertions: the attested key, X9.63, Base64.
    public var publicKey: String?
    /// Assertions: the stored counter before the assertion.
    public var previousCounter: Int64?
    /// Assertions: the counter the assertion carries.
    public var expectedCounter: Int64?
    /// Where the vector comes from, and its fault.
    public var notes: String?
    /// The deployment policy the vector is judged under (the policy vectors of ``PolicyVectors``); `nil` for
    /// Apple's checks alone.
    public var policy: Policy?
    /// For a refusal: the stable error code expected (`policy_validation_category`, ...).
    public var expectCode: String?
    /// What the object reports (iOS 27 data, key access control), as the verifier must read it: for an assertion,
    /// its extension map only when the key's attestation (``registered``) reported one.
    public var reported: Reported?
    /// Assertions judged under a policy: what the key's attestation reported at registration.
    public var registered: Reported?

    /// The deployment rules of a policy vector, as the service's settings name them.
    public struct Policy: Codable, Sendable, Hashable {
        /// `policy.validation-categories`: names or numbers, and `unreported`; `nil` accepts any.
        public var validationCategories: [String]?
        /// `policy.minimum-bundle-version`; `nil` accepts any.
        public var minimumBundleVersion: String?
        /// `policy.validation-category-change`: `refuse` (the default when absent) or `allow`.
        public var validationCategoryChange: String?
        /// `policy.macos-app-ids`: App IDs whose keys must carry Apple's macOS access policy.
        public var macOSAppIds: [String]?

        /// Creates a policy.
        public init(
            validationCategories: [String]? = nil, minimumBundleVersion: String? = nil,
            validationCategoryChange: String? = nil, macOSAppIds: [String]? = nil
        ) {
            self.validationCategories = validationCategories
            self.minimumBundleVersion = minimumBundleVersion
            self.validationCategoryChange = validationCategoryChange
            self.macOSAppIds = macOSAppIds
        }
    }

    /// What an attestation or assertion reports.
    public struct Reported: Codable, Sendable, Hashable {
        /// The iOS 27 bundle version; `nil` when the object carries no extension map.
        public var bundleVersion: String?
        /// The iOS 27 validation category; `nil` when the object carries no extension map.
        public var validationCategory: UInt32?
        /// Attestations: the credential certificate's key access control, `absent`, `ios` or `macos`.
        public var keyAccessControl: String?

        /// Creates the facts.
        public init(bundleVersion: String? = nil, validationCategory: UInt32? = nil, keyAccessControl: String? = nil) {
            self.bundleVersion = bundleVersion
            self.validationCategory = validationCategory
            self.keyAccessControl = keyAccessControl
        }
    }

    /// An attestation vector.
    ///
    /// - Parameters:
    ///   - object: What ``SimulatedDevice/attestKey(_:clientDataHash:fault:at:)`` returned.
    ///   - device: The device that made it.
    ///   - keyID: The attested key.
    ///   - clientDataHash: The bytes passed as clientDataHash.
    ///   - challenge: The challenge `clientDataHash` is SHA-256 of, or `nil` when the hash was given raw.
    ///   - fault: The fault built in, if any.
    ///   - time: The attestation time, which is also the verification time.
    public static func attestation(
        _ object: [UInt8], device: SimulatedDevice, keyID: KeyID, clientDataHash: [UInt8], challenge: [UInt8]?,
        fault: SoftwareAppleFault?, at time: Date
    ) -> SimulatedVector {
        var vector = SimulatedVector(
            name: name("attestation", device, keyID, fault), kind: "attestation", expect: expectation(fault),
            data: base64(object), appId: device.configuration.appID.description,
            environment: device.configuration.environment.rawValue, verifyAt: timestamp(time), keyId: keyID.base64,
            clientDataHash: base64(clientDataHash), notes: notes(fault))
        if let challenge {
            vector.clientDataHashRule = "SHA256: clientDataHash = SHA-256(challenge)"
            vector.challenge = Challenge(utf8: String(validating: challenge, as: UTF8.self), b64: base64(challenge))
        } else {
            vector.clientDataHashRule = "RAW: clientDataHash is the given bytes"
        }
        return vector
    }

    /// An assertion vector.
    ///
    /// - Parameters:
    ///   - object: What ``SimulatedDevice/generateAssertion(_:clientDataHash:fault:)`` returned.
    ///   - device: The device that made it.
    ///   - keyID: The signing key.
    ///   - clientData: The client data whose SHA-256 was signed.
    ///   - previousCounter: The key's counter before the assertion (what a server has stored).
    ///   - fault: The fault built in, if any.
    public static func assertion(
        _ object: [UInt8], device: SimulatedDevice, keyID: KeyID, clientData: [UInt8], previousCounter: UInt32,
        fault: SoftwareAppleFault?
    ) -> SimulatedVector {
        SimulatedVector(
            name: name("assertion", device, keyID, fault, "c\(device.counter(for: keyID) ?? 0)"), kind: "assertion",
            expect: expectation(fault),
            data: base64(object), appId: device.configuration.appID.description, keyId: keyID.base64,
            clientDataHash: base64(SHA256.hash(data: clientData)), clientData: base64(clientData),
            publicKey: device.publicKey(for: keyID).map { base64($0.x963Representation) },
            previousCounter: Int64(previousCounter), expectedCounter: device.counter(for: keyID).map(Int64.init),
            notes: notes(fault))
    }

    /// A receipt vector, for a receipt from ``SoftwareApple/refresh(_:riskMetric:fault:at:)`` or an attestation.
    public static func receipt(
        _ receipt: [UInt8], device: SimulatedDevice, keyID: KeyID, fault: SoftwareAppleFault?, at time: Date
    ) -> SimulatedVector {
        SimulatedVector(
            name: name("receipt", device, keyID, fault, "t\(Int64(time.timeIntervalSince1970))"), kind: "receipt",
            expect: expectation(fault),
            data: base64(receipt), appId: device.configuration.appID.description,
            environment: device.configuration.environment.rawValue, verifyAt: timestamp(time), keyId: keyID.base64,
            notes: notes(fault))
    }

    /// The vector as one line of JSON (keys sorted), for a `.json` file or a `--jsonl` stream.
    public func jsonLine() throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return String(decoding: try encoder.encode(self), as: UTF8.self)
    }

    /// `simulated_KIND_ENVIRONMENT[_FAULT]_KEY[_SUFFIX]`, KEY the first 4 bytes of the key identifier in hex.
    private static func name(
        _ kind: String, _ device: SimulatedDevice, _ keyID: KeyID, _ fault: SoftwareAppleFault?, _ suffix: String? = nil
    ) -> String {
        let key = Hex.encode(keyID.bytes.prefix(4))
        return ["simulated", kind, device.configuration.environment.rawValue, fault?.rawValue, key, suffix]
            .compactMap { $0 }.joined(separator: "_")
    }

    private static func expectation(_ fault: SoftwareAppleFault?) -> String {
        fault.map { "reject:\($0.expectedCheck.rawValue)" } ?? "valid"
    }

    private static func notes(_ fault: SoftwareAppleFault?) -> String {
        let origin = "Simulated by AttestKitTesting's software Apple; verifies only with its roots, never with Apple's."
        return fault.map { "\(origin) Fault \($0.rawValue): expect \($0.expectedCode.rawValue)." } ?? origin
    }

    private static func base64(_ bytes: some Sequence<UInt8>) -> String { Base64.encode(bytes) }

    /// ISO-8601 UTC with three fractional digits (`verifyAt`).
    static func timestamp(_ date: Date) -> String { ReceiptPayload.iso8601Milliseconds(date) }
}
