import AttestKit
import AttestKitTestSupport
import AttestKitTesting
import Foundation
import Testing

/// `attestkit load --target`: steady traffic against a service that runs elsewhere, every answer that is not the
/// expected one counted and failing the run (what scripts/rolling-restart drives nginx with).
@Suite struct LoadTargetTests {
    /// A device saved as `attestkit simulate device` saves it, and a service trusting its software Apple.
    static func withService(
        arguments: [String] = [], _ body: (_ url: String, _ state: URL) async throws -> Void
    ) async throws {
        let appID = try AppID("ABCDE12345.com.example.load")
        let device = SimulatedDevice(
            apple: try SoftwareApple(), configuration: .init(appID: appID, environment: .development))
        let serve = try ServeProcess(apple: device.apple, appID: appID, arguments: arguments)
        defer { serve.stop() }
        let state = serve.workspace.appendingPathComponent("device.json")
        try device.save(to: state)
        try await body("http://127.0.0.1:\(try await serve.port())", state)
    }

    @Test(
        "against a service that answers: every request succeeds, the run exits 0 (its attestation ramp on or off)",
        arguments: [[], ["--set", "ramp.daily-ceiling=1000"]])
    func succeeds(arguments: [String]) async throws {
        try await Self.withService(arguments: arguments) { url, state in
            let result = try await ServeCommandLineTests.run(
                ["load", "--target", url, "--device-state", state.path, "--keys", "2", "--duration", "1"],
                environment: ["ATTESTKIT_LOAD_BACKEND_TOKEN": ServeProcess.backendToken])
            #expect(result.status == 0, "\(result.output)")
            #expect(result.output.contains("sending"))
            let summary = try #require(result.output.split(separator: "\n").first { $0.hasPrefix("sent ") })
            #expect(summary.hasSuffix(", 0 failed"), "\(summary)")
            #expect(!summary.hasPrefix("sent 0 "), "\(summary)")
        }
    }

    @Test("a service with a backend listener: --backend-target takes the assertion checks there, none fails")
    func backendListener() async throws {
        var options = ServerHarness.Options()
        options.transport = .live
        options.backendListener = true
        try await ServerHarness.with(.sqlite, options) { harness in
            #expect(harness.backendURL != harness.apiURL)
            let directory = FileManager.default.temporaryDirectory.appendingPathComponent("load-\(UUID())")
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(at: directory) }
            let state = directory.appendingPathComponent("device.json")
            try SimulatedDevice(apple: Fixture.apple, configuration: .init(appID: Fixture.appID, environment: .development))
                .save(to: state)
            let load = ["load", "--target", harness.apiURL, "--device-state", state.path, "--keys", "1", "--duration", "1"]
            let environment = ["ATTESTKIT_LOAD_BACKEND_TOKEN": Fixture.backendToken]
            // The load's simulated device makes its receipts and timestamps on the real clock; the harness's stands
            // still from its start, which a loaded machine may have left minutes behind: brought to now before each run.
            func catchUp() { harness.clock.advance(by: max(0, Date().timeIntervalSince(harness.clock.now()))) }
            // Without it the assertion checks go to the public listener, which does not serve the backend route.
            catchUp()
            let publicOnly = try await ServeCommandLineTests.run(load, environment: environment)
            #expect(publicOnly.status != 0, "\(publicOnly.output)")
            #expect(publicOnly.output.contains("× assertion: HTTP 404"), "\(publicOnly.output)")
            catchUp()
            let split = try await ServeCommandLineTests.run(
                load + ["--backend-target", harness.backendURL], environment: environment)
            #expect(split.status == 0, "\(split.output)")
            let summary = try #require(split.output.split(separator: "\n").first { $0.hasPrefix("sent ") })
            #expect(summary.hasSuffix(", 0 failed") && !summary.hasPrefix("sent 0 "), "\(summary)")
        }
    }

    @Test("failed requests are counted by kind and fail the run; a missing token is refused before sending")
    func countsFailures() async throws {
        try await Self.withService { url, state in
            // A wrong backend token: challenges succeed, every assertion check answers 401.
            let wrong = try await ServeCommandLineTests.run(
                ["load", "--target", url, "--device-state", state.path, "--keys", "1", "--duration", "1"],
                environment: ["ATTESTKIT_LOAD_BACKEND_TOKEN": "not-the-backend-token-0123456789"])
            #expect(wrong.status != 0, "\(wrong.output)")
            #expect(wrong.output.contains("× assertion: HTTP 401 backend_unauthorized"), "\(wrong.output)")
            #expect(!wrong.output.contains("× challenge"), "\(wrong.output)")
            let missing = try await ServeCommandLineTests.run(
                ["load", "--target", url, "--device-state", state.path, "--duration", "1"])
            #expect(missing.status != 0 && missing.output.contains("ATTESTKIT_LOAD_BACKEND_TOKEN"), "\(missing.output)")
            #expect(!missing.output.contains("sending"))
        }
    }
}
