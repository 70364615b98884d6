import AttestKit
import AttestKitFlows
import AttestKitStore
import AttestKitTesting
import AttestKitWire
import Crypto
import Foundation
import Testing

/// Attestations over client data beyond the challenge, without HTTP: the challenge's bytes followed by the app's own
/// (`AttestationClientData`) register the key and hand back the app's bytes; client data that is not the consumed
/// challenge's bytes followed by at least one byte, or is too long, is refused with its code before anything is
/// stored, and an attestation over other client data is `nonce_mismatch`.
@Suite("Attestation client data")
struct AttestationClientDataTests {
    static let appData = Array(#"{"user":"42","session":"s-7"}"#.utf8)

    /// A fresh `attest` challenge of the bench.
    static func challenge(_ bench: FlowBench) async throws -> StoredChallenge {
        try await bench.issuer.issue(purpose: .attest)
    }

    /// Registers a new key of a new device with an attestation over `attested` (SHA-256 of it), sending `sent` as
    /// the client data, for the challenge `challengeID`.
    static func register(
        _ bench: FlowBench, challengeID: ChallengeID, attested: [UInt8], sent: [UInt8]?
    ) async throws -> AttestationRegistrar.Registered {
        let device = bench.device()
        let attestation = try device.device.attestKey(device.keyID, clientDataHash: Array(SHA256.hash(data: attested)))
        return try await bench.registrar().registerVerified(
            keyID: device.keyID, attestation: attestation, challengeID: challengeID, clientData: sent, now: Date())
    }

    /// The code of the refusal of ``register(_:challengeID:attested:sent:)`` (a new key, which must then not be
    /// stored), or `nil` when it registered.
    static func refusal(
        _ bench: FlowBench, challengeID: ChallengeID, attested: [UInt8], sent: [UInt8]?,
        sourceLocation: SourceLocation = #_sourceLocation
    ) async throws -> String? {
        let device = bench.device()
        let attestation = try device.device.attestKey(device.keyID, clientDataHash: Array(SHA256.hash(data: attested)))
        do throws(FlowError) {
            _ = try await bench.registrar().registerVerified(
                keyID: device.keyID, attestation: attestation, challengeID: challengeID, clientData: sent,
                now: Date())
            return nil
        } catch {
            #expect(try await bench.store.key(device.keyID) == nil, sourceLocation: sourceLocation)
            return error.code.rawValue
        }
    }

    @Test func theChallengeFollowedByTheAppsBytesRegistersTheKeyAndAnswersTheBytes() async throws {
        let bench = try FlowBench()
        let challenge = try await Self.challenge(bench)
        let clientData = try AttestationClientData(challenge: challenge.bytes, appData: Self.appData)
        #expect(clientData.clientData == challenge.bytes + Self.appData)
        let device = bench.device()
        let attestation = try device.device.attestKey(device.keyID, clientDataHash: clientData.clientDataHash)
        var admitted: [AppID] = []
        let registered = try await bench.registrar().registerVerified(
            keyID: device.keyID, attestation: attestation, challengeID: challenge.id,
            clientData: clientData.clientData, now: Date()
        ) { appID throws(FlowError) in admitted.append(appID) }
        #expect(admitted == [FlowBench.appID])
        #expect(registered.appData == Self.appData)
        #expect(registered.record.keyID == device.keyID)
        #expect(try await bench.store.key(device.keyID) == registered.record)
        // The challenge is spent.
        await #expect(throws: FlowError(StoreError.challengeConsumed)) {
            _ = try await Self.register(
                bench, challengeID: challenge.id, attested: clientData.clientData, sent: clientData.clientData)
        }
        // A plain attestation answers no app bytes.
        let plain = try await Self.challenge(bench)
        let registeredPlain = try await Self.register(bench, challengeID: plain.id, attested: plain.bytes, sent: nil)
        #expect(registeredPlain.appData == nil)
    }

