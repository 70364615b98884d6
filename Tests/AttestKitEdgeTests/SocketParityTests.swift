import AttestKit
import AttestKitFlows
import AttestKitStore
import AttestKitTestSupport
import AttestKitTesting
import AttestKitVapor
import Foundation
import Hummingbird
import Logging
import HummingbirdTesting
import Testing
import Vapor

@testable import AttestKitServer

/// The service's routes on both edges, each listening on loopback, sent the same bytes on a raw connection: what the
/// in-memory testers hide (how a framework decodes a path, streams a body, answers a method it has no route for,
/// resolves a trailing slash) must not make the edges differ.
@Suite("Edge parity over sockets")
struct SocketParityTests {
    /// An answer as read off the connection.
    struct Answer: Sendable, Equatable, CustomStringConvertible {
        var status: Int
        var code: String?
        var location: String?

        init(_ text: String) {
            let head = text.components(separatedBy: "\r\n\r\n").first ?? ""
            let lines = head.components(separatedBy: "\r\n")
            status = Int(lines.first?.split(separator: " ").dropFirst().first ?? "") ?? 0
            location = lines.dropFirst().first { $0.lowercased().hasPrefix("location:") }
                .map { String($0.dropFirst("location:".count)).trimmingCharacters(in: .whitespaces) }
            let body = text.components(separatedBy: "\r\n\r\n").dropFirst().joined(separator: "\r\n\r\n")
            code = (try? JSONDecoder().decode(Envelope.self, from: Data(body.utf8)))?.error.code
        }

        var description: String { "\(status) \(code ?? "-") \(location ?? "")" }

        private struct Envelope: Decodable {
            struct Detail: Decodable { let code: String }
            let error: Detail
        }
    }

    /// A request as sent: the request line's method and target, headers, a body.
    struct Sent: Sendable, CustomStringConvertible {
        var method: String
        var target: String
        var headers: [(String, String)] = []
        var body = ""

        var description: String { "\(method) \(target) (\(body.utf8.count) bytes)" }

        var text: String {
            var lines = ["\(method) \(target) HTTP/1.1", "Host: 127.0.0.1", "Connection: close"]
            lines += headers.map { "\($0.0): \($0.1)" }
            if !body.isEmpty || method == "POST" { lines.append("Content-Length: \(body.utf8.count)") }
            return lines.joined(separator: "\r\n") + "\r\n\r\n" + body
        }
    }

