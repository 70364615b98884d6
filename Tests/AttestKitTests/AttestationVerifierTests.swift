import AttestKitTesting
import Crypto
import Foundation
import SwiftASN1
import Testing
import X509

@testable import AttestKit

/// Attestation verification beyond the vectors: time windows, policies, inputs, tampering.
@Suite struct AttestationVerifierTests {
    /// A real development attestation with its receipt (iOS 14.2, 3-day leaf).
    static let vector = TestVectors.named("veehaitch_ios-14.2_attestation")

    static func verifier(
        _ vector: TestVector = vector, environments: EnvironmentPolicy = .development, leeway: TimeInterval = 60,
        receiptPolicy: AttestationVerifier.ReceiptPolicy = .require, appIDs: [String]? = nil
    ) throws -> AttestationVerifier {
        AttestationVerifier(
            configuration: try .init(
                appIDs: try (appIDs ?? [vector.appId ?? ""]).map { try AppID($0) }, environments: environments,
                leeway: leeway, receiptPolicy: receiptPolicy))
    }

    static func verify(
        _ vector: TestVector = vector, bytes: [UInt8]? = nil, verifier: AttestationVerifier? = nil,
        keyID: String? = nil, clientData: ClientDataInput? = nil, at time: Date? = nil
    ) async throws -> VerifiedAttestation {
        try await (verifier ?? Self.verifier(vector)).verify(
            bytes ?? vector.bytes, keyID: try KeyID(string: keyID ?? vector.keyId ?? ""),
            clientData: clientData ?? .clientDataHash(TestVectors.decode(vector.clientDataHash ?? "")),
            at: time ?? vector.verificationTime ?? Date())
    }

    /// When the embedded receipt was created: Apple dates the credential certificate a day earlier, and some
    /// vectors' `verifyAt` lies in between, before the receipt existed.
    static func receiptCreation(_ vector: TestVector) throws -> Date {
        let receipt = try #require(try AttestationObject(bytes: vector.bytes).receipt)
        return try Receipt.parseUnverified(receipt).1.creationTime
    }

    static func leaf(_ vector: TestVector = vector) throws -> Certificate {
        try Certificate(derEncoded: try AttestationObject(bytes: vector.bytes).certificates[0])
    }

    @Test func resultCarriesWhatAppleCertified() async throws {
        let result = try await Self.verify()
        #expect(result.keyID.base64 == Self.vector.keyId)
        #expect(result.environment == .development)
        #expect(result.appID.description == Self.vector.appId)
        #expect(result.osVersion == "14.2")
        #expect(result.counter == 0)
        #expect(result.receipt?.type == .attest)
        #expect(result.publicKeyX963.count == 65)
        #expect(KeyID(publicKey: result.publicKey) == result.keyID)
        let leaf = try Self.leaf()
        #expect(result.certificateNotBefore == leaf.notValidBefore)
        #expect(result.certificateNotAfter == leaf.notValidAfter)
        #expect(result.bundleVersion == nil)
    }

    @Test func iOS27FieldsAreExposed() async throws {
        let vector = TestVectors.named("apple_doc_sample_2026_prod_attestation")
        let verifier = try Self.verifier(vector, environments: .production)
        let result = try await Self.verify(vector, verifier: verifier, at: try Self.receiptCreation(vector))
        #expect(result.bundleVersion == "1")
        #expect(result.validationCategory == 1)
        #expect(result.osVersion == "27.0")
    }

