public import AttestKit
public import Crypto
import Foundation
import Synchronization

/// A simulated iPhone running one app: `DCAppAttestService` in software, backed by a ``SoftwareApple``.
///
/// It behaves like the real service: ``generateKey()`` returns the key identifier (SHA-256 of the X9.63 public
/// key), ``attestKey(_:clientDataHash:fault:at:)`` returns a CBOR attestation object with Apple's layout and
/// fails for a key attested before, ``generateAssertion(_:clientDataHash:fault:)`` returns
/// `{signature, authenticatorData}` with a 37-byte authenticator data (flags 0x40; on iOS 27 followed by the
/// extension map, as in the attestation) and the key's counter advanced,
/// and fails for a key not attested yet. Faults (``SoftwareAppleFault``) build specific defects on request.
///
/// The device is a reference type, like the real service: copies share its keys and counters. It is safe to use
/// from several tasks at once. ``save(to:)`` and ``load(from:)`` keep its state (and its software Apple) in a
/// JSON file, which holds **test private keys only**: never put anything of value in one.
public final class SimulatedDevice: Sendable, CustomStringConvertible {
    /// What the device runs.
    public struct Configuration: Sendable, Hashable {
        /// The App ID (`TEAMID.bundle.id`) of the app that uses App Attest.
        public var appID: AppID
        /// The App Attest environment the app's entitlement selects.
        public var environment: AppAttestEnvironment
        /// The OS version written in the credential certificate (extension 1.2.840.113635.100.8.7).
        public var osVersion: String
        /// iOS 27 and later: the authenticator data extension map (`apple_bundle_version_01`,
        /// `apple_validation_category_01`) is appended to attestations.
        public var iOS27Extensions: Bool
        /// The bundle version written in the extension map.
        public var bundleVersion: String
        /// The launch validation category written in the extension map (4 little-endian bytes, as Apple does).
        public var validationCategory: UInt32
        /// Whether credential certificates carry the 2026 EKU 1.2.840.113635.100.4.24.
        public var appleExtendedKeyUsage: Bool
        /// The key access-control extension (1.2.840.113635.100.8.6) credential certificates carry: none before
        /// 2026, iOS's policy, Apple's macOS policy, or any value (malformed ones included).
        public var keyAccessControl: KeyAccessControl

        /// Creates a configuration.
        ///
        /// - Parameters:
        ///   - appID: The app's App ID.
        ///   - environment: The App Attest environment.
        ///   - iOS27: Simulates iOS 27: the extension map, the 2026 EKU and OS version "27.0" by default.
        ///   - osVersion: The OS version; "18.5", or "27.0" for iOS 27, by default.
        ///   - bundleVersion: The bundle version of the extension map.
        ///   - validationCategory: The validation category of the extension map.
        ///   - keyAccessControl: The access-control extension; iOS's policy for iOS 27, none otherwise, by default.
        public init(
            appID: AppID,
            environment: AppAttestEnvironment,
            iOS27: Bool = false,
            osVersion: String? = nil,
            bundleVersion: String = "1",
            validationCategory: UInt32 = 1,
            keyAccessControl: KeyAccessControl? = nil
        ) {
            self.appID = appID
            self.environment = environment
            self.osVersion = osVersion ?? (iOS27 ? "27.0" : "18.5")
            self.iOS27Extensions = iOS27
            self.bundleVersion = bundleVersion
            self.validationCategory = validationCategory
            self.appleExtendedKeyUsage = iOS27
            self.keyAccessControl = keyAccessControl ?? (iOS27 ? .iOS : .none)
        }
    }

    /// One key of the device's key store.
    struct Key: Sendable {
        let keyID: KeyID
        let privateKey: P256.Signing.PrivateKey
        var counter: UInt32
        var attested: Bool
        /// The `ATTEST` receipt of the key's attestation (a convenience: the real device keeps none).
        var receipt: [UInt8]?
    }

    /// The software Apple that certifies this device's keys.
    public let apple: SoftwareApple
    /// What the device runs.
    public let configuration: Configuration
    let keys: Mutex<[Key]>

