import AttestKit
import AttestKitFlows
import AttestKitServer
import AttestKitStore
import AttestKitTesting
import AttestKitWire
import Crypto
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Logging
import NIOCore
import Testing

/// The routes without a socket: HummingbirdTesting's `.router` framework drives the server's router, the
/// controller mounted on an application's own router, and a route guarded by the middleware.
struct RouterTests {
    /// A server over a memory store (not run: only its router is used).
    static func server(store: MemoryAttestationStore = MemoryAttestationStore()) throws -> AttestKitServer {
        let configuration = ServerConfiguration(
            appIDs: [Fixture.appID], environments: .development, storageURL: "memory:",
            trustAnchors: Fixture.apple.trustAnchors, adminToken: Fixture.adminToken,
            backendTokens: [Fixture.backendToken], logLevel: .critical)
        return try AttestKitServer(
            configuration: configuration, store: store, logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() }))
    }

    static func bearer(_ token: String) -> HTTPFields { [.authorization: "Bearer \(token)"] }

    static func json(_ text: String) -> ByteBuffer { ByteBuffer(string: text) }

    /// The `code` of an error envelope.
    static func code(_ response: TestResponse) -> String? {
        let object = try? JSONSerialization.jsonObject(with: Data(response.body.readableBytesView)) as? [String: Any]
        return (object?["error"] as? [String: Any])?["code"] as? String
    }

    @Test(
        "every audience is checked before the handler",
        arguments: [
            ("/v1/assertions/verify", HTTPRequest.Method.post, nil, 401, "backend_unauthorized"),
            ("/v1/assertions/verify", .post, Fixture.adminToken, 401, "backend_unauthorized"),
            ("/v1/devicecheck/query", .post, nil, 401, "backend_unauthorized"),
            ("/v1/keys/AAAA", .get, Fixture.backendToken, 401, "admin_unauthorized"),
            ("/v1/keys/AAAA/revoke", .post, nil, 401, "admin_unauthorized"),
            ("/metrics", .get, nil, 401, "monitoring_unauthorized"),
        ] as [(String, HTTPRequest.Method, String?, Int, String)])
    func audiences(path: String, method: HTTPRequest.Method, token: String?, status: Int, code: String) async throws {
        let app = Application(router: try Self.server().buildRouter())
        try await app.test(.router) { client in
            try await client.execute(
                uri: path, method: method, headers: token.map(Self.bearer) ?? [:], body: Self.json("{}")
            ) { response in
                #expect(response.status.code == status)
                #expect(Self.code(response) == code)
                // A 401 names the scheme to authenticate with (RFC 9110).
                #expect(response.headers[.wwwAuthenticate] == #"Bearer realm="attestkit""#)
            }
        }
    }

    /// A new device of the app whose key `client` registers through `/v1/challenges` and `/v1/attestations` under
    /// `prefix` (201 required), attested at `time` (the server's clock: its receipt must not be from its future).
    static func registeredDevice(
        _ client: any TestClientProtocol, prefix: String = "", at time: Date = Date()
    ) async throws -> (device: SimulatedDevice, keyID: KeyID) {
        let device = SimulatedDevice(
            apple: Fixture.apple, configuration: .init(appID: Fixture.appID, environment: .development))
        let keyID = device.generateKey()
        let challenge = try await client.execute(uri: prefix + "/v1/challenges", method: .post) { response in
            #expect(response.status == .created)
            return try JSONDecoder().decode([String: String].self, from: Data(response.body.readableBytesView))
        }
        let id = try #require(challenge["challengeId"])
        let bytes = try #require(challenge["challenge"].flatMap { Data(base64Encoded: $0) })
        let attestation = try device.attestKey(keyID, clientDataHash: Array(SHA256.hash(data: bytes)), at: time)
        let body = """
            {"keyId":"\(keyID.base64)","attestation":"\(Data(attestation).base64EncodedString())","challengeId":"\(id)"}
            """
        try await client.execute(uri: prefix + "/v1/attestations", method: .post, body: json(body)) { response in
            #expect(response.status == .created)
        }
        return (device, keyID)
    }

    @Test("a key registered and an assertion verified once through the router, the replay refused")
    func registerAndVerify() async throws {
        let app = Application(router: try Self.server().buildRouter())
        try await app.test(.router) { client in
            let (device, keyID) = try await Self.registeredDevice(client)
            let milliseconds = Int64(Date().timeIntervalSince1970 * 1_000)
            let binding = try RequestBinding(
                method: "POST", target: "/orders", body: [UInt8](), freshness: .timestamp(milliseconds: milliseconds))
            let assertion = try device.generateAssertion(keyID, clientDataHash: binding.clientDataHash)
            let verify = """
                {"keyId":"\(keyID.base64)","assertion":"\(Data(assertion).base64EncodedString())",\
                "request":{"method":"POST","target":"/orders","timestamp":\(milliseconds)}}
                """
            let headers = Self.bearer(Fixture.backendToken)
            try await client.execute(uri: "/v1/assertions/verify", method: .post, headers: headers, body: Self.json(verify))
            { response in
                #expect(response.status == .ok)
            }
            try await client.execute(uri: "/v1/assertions/verify", method: .post, headers: headers, body: Self.json(verify))
            { response in
                #expect(response.status == .conflict)
                #expect(Self.code(response) == "counter_not_increasing")
            }
        }
    }

    /// An application's own context: it knows the peer, and carries the attested key.
    struct AppContext: AttestedRequestContext, RemoteAddressRequestContext {
        var coreContext: CoreRequestContextStorage
        var attestedKey: KeyRecord?
        var remoteAddress: SocketAddress? { nil }
        init(source: ApplicationRequestContextSource) { coreContext = .init(source: source) }
    }

    @Test("a method the client makes up is counted as other, never by its name (closed labels)")
    func madeUpMethods() async throws {
        let server = try Self.server()
        let app = Application(router: server.buildRouter())
        try await app.test(.router) { client in
            for (name, path) in [("PURGE", "/v1/challenges"), ("MKCALENDAR", "/nowhere"), ("SEARCH", "/health")] {
                let method = try #require(HTTPRequest.Method(name))
                try await client.execute(uri: path, method: method) { response in
                    #expect(response.status.code >= 400)
                }
            }
            try await client.execute(uri: "/health", method: .get) { response in #expect(response.status == .ok) }
        }
        let text = String(decoding: server.metrics.exposition(), as: UTF8.self)
        #expect(text.contains(#"method="other""#))
        #expect(text.contains(#"attestkit_http_requests_total{route="/health",method="GET",status="200"} 1"#))
        for name in ["PURGE", "MKCALENDAR", "SEARCH"] { #expect(!text.contains(name), "\(name)") }
    }

    @Test("the controller mounted on an application's router keeps its audiences and its error envelope")
    func mounted() async throws {
        let server = try Self.server()
        let router = Router(context: AppContext.self)
        server.controller.addRoutes(to: router.group("attest"))
        router.group("api").add(middleware: AttestKitMiddleware<AppContext>(gate: server.gate))
            .post("orders") { _, context in context.attestedKey == nil ? "none" : "attested" }
        let app = Application(router: router)
        try await app.test(.router) { client in
            try await client.execute(uri: "/attest/health", method: .get) { response in
                #expect(response.status == .ok)
            }
            try await client.execute(uri: "/attest/v1/assertions/verify", method: .post, body: Self.json("{}")) {
                response in
                #expect(response.status == .unauthorized)
                #expect(Self.code(response) == "backend_unauthorized")
            }
            try await client.execute(
                uri: "/attest/v1/assertions/verify", method: .post, headers: Self.bearer(Fixture.backendToken),
                body: Self.json("{\"keyId\":\"short\",\"assertion\":\"AAAA\",\"clientData\":\"AAAA\"}")
            ) { response in
                #expect(response.status == .badRequest)
                #expect(Self.code(response) == "key_id_malformed")
            }
            try await client.execute(uri: "/api/orders", method: .post) { response in
                #expect(response.status == .unauthorized)
                #expect(Self.code(response) == "assertion_required")
            }
            // A key registered through the mounted routes guards the application's own route.
            let (device, keyID) = try await Self.registeredDevice(client, prefix: "/attest")
            let milliseconds = Int64(Date().timeIntervalSince1970 * 1_000)
            let body = Array("{\"item\":42}".utf8)
            let binding = try RequestBinding(
                method: "POST", target: "/api/orders", body: body, freshness: .timestamp(milliseconds: milliseconds))
            let assertion = try device.generateAssertion(keyID, clientDataHash: binding.clientDataHash)
            var headers = HTTPFields()
            for (name, value) in [
                (AttestKitHeaderNames.keyID, keyID.base64), (AttestKitHeaderNames.assertion, Data(assertion).base64EncodedString()),
                (AttestKitHeaderNames.timestamp, String(milliseconds)),
            ] {
                headers[try #require(HTTPField.Name(name))] = value
            }
            for expected in [HTTPResponse.Status.ok, .conflict] {
                try await client.execute(
                    uri: "/api/orders", method: .post, headers: headers, body: ByteBuffer(bytes: body)
                ) { response in
                    #expect(response.status == expected)
                    if expected == .ok { #expect(String(buffer: response.body) == "attested") }
                }
            }
        }
    }
}
