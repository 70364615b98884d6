import AttestKit
import AttestKitTesting
import Crypto
import Foundation
import Testing

/// The iOS 27 extension map trails the authenticator data with no length and no flag, and the device signs the
/// authenticator data followed by whatever client data hash the app gives it. On a device before iOS 27 an app can
/// give `map ‖ hash` and send the map as the end of the authenticator data: the signature verifies over the same
/// bytes. Only a verified receipt, whose client data hash is the one the device was given, tells the two apart.
@Suite("The iOS 27 extension map is believed only where something binds it")
struct ExtensionMapBindingTests {
    static let appID: AppID = {
        do { return try AppID("ABCDE12345.com.example.app") } catch { preconditionFailure("\(error)") }
    }()

    /// `{"apple_bundle_version_01": "999", "apple_validation_category_01": h'04000000'}`.
    static let map: [UInt8] =
        [0xA2, 0x77] + Array("apple_bundle_version_01".utf8) + [0x63] + Array("999".utf8) + [0x78, 0x1C]
        + Array("apple_validation_category_01".utf8) + [0x44, 0x04, 0x00, 0x00, 0x00]

    /// `bytes` with the byte string `old` (24 to 65,535 bytes) replaced by `new`.
    static func replacing(_ old: [UInt8], with new: [UInt8], in bytes: [UInt8]) throws -> [UInt8] {
        let original = byteStringHead(old.count) + old
        let start = try #require(
            (0...(bytes.count - original.count)).first { Array(bytes[$0..<$0 + original.count]) == original })
        return Array(bytes[..<start]) + byteStringHead(new.count) + new + Array(bytes[(start + original.count)...])
    }

    /// The CBOR head of a byte string of `count` bytes (24 to 65,535), in its shortest form.
    static func byteStringHead(_ count: Int) -> [UInt8] {
        count < 256 ? [0x58, UInt8(count)] : [0x59, UInt8(count >> 8), UInt8(count & 0xFF)]
    }

    @Test("an attestation whose map came from its client data hash: refused with its receipt, unreported without")
    func attestationMap() async throws {
        let apple = try SoftwareApple()
        let device = SimulatedDevice(
            apple: apple, configuration: .init(appID: Self.appID, environment: .development, iOS27: false))
        let keyID = device.generateKey()
        let challenge = Array("a challenge of the service's making".utf8)
        let hash = Array(SHA256.hash(data: challenge))
        let signed = try device.attestKey(keyID, clientDataHash: Self.map + hash)
        let authData = Array(try AttestationObject(bytes: signed).authenticatorData.bytes)
        let forged = try Self.replacing(authData, with: authData + Self.map, in: signed)
        func verifier(_ policy: AttestationVerifier.ReceiptPolicy) throws -> AttestationVerifier {
            AttestationVerifier(
                configuration: try .init(
                    appIDs: [Self.appID], environments: .development, receiptPolicy: policy,
                    trustAnchors: apple.trustAnchors))
        }
        // The receipt was made for `map ‖ hash`: it gives the split away.
        await #expect(throws: AttestKitError.code(.receiptClientHashMismatch)) {
            try await verifier(.require).verify(forged, keyID: keyID, clientData: .challenge(challenge))
        }
        // Without the receipt nothing binds the map: the key registers, its map unreported.
        let unbound = try await verifier(.ignore).verify(forged, keyID: keyID, clientData: .challenge(challenge))
        #expect(unbound.authenticatorData.extensions?.validationCategory == 4, "the map parses")
        #expect(!unbound.extensionsAuthenticated)
        #expect(unbound.validationCategory == nil && unbound.bundleVersion == nil)
        #expect(ValidationCategoryPolicy(allowed: [4]).check(unbound) != .meetsPolicy)
    }

    @Test("a receipt of another attestation of the key with an equal client data hash: refused, the map unbelieved")
    func receiptOfAnotherAttestationWithEqualHash() async throws {
        let apple = try SoftwareApple()
        let device = SimulatedDevice(
            apple: apple, configuration: .init(appID: Self.appID, environment: .development, iOS27: false))
        let keyID = device.generateKey()
        // A second device holding the same key (Apple lets an app attest one key again after a failure).
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(UUID().uuidString)
        defer { try? FileManager.default.removeItem(at: directory) }
        try device.save(to: directory.appendingPathComponent("device.json"))
        let twin = try SimulatedDevice.load(from: directory.appendingPathComponent("device.json"))
        let challenge = Array("one challenge, two attestations".utf8)
        let hash = Array(SHA256.hash(data: challenge))
        // Attestation A signs `map ‖ hash` (its receipt's field 4 gives it away); B signs `hash`.
        let withMap = try device.attestKey(keyID, clientDataHash: Self.map + hash)
        let plain = try twin.attestKey(keyID, clientDataHash: hash)
        let authData = Array(try AttestationObject(bytes: withMap).authenticatorData.bytes)
        let receiptA = try #require(try AttestationObject(bytes: withMap).receipt)
        let receiptB = try #require(try AttestationObject(bytes: plain).receipt)
        // A's certificates and authenticator data with the map spliced in, B's receipt: field 4 is `hash`.
        let forged = try Self.replacing(
            receiptA, with: receiptB, in: try Self.replacing(authData, with: authData + Self.map, in: withMap))
        let verifier = AttestationVerifier(
            configuration: try .init(
                appIDs: [Self.appID], environments: .development, receiptPolicy: .require,
                trustAnchors: apple.trustAnchors))
        await #expect(throws: AttestKitError.code(.receiptKeyMismatch)) {
            try await verifier.verify(forged, keyID: keyID, clientData: .challenge(challenge))
        }
        // B itself, with its own receipt, verifies: the receipt is genuine, only carried into A.
        let genuine = try await verifier.verify(plain, keyID: keyID, clientData: .challenge(challenge))
        #expect(genuine.extensionsAuthenticated && genuine.validationCategory == nil)
    }

    @Test("an assertion's map of a key attested without one is not believed by the policies, straight from the core")
    func assertionMapOfKeyWithoutOne() async throws {
        let apple = try SoftwareApple()
        let device = SimulatedDevice(
            apple: apple, configuration: .init(appID: Self.appID, environment: .development, iOS27: false))
        let keyID = device.generateKey()
        let challenge = Array("a challenge of the service's making".utf8)
        let attested = try await AttestationVerifier(
            configuration: try .init(
                appIDs: [Self.appID], environments: .development, trustAnchors: apple.trustAnchors)
        ).verify(
            try device.attestKey(keyID, clientDataHash: Array(SHA256.hash(data: challenge))), keyID: keyID,
            clientData: .challenge(challenge))
        let key = RegisteredKey(bundleVersion: attested.bundleVersion, validationCategory: attested.validationCategory)
        #expect(key.bundleVersion == nil && key.validationCategory == nil)
        // The app passes `map ‖ hash` and sends the map as the end of the authenticator data.
        let hash = Array(SHA256.hash(data: Array("POST /orders".utf8)))
        let signed = try device.generateAssertion(keyID, clientDataHash: Self.map + hash)
        let authData = Array(try AssertionObject(bytes: signed).authenticatorData.bytes)
        let forged = try Self.replacing(authData, with: authData + Self.map, in: signed)
        let verified = try AssertionVerifier().verify(
            forged, publicKey: attested.publicKey, appID: Self.appID, clientData: .clientDataHash(hash),
            previousCounter: 0)
        #expect(verified.validationCategory == 4, "the map parses and verifies")
        #expect(ValidationCategoryPolicy(allowed: [4]).check(verified, of: key) != .meetsPolicy)
        let minimum = try #require(BundleVersion("500"))
        #expect(MinimumBundleVersionPolicy(minimum).check(verified, of: key) != .meetsPolicy)
        #expect(verified.reported(for: key).validationCategory == nil)
    }

    @Test("an iOS 27 device's own attestation, with its receipt: the map is believed")
    func genuineMap() async throws {
        let apple = try SoftwareApple()
        let device = SimulatedDevice(
            apple: apple,
            configuration: .init(
                appID: Self.appID, environment: .development, iOS27: true, bundleVersion: "3.1",
                validationCategory: 4))
        let keyID = device.generateKey()
        let challenge = Array("another challenge".utf8)
        let signed = try device.attestKey(keyID, clientDataHash: Array(SHA256.hash(data: challenge)))
        let verified = try await AttestationVerifier(
            configuration: try .init(appIDs: [Self.appID], environments: .development, trustAnchors: apple.trustAnchors)
        ).verify(signed, keyID: keyID, clientData: .challenge(challenge))
        #expect(verified.extensionsAuthenticated && verified.validationCategory == 4 && verified.bundleVersion == "3.1")
    }
}
