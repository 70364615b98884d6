import AttestKit
import AttestKitServer
import AttestKitStore
import AttestKitTesting
import AttestKitWire
import Crypto
import Foundation
import Testing

/// A simulated iPhone app talking to the server under test: one App Attest key, attested through
/// `/v1/challenges` and `/v1/attestations`, and assertions bound to requests with AttestKitWire's canonical
/// client data, sent to `/v1/assertions/verify` or to the guarded application's headers.
struct TestDevice: Sendable {
    let harness: ServerHarness
    let device: SimulatedDevice
    let keyID: KeyID

    /// How the client data of a `/v1/assertions/verify` body is given.
    enum Form: String, Sendable, CaseIterable, CustomTestStringConvertible {
        /// `request` with the body Base64.
        case parts
        /// `request` with `bodySha256`.
        case partsWithBodyHash
        /// The raw canonical `clientData`.
        case clientData

        var testDescription: String { rawValue }
    }

    /// A device sharing this one's key and state (``SimulatedDevice/twin()``): a key not yet attested can be attested
    /// once by each, which is how a test gets a second genuine attestation of a registered key.
    func twin() throws -> TestDevice {
        TestDevice(harness: harness, device: try device.twin(), keyID: keyID)
    }

    /// The same key after the app was replaced by a build running `configuration` (``SimulatedDevice/updated(to:)``).
    func updated(to configuration: SimulatedDevice.Configuration) -> TestDevice {
        TestDevice(harness: harness, device: device.updated(to: configuration), keyID: keyID)
    }

    private init(harness: ServerHarness, device: SimulatedDevice, keyID: KeyID) {
        self.harness = harness
        self.device = device
        self.keyID = keyID
    }

    /// A device with a new, unregistered key.
    init(_ harness: ServerHarness, configuration: SimulatedDevice.Configuration? = nil) {
        self.harness = harness
        self.device = SimulatedDevice(
            apple: Fixture.apple,
            configuration: configuration ?? .init(appID: Fixture.appID, environment: .development))
        self.keyID = device.generateKey()
    }

    /// A device whose key the server registered (201 required).
    static func registered(
        _ harness: ServerHarness, configuration: SimulatedDevice.Configuration? = nil,
        sourceLocation: SourceLocation = #_sourceLocation
    ) async throws -> TestDevice {
        let device = TestDevice(harness, configuration: configuration)
        let answer = try await device.register(sourceLocation: sourceLocation)
        try #require(answer.status == 201, "registration: \(answer)", sourceLocation: sourceLocation)
        return device
    }

    // MARK: Attestation

    /// The attestation object of the key for `challenge` (attestKey with SHA-256 of the challenge bytes), at the
    /// harness's time.
    func attestation(
        for challenge: ServerHarness.Challenge, clientDataHash: [UInt8]? = nil, fault: SoftwareAppleFault? = nil
    ) throws -> [UInt8] {
        try device.attestKey(
            keyID, clientDataHash: clientDataHash ?? challenge.clientDataHash, fault: fault, at: harness.clock.now())
    }

    /// `{"keyId", "attestation", "challengeId"}`.
    func attestationBody(_ attestation: [UInt8], challengeID: String) -> JSONValue {
        ["keyId": .string(keyID.base64), "attestation": .base64(attestation), "challengeId": .string(challengeID)]
    }

    /// Challenge, attestation, `POST /v1/attestations`: the server's answer.
    func register(
        fault: SoftwareAppleFault? = nil, sourceLocation: SourceLocation = #_sourceLocation
    ) async throws -> HTTPResult {
        let challenge = try await harness.challenge(sourceLocation: sourceLocation)
        let object = try attestation(for: challenge, fault: fault)
        return try await harness.post(
            "/v1/attestations", attestationBody(object, challengeID: challenge.id), sourceLocation: sourceLocation)
    }

    // MARK: Assertions

