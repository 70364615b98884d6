import Crypto
import Foundation
import Testing

@testable import AttestKit

/// Assertion verification beyond the vectors: counters, keys, client data, tampering.
@Suite struct AssertionVerifierTests {
    static let vector = TestVectors.named("warden_ios17_iphone15_dev_assertion")

    static func verify(
        bytes: [UInt8]? = nil, publicKey: [UInt8]? = nil, appID: String? = nil, clientData: ClientDataInput? = nil,
        previousCounter: UInt32 = 0
    ) throws -> VerifiedAssertion {
        try AssertionVerifier().verify(
            bytes ?? vector.bytes, publicKeyX963: publicKey ?? TestVectors.decode(vector.publicKey ?? ""),
            appID: try AppID(appID ?? vector.appId ?? ""),
            clientData: clientData ?? .clientData(TestVectors.decode(vector.clientData ?? "")),
            previousCounter: previousCounter)
    }

    @Test func verifiesAndReturnsTheCounter() throws {
        let result = try Self.verify()
        #expect(result.counter == 1)
        #expect(result.authenticatorData.bytes.count == 37)
    }

    @Test func clientDataAndItsHashAreEquivalent() throws {
        let hash = TestVectors.decode(Self.vector.clientDataHash ?? "")
        #expect(try Self.verify(clientData: .clientDataHash(hash)).counter == 1)
    }

    @Test func counterMustIncrease() throws {
        #expect(throws: AttestKitError.code(.counterNotIncreasing)) { try Self.verify(previousCounter: 1) }
        #expect(throws: AttestKitError.code(.counterNotIncreasing)) { try Self.verify(previousCounter: .max) }
    }

    @Test func anotherKeyOrAnotherRequestFailsTheSignature() throws {
        let other = Array(P256.Signing.PrivateKey().publicKey.x963Representation)
        #expect(throws: AttestKitError.code(.signatureInvalid)) { try Self.verify(publicKey: other) }
        #expect(throws: AttestKitError.code(.signatureInvalid)) {
            try Self.verify(clientData: .clientData(Array("another request".utf8)))
        }
        #expect(throws: AttestKitError.code(.publicKeyMalformed)) { try Self.verify(publicKey: [0x04, 1, 2, 3]) }
    }

    @Test func anotherAppIsRejected() throws {
        #expect(throws: AttestKitError.code(.appIdMismatch)) { try Self.verify(appID: "ABCDE12345.com.example.other") }
    }

    @Test func signedDigestIsSHA256OfTheNonceNotTheNonceItself() throws {
        // Apple signs message = nonce with ECDSA-SHA256, so the digest is SHA-256(nonce). A verifier that
        // treats the nonce as the digest would reject every real assertion; this pins the semantics.
        let object = try AssertionObject(bytes: Self.vector.bytes)
        let key = try P256.Signing.PublicKey(x963Representation: TestVectors.decode(Self.vector.publicKey ?? ""))
        let signature = try P256.Signing.ECDSASignature(derRepresentation: object.signature)
        let nonce = SHA256.hash(
            data: object.authenticatorData.bytes + SHA256.hash(data: TestVectors.decode(Self.vector.clientData ?? "")))
        #expect(key.isValidSignature(signature, for: Array(nonce)))
        #expect(!key.isValidSignature(signature, for: nonce))
    }

    @Test func everyBitFlipIsRejected() throws {
        let bytes = Self.vector.bytes
        for index in 0..<bytes.count {
            for bit in 0..<8 {
                var tampered = bytes
                tampered[index] ^= 1 << bit
                #expect(throws: AttestKitError.self, "byte \(index) bit \(bit)") { try Self.verify(bytes: tampered) }
            }
        }
    }

    @Test func everyTruncationIsRejected() throws {
        let bytes = Self.vector.bytes
        for length in 0..<bytes.count {
            #expect(throws: AttestKitError.self, "prefix \(length)") { try Self.verify(bytes: Array(bytes[..<length])) }
        }
    }
}
