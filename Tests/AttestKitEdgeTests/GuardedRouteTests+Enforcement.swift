import AttestKit
import AttestKitFlows
import AttestKitStore
import AttestKitTestSupport
import AttestKitWire
import Testing

/// The group's enforcement on every edge: report and off modes, the rollout, step-up.
extension GuardedRouteTests {
    @Test(
        "report mode lets every request through, verified when it can be, with what enforcing would refuse",
        arguments: await Edge.matrix())
    func reportMode(edge: Edge, backend: Backend) async throws {
        var configuration = EdgeConfiguration()
        configuration.enforcement.mode = .report
        try await edge.run(on: backend, configuration) { app in
            let unproved = try await app.send("POST", "/orders", headers: [], body: Self.body)
            #expect(unproved.status == 200 && unproved.text == "no key", "\(unproved)")
            #expect(unproved.decision == "none|false|false|assertion_required", "\(unproved)")
            let device = try await EdgeDevice.registered(app)
            let headers = try device.headers("POST", "/orders", body: Self.body)
            let verified = try await app.send("POST", "/orders", headers: headers, body: Self.body)
            #expect(verified.status == 200 && verified.text == device.keyID.base64, "\(verified)")
            #expect(verified.decision == "app_attest|false|false|-", "\(verified)")
            let replay = try await app.send("POST", "/orders", headers: headers, body: Self.body)
            #expect(replay.status == 200 && replay.text == "no key", "\(replay)")
            #expect(replay.decision == "none|false|false|counter_not_increasing", "\(replay)")
            let tampered = try await app.send("POST", "/orders?ref=b", headers: headers, body: Self.body)
            #expect(tampered.decision == "none|false|false|signature_invalid", "\(tampered)")
        }
    }

    @Test(
        "report mode and requests outside the rollout let a body declared over the limit through, unread",
        arguments: await Edge.matrix().filter { $0.0 != .decision })
    func unenforcedLargeBody(edge: Edge, backend: Backend) async throws {
        let large = [UInt8](repeating: UInt8(ascii: "a"), count: 65_537)
        var configuration = EdgeConfiguration()
        configuration.enforcement.mode = .report
        try await edge.run(on: backend, configuration) { app in
            let device = try await EdgeDevice.registered(app)
            for headers in [[], try device.headers("POST", "/orders", body: large)] {
                let answer = try await app.send("POST", "/orders", headers: headers, body: large)
                #expect(answer.status == 200 && answer.text == "no key", "\(answer)")
                #expect(answer.decision == "none|false|false|payload_too_large", "\(answer)")
            }
            // Nothing was verified: the assertion was not spent.
            #expect(try #require(try await app.store.key(device.keyID)).counter == 0)
        }
        // Enforcing for some subjects only: the others' uploads go on, the enforced ones' are refused as before.
        configuration.enforcement.mode = .enforce
        configuration.enforcement.rollout = 0.5
        configuration.enforcement.rolloutSalt = "edge-suite"
        let rollout = try Rollout(fraction: 0.5, salt: "edge-suite")
        let subjects = (0..<100).map { "user-\($0)" }
        let outside: String = try #require(subjects.first { !rollout.includes($0) })
        let inside: String = try #require(subjects.first { rollout.includes($0) })
        try await edge.run(on: backend, configuration) { app in
            let through = try await app.send(
                "POST", "/orders", headers: [(EdgeHeaders.subject, outside)], body: large)
            #expect(through.status == 200 && through.decision == "none|false|false|payload_too_large", "\(through)")
            let refused = try await app.send("POST", "/orders", headers: [(EdgeHeaders.subject, inside)], body: large)
            #expect(refused.status == 413 && refused.code == "payload_too_large", "\(refused)")
        }
    }

    @Test("off mode does not look at requests", arguments: await Edge.matrix())
    func offMode(edge: Edge, backend: Backend) async throws {
        var configuration = EdgeConfiguration()
        configuration.enforcement.mode = .off
        try await edge.run(on: backend, configuration) { app in
            let device = try await EdgeDevice.registered(app)
            let headers = try device.headers("POST", "/orders", body: Self.body)
            for sent in [[], headers, headers] {
                let answer = try await app.send("POST", "/orders", headers: sent, body: Self.body)
                #expect(answer.status == 200 && answer.text == "no key", "\(answer)")
                #expect(answer.decision == "none|false|false|-", "\(answer)")
            }
            // Nothing was verified: the assertion still passes where it is enforced (the counter did not move).
            let record = try #require(try await app.store.key(device.keyID))
            #expect(record.counter == 0)
        }
    }

