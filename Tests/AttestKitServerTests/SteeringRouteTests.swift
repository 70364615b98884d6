import AttestKit
import AttestKitApple
import AttestKitAppleMock
import AttestKitFlows
import AttestKitServer
import AttestKitStore
import AttestKitWire
import Crypto
import Foundation
import NIOHTTP1
import Synchronization
import Testing

/// What a client must not steer, on the real routes and stores: a key id in another spelling (issue #28, item 4),
/// and a DeviceCheck token used on several replicas sharing one database (item 2).
@Suite("Enforcement a client cannot steer: routes and stores")
struct SteeringRouteTests {
    @Test(
        "POST /v1/tokens and /v1/assertions/verify accept a key id in its one spelling only",
        arguments: await StoreKind.all())
    func oneSpellingOnTheRoutes(kind: StoreKind) async throws {
        try await ServerHarness.with(kind, try TokenRouteTests.options()) { harness in
            let device = try await TestDevice.registered(harness)
            let canonical = device.keyID.base64
            for spelling in Self.spellings(of: device.keyID) {
                // The assertion is right; only the key id's spelling differs, and it is refused before anything.
                var headers = try device.guardedHeaders(
                    method: "POST", target: "/v1/tokens", body: [], freshness: device.now)
                headers = headers.map { $0.0 == AttestKitHeaderNames.keyID ? ($0.0, spelling) : $0 }
                let refused = try await harness.send(.POST, "/v1/tokens", headers: headers)
                #expect(refused.status == 400 && refused.errorCode == "key_id_malformed", "\(spelling): \(refused)")
                let body = try device.verifyBody(freshness: device.now).text
                let respelled = body.replacingOccurrences(of: canonical, with: spelling)
                let verify = try await harness.post("/v1/assertions/verify", .raw(respelled))
                #expect(verify.status == 400 && verify.errorCode == "key_id_malformed", "\(spelling): \(verify)")
            }
            let (issued, _) = try await TokenRouteTests.requestToken(harness, device)
            #expect(issued.status == 201, "\(issued)")
        }
    }

    @Test(
        "a DeviceCheck token proves one request across replicas sharing the store, whichever replica sees it first",
        arguments: await StoreKind.all())
    func useOnceAcrossReplicas(kind: StoreKind) async throws {
        try await ServerHarness.with(kind) { harness in
            let calls = Mutex(0)
            // Two replicas: each its own validator (cache, single flight, budget), one database.
            let replicas = (0..<2).map { _ in
                DeviceTokenValidator { (_: String) async throws(AppleServiceError) in calls.withLock { $0 += 1 } }
            }
            let guards = try replicas.map { validator in
                RouteGuard(
                    gate: harness.server.gate, policy: try EnforcementPolicy(minimumTrust: .deviceCheck),
                    deviceTokens: validator)
            }
            func present(_ token: String, on replica: Int) async throws(FlowError) -> RequestAttestation {
                try await guards[replica].check(
                    lookup: { $0 == AttestKitHeaderNames.deviceToken ? .value(token) : .absent }, method: "POST",
                    target: "/orders", body: [UInt8](), client: "192.0.2.\(replica)")
            }
            let token = Data("a device token of replica tests".utf8).base64EncodedString()
            #expect(try await present(token, on: 0).trust == .deviceCheck)
            let reused = await #expect(throws: FlowError.self) { try await present(token, on: 1) }
            #expect(reused?.code == .deviceTokenUsed, "\(String(describing: reused))")
            // Concurrently on both replicas: exactly one of many copies of a new token gets through.
            let fresh = Data("another device token of replica tests".utf8).base64EncodedString()
            let accepted = await withTaskGroup(of: Bool.self) { group in
                for index in 0..<8 {
                    group.addTask { (try? await present(fresh, on: index % 2)) != nil }
                }
                return await group.reduce(0) { $0 + ($1 ? 1 : 0) }
            }
            #expect(accepted == 1)
            #expect(calls.withLock { $0 } <= 4, "each replica asks Apple at most once per token")
        }
    }

    @Test(
        "a DeviceCheck token buys one session token at trust devicecheck where the service sells them, then is used up",
        arguments: await StoreKind.all())
    func deviceTokenBuysOneSessionToken(kind: StoreKind) async throws {
        var options = try TokenRouteTests.options()
        options.policy = .init(riskMetricThreshold: 10)
        let deviceToken = Data("a DeviceCheck token of a device without App Attest".utf8).base64EncodedString()
        let headers = [(AttestKitHeaderNames.deviceToken, deviceToken)]
        // Not sold by default: refused without asking Apple.
        try await ServerHarness.with(kind, options) { harness in
            let refused = try await harness.send(.POST, "/v1/tokens", headers: headers)
            #expect(refused.status == 403 && refused.errorCode == "devicecheck_not_configured", "\(refused)")
            #expect(await harness.mock.state.requestCount(.validateDeviceToken) == 0)
        }
        options.tokensAcceptDeviceTokens = true
        try await ServerHarness.with(kind, options) { harness in
            let issued = try await harness.send(.POST, "/v1/tokens", headers: headers)
            try #require(issued.status == 201, "\(issued)")
            let token = try #require(issued.string("token"))
            // Used up: the same token buys nothing more.
            let again = try await harness.send(.POST, "/v1/tokens", headers: headers)
            #expect(again.status == 409 && again.errorCode == "device_token_used", "\(again)")
            #expect(await harness.mock.state.requestCount(.validateDeviceToken) == 1)
            // What a backend sees: trust devicecheck, a subject that names no key, and step-up (weaker proof).
            let introspected = try await harness.post("/v1/tokens/introspect", ["token": .string(token)])
            #expect(introspected.bool("active") == true, "\(introspected)")
            #expect(introspected.string("trust") == "devicecheck" && introspected.bool("stepUp") == true)
            #expect(introspected.string("sub")?.hasPrefix("devicecheck:") == true)
            let consumed = try await harness.post("/v1/tokens/consume", ["token": .string(token)])
            #expect(consumed.status == 200 && consumed.string("trust") == "devicecheck", "\(consumed)")
        }
    }

    /// Other spellings of `keyID` that the Base64 reader decodes to the same 32 bytes.
    static func spellings(of keyID: KeyID) -> [String] {
        let standard = keyID.base64
        let url = standard.replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
        let candidates = [String(standard.dropLast()), url, String(url.dropLast()), keyID.withUnusedBits]
        var seen: Set<String> = [standard]
        return candidates.filter { seen.insert($0).inserted }
    }
}
