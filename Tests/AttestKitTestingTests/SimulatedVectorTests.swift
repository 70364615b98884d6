import AttestKitTestSupport
import AttestKit
import AttestKitConformance
import AttestKitTesting
import Crypto
import Foundation
import Testing

/// Simulated vectors have the conformance schema: the conformance runner (what `attestkit verify --jsonl` runs)
/// reads them unchanged and reaches their expected outcome, and so does the `attestkit simulate` command line.
@Suite struct SimulatedVectorTests {
    let runner = ConformanceRunner(anchors: Fixture.apple.trustAnchors)

    private func outcome(_ vector: SimulatedVector, runner: ConformanceRunner? = nil) async throws -> ConformanceOutcome {
        let line = try vector.jsonLine()
        #expect(!line.contains("\n"))
        return await (runner ?? self.runner).evaluate(line: line)
    }

    @Test(arguments: [nil] + SoftwareAppleFault.allCases.filter { $0.targets.contains(.attestation) })
    func attestationVectors(fault: SoftwareAppleFault?) async throws {
        let device = Fixture.device(.development)
        let keyID = device.generateKey()
        let object = try device.attestKey(keyID, clientDataHash: Fixture.clientDataHash, fault: fault, at: Fixture.time)
        let vector = SimulatedVector.attestation(
            object, device: device, keyID: keyID, clientDataHash: Fixture.clientDataHash,
            challenge: Fixture.challenge, fault: fault, at: Fixture.time)
        #expect(vector.expect == (fault.map { "reject:\($0.expectedCheck.rawValue)" } ?? "valid"))
        #expect(vector.challenge?.utf8 == String(decoding: Fixture.challenge, as: UTF8.self))
        let result = try await outcome(vector)
        #expect(result.expectation == vector.expect)
        #expect(result.code == fault?.expectedCode.rawValue)
    }

    @Test func validVectorsAreRejectedWithApplesRoots() async throws {
        let (device, keyID, object) = try Fixture.attested()
        let vector = SimulatedVector.attestation(
            object, device: device, keyID: keyID, clientDataHash: Fixture.clientDataHash, challenge: nil, fault: nil,
            at: Fixture.time)
        let result = try await outcome(vector, runner: ConformanceRunner(anchors: try .apple()))
        #expect(result.code == AttestKitError.Code.certificateUntrusted.rawValue)
    }