    @Test(
        "off mode under a risk policy that steps up the unproved: every edge puts the step-up on the request",
        arguments: await Edge.matrix())
    func offModeStepUp(edge: Edge, backend: Backend) async throws {
        var configuration = EdgeConfiguration()
        configuration.enforcement.mode = .off
        configuration.policy.stepUpWhileRiskUnknown = true
        try await edge.run(on: backend, configuration) { app in
            let answer = try await app.send("POST", "/orders", headers: [], body: Self.body)
            #expect(answer.status == 200 && answer.decision == "none|false|true|-", "\(answer)")
        }
    }

    @Test(
        "rollout: the same subjects (named by the application, or the key id sent) are enforced on every edge",
        arguments: await Edge.matrix())
    func rollout(edge: Edge, backend: Backend) async throws {
        var configuration = EdgeConfiguration()
        configuration.enforcement.rollout = 0.5
        configuration.enforcement.rolloutSalt = "edge-suite"
        let rollout = try Rollout(fraction: 0.5, salt: "edge-suite")
        try await edge.run(on: backend, configuration) { app in
            let bySubject: @Sendable (String) -> [(String, String)] = { [(EdgeHeaders.subject, $0)] }
            let byKey: @Sendable (String) -> [(String, String)] = {
                [(AttestKitHeaderNames.keyID, RolloutProbe.keyText($0))]
            }
            for (name, headers, spell) in [
                ("subject", bySubject, { $0 } as @Sendable (String) -> String), ("key id", byKey, RolloutProbe.keyText),
            ] {
                // No assertion: an enforced request is refused (401), one outside the rollout goes on (200).
                let result = try await RolloutProbe.run(
                    subjects: 200, includes: { rollout.includes(spell($0)) }
                ) { subject in
                    let answer = try await app.send("POST", "/orders", headers: headers(subject), body: Self.body)
                    #expect([200, 401].contains(answer.status), "\(answer)")
                    return answer.status == 401
                }
                #expect(result.flipped.isEmpty && result.misplaced.isEmpty, "\(name): \(result)")
                #expect(result.share > 0.2 && result.share < 0.8, "\(name): \(result.share)")
            }
            // Outside the rollout, a valid assertion is still verified (and counted), not enforced.
            let device = try await EdgeDevice.registered(app)
            let enforced = rollout.includes(device.keyID.base64)
            let answer = try await app.send(
                "POST", "/orders", headers: try device.headers("POST", "/orders", body: Self.body), body: Self.body)
            #expect(answer.status == 200 && answer.text == device.keyID.base64, "\(answer)")
            #expect(answer.decision == "app_attest|\(enforced)|false|-", "\(answer)")
        }
    }

    @Test(
        "step-up: asked for a key whose risk is unknown while the policy says so, and for weaker proof",
        arguments: await Edge.matrix())
    func stepUp(edge: Edge, backend: Backend) async throws {
        for stepsUp in [false, true] {
            var configuration = EdgeConfiguration()
            configuration.policy.stepUpWhileRiskUnknown = stepsUp
            configuration.enforcement.minimumTrust = .debug
            configuration.debugTokens = [EdgeFixture.debugToken]
            try await edge.run(on: backend, configuration) { app in
                let device = try await EdgeDevice.registered(app)
                let asserted = try await app.send(
                    "POST", "/orders", headers: try device.headers("POST", "/orders", body: Self.body),
                    body: Self.body)
                #expect(asserted.status == 200 && asserted.text == device.keyID.base64, "\(asserted)")
                #expect(asserted.decision == "app_attest|true|\(stepsUp)|-", "\(asserted)")
                let debug = try await app.send(
                    "POST", "/orders", headers: [(AttestKitHeaderNames.debugToken, EdgeFixture.debugToken)],
                    body: Self.body)
                #expect(debug.status == 200 && debug.decision == "debug|true|\(stepsUp)|-", "\(debug)")
            }
        }
    }
}