    @Test(arguments: [0.0, 60.0])
    func leafExpiryBoundaryWithAndWithoutLeeway(leeway: TimeInterval) async throws {
        let verifier = try Self.verifier(leeway: leeway)
        let notAfter = try Self.leaf().notValidAfter
        _ = try await Self.verify(verifier: verifier, at: notAfter.addingTimeInterval(leeway - 1))
        let error = await #expect(throws: AttestKitError.code(.certificateExpired)) {
            try await Self.verify(verifier: verifier, at: notAfter.addingTimeInterval(leeway + 1))
        }
        #expect(abs((error?.secondsOutside ?? 0) - 1) < 0.01)
        #expect(error?.check == .certificate)
    }

    @Test(arguments: [0.0, 60.0])
    func leafNotBeforeBoundaryWithAndWithoutLeeway(leeway: TimeInterval) async throws {
        // At the certificate's notBefore, the embedded receipt (made a day later) does not exist yet.
        let verifier = try Self.verifier(leeway: leeway, receiptPolicy: .ignore)
        let notBefore = try Self.leaf().notValidBefore
        _ = try await Self.verify(verifier: verifier, at: notBefore.addingTimeInterval(-leeway + 1))
        let error = await #expect(throws: AttestKitError.code(.certificateNotYetValid)) {
            try await Self.verify(verifier: verifier, at: notBefore.addingTimeInterval(-leeway - 1))
        }
        #expect(abs((error?.secondsOutside ?? 0) - 1) < 0.01)
    }

    @Test func environmentPolicyIsExplicit() async throws {
        await #expect(throws: AttestKitError.code(.environmentMismatch)) {
            try await Self.verify(verifier: try Self.verifier(environments: .production))
        }
        _ = try await Self.verify(verifier: try Self.verifier(environments: .both))
    }

    /// The refusal explains itself: which environment the key was attested in, which the verifier accepts, and
    /// what to change (the `environments` setting, the entitlement), for a real device's key each way.
    @Test func environmentMismatchExplainsItself() async throws {
        let development = await #expect(throws: AttestKitError.code(.environmentMismatch)) {
            try await Self.verify(verifier: try Self.verifier(environments: .production))
        }
        let toProduction = try #require(development?.reason)
        #expect(toProduction.contains("the key was attested in development"), "\(toProduction)")
        #expect(toProduction.contains("this verifier accepts production only"), "\(toProduction)")
        #expect(toProduction.contains("allow development in the `environments` setting"), "\(toProduction)")
        #expect(toProduction.contains("com.apple.developer.devicecheck.appattest-environment"), "\(toProduction)")

        let vector = TestVectors.named("apple_doc_sample_2024_prod_attestation")
        let production = await #expect(throws: AttestKitError.code(.environmentMismatch)) {
            try await Self.verify(vector, verifier: try Self.verifier(vector, environments: .development))
        }
        let toDevelopment = try #require(production?.reason)
        #expect(toDevelopment.contains("the key was attested in production"), "\(toDevelopment)")
        #expect(toDevelopment.contains("this verifier accepts development only"), "\(toDevelopment)")
        #expect(toDevelopment.contains("allow production in the `environments` setting"), "\(toDevelopment)")
    }

    @Test func severalAppIDsMatchTheRightOne() async throws {
        let verifier = try Self.verifier(appIDs: ["ABCDE12345.com.example.other", Self.vector.appId ?? ""])
        let result = try await Self.verify(verifier: verifier)
        #expect(result.appID.description == Self.vector.appId)
        await #expect(throws: AttestKitError.code(.appIdMismatch)) {
            try await Self.verify(verifier: try Self.verifier(appIDs: ["ABCDE12345.com.example.other"]))
        }
    }

    @Test func keyIDIsAcceptedAsBase64urlWithoutPadding() async throws {
        let urlSafe = (Self.vector.keyId ?? "").replacingOccurrences(of: "+", with: "-")
            .replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
        _ = try await Self.verify(keyID: urlSafe)
    }

    @Test func anotherKeyIDIsRejected() async throws {
        let other = KeyID(publicKey: P256.Signing.PrivateKey().publicKey)
        await #expect(throws: AttestKitError.code(.keyIdMismatch)) {
            try await Self.verify(keyID: other.base64)
        }
        await #expect(throws: AttestKitError.code(.keyIdMalformed)) {
            try await Self.verify(keyID: "wrong")
        }
    }

    @Test func challengeIsHashedAndRawHashIsUsedAsIs() async throws {
        let vector = TestVectors.named("apple_doc_sample_2026_prod_attestation")
        let verifier = try Self.verifier(vector, environments: .production)
        let raw = Array("example_server_challenge".utf8)
        let time = try Self.receiptCreation(vector)
        _ = try await Self.verify(vector, verifier: verifier, clientData: .clientDataHash(raw), at: time)
        await #expect(throws: AttestKitError.code(.nonceMismatch)) {
            try await Self.verify(vector, verifier: verifier, clientData: .challenge(raw), at: time)
        }
        // The documented rule, SHA-256(challenge), for a real device that followed it.
        let hashed = TestVectors.named("uebelack_production_attestation")
        _ = try await Self.verify(
            hashed, verifier: try Self.verifier(hashed, environments: .production),
            clientData: .challenge(Array("de5e0359-84f7-4dd7-a98d-5363e9415fb1".utf8)))
    }

    @Test func theReceiptIsRequiredUnlessTheCallerOptsOut() async throws {
        let vector = TestVectors.named("oliverbinns_components_dev_REASSEMBLED_no_receipt")
        let byDefault = AttestationVerifier(
            configuration: try .init(appIDs: [try AppID(vector.appId ?? "")], environments: .development))
        #expect(byDefault.configuration.receiptPolicy == .require)
        await #expect(throws: AttestKitError.code(.receiptMissing)) {
            try await Self.verify(vector, verifier: byDefault)
        }
        let ok = try await Self.verify(vector, verifier: try Self.verifier(vector, receiptPolicy: .verifyIfPresent))
        #expect(ok.receipt == nil)
        let ignored = try await Self.verify(verifier: try Self.verifier(receiptPolicy: .ignore))
        #expect(ignored.receipt == nil)
    }

    @Test func everyBitFlipInAuthenticatorDataIsRejected() async throws {
        let bytes = Self.vector.bytes
        let authData = try AttestationObject(bytes: bytes).authenticatorData.bytes
        let offset = try #require(Self.range(of: authData, in: bytes)).lowerBound
        let verifier = try Self.verifier()
        for index in 0..<authData.count {
            for bit in 0..<8 {
                var tampered = bytes
                tampered[offset + index] ^= 1 << bit
                await #expect(throws: AttestKitError.self, "byte \(index) bit \(bit)") {
                    try await Self.verify(bytes: tampered, verifier: verifier)
                }
            }
        }
    }

    @Test(arguments: [0, 1])
    func bitFlipsInCertificatesAreRejected(certificate: Int) async throws {
        let bytes = Self.vector.bytes
        let der = try AttestationObject(bytes: bytes).certificates[certificate]
        let offset = try #require(Self.range(of: der, in: bytes)).lowerBound
        let verifier = try Self.verifier()
        var generator = SeededGenerator(seed: 0xA77E57 + UInt64(certificate))
        for _ in 0..<160 {
            let index = Int.random(in: 0..<der.count, using: &generator)
            let bit = Int.random(in: 0..<8, using: &generator)
            var tampered = bytes
            tampered[offset + index] ^= 1 << bit
            await #expect(throws: AttestKitError.self, "certificate \(certificate) byte \(index) bit \(bit)") {
                try await Self.verify(bytes: tampered, verifier: verifier)
            }
        }
    }

    @Test func swappedCertificatesAreRejected() async throws {
        let object = try AttestationObject(bytes: Self.vector.bytes)
        let swapped = Self.reencode(object, certificates: [object.certificates[1], object.certificates[0]])
        await #expect(throws: AttestKitError.self) { try await Self.verify(bytes: swapped) }
        let alone = Self.reencode(object, certificates: [object.certificates[0]])
        await #expect(throws: AttestKitError.code(.certificateChainLength)) { try await Self.verify(bytes: alone) }
        let withRoot = Self.reencode(
            object, certificates: object.certificates + [try Self.der(TrustAnchor.appAttestationRoot().certificate)])
        await #expect(throws: AttestKitError.code(.certificateChainLength)) { try await Self.verify(bytes: withRoot) }
        let reencoded = Self.reencode(object, certificates: object.certificates)
        _ = try await Self.verify(bytes: reencoded)
    }

    @Test func aStrangerIntermediateIsUntrusted() async throws {
        let object = try AttestationObject(bytes: Self.vector.bytes)
        let receiptSigner = try ReceiptContainer(berEncoded: object.receipt ?? []).certificates[0]
        let stranger = Self.reencode(object, certificates: [object.certificates[0], try Self.der(receiptSigner)])
        await #expect(throws: AttestKitError.code(.certificateUntrusted)) { try await Self.verify(bytes: stranger) }
    }

    // MARK: helpers

    static func range(of needle: [UInt8], in haystack: [UInt8]) -> Range<Int>? {
        guard needle.count <= haystack.count else { return nil }
        for start in 0...(haystack.count - needle.count)
        where haystack[start..<start + needle.count].elementsEqual(needle) {
            return start..<start + needle.count
        }
        return nil
    }

    static func der(_ certificate: Certificate) throws -> [UInt8] {
        var serializer = DER.Serializer()
        try serializer.serialize(certificate)
        return serializer.serializedBytes
    }

    /// Re-encodes an attestation object with other certificates (canonical CBOR, as Apple writes it).
    static func reencode(_ object: AttestationObject, certificates: [[UInt8]]) -> [UInt8] {
        CBOREncoder.encode(
            .textMap([
                "fmt": .text("apple-appattest"),
                "attStmt": .textMap([
                    "x5c": .array(certificates.map(CBORValue.byteString)),
                    "receipt": .byteString(object.receipt ?? []),
                ]),
                "authData": .byteString(object.authenticatorData.bytes),
            ]))
    }
}
