import AttestKit
import AttestKitFlows
import AttestKitWire
import Testing

/// The fallbacks (debug tokens, DeviceCheck tokens against the mock Apple) and the limits, on every edge.
extension GuardedRouteTests {
    @Test(
        "a debug token passes a group that accepts debug trust; a wrong one 401; below the least trust 403",
        arguments: await Edge.matrix())
    func debugToken(edge: Edge, backend: Backend) async throws {
        let token = [(AttestKitHeaderNames.debugToken, EdgeFixture.debugToken)]
        var lowest = EdgeConfiguration()
        lowest.debugTokens = [EdgeFixture.debugToken]
        lowest.enforcement.minimumTrust = .debug
        try await edge.run(on: backend, lowest) { app in
            let accepted = try await app.send("POST", "/orders", headers: token, body: Self.body)
            #expect(accepted.status == 200 && accepted.text == "no key", "\(accepted)")
            #expect(accepted.decision == "debug|true|false|-", "\(accepted)")
            let wrong = try await app.send(
                "POST", "/orders", headers: [(AttestKitHeaderNames.debugToken, String(repeating: "z", count: 43))],
                body: Self.body)
            #expect(wrong.status == 401 && wrong.code == "debug_token_invalid", "\(wrong)")
            // An assertion is still the strongest proof.
            let device = try await EdgeDevice.registered(app)
            let asserted = try await app.send(
                "POST", "/orders", headers: try device.headers("POST", "/orders", body: Self.body), body: Self.body)
            #expect(asserted.status == 200 && asserted.decision == "app_attest|true|false|-", "\(asserted)")
        }
        var strict = lowest
        strict.enforcement.minimumTrust = .appAttest
        try await edge.run(on: backend, strict) { app in
            let refused = try await app.send("POST", "/orders", headers: token, body: Self.body)
            #expect(refused.status == 403 && refused.code == "trust_insufficient", "\(refused)")
        }
    }

