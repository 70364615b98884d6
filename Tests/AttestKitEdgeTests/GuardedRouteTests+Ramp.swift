import AttestKit
import AttestKitFlows
import AttestKitTesting
import AttestKitWire
import Crypto
import Foundation
import Testing

/// The attestation ramp (#33) at `POST /v1/challenges` and the attestation routes, on every edge and store: the
/// contract the app-side client is built against (429 `attestation_deferred` with `Retry-After` in whole seconds).
extension GuardedRouteTests {
    static let otherApp: AppID = {
        do { return try AppID("ABCDE12345.com.example.other") } catch { preconditionFailure("\(error)") }
    }()

    /// A device of `app` with a key that `admitted` holds for: keys are generated until one does.
    static func device(
        of app: AppID = EdgeFixture.appID, where admitted: (KeyID) -> Bool
    ) -> (SimulatedDevice, KeyID) {
        let device = SimulatedDevice(
            apple: EdgeFixture.apple, configuration: .init(appID: app, environment: .development))
        while true {
            let keyID = device.generateKey()
            if admitted(keyID) { return (device, keyID) }
        }
    }

    /// Attests `keyID` of `device` with the challenge `challenge`, through `POST /v1/attestations`.
    static func attest(
        _ app: any EdgeDriver, _ device: SimulatedDevice, _ keyID: KeyID, _ challenge: ChallengeResponse
    ) async throws -> EdgeAnswer {
        let bytes = try #require(Data(base64Encoded: challenge.challenge))
        let attestation = try device.attestKey(keyID, clientDataHash: Array(SHA256.hash(data: bytes)))
        return try await app.post(
            "/v1/attestations",
            AttestationRequest(
                keyId: keyID.base64, attestation: Data(attestation).base64EncodedString(),
                challengeId: challenge.challengeId))
    }

