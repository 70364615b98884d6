import AttestKit
import AttestKitFlows
import AttestKitServer
import AttestKitTesting
import AttestKitWire
import Crypto
import Foundation

/// The eight steps of `attestkit demo`: simulated devices talking to the AttestKit server over real HTTP, each
/// step with the outcome the API contract promises.
///
/// Steps build on each other (the key attested in step 2 makes the assertions of steps 3 to 5 and has its
/// receipt refreshed in step 8); a step that cannot run because an earlier one failed is reported as failed,
/// and the rest still run.
struct DemoScenario {
    /// The steps, numbered as printed.
    enum Step: Int, CaseIterable {
        case challenge = 1
        case attestation
        case assertions
        case replay
        case tamperedBody
        case anotherApp
        case deviceCheck
        case receiptRefresh

        /// A short name, for the JSON report and failures.
        var title: String {
            switch self {
            case .challenge: "challenge"
            case .attestation: "attestation"
            case .assertions: "assertions"
            case .replay: "replay"
            case .tamperedBody: "tampered body"
            case .anotherApp: "another app"
            case .deviceCheck: "devicecheck"
            case .receiptRefresh: "receipt refresh"
            }
        }
    }

    private typealias Check = DemoReport.Check

    let client: DemoClient
    /// A device running the app the server accepts.
    let device: SimulatedDevice
    /// A device running another app of the same team.
    let otherDevice: SimulatedDevice
    /// The server's receipt refresher, whose round step 8 runs.
    let receiptRefresh: ReceiptRefreshService?

    private var attestChallenge: ChallengeResponse?
    private var keyID: KeyID?
    private var replay: AssertionRequest?

    /// A scenario against the running `environment`.
    init(environment: DemoEnvironment, client: DemoClient) {
        self.client = client
        self.device = SimulatedDevice(
            apple: environment.softwareApple,
            configuration: .init(appID: DemoEnvironment.appID, environment: .development))
        self.otherDevice = SimulatedDevice(
            apple: environment.softwareApple,
            configuration: .init(appID: DemoEnvironment.otherAppID, environment: .development))
        self.receiptRefresh = environment.server.receiptRefresh
    }

    /// Runs every step in order.
    mutating func run() async -> [DemoReport.Step] {
        var steps: [DemoReport.Step] = []
        for step in Step.allCases {
            let checks: [Check]
            do {
                checks = try await perform(step)
            } catch {
                checks = [Check(failure: step.title, error)]
            }
            steps.append(DemoReport.Step(number: step.rawValue, title: step.title, checks: checks))
        }
        return steps
    }

    private mutating func perform(_ step: Step) async throws -> [Check] {
        switch step {
        case .challenge: [try await challenge()]
        case .attestation: [try await attestation()]
        case .assertions: try await assertions()
        case .replay: [try await replayed()]
        case .tamperedBody: [try await tamperedBody()]
        case .anotherApp: [try await anotherApp()]
        case .deviceCheck: try await deviceCheck()
        case .receiptRefresh: try await refreshReceipt()
        }
    }

    // MARK: Steps

    /// 1. `POST /v1/challenges`: 201 with 32 random bytes for an attestation.
    private mutating func challenge() async throws -> Check {
        let response = try await client.post("/v1/challenges", ChallengeRequest(purpose: "attest"))
        let challenge = response.decode(ChallengeResponse.self)
        let got =
            if response.status == 201, let challenge {
                "201, purpose \(challenge.purpose), \(Data(base64Encoded: challenge.challenge)?.count ?? 0) bytes"
            } else {
                response.summary
            }
        attestChallenge = challenge
        return Check(
            "POST /v1/challenges", expected: "201, purpose attest, 32 bytes", got: got,
            success: "challenge issued: POST /v1/challenges → 201 (purpose attest, 32 random bytes)")
    }

    /// 2. `attestKey` with SHA-256 of the challenge, `POST /v1/attestations`: 201, key registered at counter 0.
    private mutating func attestation() async throws -> Check {
        guard let challenge = attestChallenge else { throw DemoFailure("step 1 issued no challenge") }
        let (keyID, response) = try await attest(device, with: challenge)
        let record = response.decode(KeyRecordResponse.self)
        let got =
            if response.status == 201, let record {
                "201, \(record.appId), \(record.environment), counter \(record.counter)"
            } else {
                response.summary
            }
        let check = Check(
            "attestation of key \(keyID)", expected: "201, \(DemoEnvironment.appID), development, counter 0",
            got: got,
            success: "key \(keyID) attested over SHA-256(challenge): POST /v1/attestations → 201, registered "
                + "(development, counter 0)")
        if check.ok { self.keyID = keyID }
        return check
    }

