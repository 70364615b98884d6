import ArgumentParser
import AttestKit
import AttestKitTesting
import Crypto
import Foundation

/// `attestkit simulate attestation`: a new key on a simulated device, attested by the software Apple.
struct SimulateAttestationCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "attestation",
        abstract: "Attest a new key of a simulated device and write the attestation vector.",
        discussion: """
            --challenge B64 takes the challenge exactly as POST /v1/challenges returns it (Base64 bytes) and makes \
            clientDataHash = SHA-256 of those bytes, Apple's documented rule; --client-data-hash B64 passes the \
            bytes as they are. With --state FILE the software Apple and the device are read from FILE when it \
            exists (created otherwise, as by 'simulate device') and saved back.
            """
    )

    @Option(name: .long, help: "The App ID, TEAMID.bundle.id.")
    var appId: String

    @Option(name: .long, help: "production or development.", transform: SimulationArguments.environment)
    var environment: AppAttestEnvironment

    @Option(
        name: .long,
        help: "The server challenge, Base64 as POST /v1/challenges returns it; clientDataHash = SHA-256 of its bytes.")
    var challenge: String?

    @Option(name: .long, help: "The exact clientDataHash bytes, Base64.")
    var clientDataHash: String?

    @Option(name: .long, help: "A simulator state file (TEST keys only), read if present and saved.")
    var state: String?

    @Option(name: .long, help: "Derive a new software Apple's keys from this text (repeatable roots' keys).")
    var seed: String?

    @Flag(name: .customLong("ios27"), help: "Simulate iOS 27: the authenticator data extension map and the 2026 EKU.")
    var iOS27 = false

    @OptionGroup var common: SimulationArguments

    func validate() throws {
        guard (challenge == nil) != (clientDataHash == nil) else {
            throw ValidationError("give exactly one of --challenge B64 or --client-data-hash B64")
        }
        if let challenge, Self.challengeBytes(challenge) == nil {
            throw ValidationError(
                "--challenge is the Base64 challenge as POST /v1/challenges returns it, and '\(challenge)' is not "
                    + "Base64 (to hash other bytes, pass --client-data-hash with their SHA-256)")
        }
    }

    /// The bytes of a Base64 (or base64url) challenge, or `nil` when the text is not Base64 or decodes to nothing.
    static func challengeBytes(_ text: String) -> [UInt8]? {
        guard let bytes = Base64.decode(text), !bytes.isEmpty else { return nil }
        return bytes
    }

    func run() async throws {
        let time = try common.time()
        let appID = try AppID(validating: appId)
        let device = try SimulationArguments.device(
            state: state, appID: appID, environment: environment, seed: seed, iOS27: iOS27, at: time)
        let challengeBytes = challenge.flatMap(Self.challengeBytes)
        let hash: [UInt8]
        if let challengeBytes {
            hash = Array(SHA256.hash(data: challengeBytes))
        } else {
            guard let text = clientDataHash, let decoded = Base64.decode(text), !decoded.isEmpty else {
                throw ValidationError("--client-data-hash is not Base64")
            }
            hash = decoded
        }
        let keyID = device.generateKey()
        let object = try device.attestKey(keyID, clientDataHash: hash, fault: common.fault, at: time)
        if let state { try device.save(to: URL(fileURLWithPath: state)) }
        let vector = SimulatedVector.attestation(
            object, device: device, keyID: keyID, clientDataHash: hash, challenge: challengeBytes,
            fault: common.fault, at: time)
        try SimulationOutput(path: common.out, json: common.json).write(vector, apple: device.apple)
    }
}