    @Test func theLongestClientDataIsAcceptedOneByteMoreIsInvalidAndKeepsTheChallenge() async throws {
        let bench = try FlowBench()
        let challenge = try await Self.challenge(bench)
        let longest = challenge.bytes + [UInt8](repeating: 0x61, count: AttestationClientData.maximumLength - 32)
        let tooLong = longest + [0x61]
        let code = try await Self.refusal(bench, challengeID: challenge.id, attested: tooLong, sent: tooLong)
        #expect(code == "invalid_field")
        // Refused before the challenge was consumed: it still registers the longest client data.
        let registered = try await Self.register(bench, challengeID: challenge.id, attested: longest, sent: longest)
        #expect(registered.appData?.count == AttestationClientData.maximumLength - 32)
        #expect(throws: RequestBindingError(.malformed)) {
            try AttestationClientData(challenge: challenge.bytes, appData: tooLong.dropFirst(32))
        }
    }

    @Test func noAppBytesOrLessThanAChallengeIsInvalidAndKeepsTheChallenge() async throws {
        let bench = try FlowBench()
        let challenge = try await Self.challenge(bench)
        for sent in [[], [0], Array(challenge.bytes.prefix(31)), challenge.bytes] {
            let code = try await Self.refusal(bench, challengeID: challenge.id, attested: sent, sent: sent)
            #expect(code == "invalid_field", "\(sent.count) bytes")
        }
        #expect(throws: RequestBindingError(.malformed)) {
            try AttestationClientData(challenge: challenge.bytes, appData: [])
        }
        #expect(throws: RequestBindingError(.invalidFreshness)) {
            try AttestationClientData(challenge: challenge.bytes.prefix(31), appData: Self.appData)
        }
        let registered = try await Self.register(
            bench, challengeID: challenge.id, attested: challenge.bytes + [0], sent: challenge.bytes + [0])
        #expect(registered.appData == [0])
    }

    @Test func clientDataThatDoesNotBeginWithTheChallengeIsRefusedAndStoresNothing() async throws {
        let bench = try FlowBench()
        let other = try await Self.challenge(bench)
        var variants: [(String, ([UInt8]) -> [UInt8])] = [
            ("the challenge after the app's bytes", { Self.appData + $0 }),
            ("the challenge in the middle", { [0x7B] + $0 + Self.appData }),
            // The app's bytes begin with `{`: after a challenge ending in `{` (1 in 256) the dropped byte would
            // come back, so a space goes first then.
            (
                "a truncated challenge",
                { Array($0.dropLast()) + ($0.last == Self.appData.first ? [0x20] : []) + Self.appData }
            ),
            ("the challenge without its first byte", { Array($0.dropFirst()) + Self.appData }),
            ("another challenge", { _ in other.bytes + Self.appData }),
            ("the challenge's Base64", { Array(Data($0).base64EncodedString().utf8) + Self.appData }),
            ("zeros", { [UInt8](repeating: 0, count: $0.count) + Self.appData }),
        ]
        for bit in 0..<(32 * 8) {
            variants.append(
                (
                    "bit \(bit) flipped",
                    { challenge in
                        var flipped = challenge
                        flipped[bit / 8] ^= 1 << (bit % 8)
                        return flipped + Self.appData
                    }
                ))
        }
        for (name, variant) in variants {
            let challenge = try await Self.challenge(bench)
            let sent = variant(challenge.bytes)
            // An attestation genuinely made over the bytes sent: only the challenge check refuses it.
            let code = try await Self.refusal(bench, challengeID: challenge.id, attested: sent, sent: sent)
            #expect(code == "client_data_challenge_mismatch", "\(name)")
        }
    }

    @Test func anAttestationOverOtherClientDataIsANonceMismatch() async throws {
        let bench = try FlowBench()
        let cases: [(String, ([UInt8]) -> (attested: [UInt8], sent: [UInt8]))] = [
            ("attested over the challenge alone", { ($0, $0 + Self.appData) }),
            ("attested over other app bytes", { ($0 + Array("other".utf8), $0 + Self.appData) }),
            ("attested over a byte more", { ($0 + Self.appData + [0], $0 + Self.appData) }),
        ]
        for (name, make) in cases {
            let challenge = try await Self.challenge(bench)
            let (attested, sent) = make(challenge.bytes)
            let code = try await Self.refusal(bench, challengeID: challenge.id, attested: attested, sent: sent)
            #expect(code == "nonce_mismatch", "\(name)")
        }
        // And the plain route refuses an attestation over the challenge and app bytes.
        let challenge = try await Self.challenge(bench)
        let code = try await Self.refusal(
            bench, challengeID: challenge.id, attested: challenge.bytes + Self.appData, sent: nil)
        #expect(code == "nonce_mismatch")
    }

    @Test("random client data never crashes: a typed refusal or, for the challenge's prefix, a registration")
    func randomClientData() async throws {
        let bench = try FlowBench()
        var generator = SeededGenerator(seed: 33)
        for round in 0..<200 {
            let challenge = try await Self.challenge(bench)
            let length = Int.random(in: 0...80, using: &generator)
            var sent = (0..<length).map { _ in UInt8.random(in: 0...255, using: &generator) }
            if round % 4 == 0 { sent = challenge.bytes + sent }
            let code = try await Self.refusal(bench, challengeID: challenge.id, attested: sent, sent: sent)
            let expected: String? =
                sent.count <= 32 ? "invalid_field" : round % 4 == 0 ? nil : "client_data_challenge_mismatch"
            #expect(code == expected, "round \(round)")
        }
    }

    @Test("a refusal of client data is recorded with the client data and replays to its code")
    func recorded() async throws {
        for (code, attestedSuffix, sentChallenge) in [
            ("nonce_mismatch", Array("other".utf8), true), ("client_data_challenge_mismatch", Self.appData, false),
        ] {
            let recorder = try RecordingTests.recorder()
            let bench = try FlowBench(recorder: recorder)
            let challenge = try await Self.challenge(bench)
            let front = sentChallenge ? challenge.bytes : challenge.bytes.reversed()
            await #expect(throws: FlowError.self) {
                _ = try await Self.register(
                    bench, challengeID: challenge.id, attested: front + attestedSuffix, sent: front + Self.appData)
            }
            let result = try await RecordingTests.expectReplay(recorder, code: code)
            #expect(result.bundle.attestation?.clientData == Data(front + Self.appData).base64EncodedString())
        }
    }
}

/// A splitmix64 generator, seeded for repeatable runs.
private struct SeededGenerator: RandomNumberGenerator {
    var state: UInt64

    init(seed: UInt64) { state = seed }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
