import AttestKitTesting
import Foundation
import Testing

@testable import AttestKit

/// Seeded generative fuzzing: mutated real objects and random bytes never crash a parser or verifier (a crash
/// fails the run; typed throws guarantee that only `AttestKitError` escapes). Scale with `ATTESTKIT_FUZZ_ITERATIONS` (default 1500 per seed
/// object); failures print the seed and iteration so they can be replayed.
@Suite struct GenerativeFuzzTests {
    static let iterations = ProcessInfo.processInfo.environment["ATTESTKIT_FUZZ_ITERATIONS"].flatMap(Int.init) ?? 1500

    static let seeds: [TestVector] = [
        TestVectors.named("apple_doc_sample_2026_prod_attestation"),
        TestVectors.named("veehaitch_ios-14.2_attestation"),
        TestVectors.named("warden_ios17_iphone15_dev_assertion"),
        TestVectors.named("veehaitch_hist_2020-08-23_cMuAh3_receipt_RECEIPT"),
        TestVectors.named("uebelack_production_receipt_ATTEST"),
    ]

    /// Replaces, inserts, deletes, duplicates or splices bytes; sometimes several times.
    static func mutate(_ input: [UInt8], using generator: inout SeededGenerator) -> [UInt8] {
        var bytes = input
        for _ in 0..<Int.random(in: 1...4, using: &generator) {
            guard !bytes.isEmpty else { return [UInt8.random(in: 0...255, using: &generator)] }
            let index = Int.random(in: 0..<bytes.count, using: &generator)
            switch Int.random(in: 0..<7, using: &generator) {
            case 0: bytes[index] = UInt8.random(in: 0...255, using: &generator)
            case 1: bytes[index] ^= 1 << UInt8.random(in: 0..<8, using: &generator)
            case 2: bytes.insert(UInt8.random(in: 0...255, using: &generator), at: index)
            case 3: bytes.remove(at: index)
            case 4:
                bytes[index] =
                    [0x00, 0xFF, 0x7F, 0x80, 0x18, 0x1B, 0x5B, 0x9F, 0xBF][Int.random(in: 0..<9, using: &generator)]
            case 5:
                let end = min(bytes.count, index + Int.random(in: 1...64, using: &generator))
                bytes.insert(contentsOf: bytes[index..<end], at: index)
            default:
                let end = min(bytes.count, index + Int.random(in: 1...64, using: &generator))
                bytes.removeSubrange(index..<end)
            }
        }
        return bytes
    }

    /// Every parser and verifier on `bytes`; only `AttestKitError` may escape.
    static func exercise(_ bytes: [UInt8], vector: TestVector) async {
        _ = try? CBORReader.decode(bytes[...])
        _ = try? AttestationObject(bytes: bytes)
        _ = try? AssertionObject(bytes: bytes)
        _ = try? AuthenticatorData(attestation: bytes)
        _ = try? AuthenticatorData(assertion: bytes)
        _ = try? Receipt.parseUnverified(bytes)
        do {
            let appID = try AppID(vector.appId ?? "")
            let keyID = try KeyID(string: vector.keyId ?? "")
            let time = vector.verificationTime ?? Date()
            switch vector.kind {
            case "attestation":
                let verifier = AttestationVerifier(
                    configuration: try .init(appIDs: [appID], environments: .both))
                _ = try await verifier.verify(
                    bytes, keyID: keyID, clientData: .clientDataHash(TestVectors.decode(vector.clientDataHash ?? "")),
                    at: time)
            case "assertion":
                _ = try AssertionVerifier().verify(
                    bytes, publicKeyX963: TestVectors.decode(vector.publicKey ?? ""), appID: appID,
                    clientData: .clientData(TestVectors.decode(vector.clientData ?? "")), previousCounter: 0)
            default:
                _ = try await ReceiptVerifier().verify(bytes, appID: appID, keyID: keyID, maximumAge: nil, at: time)
            }
        } catch {
            // Typed throws: the only error that can arrive here is AttestKitError.
            _ = error.code
        }
    }

    @Test(arguments: seeds)
    func mutatedRealObjectsNeverCrash(_ vector: TestVector) async {
        var generator = SeededGenerator(seed: 0xF022 &+ UInt64(vector.name.utf8.count))
        let original = vector.bytes
        for _ in 0..<Self.iterations {
            await Self.exercise(Self.mutate(original, using: &generator), vector: vector)
        }
    }

    @Test func randomBytesNeverCrash() async {
        var generator = SeededGenerator(seed: 0xB17E5)
        let vector = Self.seeds[0]
        for _ in 0..<Self.iterations {
            let length = Int.random(in: 0..<600, using: &generator)
            var bytes = (0..<length).map { _ in UInt8.random(in: 0...255, using: &generator) }
            if !bytes.isEmpty, Bool.random(using: &generator) {
                bytes[0] = [0xA2, 0xA3, 0x30, 0x58, 0x9F][Int.random(in: 0..<5, using: &generator)]
            }
            await Self.exercise(bytes, vector: vector)
        }
    }
}