    /// 3. Three assertions, each bound to its request (method, target, body, freshness): 200, counters 1, 2, 3.
    private mutating func assertions() async throws -> [Check] {
        let keyID = try attestedKey()
        let issued = try await client.post(
            "/v1/challenges", ChallengeRequest(purpose: "assert", keyId: keyID.base64))
        guard issued.status == 201, let challenge = issued.decode(ChallengeResponse.self) else {
            return [
                Check(
                    "POST /v1/challenges for an assertion", expected: "201", got: issued.summary,
                    success: "assert challenge issued")
            ]
        }
        let requests: [(method: String, target: String, body: String, freshness: Freshness)] = [
            ("POST", "/v1/orders", #"{"item":"espresso","quantity":2}"#, .challenge(challenge.challengeId)),
            ("PATCH", "/v1/orders/42?notify=false", #"{"quantity":3}"#, .timestamp(milliseconds: Self.nowMillis())),
            ("DELETE", "/v1/orders/42", "", .timestamp(milliseconds: Self.nowMillis())),
        ]
        var checks: [Check] = []
        for (index, request) in requests.enumerated() {
            let body = try assertionRequest(
                keyID, request.method, request.target, body: request.body, freshness: request.freshness)
            let response = try await client.backendPost("/v1/assertions/verify", body)
            let freshness = if case .challenge = request.freshness { "one-time challenge" } else { "timestamp" }
            checks.append(
                Self.accepted("\(request.method) \(request.target)", response, counter: index + 1, freshness: freshness)
            )
            replay = body
        }
        return checks
    }

    /// 4. The third assertion sent again: 409 `counter_not_increasing`.
    private func replayed() async throws -> Check {
        guard let replay, let parts = replay.request else { throw DemoFailure("step 3 made no assertion to replay") }
        let response = try await client.backendPost("/v1/assertions/verify", replay)
        let label = "\(parts.method) \(parts.target)"
        return Check(
            "replayed assertion on \(label)", expected: "409 counter_not_increasing", got: response.summary,
            success: "the assertion on \(label) replayed: refused, 409 counter_not_increasing")
    }

    /// 5. An assertion made for one body, sent with another: 403 `signature_invalid`.
    private func tamperedBody() async throws -> Check {
        let keyID = try attestedKey()
        let signed = #"{"amount":10}"#
        let sent = #"{"amount":10000}"#
        let body = try assertionRequest(
            keyID, "POST", "/v1/transfers", body: sent, freshness: .timestamp(milliseconds: Self.nowMillis()),
            signedBody: signed)
        let response = try await client.backendPost("/v1/assertions/verify", body)
        return Check(
            "assertion for body \(signed) sent with \(sent)", expected: "403 signature_invalid", got: response.summary,
            success: "assertion made for POST /v1/transfers \(signed), sent with \(sent): refused, "
                + "403 signature_invalid")
    }

    /// 6. An attestation by a device running another app: 403 `app_id_mismatch`.
    private func anotherApp() async throws -> Check {
        let issued = try await client.post("/v1/challenges", ChallengeRequest(purpose: "attest"))
        guard issued.status == 201, let challenge = issued.decode(ChallengeResponse.self) else {
            return Check("POST /v1/challenges", expected: "201", got: issued.summary, success: "challenge issued")
        }
        let (_, response) = try await attest(otherDevice, with: challenge)
        return Check(
            "attestation by \(DemoEnvironment.otherAppID)", expected: "403 app_id_mismatch", got: response.summary,
            success: "attestation by a device of \(DemoEnvironment.otherAppID) (not configured): refused, "
                + "403 app_id_mismatch")
    }

    /// 7. DeviceCheck through the server and the mock: a new device is not found, bit 0 is set, then read back.
    private func deviceCheck() async throws -> [Check] {
        let token = Self.deviceToken()
        let first = try await client.backendPost("/v1/devicecheck/query", DeviceTokenRequest(deviceToken: token))
        let update = try await client.backendPost(
            "/v1/devicecheck/update", DeviceCheckUpdateRequest(deviceToken: token, bit0: true))
        let second = try await client.backendPost("/v1/devicecheck/query", DeviceTokenRequest(deviceToken: token))
        let updated = update.decode(DeviceCheckUpdateResponse.self)
        return [
            Check(
                "DeviceCheck query of a new device", expected: "200, found false, bit0 false", got: Self.bits(first),
                success: "DeviceCheck query of a new device token: 200, not found (both bits read false)"),
            Check(
                "DeviceCheck update bit0=true", expected: "200, updated true",
                got: update.status == 200 ? "200, updated \(updated?.updated ?? false)" : update.summary,
                success: "DeviceCheck update bit0=true: 200, updated"),
            Check(
                "DeviceCheck query after the update", expected: "200, found true, bit0 true", got: Self.bits(second),
                success: "DeviceCheck query again: 200, found, bit0 true"),
        ]
    }

    /// 8. A receipt refresh round exchanges the key's receipt with the mock (risk metric 7), and the admin view
    /// shows the metric, step-up (threshold 5) and the risk history.
    private func refreshReceipt() async throws -> [Check] {
        let keyID = try attestedKey()
        guard let receiptRefresh else { throw DemoFailure("the server has no receipt refresher (no Apple key)") }
        let round = await receiptRefresh.round()
        let exchanged = Check(
            "receipt refresh round", expected: "1 refreshed, 0 postponed, no back-off",
            got: "\(round.refreshed) refreshed, \(round.postponed) postponed, "
                + (round.backedOff ? "backed off" : "no back-off"),
            success: "receipt refresh round: the key's receipt exchanged with the mock Apple for a new one")
        let response = try await client.adminGet("/v1/keys/\(Self.pathComponent(keyID))")
        let record = response.decode(KeyRecordResponse.self)
        let got =
            if response.status == 200, let record {
                "200, riskMetric \(record.riskMetric.map(String.init) ?? "none"), stepUp \(record.stepUp), "
                    + "risk history [\((record.riskHistory ?? []).map { String($0.riskMetric) }.joined(separator: ", "))]"
            } else {
                response.summary
            }
        let metric = DemoEnvironment.riskMetric
        let shown = Check(
            "GET /v1/keys/{keyId}", expected: "200, riskMetric \(metric), stepUp true, risk history [\(metric)]",
            got: got,
            success: "GET /v1/keys/{keyId} (admin): riskMetric \(metric) > threshold \(DemoEnvironment.riskThreshold), "
                + "stepUp true, risk history [\(metric)]")
        return [exchanged, shown]
    }

    // MARK: Helpers

    /// The key of step 2.
    private func attestedKey() throws -> KeyID {
        guard let keyID else { throw DemoFailure("step 2 attested no key") }
        return keyID
    }

    /// A new key of `device` attested over SHA-256 of `challenge`, and the server's answer to it.
    private func attest(
        _ device: SimulatedDevice, with challenge: ChallengeResponse
    ) async throws -> (KeyID, DemoResponse) {
        guard let bytes = Data(base64Encoded: challenge.challenge) else {
            throw DemoFailure("the challenge is not Base64")
        }
        let keyID = device.generateKey()
        let attestation = try device.attestKey(keyID, clientDataHash: Array(SHA256.hash(data: bytes)))
        let response = try await client.post(
            "/v1/attestations",
            AttestationRequest(
                keyId: keyID.base64, attestation: Data(attestation).base64EncodedString(),
                challengeId: challenge.challengeId))
        return (keyID, response)
    }

    /// An assertion by `keyID` over the canonical client data of a request (signed for `signedBody` when given,
    /// to tamper with it), and the verify request that carries the request's parts.
    private func assertionRequest(
        _ keyID: KeyID, _ method: String, _ target: String, body: String, freshness: Freshness,
        signedBody: String? = nil
    ) throws -> AssertionRequest {
        let binding = try RequestBinding(
            method: method, target: target, body: Array((signedBody ?? body).utf8), freshness: freshness)
        let assertion = try device.generateAssertion(keyID, clientDataHash: binding.clientDataHash)
        var parts = AssertionRequest.Parts(
            method: method, target: target, body: body.isEmpty ? nil : Data(body.utf8).base64EncodedString())
        var challengeID: String?
        switch freshness {
        case .challenge(let id): challengeID = id
        case .timestamp(let milliseconds): parts.timestamp = milliseconds
        case .vouchedByCaller: break  // refused by RequestBinding above
        }
        return AssertionRequest(
            keyId: keyID.base64, assertion: Data(assertion).base64EncodedString(), request: parts,
            challengeId: challengeID)
    }

    /// A check that an assertion was accepted with `counter`.
    private static func accepted(_ label: String, _ response: DemoResponse, counter: Int, freshness: String) -> Check {
        let result = response.decode(AssertionResponse.self)
        let got =
            if response.status == 200, let result { "200, counter \(result.counter)" } else { response.summary }
        return Check(
            "assertion on \(label)", expected: "200, counter \(counter)", got: got,
            success: "assertion on \(label) accepted (counter \(counter), \(freshness))")
    }

    /// `200, found F, bit0 B` for a DeviceCheck query answer.
    private static func bits(_ response: DemoResponse) -> String {
        guard response.status == 200, let bits = response.decode(DeviceCheckQueryResponse.self) else {
            return response.summary
        }
        return "200, found \(bits.found), bit0 \(bits.bit0)"
    }

    /// A device token like `DCDevice.generateToken()`'s: Base64 of random bytes.
    private static func deviceToken() -> String {
        var generator = SystemRandomNumberGenerator()
        return Data((0..<96).map { _ in UInt8.random(in: 0...255, using: &generator) }).base64EncodedString()
    }

    /// The client's clock in Unix milliseconds.
    private static func nowMillis() -> Int64 {
        Int64((Date().timeIntervalSince1970 * 1_000).rounded())
    }

    /// base64url without padding, as the admin path takes a key id.
    /// The key's one spelling (standard padded Base64), percent-encoded for a path.
    private static func pathComponent(_ keyID: KeyID) -> String {
        keyID.base64.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? keyID.base64
    }
}

/// A demo step that cannot be carried out.
struct DemoFailure: Error, CustomStringConvertible {
    /// What went wrong.
    let description: String

    init(_ description: String) { self.description = description }
}