    /// Creates a device with an empty key store.
    public init(apple: SoftwareApple, configuration: Configuration) {
        self.apple = apple
        self.configuration = configuration
        self.keys = Mutex([])
    }

    /// Restores a device with a key store (from a state file).
    init(apple: SoftwareApple, configuration: Configuration, keys: [Key]) {
        self.apple = apple
        self.configuration = configuration
        self.keys = Mutex(keys)
    }

    /// The same device after its app was replaced by another build (an update, a TestFlight build installed over
    /// the App Store one, a re-signed copy): a new device with a copy of this one's keys and counters (the keychain
    /// survives), running `configuration` (its bundle version, validation category, even its App ID). Use the new
    /// device from then on: the two no longer share counters.
    ///
    /// - Parameter configuration: What the new build runs.
    /// - Returns: The device running the new build.
    public func updated(to configuration: Configuration) -> SimulatedDevice {
        SimulatedDevice(apple: apple, configuration: configuration, keys: keys.withLock { $0 })
    }

    /// The App ID, environment and number of keys; never key material.
    public var description: String {
        "SimulatedDevice(appID: \(configuration.appID), environment: \(configuration.environment.rawValue), "
            + "keys: \(keys.withLock { $0.count }))"
    }

    // MARK: Key store

    /// Generates a P-256 key from the system's secure random source and returns its identifier.
    public func generateKey() -> KeyID {
        store(P256.Signing.PrivateKey())
    }

    /// Generates a key drawn from `generator`, for repeatable tests (e.g. with ``SplitMix64``).
    public func generateKey(using generator: inout some RandomNumberGenerator) -> KeyID {
        guard case .p256(let key) = SigningKey.drawn(.p256, using: &generator) else { return generateKey() }
        return store(key)
    }

    private func store(_ privateKey: P256.Signing.PrivateKey) -> KeyID {
        let keyID = KeyID(publicKey: privateKey.publicKey)
        keys.withLock { keys in
            if !keys.contains(where: { $0.keyID == keyID }) {
                keys.append(Key(keyID: keyID, privateKey: privateKey, counter: 0, attested: false))
            }
        }
        return keyID
    }

    /// Every key identifier, oldest first.
    public var keyIDs: [KeyID] { keys.withLock { $0.map(\.keyID) } }

    /// The public key of `keyID`, or `nil` for an unknown key.
    public func publicKey(for keyID: KeyID) -> P256.Signing.PublicKey? {
        keys.withLock { $0.first { $0.keyID == keyID }?.privateKey.publicKey }
    }

    /// The counter of the last assertion `keyID` made (0 after attestation), or `nil` for an unknown key.
    public func counter(for keyID: KeyID) -> UInt32? {
        keys.withLock { $0.first { $0.keyID == keyID }?.counter }
    }

    /// Sets the counter of `keyID`, to simulate a key that has already made assertions (real first counters are
    /// sometimes above 1).
    /// - Throws: ``SoftwareAppleError/Code/invalidKey`` for an unknown key.
    public func setCounter(_ counter: UInt32, for keyID: KeyID) throws(SoftwareAppleError) {
        try withKey(keyID) { key throws(SoftwareAppleError) in key.counter = counter }
    }

    /// The `ATTEST` receipt embedded in `keyID`'s attestation, kept for convenience (a server stores it; a real
    /// device does not), or `nil`.
    public func receipt(for keyID: KeyID) -> [UInt8]? {
        keys.withLock { $0.first { $0.keyID == keyID }?.receipt }
    }

    /// Runs `body` on the key `keyID` under the lock.
    func withKey<Result>(
        _ keyID: KeyID, _ body: (inout Key) throws(SoftwareAppleError) -> Result
    ) throws(SoftwareAppleError) -> Result {
        let outcome: Swift.Result<Result, SoftwareAppleError> = keys.withLock { keys in
            guard let index = keys.firstIndex(where: { $0.keyID == keyID }) else {
                return .failure(SoftwareAppleError(.invalidKey, "the key is not in this device's key store"))
            }
            do throws(SoftwareAppleError) {
                return .success(try body(&keys[index]))
            } catch {
                return .failure(error)
            }
        }
        return try outcome.get()
    }
}
