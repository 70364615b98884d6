import AttestKit
import AttestKitFlows
import AttestKitStore
import AttestKitTesting
import AttestKitVapor
import AttestKitWire
import Crypto
import Foundation
import Testing
import Vapor
import VaporTesting

/// A Vapor application with AttestKit on a SQLite store: the flows on `app.attestKit`, the lifecycle handler
/// running the store, the route collection under `v1`. (The behaviour of the guarded route, on both SQL stores, is
/// the shared suite's: AttestKitEdgeTests.)
enum VaporBench {
    static let apple: SoftwareApple = {
        do {
            return try SoftwareApple(seed: Array("AttestKitVaporTests".utf8))
        } catch {
            preconditionFailure("cannot build the software Apple: \(error)")
        }
    }()

    static let appID: AppID = {
        do { return try AppID("ABCDE12345.com.example.app") } catch { preconditionFailure("\(error)") }
    }()

    /// Runs `body` with a booted application over a fresh SQLite store, then shuts it down; the verifier checks
    /// `policy` and the services add `deployment`'s rules after it.
    static func withApplication(
        policy: some AttestationPolicy = AcceptAnyAttestation(), deployment: DeploymentPolicy = DeploymentPolicy(),
        _ body: (Application) async throws -> Void
    ) async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(UUID().uuidString)
        defer { try? FileManager.default.removeItem(at: directory) }
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let store = SQLiteAttestationStore(path: directory.appendingPathComponent("store.sqlite").path)
        try await withApp(configure: { app in
            let verifier = AttestationVerifier(
                configuration: try .init(appIDs: [appID], environments: .development, trustAnchors: apple.trustAnchors),
                policy: policy)
            app.attestKit = AttestKitServices(store: store, verifier: verifier, policy: deployment)
            app.lifecycle.use(AttestKitLifecycle())
            try app.grouped("v1").register(collection: AttestKitRoutes())
            try await app.asyncBoot()
        }) { app in
            try await body(app)
        }
    }

    /// The `code` of an error envelope.
    static func code(_ response: TestingHTTPResponse) -> String? {
        try? WireJSON.decode(ErrorResponse.self, from: Data(response.body.readableBytesView)).error.code
    }

    /// Registers a new key through `POST v1/challenges` and `POST v1/attestations`, expecting `status` (and `code`
    /// when given); returns the device and key.
    @discardableResult
    static func register(
        _ app: Application, expecting status: HTTPStatus = .created, code: String? = nil,
        sourceLocation: SourceLocation = #_sourceLocation
    ) async throws -> (device: SimulatedDevice, keyID: KeyID) {
        let device = SimulatedDevice(
            apple: apple, configuration: .init(appID: appID, environment: .development, validationCategory: 1))
        let keyID = device.generateKey()
        var challenge: ChallengeResponse?
        let request = ByteBuffer(bytes: Array(try WireJSON.encode(ChallengeRequest(purpose: "attest"))))
        try await app.testing().test(.POST, "/v1/challenges", body: request) { response in
            #expect(response.status == .created)
            challenge = try? WireJSON.decode(ChallengeResponse.self, from: Data(response.body.readableBytesView))
        }
        let issued = try #require(challenge)
        let bytes = try #require(Data(base64Encoded: issued.challenge))
        let attestation = try device.attestKey(keyID, clientDataHash: Array(SHA256.hash(data: bytes)))
        let body = ByteBuffer(
            bytes: Array(
                try WireJSON.encode(
                    AttestationRequest(
                        keyId: keyID.base64, attestation: Data(attestation).base64EncodedString(),
                        challengeId: issued.challengeId))))
        try await app.testing().test(.POST, "/v1/attestations", body: body) { response in
            #expect(response.status == status, sourceLocation: sourceLocation)
            if let code { #expect(Self.code(response) == code, sourceLocation: sourceLocation) }
        }
        return (device, keyID)
    }
}