    @Test(
        "a DeviceCheck token validated by Apple proves one request; used again 409; Apple asked only when it can matter",
        arguments: await Edge.matrix())
    func deviceCheckToken(edge: Edge, backend: Backend) async throws {
        var configuration = EdgeConfiguration()
        configuration.deviceCheck = true
        configuration.enforcement.minimumTrust = .deviceCheck
        try await edge.run(on: backend, configuration) { app in
            let apple = try #require(app.apple)
            let token = [(AttestKitHeaderNames.deviceToken, EdgeFixture.deviceToken())]
            let accepted = try await app.send("POST", "/orders", headers: token, body: Self.body)
            #expect(accepted.status == 200 && accepted.text == "no key", "\(accepted)")
            #expect(accepted.decision == "devicecheck|true|false|-", "\(accepted)")
            let reused = try await app.send("POST", "/orders", headers: token, body: Self.body)
            #expect(reused.status == 409 && reused.code == "device_token_used", "\(reused)")
            // The second answer came from the cache: Apple was asked once.
            #expect(await apple.validations() == 1)
        }
        // A group that needs App Attest refuses the token without asking Apple; a reported request carries it
        // unchecked.
        for (mode, status, code) in [(EnforcementMode.enforce, 403, "trust_insufficient"), (.report, 200, nil)] {
            var other = configuration
            other.enforcement.mode = mode
            if mode == .enforce { other.enforcement.minimumTrust = .appAttest }
            try await edge.run(on: backend, other) { app in
                let apple = try #require(app.apple)
                let answer = try await app.send(
                    "POST", "/orders", headers: [(AttestKitHeaderNames.deviceToken, EdgeFixture.deviceToken())],
                    body: Self.body)
                #expect(answer.status == status && answer.code == code, "\(mode): \(answer)")
                if mode == .report { #expect(answer.decision == "none|false|false|device_token_unchecked") }
                #expect(await apple.validations() == 0, "\(mode)")
            }
        }
    }

    @Test(
        "a client that spent its budget of DeviceCheck validations 429 with Retry-After, without asking Apple",
        arguments: await Edge.matrix())
    func deviceCheckBudget(edge: Edge, backend: Backend) async throws {
        var configuration = EdgeConfiguration()
        configuration.deviceCheck = true
        configuration.enforcement.minimumTrust = .deviceCheck
        configuration.deviceTokenValidationsPerClient = 2
        try await edge.run(on: backend, configuration) { app in
            let apple = try #require(app.apple)
            let client = edge.namesClients ? [(EdgeHeaders.client, "198.51.100.7")] : []
            var statuses: [Int] = []
            for _ in 0..<3 {
                let answer = try await app.send(
                    "POST", "/orders",
                    headers: client + [(AttestKitHeaderNames.deviceToken, EdgeFixture.deviceToken())],
                    body: Self.body)
                statuses.append(answer.status)
                if answer.status == 429 {
                    #expect(answer.code == "rate_limited", "\(answer)")
                    #expect(Int(answer.header("Retry-After") ?? "") ?? 0 > 0, "\(answer.headers)")
                }
            }
            #expect(statuses == [200, 200, 429])
            #expect(await apple.validations() == 2)
            // Vapor parity: Vapor names the client by `req.remoteAddress` only; the new API takes the client too.
            guard edge.namesClients else { return }
            let another = try await app.send(
                "POST", "/orders",
                headers: [
                    (EdgeHeaders.client, "203.0.113.9"), (AttestKitHeaderNames.deviceToken, EdgeFixture.deviceToken()),
                ],
                body: Self.body)
            #expect(another.status == 200, "\(another)")
        }
    }

    @Test("a body over the limit is refused, never hashed in part", arguments: await Edge.matrix())
    func bodyLimit(edge: Edge, backend: Backend) async throws {
        try await edge.run(on: backend) { app in
            let device = try await EdgeDevice.registered(app)
            let large = [UInt8](repeating: UInt8(ascii: "a"), count: 65_537)
            let answer = try await app.send(
                "POST", "/orders", headers: try device.headers("POST", "/orders", body: large), body: large)
            // The middlewares stop reading at the limit (413); the decision route refuses to decide about a body over
            // it (400 `invalid_field`), which a backend answers as no decision.
            let expected = edge == .decision ? (400, "invalid_field") : (413, "payload_too_large")
            #expect(answer.status == expected.0 && answer.code == expected.1, "\(answer.status) \(answer.code ?? "")")
            // At the limit, the same request goes through.
            let limit = [UInt8](repeating: UInt8(ascii: "a"), count: 65_536)
            let accepted = try await app.send(
                "POST", "/orders", headers: try device.headers("POST", "/orders", body: limit), body: limit)
            #expect(accepted.status == 200 && accepted.text == device.keyID.base64, "\(accepted.status)")
        }
    }
}

extension GuardedRouteTests {
    @Test(
        "the client an application names is counted as a peer is: two addresses of one IPv6 /64 share one budget",
        arguments: await Edge.matrix().filter { $0.0.namesClients })
    func deviceCheckBudgetByPrefix(edge: Edge, backend: Backend) async throws {
        var configuration = EdgeConfiguration()
        configuration.deviceCheck = true
        configuration.enforcement.minimumTrust = .deviceCheck
        configuration.deviceTokenValidationsPerClient = 1
        try await edge.run(on: backend, configuration) { app in
            let apple = try #require(app.apple)
            var statuses: [Int] = []
            for address in ["2001:db8:0:1::1", "2001:db8:0:1:ffff::2", "::ffff:198.51.100.7", "198.51.100.7"] {
                let answer = try await app.send(
                    "POST", "/orders",
                    headers: [
                        (EdgeHeaders.client, address), (AttestKitHeaderNames.deviceToken, EdgeFixture.deviceToken()),
                    ],
                    body: Self.body)
                statuses.append(answer.status)
            }
            // One subscriber's prefix is one budget; an IPv4 address is the same client written either way.
            #expect(statuses == [200, 429, 200, 429], "\(statuses)")
            #expect(await apple.validations() == 2)
        }
    }
}