    @Test(
        "ramp share: outside 429 attestation_deferred with Retry-After the recheck; inside a challenge bound to the key",
        arguments: await Edge.matrix())
    func rampShare(edge: Edge, backend: Backend) async throws {
        var configuration = EdgeConfiguration()
        configuration.ramp = AttestationRamp(share: 50, recheckAfter: 3_600)
        let ramp = configuration.ramp
        try await edge.run(on: backend, configuration) { app in
            // No key id: the ramp cannot decide.
            let missing = try await app.post("/v1/challenges", ChallengeRequest(purpose: "attest"))
            #expect(missing.status == 400 && missing.code == "invalid_field", "\(missing)")
            #expect(missing.text.contains("keyId") && missing.text.contains("ramp"), "\(missing)")
            // Outside the share: not yet, for the recheck's seconds; asked again, the same answer.
            let (_, outside) = Self.device { !ramp.admits(appID: EdgeFixture.appID, keyID: $0) }
            for _ in 0..<2 {
                let deferred = try await app.post(
                    "/v1/challenges", ChallengeRequest(purpose: "attest", keyId: outside.base64))
                #expect(deferred.status == 429 && deferred.code == "attestation_deferred", "\(deferred)")
                #expect(deferred.header("Retry-After") == "3600", "\(deferred.headers)")
                #expect(deferred.text.contains("ramp.share"), "\(deferred)")
            }
            // Inside: a challenge for this key, which registers it.
            let (device, inside) = Self.device { ramp.admits(appID: EdgeFixture.appID, keyID: $0) }
            let issued = try await app.post(
                "/v1/challenges", ChallengeRequest(purpose: "attest", keyId: inside.base64))
            #expect(issued.status == 201, "\(issued)")
            let challenge = try #require(issued.decode(ChallengeResponse.self))
            let registered = try await Self.attest(app, device, inside, challenge)
            #expect(registered.status == 201, "\(registered)")
            // A challenge admitted for one key cannot attest another (also admitted) key.
            let (thief, stolen) = Self.device { ramp.admits(appID: EdgeFixture.appID, keyID: $0) && $0 != inside }
            let (_, lender) = Self.device { ramp.admits(appID: EdgeFixture.appID, keyID: $0) }
            let lent = try await app.post("/v1/challenges", ChallengeRequest(purpose: "attest", keyId: lender.base64))
            let mismatched = try await Self.attest(
                app, thief, stolen, try #require(lent.decode(ChallengeResponse.self)))
            #expect(mismatched.code == "challenge_key_mismatch", "\(mismatched)")
        }
    }

    @Test(
        "ramp ceiling: past the app's attestations of the day 429 attestation_deferred until the next UTC day",
        arguments: await Edge.matrix())
    func rampCeiling(edge: Edge, backend: Backend) async throws {
        var configuration = EdgeConfiguration()
        configuration.ramp = AttestationRamp(dailyCeiling: 2)
        try await edge.run(on: backend, configuration) { app in
            let device = SimulatedDevice(
                apple: EdgeFixture.apple, configuration: .init(appID: EdgeFixture.appID, environment: .development))
            for _ in 0..<2 {
                let issued = try await app.post(
                    "/v1/challenges", ChallengeRequest(purpose: "attest", keyId: device.generateKey().base64))
                #expect(issued.status == 201, "\(issued)")
            }
            let before = Date()
            let deferred = try await app.post(
                "/v1/challenges", ChallengeRequest(purpose: "attest", keyId: device.generateKey().base64))
            let after = Date()
            #expect(deferred.status == 429 && deferred.code == "attestation_deferred", "\(deferred)")
            #expect(deferred.text.contains("ramp.daily-ceiling"), "\(deferred)")
            let retryAfter = try #require(deferred.header("Retry-After").flatMap { Int($0) }, "\(deferred.headers)")
            func untilMidnight(_ date: Date) -> Int {
                let seconds = date.timeIntervalSince1970
                return Int((floor(seconds / 86_400) + 1) * 86_400 - seconds)
            }
            #expect((untilMidnight(after)...untilMidnight(before) + 1).contains(retryAfter), "\(retryAfter)")
            // Assert challenges are not attestations: the ceiling does not touch them.
            let assert = try await app.post("/v1/challenges", ChallengeRequest(purpose: "assert"))
            #expect(assert.status == 201, "\(assert)")
        }
    }

    @Test(
        "ramp, several apps: the challenge names the app; an install admitted for one app cannot attest another",
        arguments: await Edge.matrix())
    func rampApps(edge: Edge, backend: Backend) async throws {
        var configuration = EdgeConfiguration()
        configuration.apps = [EdgeFixture.appID, Self.otherApp]
        configuration.ramp = AttestationRamp(share: 50)
        let ramp = configuration.ramp
        try await edge.run(on: backend, configuration) { app in
            let (_, any) = Self.device { _ in true }
            let unnamed = try await app.post("/v1/challenges", ChallengeRequest(purpose: "attest", keyId: any.base64))
            #expect(unnamed.status == 400 && unnamed.code == "invalid_field" && unnamed.text.contains("appId"))
            let unknown = try await app.post(
                "/v1/challenges",
                ChallengeRequest(purpose: "attest", keyId: any.base64, appId: "ZZZZZ99999.com.example.app"))
            #expect(unknown.status == 400 && unknown.code == "invalid_field", "\(unknown)")
            // A key of the other app, inside the first app's share but outside its own.
            let (device, keyID) = Self.device(of: Self.otherApp) {
                ramp.admits(appID: EdgeFixture.appID, keyID: $0) && !ramp.admits(appID: Self.otherApp, keyID: $0)
            }
            let asOther = try await app.post(
                "/v1/challenges",
                ChallengeRequest(purpose: "attest", keyId: keyID.base64, appId: Self.otherApp.description))
            #expect(asOther.status == 429 && asOther.code == "attestation_deferred", "\(asOther)")
            let asFirst = try await app.post(
                "/v1/challenges",
                ChallengeRequest(purpose: "attest", keyId: keyID.base64, appId: EdgeFixture.appID.description))
            #expect(asFirst.status == 201, "\(asFirst)")
            // The challenge was admitted for the first app: the other app's attestation is refused by it.
            let crossed = try await Self.attest(
                app, device, keyID, try #require(asFirst.decode(ChallengeResponse.self)))
            #expect(crossed.status == 403 && crossed.code == "challenge_app_mismatch", "\(crossed)")
        }
    }

    @Test(
        "ramp ceiling, several apps: a challenge spends the app it names, and only that app's attestation registers",
        arguments: await Edge.matrix())
    func rampCeilingApps(edge: Edge, backend: Backend) async throws {
        var configuration = EdgeConfiguration()
        configuration.apps = [EdgeFixture.appID, Self.otherApp]
        configuration.ramp = AttestationRamp(dailyCeiling: 1)
        try await edge.run(on: backend, configuration) { app in
            let (device, keyID) = Self.device(of: Self.otherApp) { _ in true }
            // The first app's ceiling spent for a device of the other app: its attestation is refused, the
            // challenge spent.
            let asFirst = try await app.post(
                "/v1/challenges",
                ChallengeRequest(purpose: "attest", keyId: keyID.base64, appId: EdgeFixture.appID.description))
            #expect(asFirst.status == 201, "\(asFirst)")
            let firstChallenge = try #require(asFirst.decode(ChallengeResponse.self))
            let crossed = try await Self.attest(app, device, keyID, firstChallenge)
            #expect(crossed.status == 403 && crossed.code == "challenge_app_mismatch", "\(crossed)")
            let spent = try await app.post(
                "/v1/challenges",
                ChallengeRequest(
                    purpose: "attest", keyId: device.generateKey().base64, appId: EdgeFixture.appID.description))
            #expect(spent.status == 429 && spent.code == "attestation_deferred", "\(spent)")
            // The other app's own ceiling is whole: its challenge registers a key of its own (the device attested
            // the first key already, and a key is attested once).
            let newKey = device.generateKey()
            let asOther = try await app.post(
                "/v1/challenges",
                ChallengeRequest(purpose: "attest", keyId: newKey.base64, appId: Self.otherApp.description))
            #expect(asOther.status == 201, "\(asOther)")
            let registered = try await Self.attest(
                app, device, newKey, try #require(asOther.decode(ChallengeResponse.self)))
            #expect(registered.status == 201, "\(registered)")
        }
    }

    @Test(
        "ramp off, several apps: a challenge that names an app is for that app's attestation only",
        arguments: await Edge.matrix())
    func namedAppBinds(edge: Edge, backend: Backend) async throws {
        var configuration = EdgeConfiguration()
        configuration.apps = [EdgeFixture.appID, Self.otherApp]
        try await edge.run(on: backend, configuration) { app in
            let (device, keyID) = Self.device(of: Self.otherApp) { _ in true }
            let named = try await app.post(
                "/v1/challenges", ChallengeRequest(purpose: "attest", appId: EdgeFixture.appID.description))
            let crossed = try await Self.attest(
                app, device, keyID, try #require(named.decode(ChallengeResponse.self)))
            #expect(crossed.status == 403 && crossed.code == "challenge_app_mismatch", "\(crossed)")
            // Unnamed, the challenge serves any accepted app; named right, it serves its own.
            let unnamed = try await app.post("/v1/challenges", ChallengeRequest(purpose: "attest"))
            let other = device.generateKey()
            let any = try await Self.attest(app, device, other, try #require(unnamed.decode(ChallengeResponse.self)))
            #expect(any.status == 201, "\(any)")
            let own = try await app.post(
                "/v1/challenges", ChallengeRequest(purpose: "attest", appId: Self.otherApp.description))
            let third = device.generateKey()
            let registered = try await Self.attest(
                app, device, third, try #require(own.decode(ChallengeResponse.self)))
            #expect(registered.status == 201, "\(registered)")
        }
    }

    @Test(
        "ramp off (the default): attest challenges need no key id, and a named app must be accepted",
        arguments: await Edge.matrix())
    func rampOff(edge: Edge, backend: Backend) async throws {
        try await edge.run(on: backend) { app in
            for _ in 0..<3 {
                let issued = try await app.post("/v1/challenges", ChallengeRequest(purpose: "attest"))
                #expect(issued.status == 201, "\(issued)")
            }
            let device = try await EdgeDevice.registered(app)
            #expect(device.keyID.bytes.count == 32)
            let named = try await app.post(
                "/v1/challenges", ChallengeRequest(purpose: "attest", appId: EdgeFixture.appID.description))
            #expect(named.status == 201, "\(named)")
            let other = try await app.post(
                "/v1/challenges", ChallengeRequest(purpose: "attest", appId: Self.otherApp.description))
            #expect(other.status == 400 && other.code == "invalid_field", "\(other)")
            let onAssert = try await app.post(
                "/v1/challenges", ChallengeRequest(purpose: "assert", appId: EdgeFixture.appID.description))
            #expect(onAssert.status == 400 && onAssert.code == "invalid_field", "\(onAssert)")
        }
    }
}
