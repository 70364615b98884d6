import AsyncHTTPClient
import AttestKitFlows
import AttestKitStore
import AttestKitVapor
import Foundation
import NIOCore
import Testing
import Vapor

/// A Vapor app serving on a Unix domain socket behind a proxy on the same host: its peers have no address.
@Suite("Vapor on a Unix domain socket: who a request comes from")
struct VaporUnixSocketTests {
    /// The statuses of `POST /v1/challenges` sent over the socket at `path`, one for each forwarded client.
    static func challenges(socket path: String, clients: [String]) async throws -> [UInt] {
        var statuses: [UInt] = []
        let encoded = path.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? path
        for client in clients {
            var request = HTTPClientRequest(url: "http+unix://\(encoded)/v1/challenges")
            request.method = .POST
            request.headers.add(name: "Content-Type", value: "application/json")
            request.headers.add(name: "X-Forwarded-For", value: client)
            request.body = .bytes(ByteBuffer(string: #"{"purpose":"attest"}"#))
            let response = try await HTTPClient.shared.execute(request, timeout: .seconds(60))
            _ = try await response.body.collect(upTo: 1 << 20)
            statuses.append(response.status.code)
        }
        return statuses
    }

    @Test(
        "without trustsUnixSocketPeers every client shares one budget; with it, each forwarded client has its own",
        arguments: [false, true])
    func forwardedOverTheSocket(trusts: Bool) async throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent(
            "ak-\(UInt32.random(in: 0...UInt32.max)).sock"
        ).path
        defer { try? FileManager.default.removeItem(atPath: path) }
        try await VaporBench.withApplication(
            configure: { $0.rateLimits.challengesPerIP = 2 }, trustsUnixSocketPeers: trusts
        ) { app in
            app.http.server.configuration.address = .unixDomainSocket(path: path)
            try await app.server.start(address: .unixDomainSocket(path: path))
            do {
                let statuses = try await Self.challenges(
                    socket: path, clients: ["198.51.100.1", "198.51.100.1", "198.51.100.2", "198.51.100.3"])
                #expect(statuses == (trusts ? [201, 201, 201, 201] : [201, 201, 429, 429]))
                let integration = try #require(app.attestKit)
                #expect(integration.clientAddress.trustsUnixSocketPeers == trusts)
            } catch {
                await app.server.shutdown()
                throw error
            }
            await app.server.shutdown()
        }
    }
}

@Suite("Vapor shutdown: the server stops before the store closes")
struct VaporShutdownOrderTests {
    @Test("a request in flight when Vapor shuts down is answered with the store still open; the listener then stops")
    func inFlightBeforeTheStoreCloses() async throws {
        let lifecycle = AttestKitLifecycle()
        try await VaporBench.withApplication(
            lifecycle: lifecycle,
            mount: { app in
                // A route that uses the store after a while: in flight when the shutdown begins.
                app.get("slow") { request async throws -> String in
                    try await Task.sleep(for: .milliseconds(700))
                    guard let integration = request.application.attestKit else { throw Abort(.serviceUnavailable) }
                    try await integration.application.store.ping()
                    return "answered"
                }
            }
        ) { app in
            try await app.server.start(address: .hostname("127.0.0.1", port: 0))
            let port = try #require(app.http.server.shared.localAddress?.port)
            let url = "http://127.0.0.1:\(port)/slow"
            let inFlight = Task {
                var request = HTTPClientRequest(url: url)
                request.headers.add(name: "Connection", value: "close")  // no pooled connection left behind
                let response = try await HTTPClient.shared.execute(request, timeout: .seconds(60))
                let body = try await response.body.collect(upTo: 1 << 16)
                return (response.status.code, String(buffer: body))
            }
            try await Task.sleep(for: .milliseconds(200))
            // What Vapor runs first when it shuts down: the lifecycle handlers, the registered AttestKitLifecycle.
            await lifecycle.shutdownAsync(app)
            let (status, text) = try await inFlight.value
            #expect(status == 200 && text == "answered", "\(status) \(text)")
            #expect(app.http.server.shared.localAddress == nil, "the server still listens")
            await #expect(throws: (any Error).self) {
                let after = try await HTTPClient.shared.execute(HTTPClientRequest(url: url), timeout: .seconds(5))
                _ = try await after.body.collect(upTo: 1 << 16)
            }
        }
    }
}