    /// The answers of each edge (Hummingbird, Vapor) to `requests`, sent in order.
    static func answers(_ requests: [Sent]) async throws -> (hummingbird: [Answer], vapor: [Answer]) {
        @Sendable func exchange(_ port: Int) async throws -> [Answer] {
            var answers: [Answer] = []
            for request in requests {
                answers.append(Answer(try await RawConnection.exchange(port: port, request.text)))
            }
            return answers
        }
        let server = try HummingbirdEdge.server(
            store: MemoryAttestationStore(), configuration: EdgeConfiguration(), apple: nil)
        let router = Router(context: ServerRequestContext.self)
        server.controller.addRoutes(to: router)
        let hummingbird = try await Hummingbird.Application(
            router: router, configuration: .init(address: .hostname("127.0.0.1", port: 0)),
            logger: HummingbirdEdge.silent
        ).test(.live) { client in
            try await exchange(try #require(client.port))
        }
        var vapor: [Answer] = []
        try await VaporApplication.withApp { app in
            try VaporEdge.configure(
                app, store: MemoryAttestationStore(), configuration: EdgeConfiguration(), apple: nil)
            app.http.server.configuration.hostname = "127.0.0.1"
            app.http.server.configuration.port = 0
            try app.server.start()
            do {
                vapor = try await exchange(try #require(app.http.server.shared.localAddress?.port))
            } catch {
                await app.server.shutdown()
                throw error
            }
            await app.server.shutdown()
        }
        return (hummingbird, vapor)
    }

    static let admin = [("Authorization", "Bearer \(EdgeConfiguration.adminToken)")]
    /// A well-formed key id (32 zero bytes in standard Base64) without its padding `=`.
    static let keyStem = String(repeating: "A", count: 43)

    @Test("a key id in the path is percent-decoded once on both edges: `%253D` is malformed, `%3D` is `=`")
    func keyIDDecodedOnce() async throws {
        let requests = ["%3D", "%253D", "%25253D"].map {
            Sent(method: "GET", target: "/v1/keys/\(Self.keyStem)\($0)", headers: Self.admin)
        }
        let (hummingbird, vapor) = try await Self.answers(requests)
        #expect(
            hummingbird.map(\.description) == ["404 key_not_found ", "400 key_id_malformed ", "400 key_id_malformed "])
        #expect(vapor == hummingbird)
    }

    @Test("a body of exactly the body limit is read on both edges, one byte more is 413")
    func bodyAtTheLimit() async throws {
        let limit = AttestKitApplication.Configuration(appIDs: [], trustAnchors: EdgeFixture.apple.trustAnchors)
            .bodyLimit
        // Large enough to arrive in several reads: Vapor streams it to the route.
        let requests = [limit, limit + 1].map { size in
            Sent(
                method: "POST", target: "/v1/challenges", headers: [("Content-Type", "application/json")],
                body: "{}" + String(repeating: " ", count: size - 2))
        }
        let (hummingbird, vapor) = try await Self.answers(requests)
        #expect(hummingbird.map(\.description) == ["201 - ", "413 payload_too_large "])
        #expect(vapor == hummingbird)
    }

    @Test("a client gone mid-body is its own doing on Vapor, as on Hummingbird: no bug logged, no 500")
    func clientGoneMidBodyOnVapor() async throws {
        let capture = LogCapture()
        try await VaporApplication.withApp { app in
            app.logger = capture.logger(level: .debug)
            try VaporEdge.configure(
                app, store: MemoryAttestationStore(), configuration: EdgeConfiguration(), apple: nil)
            app.http.server.configuration.hostname = "127.0.0.1"
            app.http.server.configuration.port = 0
            try app.server.start()
            @Sendable func decided() -> [String] {
                capture.logged.map(\.message).filter {
                    $0.hasPrefix("unexpected error") || $0.hasPrefix("request broke off")
                }
            }
            do {
                let connection = try await RawConnection.open(
                    port: try #require(app.http.server.shared.localAddress?.port))
                try await connection.send(
                    "POST /v1/challenges HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                        + "Content-Length: 100\r\n\r\n{\"purpose\"")
                try await Task.sleep(for: .milliseconds(100))
                await connection.close()
                // Answered (or found a bug) within a minute: the bound tells answered from hung.
                let start = ContinuousClock.now
                while decided().isEmpty, ContinuousClock.now - start < .seconds(60) {
                    try await Task.sleep(for: .milliseconds(20))
                }
            } catch {
                await app.server.shutdown()
                throw error
            }
            await app.server.shutdown()
            #expect(decided() == ["request broke off or is malformed: answering 400"])
        }
    }

    @Test("a dashboard page spelled with trailing slashes is sent to its own spelling, whose links resolve")
    func dashboardTrailingSlash() async throws {
        let pages = [
            ("/dashboard/", "/dashboard"), ("/dashboard//", "/dashboard"), ("/dashboard/login/", "/dashboard/login"),
        ]
        let browser = [("Accept", "text/html")]
        var requests = pages.map { Sent(method: "GET", target: $0.0, headers: browser) }
        // The pages as spelled: the dashboard sends a browser without a session to its login form, which answers.
        requests += ["/dashboard", "/dashboard/login"].map { Sent(method: "GET", target: $0, headers: browser) }
        let (hummingbird, vapor) = try await Self.answers(requests)
        #expect(vapor == hummingbird)
        for (index, (sent, page)) in pages.enumerated() {
            let answer = hummingbird[index]
            #expect(answer.status == 303, "\(sent): \(answer)")
            let resolved = answer.location.flatMap { URL(string: $0, relativeTo: URL(string: "http://h\(sent)")) }
            #expect(resolved?.absoluteURL.path == page, "\(sent): \(answer)")
        }
        #expect(hummingbird.dropFirst(pages.count).map(\.description) == ["303 - dashboard/login", "200 - "])
        // Spelled as the routes are, nothing is redirected, wherever they are mounted.
        #expect(Dashboard.ownSpelling(method: "GET", routePath: "/dashboard", requestPath: "/ops/dashboard") == nil)
        #expect(Dashboard.ownSpelling(method: "GET", routePath: "/v1/keys/{keyId}", requestPath: "/v1/keys/a/") == nil)
        #expect(
            Dashboard.ownSpelling(method: "POST", routePath: "/dashboard/login", requestPath: "/dashboard/login/")
                == nil)
        let mounted = Dashboard.ownSpelling(method: "GET", routePath: "/dashboard", requestPath: "/ops/dashboard/")
        #expect(mounted?.headers.first { $0.name == "Location" }?.value == "../dashboard")
    }
}
