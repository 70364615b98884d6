import AttestKit
import AttestKitFlows
import AttestKitStore
import AttestKitTesting
import AttestKitVapor
import AttestKitTestSupport
import AttestKitWire
import Foundation
import NIOCore
import Testing
import Vapor
import VaporTesting

/// The Vapor ``AttestKitMiddleware`` under each enforcement mode, with debug tokens: the same decisions as the
/// Hummingbird middleware (both call ``RouteGuard``), on `req.attestKit.attestation`.
@Suite("Vapor AttestKitMiddleware enforcement modes")
struct VaporEnforcementTests {
    static let debugToken = "a-debug-token-for-the-simulator-and-ci-0002"

    static func describe(_ req: Request) -> String {
        let attestation = req.attestKit.attestation
        return "\(attestation?.trust?.rawValue ?? "none")|\(attestation?.enforced ?? false)|"
            + "\(attestation?.refusal?.code.rawValue ?? "-")|\(req.attestKit.key == nil ? "nokey" : "key")"
    }

    static func headers(_ device: SimulatedDevice, _ keyID: KeyID, target: String) throws -> HTTPHeaders {
        let milliseconds = Int64(Date().timeIntervalSince1970 * 1_000)
        let binding = try RequestBinding(
            method: "POST", target: target, body: [UInt8](), freshness: .timestamp(milliseconds: milliseconds))
        let assertion = try device.generateAssertion(keyID, clientDataHash: binding.clientDataHash)
        return [
            AttestKitHeaderNames.keyID: keyID.base64,
            AttestKitHeaderNames.assertion: Data(assertion).base64EncodedString(),
            AttestKitHeaderNames.timestamp: String(milliseconds),
        ]
    }

