import AttestKit
import AttestKitFlows
import AttestKitServer
import AttestKitTestSupport
import AttestKitTesting
import AttestKitWire
import Crypto
import Foundation
import NIOHTTP1
import Testing

/// Record and replay through the service: failed verifications sent through its router write bundles (files 0600,
/// never a credential, token or key in them), and `attestkit replay` re-runs each offline to the same code.
@Suite("Record and replay")
struct RecordReplayTests {
    @Test("failures over HTTP are recorded without secrets and replayed by the command line to the same code",
        arguments: await StoreKind.all())
    func recordAndReplay(kind: StoreKind) async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("attestkit-bundles-\(UUID())")
        defer { try? FileManager.default.removeItem(at: directory) }
        let signingKey = P256.Signing.PrivateKey()
        var options = ServerHarness.Options()
        options.tokens = try TokenService.Configuration(signingKey: TokenSigningKey(privateKey: signingKey))
        options.record = ServerConfiguration.RecordSettings(directory: directory.path)
        try await ServerHarness.with(kind, options) { harness in
            // A device whose clock is 304 s ahead asks for a session token: refused, recorded.
            let device = try await TestDevice.registered(harness)
            let (skewed, _) = try await TokenRouteTests.requestToken(
                harness, device, freshness: .timestamp(milliseconds: harness.clock.milliseconds + 304_000))
            #expect(skewed.string("error.code") == "timestamp_outside_window")
            // An attestation from another app of the team: refused, recorded.
            let stranger = TestDevice(harness, configuration: .init(appID: Fixture.otherAppID, environment: .development))
            let refused = try await stranger.register()
            #expect(refused.string("error.code") == "app_id_mismatch")
            // Accepted requests write nothing.
            let (token, _) = try await TokenRouteTests.requestToken(harness, device)
            #expect(token.status == 201)
            let issued = try #require(token.string("token"))

            // Refusals are answered without waiting for their bundles: wait for the recorder's writes.
            await harness.server.gate.recorder?.settled()
            let names = try FileManager.default.contentsOfDirectory(atPath: directory.path).sorted()
            try #require(names.count == 2, "\(names)")
            let secrets = [
                Fixture.adminToken, Fixture.backendToken, signingKey.pemRepresentation, issued,
                String(issued.prefix { $0 != "." }), "Bearer",
                signingKey.rawRepresentation.base64EncodedString().replacingOccurrences(of: "+", with: "-")
                    .replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: ""),
            ]
            let binary = try #require(ServeProcess.binary, "build the attestkit executable first")
            for (name, code) in zip(names, ["timestamp_outside_window", "app_id_mismatch"]) {
                let path = directory.appendingPathComponent(name).path
                let mode = try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int
                #expect(mode == 0o600)
                let text = try String(contentsOfFile: path, encoding: .utf8)
                for secret in secrets { #expect(!text.contains(secret), "\(name) holds a secret") }
                let replay = try await ExternalTool.run(binary, ["replay", path])
                #expect(replay.status == 1, "\(replay.output)")
                #expect(replay.output.contains("fails: \(code)"), "\(replay.output)")
                #expect(replay.output.contains("the recorded outcome reproduces"), "\(replay.output)")
                let json = try await ExternalTool.run(binary, ["replay", "--json", path])
                let report = try JSONSerialization.jsonObject(with: Data(json.output.utf8)) as? [String: Any]
                #expect(report?["reproduces"] as? Bool == true)
            }
            #expect(try String(contentsOfFile: directory.appendingPathComponent(names[0]).path, encoding: .utf8)
                .contains("304 s from the server's clock"))
            // A crafted bundle's texts reach the terminal with their control characters escaped: no escape
            // sequence, no line of its own.
            let first = try Data(contentsOf: directory.appendingPathComponent(names[0]))
            var crafted = try VerificationBundle(json: Array(first))
            crafted.recordedAt = "\u{1B}]0;owned\u{07}\nthe recorded outcome reproduces"
            crafted.outcome.code = "\u{1B}[2J"
            let craftedPath = directory.appendingPathComponent("crafted.json")
            try Data(try crafted.encoded()).write(to: craftedPath)
            let shown = try await ExternalTool.run(binary, ["replay", craftedPath.path])
            #expect(shown.status == 1 && !shown.output.utf8.contains(0x1B), "\(shown.output)")
            #expect(shown.output.contains("\\u{1b}]0;owned\\u{7}\\u{a}the recorded"), "\(shown.output)")
            #expect(shown.output.contains("recorded: \\u{1b}[2J (the replay differs)"), "\(shown.output)")
            let garbage = directory.appendingPathComponent("garbage.json")
            try Data("{\"format\": 1}".utf8).write(to: garbage)
            let unreadable = try await ExternalTool.run(binary, ["replay", garbage.path])
            #expect(unreadable.status == 2 && unreadable.output.contains("bundle_invalid"), "\(unreadable.output)")
        }
    }

    /// The observation: with `record.max-bundles=5`, six garbage `POST /v1/tokens` pushed a real refusal's
    /// bundle out. Now garbage has its own quota (`record.unknown-max-bundles`) and evicts only garbage.
    @Test("six garbage token requests never evict a known key's bundle", arguments: await StoreKind.all())
    func garbageCannotFlushTheEvidence(kind: StoreKind) async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("attestkit-bundles-\(UUID())")
        defer { try? FileManager.default.removeItem(at: directory) }
        var options = ServerHarness.Options()
        options.tokens = try TokenService.Configuration(
            signingKey: TokenSigningKey(privateKey: P256.Signing.PrivateKey()))
        options.record = ServerConfiguration.RecordSettings(
            directory: directory.path, maximumBundles: 5, unknownMaximumBundles: 2)
        try await ServerHarness.with(kind, options) { harness in
            let device = try await TestDevice.registered(harness)
            let (skewed, _) = try await TokenRouteTests.requestToken(
                harness, device, freshness: .timestamp(milliseconds: harness.clock.milliseconds + 304_000))
            #expect(skewed.string("error.code") == "timestamp_outside_window")
            await harness.server.gate.recorder?.settled()
            let evidence = try FileManager.default.contentsOfDirectory(atPath: directory.path)
            try #require(evidence.count == 1, "\(evidence)")
            for _ in 0..<6 {
                // An unknown key id and an assertion that is not one, as anyone can send.
                var headers = [
                    (AttestKitHeaderNames.keyID, TestDevice(harness).keyID.base64),
                    (AttestKitHeaderNames.assertion, Data("garbage".utf8).base64EncodedString()),
                ]
                if let header = AttestKitHeaderNames.header(of: device.now) {
                    headers.append((header.name, header.value))
                }
                let answer = try await harness.send(.POST, "/v1/tokens", headers: headers)
                #expect(answer.status == 403 || answer.status == 400, "\(answer)")
            }
            await harness.server.gate.recorder?.settled()
            let names = try FileManager.default.contentsOfDirectory(atPath: directory.path)
            #expect(names.contains(evidence[0]), "\(names)")
            #expect(names.filter { $0.hasSuffix("-unknown.json") }.count == 2, "\(names)")
        }
    }
}