    /// The canonical client data of a request.
    func binding(
        method: String = "POST", target: String = "/v1/orders", body: [UInt8] = [], freshness: Freshness
    ) throws -> RequestBinding {
        try RequestBinding(method: method, target: target, body: body, freshness: freshness)
    }

    /// An assertion over `clientData` (the device's counter advances).
    func assertion(over clientData: [UInt8], fault: SoftwareAppleFault? = nil) throws -> [UInt8] {
        try device.generateAssertion(keyID, clientDataHash: Array(SHA256.hash(data: clientData)), fault: fault)
    }

    /// A `/v1/assertions/verify` body for a request, with its client data in `form` and the assertion over it.
    func verifyBody(
        method: String = "POST", target: String = "/v1/orders", body: [UInt8] = Array("{\"item\":42}".utf8),
        freshness: Freshness, form: Form = .parts, fault: SoftwareAppleFault? = nil
    ) throws -> JSONValue {
        let binding = try binding(method: method, target: target, body: body, freshness: freshness)
        let assertion = try assertion(over: binding.clientData, fault: fault)
        return Self.verifyBody(keyID: keyID, assertion: assertion, binding: binding, body: body, form: form)
    }

    /// A `/v1/assertions/verify` body from its parts.
    static func verifyBody(
        keyID: KeyID, assertion: [UInt8], binding: RequestBinding, body: [UInt8], form: Form
    ) -> JSONValue {
        var json: JSONValue = ["keyId": .string(keyID.base64), "assertion": .base64(assertion)]
        if form == .clientData {
            return json.setting("clientData", .base64(binding.clientData))
        }
        var request: JSONValue = ["method": .string(binding.method), "target": .string(binding.target)]
        if form == .parts {
            if !body.isEmpty { request = request.setting("body", .base64(body)) }
        } else {
            request = request.setting(
                "bodySha256", .string(binding.bodySHA256.map { String(format: "%02x", $0) }.joined()))
        }
        switch binding.freshness {
        case .challenge(let id): json = json.setting("challengeId", .string(id))
        case .timestamp(let milliseconds): request = request.setting("timestamp", .int(milliseconds))
        case .vouchedByCaller: break  // a canonical binding never names it
        }
        return json.setting("request", request)
    }

    /// POSTs a verify body.
    func verify(_ body: JSONValue, sourceLocation: SourceLocation = #_sourceLocation) async throws -> HTTPResult {
        try await harness.post("/v1/assertions/verify", body, sourceLocation: sourceLocation)
    }

    /// A fresh `assert` challenge bound to this key.
    func assertChallenge(sourceLocation: SourceLocation = #_sourceLocation) async throws -> Freshness {
        .challenge(try await harness.challenge(purpose: "assert", keyID: keyID, sourceLocation: sourceLocation).id)
    }

    /// The harness clock's time as `timestamp:` freshness.
    var now: Freshness { .timestamp(milliseconds: harness.clock.milliseconds) }

    // MARK: Guarded routes

    /// The AttestKit headers of a request to the guarded application.
    func guardedHeaders(
        method: String, target: String, body: [UInt8], freshness: Freshness
    ) throws -> [(String, String)] {
        let binding = try binding(method: method, target: target, body: body, freshness: freshness)
        let assertion = try assertion(over: binding.clientData)
        var headers = [
            (AttestKitHeaderNames.keyID, keyID.base64),
            (AttestKitHeaderNames.assertion, Data(assertion).base64EncodedString()),
        ]
        if let header = AttestKitHeaderNames.header(of: freshness) { headers.append((header.name, header.value)) }
        return headers
    }
}

extension SimulatedDevice {
    /// A copy of this device (its keys, counters and software Apple) through its state file.
    func twin() throws -> SimulatedDevice {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("attestkit-twin-\(UUID()).json")
        defer { try? FileManager.default.removeItem(at: file) }
        try save(to: file)
        return try SimulatedDevice.load(from: file)
    }
}
