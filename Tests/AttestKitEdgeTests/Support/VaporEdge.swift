import AttestKit
import AttestKitFlows
import AttestKitStore
import AttestKitTesting
import AttestKitVapor
import Foundation
import NIOCore
import NIOHTTP1
import Vapor
import VaporTesting

/// The Vapor integration as an adopter mounts it: the application on `app.attestKit`, ``AttestKitRoutes``, and
/// `orders` guarded by ``AttestKitMiddleware``; driven in memory by VaporTesting, or over a socket.
struct VaporEdge: EdgeDriver {
    let store: any AttestationStore
    let app: Application
    let method: Application.Method

    static func run(
        store: any AttestationStore, over method: Application.Method = .inMemory,
        _ body: @Sendable (any EdgeDriver) async throws -> Void
    ) async throws {
        try await withApp(configure: { app in
            app.logger.logLevel = .critical
            let application = try AttestKitApplication(
                configuration: .init(
                    appIDs: [EdgeFixture.appID], environments: .development,
                    trustAnchors: EdgeFixture.apple.trustAnchors),
                store: store, logger: app.logger)
            app.attestKit = AttestKitIntegration(application)
            try app.register(collection: AttestKitRoutes())
            let guarded = app.grouped(AttestKitMiddleware()).grouped("orders")
            guarded.post { req in req.attestKit.key?.keyID.base64 ?? "no key" }
            guarded.get { req in req.attestKit.key?.keyID.base64 ?? "no key" }
            guarded.get("**") { req in req.attestKit.key?.keyID.base64 ?? "no key" }
            try await app.asyncBoot()
        }) { app in
            try await body(VaporEdge(store: store, app: app, method: method))
        }
    }

    func send(_ method: String, _ target: String, headers: [(String, String)], body: [UInt8]) async throws -> EdgeAnswer
    {
        var answer = EdgeAnswer(status: 0, body: [])
        try await app.testing(method: self.method).test(
            HTTPMethod(rawValue: method), target, headers: HTTPHeaders(headers),
            body: body.isEmpty ? nil : ByteBuffer(bytes: body)
        ) { response in
            answer = EdgeAnswer(status: Int(response.status.code), body: Array(response.body.readableBytesView))
        }
        return answer
    }
}