    @Test("enforce refuses, report lets through marked unverified, off does not look; debug tokens by trust level")
    func modes() async throws {
        try await VaporBench.withApplication(
            configure: { $0.debugTokens = [Self.debugToken] },
            mount: { app in
                for (group, mode) in [("enforced", EnforcementMode.enforce), ("reported", .report), ("ignored", .off)] {
                    let policy = try EnforcementPolicy(group: group, mode: mode)
                    app.grouped(AttestKitMiddleware(policy: policy)).post(.constant(group), "orders") { req in
                        Self.describe(req)
                    }
                }
                let lowest = try EnforcementPolicy(group: "simulator", minimumTrust: .debug)
                app.grouped(AttestKitMiddleware(policy: lowest)).post("simulator", "orders") { req in
                    Self.describe(req)
                }
            }
        ) { app in
            for (path, status, body) in [
                ("/enforced/orders", HTTPStatus.unauthorized, nil),
                ("/reported/orders", .ok, "none|false|assertion_required|nokey"),
                ("/ignored/orders", .ok, "none|false|-|nokey"),
            ] as [(String, HTTPStatus, String?)] {
                try await app.testing().test(.POST, path) { response in
                    #expect(response.status == status, "\(path)")
                    if let body { #expect(response.body.string == body, "\(path)") }
                }
            }
            let (device, keyID) = try await VaporBench.register(app)
            for (path, expected) in [
                ("/enforced/orders", "app_attest|true|-|key"), ("/reported/orders", "app_attest|false|-|key"),
            ] {
                let headers = try Self.headers(device, keyID, target: path)
                try await app.testing().test(.POST, path, headers: headers) { response in
                    #expect(response.status == .ok, "\(path)")
                    #expect(response.body.string == expected)
                }
                try await app.testing().test(.POST, path, headers: headers) { response in
                    if path.hasPrefix("/enforced") {
                        #expect(response.status == .conflict)
                    } else {
                        #expect(response.body.string == "none|false|counter_not_increasing|nokey")
                    }
                }
            }
            let token: HTTPHeaders = [AttestKitHeaderNames.debugToken: Self.debugToken]
            try await app.testing().test(.POST, "/simulator/orders", headers: token) { response in
                #expect(response.body.string == "debug|true|-|nokey")
            }
            try await app.testing().test(.POST, "/enforced/orders", headers: token) { response in
                #expect(response.status == .forbidden)
                #expect(VaporBench.code(response) == "trust_insufficient")
            }
        }
    }

    @Test("nested guards: the inner guard applies its policy to the outer guard's proof, never verifying it again")
    func nestedGuards() async throws {
        try await VaporBench.withApplication(
            configure: { _ in },
            mount: { app in
                let (enforce, report) = (
                    try EnforcementPolicy(group: "enforce", mode: .enforce),
                    try EnforcementPolicy(group: "report", mode: .report)
                )
                let deviceCheck = try EnforcementPolicy(group: "devicecheck", mode: .enforce, minimumTrust: .deviceCheck)
                app.grouped(AttestKitMiddleware(policy: enforce)).grouped(AttestKitMiddleware(policy: report))
                    .post("enforce-report") { req in Self.describe(req) }
                // The rollout Apple advises: report everywhere, enforce where it matters.
                app.grouped(AttestKitMiddleware(policy: report)).grouped(AttestKitMiddleware(policy: enforce))
                    .post("report-enforce") { req in Self.describe(req) }
                app.grouped(AttestKitMiddleware(policy: report)).grouped(AttestKitMiddleware(policy: deviceCheck))
                    .post("report-devicecheck") { req in Self.describe(req) }
            }
        ) { app in
            let (device, keyID) = try await VaporBench.register(app)
            for path in ["/enforce-report", "/report-enforce", "/report-devicecheck"] {
                // The outer guard verifies the assertion (its counter is spent); the inner one passes it on.
                let headers = try Self.headers(device, keyID, target: path)
                try await app.testing().test(.POST, path, headers: headers) { response in
                    #expect(response.status == .ok, "\(path)")
                    #expect(response.body.string.hasPrefix("app_attest|") && response.body.string.hasSuffix("|-|key"))
                }
                // Sent again: refused by the outer guard where it enforces; elsewhere reported by it (nothing proved)
                // and refused by the inner guard's own check.
                try await app.testing().test(.POST, path, headers: headers) { response in
                    if path == "/enforce-report" {
                        #expect(response.status == .conflict, "\(path)")
                    } else {
                        #expect(response.status == .conflict, "\(path): refused by the inner guard's own check")
                        #expect(response.body.string.contains("counter_not_increasing"), "\(path)")
                    }
                }
            }
            // Nothing presented: reported outside, refused inside where enforced.
            try await app.testing().test(.POST, "/report-enforce") { response in
                #expect(response.status == .unauthorized)
                #expect(response.body.string.contains("assertion_required"))
            }
        }
    }

    @Test(
        "rollout through the middleware: a fixed share of 1 000 subjects (caller-given, or the key id sent) is enforced, the same for a subject every time",
        arguments: [0.0, 0.1, 0.5, 1.0])
    func rollout(fraction: Double) async throws {
        let rollout = try Rollout(fraction: fraction, salt: "orders")
        try await VaporBench.withApplication(mount: { app in
            let bySubject = try EnforcementPolicy(group: "by-subject", rollout: rollout)
            app.grouped(AttestKitMiddleware(policy: bySubject, subject: { $0.headers.first(name: "X-User") }))
                .post("by-subject", "orders") { req in Self.describe(req) }
            let byKey = try EnforcementPolicy(group: "by-key", rollout: rollout)
            app.grouped(AttestKitMiddleware(policy: byKey)).post("by-key", "orders") { req in Self.describe(req) }
        }) { app in
            let byKey: @Sendable (String) -> String = RolloutProbe.keyText
            let cases: [(String, String, @Sendable (String) -> String)] = [
                ("/by-subject/orders", "X-User", { $0 }), ("/by-key/orders", AttestKitHeaderNames.keyID, byKey),
            ]
            for (path, name, spell) in cases {
                // No assertion: an enforced request is refused (401), a reported one goes on unverified (200). A
                // key id is placed by its canonical spelling.
                let result = try await RolloutProbe.run(
                    subjects: 1_000, includes: { rollout.includes(spell($0)) }
                ) { subject in
                    var refused = false
                    try await app.testing().test(.POST, path, headers: [name: spell(subject)]) { response in
                        refused = response.status == .unauthorized
                    }
                    return refused
                }
                #expect(result.flipped.isEmpty && result.misplaced.isEmpty, "\(path): \(result)")
                // Binomial: 4 standard deviations of 1 000 draws is at most 0.064 (the share over 20 000 is in Flows).
                #expect(abs(result.share - fraction) <= 0.064, "\(path): share \(result.share) for \(fraction)")
            }
        }
    }
}
