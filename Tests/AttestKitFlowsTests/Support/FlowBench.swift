import AttestKit
import AttestKitFlows
import AttestKitStore
import AttestKitTesting
import AttestKitWire
import Crypto
import Foundation

/// The flows over an in-memory store and the software Apple, without any HTTP: a registrar, a gate and an issuer
/// sharing one store, and simulated devices to attest and assert with.
struct FlowBench: Sendable {
    static let apple: SoftwareApple = {
        do {
            return try SoftwareApple(seed: Array("AttestKitFlowsTests".utf8))
        } catch {
            preconditionFailure("cannot build the software Apple: \(error)")
        }
    }()

    static let appID: AppID = {
        do { return try AppID("ABCDE12345.com.example.app") } catch { preconditionFailure("\(error)") }
    }()

    let store = MemoryAttestationStore()
    let issuer: ChallengeIssuer
    let gate: AssertionGate
    let verifier: AttestationVerifier
    let recorder: VerificationRecorder?

    init(timestampWindow: TimeInterval = 300, recorder: VerificationRecorder? = nil) throws {
        self.recorder = recorder
        issuer = ChallengeIssuer(store: store)
        gate = AssertionGate(store: store, timestampWindow: timestampWindow, recorder: recorder)
        verifier = AttestationVerifier(
            configuration: try .init(
                appIDs: [Self.appID], environments: .development, trustAnchors: Self.apple.trustAnchors))
    }

    /// A simulated device of the app, with one new key.
    func device(
        osVersion: String? = nil, validationCategory: UInt32 = 1, iOS27: Bool = false, appID: AppID = Self.appID
    ) -> Device {
        let device = SimulatedDevice(
            apple: Self.apple,
            configuration: .init(
                appID: appID, environment: .development, iOS27: iOS27, osVersion: osVersion,
                validationCategory: validationCategory))
        return Device(device: device, keyID: device.generateKey())
    }

    /// A registrar of this bench's store, whose verifier (this bench's configuration) checks `policy`.
    func registrar(policy: some AttestationPolicy = AcceptAnyAttestation()) -> AttestationRegistrar {
        AttestationRegistrar(
            verifier: AttestationVerifier(configuration: verifier.configuration, policy: policy), store: store,
            recorder: recorder)
    }

    /// Challenge, attestation, registration of `device`'s key.
    @discardableResult
    func register(
        _ device: Device, policy: some AttestationPolicy = AcceptAnyAttestation()
    ) async throws -> KeyRecord {
        let challenge = try await issuer.issue(purpose: .attest)
        let attestation = try device.device.attestKey(
            device.keyID, clientDataHash: Array(SHA256.hash(data: challenge.bytes)))
        return try await registrar(policy: policy).register(
            keyID: device.keyID, attestation: attestation, challengeID: challenge.id, now: Date())
    }

    /// A device of the app whose key is registered.
    func registeredDevice() async throws -> Device {
        let device = device()
        try await register(device)
        return device
    }

    /// The attestation of a new key of `device`, verified (for policy checks).
    func verifiedAttestation(_ device: Device) async throws -> VerifiedAttestation {
        let challenge = Array("a challenge of at least sixteen bytes".utf8)
        let attestation = try device.device.attestKey(
            device.keyID, clientDataHash: Array(SHA256.hash(data: challenge)))
        return try await verifier.verify(attestation, keyID: device.keyID, clientData: .challenge(challenge))
    }

    /// A simulated device and its key.
    struct Device: Sendable {
        let device: SimulatedDevice
        let keyID: KeyID

        /// An assertion over the canonical client data of a `POST /orders` request with `freshness`.
        func assertion(
            freshness: Freshness, body: [UInt8] = Array("{}".utf8)
        ) throws -> (assertion: [UInt8], binding: AssertionBinding) {
            let binding = try RequestBinding(method: "POST", target: "/orders", body: body, freshness: freshness)
            let assertion = try device.generateAssertion(keyID, clientDataHash: binding.clientDataHash)
            return (assertion, try AssertionBinding(binding))
        }
    }

    /// Unix milliseconds now, shifted by `seconds`.
    static func milliseconds(_ seconds: TimeInterval = 0) -> Int64 {
        Int64((Date().timeIntervalSince1970 + seconds) * 1_000)
    }
}

extension FlowBench.Device {
    /// A device sharing this one's key and state, through the simulator's state file: a key not yet attested can be
    /// attested once by each, which is how a test gets a second genuine attestation of a registered key.
    func twin() throws -> FlowBench.Device {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("attestkit-twin-\(UUID()).json")
        defer { try? FileManager.default.removeItem(at: file) }
        try device.save(to: file)
        return FlowBench.Device(device: try SimulatedDevice.load(from: file), keyID: keyID)
    }
}

extension FlowBench {
    /// Configurations that strand a key of ``appID`` registered in development, each with the code that refuses it:
    /// another App ID only, and the key's App ID in production only.
    static let strandings: [(KeyAcceptance, String)] = {
        do {
            return [
                (KeyAcceptance(appIDs: [try AppID("ZZZZZZZZZZ.com.example.other")], environments: .both), "app_not_accepted"),
                (KeyAcceptance(appIDs: [appID], environments: .production), "environment_not_accepted"),
            ]
        } catch { preconditionFailure("\(error)") }
    }()
}