    @Test(arguments: [nil] + SoftwareAppleFault.allCases.filter { $0.targets.contains(.assertion) })
    func assertionVectors(fault: SoftwareAppleFault?) async throws {
        let (device, keyID, _) = try Fixture.attested()
        _ = try device.generateAssertion(keyID, clientDataHash: [7])
        let previous = try #require(device.counter(for: keyID))
        let clientData = Array("{\"action\":\"pay\"}".utf8)
        let object = try device.generateAssertion(
            keyID, clientDataHash: Array(SHA256.hash(data: clientData)), fault: fault)
        let vector = SimulatedVector.assertion(
            object, device: device, keyID: keyID, clientData: clientData, previousCounter: previous, fault: fault)
        let result = try await outcome(vector)
        #expect(result.expectation == vector.expect)
        if fault == nil { #expect(result.counter.map(Int64.init) == vector.expectedCounter) }
    }

    @Test(arguments: [nil] + SoftwareAppleFault.allCases.filter { $0.targets.contains(.receipt) })
    func receiptVectors(fault: SoftwareAppleFault?) async throws {
        let (device, keyID, _) = try Fixture.attested(.development)
        let receipt = try device.refreshReceipt(for: keyID, riskMetric: 4, fault: fault, at: Fixture.time)
        let vector = SimulatedVector.receipt(receipt, device: device, keyID: keyID, fault: fault, at: Fixture.time)
        let result = try await outcome(vector)
        #expect(result.expectation == vector.expect)
        if fault == nil { #expect(result.fields?["riskMetric"] == "4") }
    }

    /// The command line end to end: `simulate` writes vectors and roots, `verify --vectors` with those roots passes
    /// them all, and without them rejects the valid ones.
    @Test func commandLineRoundTrip() async throws {
        let binary = try #require(Self.attestkitBinary(), "build the attestkit executable first (swift build --build-tests)")
        let directory = try ExternalTool.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let out = directory.appendingPathComponent("vectors").path
        let state = directory.appendingPathComponent("state.json").path
        let at = "2026-04-12T13:20:00Z"
        let calls: [[String]] = [
            ["simulate", "attestation", "--app-id", "ABCDE12345.com.example.app", "--environment", "production",
             "--challenge", "aGVsbG8=", "--state", state, "--out", out, "--at", at, "--ios27"],
            ["simulate", "attestation", "--app-id", "ABCDE12345.com.example.app", "--environment", "production",
             "--client-data-hash", "AAECAw==", "--state", state, "--out", out, "--at", at, "--fault", "strangerCA"],
            ["simulate", "assertion", "--state", state, "--client-data", "GET /a", "--out", out],
            ["simulate", "assertion", "--state", state, "--client-data-b64", "AQID", "--out", out],
            ["simulate", "assertion", "--state", state, "--client-data", "GET /a", "--out", out, "--fault",
             "reusedCounter"],
            ["simulate", "receipt-refresh", "--state", state, "--risk-metric", "3", "--out", out, "--at", at],
        ]
        for arguments in calls {
            let result = try await ExternalTool.run(binary, arguments)
            #expect(result.status == 0, "\(arguments): \(result.output)")
        }
        let roots = ["--attestation-root", "\(out)/attestation-root.pem", "--receipt-root", "\(out)/receipt-root.pem"]
        let verified = try await ExternalTool.run(binary, ["verify", "--vectors", out] + roots)
        #expect(verified.status == 0, "\(verified.output)")
        #expect(verified.output.contains("6 passed, 0 failed"), "\(verified.output)")
        let pinned = try await ExternalTool.run(binary, ["verify", "--vectors", out])
        #expect(pinned.status != 0)

        // An assertion carries no time: --at would do nothing, so it is refused.
        let timed = try await ExternalTool.run(
            binary, ["simulate", "assertion", "--state", state, "--client-data", "GET /a", "--out", out, "--at", at])
        #expect(timed.status != 0 && timed.output.contains("an assertion carries no time"), "\(timed.output)")

        // A second software Apple may not write into the same directory.
        let mixed = try await ExternalTool.run(
            binary,
            ["simulate", "attestation", "--app-id", "ABCDE12345.com.example.app", "--environment", "production",
             "--challenge", "eA==", "--out", out])
        #expect(mixed.status != 0)
    }

    /// The walk-through's calls: `simulate device` writes the state and the roots first; `--challenge` takes the
    /// Base64 challenge as `POST /v1/challenges` returns it and hashes its bytes, not its text; `--json` prints the
    /// vector itself; a challenge that is not Base64 is refused with a message that says what is expected.
    @Test func deviceFirstThenBase64ChallengeAsJSON() async throws {
        let binary = try #require(Self.attestkitBinary(), "build the attestkit executable first (swift build --build-tests)")
        let directory = try ExternalTool.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let out = directory.appendingPathComponent("sim").path
        let state = directory.appendingPathComponent("device.json").path
        let app = ["--app-id", "ABCDE12345.com.example.app", "--environment", "development"]

        let created = try await ExternalTool.run(binary, ["simulate", "device"] + app + ["--state", state, "--out", out])
        #expect(created.status == 0, "\(created.output)")
        #expect(FileManager.default.fileExists(atPath: state))
        let root = try String(contentsOfFile: "\(out)/attestation-root.pem", encoding: .utf8)
        #expect(root.hasPrefix("-----BEGIN CERTIFICATE-----"))

        let challenge: [UInt8] = Array(0..<32)
        let base64 = Data(challenge).base64EncodedString()
        let attested = try await ExternalTool.run(
            binary, ["simulate", "attestation"] + app + ["--challenge", base64, "--state", state, "--out", out, "--json"])
        #expect(attested.status == 0, "\(attested.output)")
        let vector = try JSONDecoder().decode(SimulatedVector.self, from: Data(attested.output.utf8))
        #expect(vector.kind == "attestation")
        #expect(vector.challenge?.b64 == base64)
        #expect(vector.clientDataHash == Data(SHA256.hash(data: challenge)).base64EncodedString())
        // The same software Apple: the roots written first verify the attestation made after.
        let written = try String(contentsOfFile: "\(out)/attestation-root.pem", encoding: .utf8)
        #expect(written == root)

        let text = try await ExternalTool.run(
            binary, ["simulate", "attestation"] + app + ["--challenge", "not base64!", "--state", state, "--out", out])
        #expect(text.status != 0)
        #expect(text.output.contains("as POST /v1/challenges returns it"), "\(text.output)")
    }

    /// `attestkit`, built beside the test bundle.
    static func attestkitBinary() -> URL? {
        let candidates = [
            Bundle.main.executableURL?.deletingLastPathComponent(),
            Bundle.main.bundleURL.deletingLastPathComponent(),
            URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
                .deletingLastPathComponent().appendingPathComponent(".build/debug"),
        ]
        return candidates.compactMap { $0?.appendingPathComponent("attestkit") }
            .first { FileManager.default.isExecutableFile(atPath: $0.path) }
    }
}
