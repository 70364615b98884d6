import AttestKit
import AttestKitFlows
import AttestKitStore
import AttestKitTesting
import AttestKitVapor
import AttestKitWire
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Logging
import NIOCore
import Testing
import Vapor
import VaporTesting

@testable import AttestKitServer

/// Both edges serve the same routes from the flows' one table: the same (method, path, audience) set, the operator
/// dashboard's pages included, and the same answer to a request that presents no credential or a wrong one.
@Suite("Route table parity")
struct RouteParityTests {
    static let backendToken = "backend-token-for-the-parity-tests-01"
    static let adminToken = "admin-token-for-the-parity-tests-0001"

    static func configuration() -> AttestKitApplication.Configuration {
        var configuration = AttestKitApplication.Configuration(
            appIDs: [EdgeFixture.appID], environments: .development, trustAnchors: EdgeFixture.apple.trustAnchors,
            adminToken: adminToken, backendTokens: [backendToken])
        configuration.rateLimits.authFailuresPerIP = 1_000
        return configuration
    }

    @Test("the Vapor routes are the Hummingbird routes, the dashboard's included, audience for audience")
    func sameTable() async throws {
        let hummingbird = Set(
            AttestKitAPI.endpoints.map { "\($0.method.rawValue) \($0.path) \($0.audience.rawValue)" })
        try await VaporApplication.withApp { app in
            try app.register(collection: AttestKitRoutes())
            let vapor = Set(
                app.routes.all.map { route in
                    let path = route.path.map { component in
                        let text = component.description
                        return text.hasPrefix(":") ? "{\(text.dropFirst())}" : text
                    }
                    let audience = route.userInfo[AttestKitRoutes.audienceKey] as? String ?? "-"
                    return "\(route.method.rawValue) /\(path.joined(separator: "/")) \(audience)"
                })
            #expect(vapor == hummingbird)
            #expect(vapor.count == AttestKitRoute.all.count)
        }
        #expect(Set(AttestKitAPI.routes) == Set(AttestKitRoute.all.map(\.description)))
    }

    @Test("every route answers the same on both edges without a credential and with a wrong one")
    func sameAnswers() async throws {
        let store = MemoryAttestationStore()
        let logger = Logger(label: "parity", factory: { _ in SwiftLogNoOpLogHandler() })
        var serverConfiguration = ServerConfiguration(
            appIDs: [EdgeFixture.appID], environments: .development, storageURL: "memory:",
            trustAnchors: EdgeFixture.apple.trustAnchors, adminToken: Self.adminToken,
            backendTokens: [Self.backendToken], logLevel: .critical)
        serverConfiguration.rateLimits.authFailuresPerIP = 1_000
        let server = try AttestKitServer(configuration: serverConfiguration, store: store, logger: logger)
        let router = Router(context: ServerRequestContext.self)
        server.controller.addRoutes(to: router)
        let requests: [(AttestKitRoute, [(String, String)])] = AttestKitRoutes().routes.flatMap { route in
            [(route, []), (route, [("Authorization", "Bearer wrong-token-of-nobody-000000")])]
        }
        let hummingbird = try await Hummingbird.Application(router: router).test(.router) { client in
            var answers: [String] = []
            for (route, headers) in requests {
                var fields = HTTPFields()
                for (name, value) in headers {
                    if let name = HTTPField.Name(name) { fields[name] = value }
                }
                let response = try await client.executeRequest(
                    uri: route.path.replacingOccurrences(of: "{keyId}", with: "AAAA"),
                    method: HTTPRequest.Method(route.method) ?? .get, headers: fields,
                    body: ByteBuffer(string: "{}"))
                answers.append("\(route) \(response.status.code) \(Self.code(response.body.readableBytesView))")
            }
            return answers
        }
        var vapor: [String] = []
        let application = try AttestKitApplication(configuration: Self.configuration(), store: store, logger: logger)
        try await VaporApplication.withApp { app in
            app.attestKit = try AttestKitIntegration(application)
            try app.register(collection: AttestKitRoutes())
            for (route, headers) in requests {
                try await app.testing().test(
                    HTTPMethod(rawValue: route.method), route.path.replacingOccurrences(of: "{keyId}", with: "AAAA"),
                    headers: HTTPHeaders(headers), body: ByteBuffer(string: "{}")
                ) { response in
                    vapor.append("\(route) \(response.status.code) \(Self.code(response.body.readableBytesView))")
                }
            }
        }
        #expect(vapor == hummingbird)
    }

    @Test("admin token rotation: a previous admin token opens what the admin token opens on the Vapor edge too")
    func previousAdminToken() async throws {
        let previous = "previous-admin-token-for-parity-01"
        var configuration = Self.configuration()
        configuration.adminPreviousTokens = [previous]
        let logger = Logger(label: "parity", factory: { _ in SwiftLogNoOpLogHandler() })
        let application = try AttestKitApplication(
            configuration: configuration, store: MemoryAttestationStore(), logger: logger)
        try await VaporApplication.withApp { app in
            app.attestKit = try AttestKitIntegration(application)
            try app.register(collection: AttestKitRoutes())
            func answer(
                _ method: HTTPMethod, _ path: String, token: String, form: Bool = false
            ) async throws -> String {
                var headers = HTTPHeaders([("Authorization", "Bearer \(token)")])
                if form { headers = ["Content-Type": "application/x-www-form-urlencoded"] }
                var result = ""
                try await app.testing().test(
                    method, path, headers: headers, body: ByteBuffer(string: form ? "token=\(token)" : "{}")
                ) { response in
                    result = "\(response.status.code) \(Self.code(response.body.readableBytesView))"
                }
                return result
            }
            for token in [Self.adminToken, previous, "admin-token-of-nobody-000000000"] {
                let admitted = token != "admin-token-of-nobody-000000000"
                let key = try await answer(.GET, "/v1/keys/AAAA", token: token)
                #expect(admitted ? !key.hasPrefix("401") : key == "401 admin_unauthorized", "\(token): \(key)")
                let metrics = try await answer(.GET, "/metrics", token: token)
                #expect(admitted ? !metrics.hasPrefix("401") : metrics == "401 monitoring_unauthorized", "\(metrics)")
                let dashboard = try await answer(.GET, "/dashboard", token: token)
                #expect(admitted ? !dashboard.hasPrefix("401") : dashboard == "401 admin_unauthorized", "\(dashboard)")
                let login = try await answer(.POST, "/dashboard/login", token: token, form: true)
                #expect(login.hasPrefix(admitted ? "303" : "401"), "\(token): \(login)")
                // Another scope: no admin token opens a backend route.
                let verify = try await answer(.POST, "/v1/assertions/verify", token: token)
                #expect(verify == "401 backend_unauthorized", "\(token): \(verify)")
            }
        }
    }

    static func code(_ body: ByteBufferView) -> String {
        (try? WireJSON.decode(ErrorResponse.self, from: Data(body)).error.code) ?? "-"
    }
}

/// Vapor's `Application`, named apart from Hummingbird's.
typealias VaporApplication = Vapor.Application

extension VaporApplication {
    /// Runs `body` with a new application, then shuts it down.
    static func withApp(_ body: (VaporApplication) async throws -> Void) async throws {
        try await VaporTesting.withApp(configure: { _ in }) { app in
            app.logger.logLevel = .critical
            try await body(app)
        }
    }
}
