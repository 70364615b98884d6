import Testing

/// Where Vapor's parsing of the request target loses how it was spelled, the Vapor edge accepts what the client
/// signed when the spelling is recoverable and refuses otherwise (``GuardedRouteTests`` holds what both edges
/// share; the Hummingbird edge reads the request line itself and has none of these cases).
@Suite("Vapor edge: targets Vapor respells")
struct VaporTargetTests {
    @Test("a path's `;` verifies signed either way; a path mixing `;` and `%3B` is refused, not guessed")
    func semicolons() async throws {
        try await Edge.vapor.run(on: .sqlite) { app in
            let device = try await EdgeDevice.registered(app)
            for target in ["/orders/a;b", "/orders/a%3Bb", "/orders/%3B%3B?q=;%3B", "/orders/%3b;"] {
                let answer = try await app.send(
                    "GET", target, headers: try device.headers("GET", target, body: []), body: [])
                #expect(answer.status == 200, "\(target): \(answer)")
            }
            // Vapor gives `/orders/a;b;c`: neither `;` nor `%3B` throughout is what was signed.
            let mixed = "/orders/a%3Bb;c"
            let answer = try await app.send("GET", mixed, headers: try device.headers("GET", mixed, body: []), body: [])
            #expect(answer.status == 403 && answer.code == "signature_invalid", "\(answer)")
        }
    }

    @Test("a leading `//` is bound as Vapor reads and routes it: `/`")
    func leadingSlashes() async throws {
        try await Edge.vapor.run(on: .sqlite) { app in
            let device = try await EdgeDevice.registered(app)
            let asSigned = try await app.send(
                "GET", "//orders", headers: try device.headers("GET", "//orders", body: []), body: [])
            #expect(asSigned.status == 403 && asSigned.code == "signature_invalid", "\(asSigned)")
            let asRouted = try await app.send(
                "GET", "//orders", headers: try device.headers("GET", "/orders", body: []), body: [])
            #expect(asRouted.status == 200, "\(asRouted)")
        }
    }
}
