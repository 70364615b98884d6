import AttestKit
import AttestKitFlows
import AttestKitTestSupport
import AttestKitTesting
import AttestKitVapor
import AttestKitWire
import Crypto
import Foundation
import NIOCore
import NIOHTTP1
import Testing
import Vapor
import VaporTesting
import AttestKitStore

/// A Vapor application with AttestKit on a store of one backend: the flows on `app.attestKit`, the lifecycle
/// handler running the store, the route collection under `v1`, and `POST orders` behind the middleware.
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

    /// The backends to test: SQLite, and PostgreSQL when it answers or is required.
    static func backends() async -> [String] {
        await PostgresTestServer.shared.shouldRun() ? ["sqlite", "postgres"] : ["sqlite"]
    }

    /// Runs `body` with a booted application over a fresh store of `backend`, then shuts it down.
    static func withApplication(_ backend: String, _ body: (Application) async throws -> Void) async throws {
        switch backend {
        case "postgres":
            guard await PostgresTestServer.shared.isAvailable() else { return }
            let gate = PostgresTestServer.shared.gate
            await gate.enter()
            let schema = "v_" + UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "")
            do {
                let store = try PostgresTestServer.store(schema: schema)
                try await run(store, body) { try? await store.dropSchema() }
            } catch {
                await gate.leave()
                throw error
            }
            await gate.leave()
        default:
            let directory = FileManager.default.temporaryDirectory.appendingPathComponent(UUID().uuidString)
            defer { try? FileManager.default.removeItem(at: directory) }
            try await run(SQLiteAttestationStore(path: directory.appendingPathComponent("store.sqlite").path), body) {}
        }
    }

    private static func run(
        _ store: any AttestationStore, _ body: (Application) async throws -> Void,
        beforeShutdown: () async -> Void
    ) async throws {
        try await withApp(configure: { app in
            let verifier = AttestationVerifier(
                configuration: try .init(appIDs: [appID], environments: .development, trustAnchors: apple.trustAnchors))
            app.attestKit = AttestKitServices(store: store, verifier: verifier)
            app.lifecycle.use(AttestKitLifecycle())
            try app.grouped("v1").register(collection: AttestKitRoutes())
            app.grouped(AttestKitMiddleware()).post("orders") { req async throws -> String in
                guard let key = req.attestKit.key else { throw Abort(.internalServerError) }
                return key.keyID.base64
            }
            try await app.asyncBoot()
        }) { app in
            do {
                try await body(app)
            } catch {
                await beforeShutdown()
                throw error
            }
            await beforeShutdown()
        }
    }

    /// A simulated device of the app with a new key.
    static func device() -> (device: SimulatedDevice, keyID: KeyID) {
        let device = SimulatedDevice(
            apple: apple, configuration: .init(
                appID: appID, environment: .development, iOS27: false, osVersion: nil, validationCategory: 1))
        return (device, device.generateKey())
    }

    /// The JSON object of a response body.
    static func object(_ response: TestingHTTPResponse) -> [String: Any]? {
        try? JSONSerialization.jsonObject(with: Data(response.body.readableBytesView)) as? [String: Any]
    }

    /// The `code` of an error envelope.
    static func code(_ response: TestingHTTPResponse) -> String? {
        (object(response)?["error"] as? [String: Any])?["code"] as? String
    }

    static func json(_ object: [String: String]) throws -> ByteBuffer {
        ByteBuffer(bytes: try JSONSerialization.data(withJSONObject: object))
    }

    /// Registers a new key through `POST v1/challenges` and `POST v1/attestations`; returns the device and key.
    static func register(_ app: Application) async throws -> (device: SimulatedDevice, keyID: KeyID) {
        let (device, keyID) = device()
        var challengeID = ""
        var challenge: [UInt8] = []
        try await app.testing().test(.POST, "/v1/challenges", body: try json(["purpose": "attest"])) { response in
            #expect(response.status == .created)
            let fields = object(response)
            challengeID = fields?["challengeId"] as? String ?? ""
            challenge = (fields?["challenge"] as? String).flatMap { Data(base64Encoded: $0) }.map { Array($0) } ?? []
        }
        let attestation = try device.attestKey(keyID, clientDataHash: Array(SHA256.hash(data: challenge)))
        let body = try json([
            "keyId": keyID.base64, "attestation": Data(attestation).base64EncodedString(), "challengeId": challengeID,
        ])
        try await app.testing().test(.POST, "/v1/attestations", body: body) { response in
            #expect(response.status == .created)
            #expect(object(response)?["keyId"] as? String == keyID.base64)
            #expect(object(response)?["state"] as? String == "active")
        }
        return (device, keyID)
    }

    /// The headers of an assertion by `keyID` over a `POST /orders` with `body`, fresh now.
    static func assertionHeaders(
        _ device: SimulatedDevice, _ keyID: KeyID, body: String
    ) throws -> HTTPHeaders {
        let milliseconds = Int64(Date().timeIntervalSince1970 * 1_000)
        let binding = try RequestBinding(
            method: "POST", target: "/orders", body: Array(body.utf8), freshness: .timestamp(milliseconds: milliseconds))
        let assertion = try device.generateAssertion(keyID, clientDataHash: binding.clientDataHash)
        return [
            AttestKitHeaderNames.keyID: keyID.base64,
            AttestKitHeaderNames.assertion: Data(assertion).base64EncodedString(),
            AttestKitHeaderNames.timestamp: String(milliseconds),
        ]
    }
}
