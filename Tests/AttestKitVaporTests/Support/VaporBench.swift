import AttestKit
import AttestKitFlows
import AttestKitStore
import AttestKitTestSupport
import AttestKitTesting
import AttestKitVapor
import AttestKitWire
import Crypto
import Foundation
import Logging
import Prometheus
import Testing
import Vapor
import VaporTesting

/// A Vapor application with AttestKit on a SQL store: the application on `app.attestKit`, the lifecycle handler
/// running the store, the route collection at the root. (The behaviour of the guarded route, on both SQL stores, is
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

    /// The backend token and the admin token of the bench's configuration.
    static let backendToken = "backend-token-for-the-vapor-tests-0001"
    static let adminToken = "admin-token-for-the-vapor-tests-00001"

    /// The configuration of the bench's application: the app, the software Apple's anchors, development keys; the
    /// verifier checks `policy` and `deployment`'s rules after it.
    static func configuration(
        policy: (any AttestationPolicy)? = nil, deployment: DeploymentPolicy = DeploymentPolicy()
    ) -> AttestKitApplication.Configuration {
        var configuration = AttestKitApplication.Configuration(
            appIDs: [appID], environments: .development, trustAnchors: apple.trustAnchors, policy: deployment)
        configuration.attestationPolicy = policy
        return configuration
    }

    /// Runs `body` with a booted application over a fresh store of `kind` (run, prepared and closed by
    /// ``AttestKitLifecycle``; on PostgreSQL in `schema`, dropped at the end), the routes mounted at the root;
    /// `configure` adjusts the configuration.
    static func withApplication(
        on kind: VaporStoreKind = .sqlite, schema: String = VaporStoreKind.freshSchema(),
        policy: (any AttestationPolicy)? = nil,
        deployment: DeploymentPolicy = DeploymentPolicy(),
        configure: @escaping (inout AttestKitApplication.Configuration) throws -> Void = { _ in },
        apple: AppleClients? = nil, metrics: FlowMetrics = FlowMetrics(),
        now: @escaping @Sendable () -> Date = { Date() }, prometheus: PrometheusCollectorRegistry? = nil,
        trustedProxies: [IPNetwork] = [], trustsUnixSocketPeers: Bool = false,
        lifecycle: AttestKitLifecycle = AttestKitLifecycle(), mount: @escaping (Application) throws -> Void = { _ in },
        dashboardSessionLifetime: TimeInterval = 3_600, _ body: (Application) async throws -> Void
    ) async throws {
        try await kind.withStore(schema: schema) { store in
            try await withApp(configure: { app in
                app.logger.logLevel = .critical
                var configuration = Self.configuration(policy: policy, deployment: deployment)
                try configure(&configuration)
                let application = try AttestKitApplication(
                    configuration: configuration, store: store, apple: apple, metrics: metrics,
                    logger: Logger(label: "vapor-tests", factory: { _ in SwiftLogNoOpLogHandler() }), now: now)
                var exposition: (@Sendable () -> [UInt8])?
                if let prometheus { exposition = { prometheus.emitToBuffer() } }
                app.attestKit = try AttestKitIntegration(
                    application, trustedProxies: trustedProxies, trustsUnixSocketPeers: trustsUnixSocketPeers,
                    exposition: exposition, dashboardSessionLifetime: dashboardSessionLifetime)
                app.lifecycle.use(lifecycle)
                try app.register(collection: AttestKitRoutes())
                try mount(app)
                try await app.asyncBoot()
            }) { app in
                try await body(app)
            }
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
        _ app: Application, expecting status: HTTPStatus = .created, code: String? = nil, at time: Date? = nil,
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
        let attestation = try device.attestKey(
            keyID, clientDataHash: Array(SHA256.hash(data: bytes)), at: time ?? Date())
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

/// The stores the Vapor tests run on: SQLite, and PostgreSQL when it answers or is required
/// (`ATTESTKIT_REQUIRE_POSTGRES=1`).
enum VaporStoreKind: String, CaseIterable, Sendable, CustomTestStringConvertible {
    case sqlite
    case postgres

    var testDescription: String { rawValue }

    /// The kinds to run on here.
    static func available() async -> [VaporStoreKind] {
        await PostgresTestServer.shared.shouldRun() ? [.sqlite, .postgres] : [.sqlite]
    }

    /// A new PostgreSQL schema name of the Vapor tests.
    static func freshSchema() -> String {
        "v_" + UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "")
    }

    /// Runs `body` with a fresh store of this kind (not yet running: the application's lifecycle runs it), then
    /// removes it: the SQLite file, or the PostgreSQL schema (`schema`, a fresh one by default), whatever `body` does.
    func withStore(
        schema: String = VaporStoreKind.freshSchema(), _ body: (any AttestationStore) async throws -> Void
    ) async throws {
        switch self {
        case .sqlite:
            let directory = FileManager.default.temporaryDirectory.appendingPathComponent(UUID().uuidString)
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(at: directory) }
            try await body(SQLiteAttestationStore(path: directory.appendingPathComponent("store.sqlite").path))
        case .postgres:
            guard await PostgresTestServer.shared.isAvailable() else { return }
            let gate = PostgresTestServer.shared.gate
            await gate.enter()
            do {
                try await body(try PostgresTestServer.store(schema: schema))
            } catch {
                await Self.drop(schema)
                await gate.leave()
                throw error
            }
            await Self.drop(schema)
            await gate.leave()
        }
    }

    /// Drops `schema` through a store of its own: the application's store is closed and stopped by then.
    static func drop(_ schema: String) async {
        guard let cleanup = try? PostgresTestServer.store(schema: schema) else { return }
        await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await cleanup.run() }
            try? await cleanup.dropSchema()
            await cleanup.close()
            group.cancelAll()
        }
    }
}
