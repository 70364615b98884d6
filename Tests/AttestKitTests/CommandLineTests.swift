import AttestKit
import AttestKitTesting
import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The `attestkit` binary as a user runs it (built by `swift build --build-tests` beside the test bundle).
@Suite struct CommandLineTests {
    static let binary: URL? = {
        let candidates = [
            Bundle.main.bundleURL, Bundle.main.bundleURL.deletingLastPathComponent(),
            URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent(),
        ]
        return candidates.map { $0.appendingPathComponent("attestkit") }
            .first { FileManager.default.isExecutableFile(atPath: $0.path) }
    }()

    struct Run {
        var status: Int32
        var output: String
    }

    /// Runs the binary with `input` on a pipe as its standard input, or `standardInput`'s file. With a `timeout`, a
    /// child still running after it is killed (`SIGKILL`, status 9): a wall-clock bound only to tell an answer from
    /// a hang, so generous enough for a loaded CI machine.
    static func run(
        _ arguments: [String], input: String? = nil, standardInput: ChildProcess.Stream = .pipe,
        environment: [String: String] = [:], timeout: Duration? = nil
    ) async throws -> Run {
        struct MissingBinary: Error {}
        guard let binary else {
            Issue.record("the attestkit binary is not beside the tests: run `swift build --build-tests` first")
            throw MissingBinary()
        }
        let process = try ChildProcess(
            executable: binary.path, arguments: arguments,
            environment: ProcessInfo.processInfo.environment.merging(environment) { $1 }, standardInput: standardInput,
            standardOutput: .pipe)
        if let input, let pipe = process.inputPipe { try pipe.write(Array(input.utf8)) }
        process.inputPipe?.close()
        let deadline = timeout.map { timeout in
            Task {
                try await Task.sleep(for: timeout)
                _ = process.signal(SIGKILL)
            }
        }
        defer { deadline?.cancel() }
        // Waited for on a thread of its own: `load` and `demo` run for seconds, and a test blocking a thread of Swift's
        // concurrency pool (two on a 2-core machine) that long stalls every test running beside it.
        let output = try await process.collectOutput()
        return Run(status: output.termination.status, output: String(decoding: output.standardOutput, as: UTF8.self))
    }

    static func line(_ name: String) throws -> String {
        String(decoding: try JSONEncoder().encode(TestVectors.named(name)), as: UTF8.self)
    }

    @Test func jsonlKeepsInputOrderAndRejectsMalformedLines() async throws {
        let names = [
            "warden_ios17_iphone15_dev_assertion", "veehaitch_ios-14.2_attestation",
            "neg_veehaitch_ios14.2_wrong_appid",
            "veehaitch_ios-14.4_receipt2_RECEIPT",
        ]
        let input = try names.map(Self.line).joined(separator: "\n") + "\n{not json\n"
        let result = try await Self.run(["verify", "--jsonl", "-"], input: input)
        #expect(result.status == 0)
        let outcomes = try result.output.split(separator: "\n").map {
            try #require(try JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any])
        }
        #expect(outcomes.count == 5)
        #expect(outcomes.prefix(4).map { $0["name"] as? String } == names)
        #expect(outcomes[0]["counter"] as? Int == 1)
        #expect(outcomes[1]["outcome"] as? String == "valid")
        #expect(outcomes[2]["outcome"] as? String == "reject" && outcomes[2]["check"] as? String == "appId")
        #expect(outcomes[2]["code"] as? String == "app_id_mismatch")
        #expect((outcomes[3]["fields"] as? [String: String])?["riskMetric"] == "3")
        #expect(outcomes[4]["outcome"] as? String == "reject" && outcomes[4]["check"] as? String == "format")
    }

    @Test func vectorsDirectoryReportsMismatchesAndExitsNonZero() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("attestkit-cli-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        var wrong = TestVectors.named("basd_assertion")
        wrong.name = "claims_valid_but_counter_replayed"
        wrong.previousCounter = 3
        for vector in [TestVectors.named("basd_assertion"), wrong] {
            try JSONEncoder().encode(vector).write(to: directory.appendingPathComponent("\(vector.name).json"))
        }
        let index = [TestVectors.named("basd_assertion"), wrong].map {
            ["name": $0.name, "kind": $0.kind, "expect": "valid", "file": "\($0.name).json"]
        }
        try JSONSerialization.data(withJSONObject: index).write(to: directory.appendingPathComponent("index.json"))
        let result = try await Self.run(["verify", "--vectors", directory.path])
        #expect(result.status == 1)
        #expect(result.output.contains("FAIL  claims_valid_but_counter_replayed  expected valid, got reject:counter"))
        #expect(result.output.hasSuffix("1 passed, 1 failed\n"))
    }

    @Test(arguments: [
        "apple_doc_sample_2026_prod_attestation", "basd_assertion", "veehaitch_ios-14.4_receipt2_RECEIPT",
    ])
    func inspectShowsEachKind(name: String) async throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("attestkit-inspect-\(UUID())")
        try Data(TestVectors.named(name).data.utf8).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        let text = try await Self.run(["inspect", file.path])
        #expect(text.status == 0)
        let json = try await Self.run(["inspect", "--json", file.path])
        #expect(json.status == 0)
        let object = try JSONSerialization.jsonObject(with: Data(json.output.utf8)) as? [String: Any]
        switch TestVectors.named(name).kind {
        case "attestation":
            #expect(text.output.contains("apple_validation_category_01: 1"))
            #expect(text.output.contains("[1400]: 27.0 (OS version)"))
            #expect(object?["attestation"] != nil)
        case "assertion":
            #expect(text.output.contains("signCount: 3"))
            #expect(object?["assertion"] != nil)
        default:
            #expect(text.output.contains("17 riskMetric: 3"))
            #expect(!text.output.contains(TestVectors.named(name).fields?.token ?? "token"))
            #expect(object?["receipt"] != nil)
        }
    }

    @Test func inspectEscapesTheTextsOfTheObject() async throws {
        let apple = try SoftwareApple(seed: Array("inspect escapes".utf8), at: Date())
        let crafted = "1\u{1B}]0;retitled\u{07}\u{1B}[2J\nsignCount: 999"
        let device = SimulatedDevice(
            apple: apple,
            configuration: .init(
                appID: try AppID("ABCDE12345.com.example.app"), environment: .development, iOS27: true,
                bundleVersion: crafted))
        let keyID = device.generateKey()
        _ = try device.attestKey(keyID, clientDataHash: Array(repeating: 1, count: 32))
        let assertion = try device.generateAssertion(keyID, clientDataHash: Array(repeating: 2, count: 32))
        let result = try await Self.run(["inspect", "-"], input: Data(assertion).base64EncodedString())
        #expect(result.status == 0, "\(result.output)")
        #expect(!result.output.unicodeScalars.contains { $0 == "\u{1B}" || $0 == "\u{07}" }, "\(result.output)")
        #expect(result.output.contains(#"1\u{1b}]0;retitled\u{7}\u{1b}[2J\u{a}signCount: 999"#), "\(result.output)")
        #expect(!result.output.contains("\nsignCount: 999"), "no line of the report is faked")
    }

    @Test func inspectRejectsGarbageWithoutCrashing() async throws {
        let result = try await Self.run(["inspect", "-"], input: "definitely not an object")
        #expect(result.status != 0)
        #expect(result.status != 134 && result.status != 132)  // not SIGABRT/SIGILL
    }

    @Test("inspect reads at most one byte past its 1 MiB limit: an endless input is refused, never held")
    func inspectRefusesAnEndlessInput() async throws {
        // /dev/zero never ends: reading it whole would grow until the machine runs out of memory.
        let endless = try await Self.run(["inspect", "/dev/zero"])
        #expect(endless.status == 64, "a usage error, not a crash")
        let piped = try await Self.run(["inspect", "-"], input: String(repeating: "A", count: (1 << 20) + 2))
        #expect(piped.status == 64)
    }

    @Test("every file a command reads is bounded: an endless input is a usage error, never held")
    func fileArgumentsAreBounded() async throws {
        let out = FileManager.default.temporaryDirectory.appendingPathComponent("attestkit-bounded-\(UUID())")
        defer { try? FileManager.default.removeItem(at: out) }
        let simulate = [
            "simulate", "attestation", "--app-id", "ABCDE12345.com.example.app", "--environment", "development",
            "--challenge", "aGVsbG8=", "--state", "/dev/zero", "--out", out.path,
        ]
        let cases: [(arguments: [String], standardInput: ChildProcess.Stream)] = [
            (["receipt", "refresh", "--receipt", "/dev/zero"], .pipe), (["verify", "--jsonl", "/dev/zero"], .pipe),
            (["verify", "--jsonl", "-", "--attestation-root", "/dev/zero"], .pipe),
            // Standard input streamed line by line, each line bounded: /dev/zero has no line break.
            (["verify", "--jsonl", "-"], .file("/dev/zero")),
            // The simulator's state files (--state, and load's --device-state through the same reader).
            (["mock-apple", "--public-key", "/dev/null", "--port", "0", "--state", "/dev/zero"], .pipe),
            (simulate, .pipe),
        ]
        for (arguments, standardInput) in cases {
            let endless = try await Self.run(
                arguments, input: "", standardInput: standardInput, timeout: .seconds(90))
            #expect(endless.status == 64, "\(arguments): a usage error, not a crash or a hang")
        }
    }

    /// `load --target`'s failure kinds hold the code of the service's error answers, whatever it sent: the JSON
    /// report stays JSON and the text report prints it escaped.
    @Test func targetLoadReportsAnyErrorCodeSafely() async throws {
        let code = "a\\b\n"
        let service = try RefusingService(code: code)
        defer { service.stop() }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("attestkit-target-\(UUID())")
        defer { try? FileManager.default.removeItem(at: directory) }
        let state = directory.appendingPathComponent("device.json")
        let device = SimulatedDevice(
            apple: try SoftwareApple(seed: Array("target load".utf8), at: Date()),
            configuration: .init(
                appID: try AppID("ABCDE12345.com.example.app"), environment: .development, iOS27: true))
        try device.save(to: state)
        let arguments = [
            "load", "--target", "http://127.0.0.1:\(service.port)", "--device-state", state.path, "--keys", "1",
            "--duration", "0.3",
        ]
        let environment = ["ATTESTKIT_LOAD_BACKEND_TOKEN": "target-load-token"]
        let kind = "assertion: HTTP 502 \(code)"

        let json = try await Self.run(arguments + ["--json"], environment: environment, timeout: .seconds(120))
        #expect(json.status == 1, "every assertion check failed: \(json.output)")
        let report = try #require(
            json.output.split(separator: "\n", omittingEmptySubsequences: false).dropFirst()
                .joined(separator: "\n").data(using: .utf8))
        let object = try #require(
            try JSONSerialization.jsonObject(with: report) as? [String: Any], "\(json.output)")
        let failures = try #require(object["failures"] as? [String: Int])
        #expect(failures.keys.contains(kind), "\(failures)")
        #expect(object["failed"] as? Int == failures.values.reduce(0, +))
        #expect((object["succeeded"] as? Int ?? 0) > 0, "the challenges succeeded")

        let text = try await Self.run(arguments, environment: environment, timeout: .seconds(120))
        #expect(text.status == 1)
        #expect(text.output.contains(" × assertion: HTTP 502 a\\b\\u{a}\n"), "\(text.output)")
        #expect(!text.output.contains(kind), "no raw control character: \(text.output)")
    }

    @Test("load's --backend-target goes with --target")
    func backendTargetNeedsTarget() async throws {
        let alone = try await Self.run(["load", "--backend-target", "http://127.0.0.1:1"])
        #expect(alone.status == 64, "a usage error")
    }

    @Test("simulate refuses an index.json it cannot read rather than start it over")
    func simulateKeepsAnUnreadableIndex() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("attestkit-sim-\(UUID())")
        defer { try? FileManager.default.removeItem(at: directory) }
        let out = directory.appendingPathComponent("vectors")
        let state = directory.appendingPathComponent("state.json").path
        let attestation = [
            "simulate", "attestation", "--app-id", "ABCDE12345.com.example.app", "--environment", "development",
            "--challenge", "aGVsbG8=", "--state", state, "--out", out.path,
        ]
        #expect(try await Self.run(attestation).status == 0)
        let index = out.appendingPathComponent("index.json")
        #expect(FileManager.default.fileExists(atPath: index.path))
        try Data("{".utf8).write(to: index)
        #expect(try await Self.run(attestation).status != 0)
        #expect(try Data(contentsOf: index) == Data("{".utf8), "the index is left as it was")
    }

    /// `attestkit load` end to end: a real server, its load generator's own HTTP framing, every answer 200.
    @Test func loadMeasuresEveryLevelWithEveryAnswerVerified() async throws {
        let result = try await Self.run(["load", "--keys", "1", "3", "--requests", "20", "--json"])
        #expect(result.status == 0)
        let reports = try #require(try JSONSerialization.jsonObject(with: Data(result.output.utf8)) as? [[String: Any]])
        #expect(reports.map { $0["keys"] as? Int } == [1, 3])
        #expect(reports.map { $0["requests"] as? Int } == [20, 60])
        #expect(reports.allSatisfy { ($0["requestsPerSecond"] as? Double ?? 0) > 0 })
        #expect(
            reports.allSatisfy { ($0["p99Milliseconds"] as? Double ?? 0) >= ($0["p50Milliseconds"] as? Double ?? 1) })
        // The machine's CPU (Linux's /proc/stat): a level shorter than a clock tick may show none, never nonsense.
        for report in reports {
            if let share = report["machineBusyShare"] as? Double { #expect((0...1).contains(share)) }
            if let perRequest = report["machineMicrosecondsPerRequest"] as? Double { #expect(perRequest >= 0) }
        }
    }

    /// `attestkit load --population`: keys seeded straight into the store, then a hot and a spread run per level;
    /// every answer of the spread runs is 200, so the server found every seeded key it was sent and verified the
    /// assertions the load signed for them (300 requests over 500 signable keys at one connection, 600 at two: every
    /// key is used, and the second level's counters go on from the first's).
    @Test func loadRunsItsServerOnLoopbackWhateverTheCallersSettings() async throws {
        // A container's settings (the image listens on every address and reads a secrets directory) and a second
        // listener: the benchmark's own server takes none of them.
        let result = try await Self.run(
            ["load", "--keys", "1", "--requests", "5", "--json"],
            environment: [
                "ATTESTKIT_HTTP_HOST": "0.0.0.0", "ATTESTKIT_SECRETS_DIR": "/nonexistent-attestkit-secrets",
                "ATTESTKIT_HTTP_BACKEND_PORT": "0", "ATTESTKIT_STORAGE_PASSWORD": "for-postgresql-only",
            ])
        #expect(result.status == 0, "\(result.output)")
    }

    @Test func loadSeedsAPopulationAndSpreadsRequestsOverIt() async throws {
        let result = try await Self.run([
            "load", "--population", "3000", "--signable-keys", "500", "--keys", "1", "2", "--requests", "300", "--json",
        ])
        #expect(result.status == 0, "\(result.output)")
        let levels = try #require(try JSONSerialization.jsonObject(with: Data(result.output.utf8)) as? [[String: Any]])
        #expect(levels.count == 2)
        for (level, connections) in zip(levels, [1, 2]) {
            let hot = try #require(level["hot"] as? [String: Any])
            let spread = try #require(level["spread"] as? [String: Any])
            #expect(hot["run"] as? String == "hot" && spread["run"] as? String == "spread")
            #expect(spread["population"] as? Int == 3_000 && spread["signableKeys"] as? Int == 500)
            #expect(hot["requests"] as? Int == 300 * connections && spread["requests"] as? Int == 300 * connections)
            #expect((level["spreadShare"] as? Double ?? 0) > 0)
        }
    }

    @Test func demoBehavesAsExpectedAndCleansUp() async throws {
        let result = try await Self.run(["demo"])
        #expect(result.status == 0)
        #expect(result.output.contains("\ndemo: 8 of 8 steps behaved as expected\n"))
        #expect(!result.output.contains("✘"))
        #expect(!result.output.contains("-----BEGIN"))
        let removed = result.output.split(separator: "\n").first { $0.contains("; removed ") }
        let directory = try #require(removed?.components(separatedBy: "; removed ").last)
        #expect(directory.contains("attestkit-demo-"))
        #expect(!FileManager.default.fileExists(atPath: directory))
    }

    @Test func demoJSONParsesAndKeepKeepsTheDatabase() async throws {
        let result = try await Self.run(["demo", "--json", "--keep"])
        #expect(result.status == 0)
        let report = try #require(try JSONSerialization.jsonObject(with: Data(result.output.utf8)) as? [String: Any])
        #expect(report["ok"] as? Bool == true)
        #expect(report["passed"] as? Int == 8 && report["total"] as? Int == 8)
        let steps = try #require(report["steps"] as? [[String: Any]])
        #expect(steps.map { $0["number"] as? Int } == Array(1...8))
        #expect(steps.allSatisfy { $0["ok"] as? Bool == true })
        let directory = try #require(report["directory"] as? String)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        #expect(report["kept"] as? Bool == true)
        #expect(FileManager.default.fileExists(atPath: directory + "/demo.sqlite"))
    }
}

/// A service that registers every key and refuses every assertion check with 502 and the error code `code`, as a
/// broken service might: HTTP/1.1 on loopback, one thread per connection, for `load --target`.
private final class RefusingService: @unchecked Sendable {
    struct Failure: Error { let operation: String }

    let port: Int
    private let listener: Int32
    private let stopped = NSLock()
    private var isStopped = false

    init(code: String) throws {
        #if os(Linux)
            let socketType = Int32(SOCK_STREAM.rawValue)
        #else
            let socketType = SOCK_STREAM
        #endif
        let listener = socket(AF_INET, socketType, 0)
        guard listener >= 0 else { throw Failure(operation: "socket") }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { address in
                bind(listener, address, length) == 0 && listen(listener, 16) == 0
                    && getsockname(listener, address, &length) == 0
            }
        }
        guard bound else {
            close(listener)
            throw Failure(operation: "bind")
        }
        self.listener = listener
        port = Int(UInt16(bigEndian: address.sin_port))
        let refusal = try JSONEncoder().encode(["error": ["code": code, "message": "refused"]])
        Thread.detachNewThread { [self] in acceptConnections(answering: Array(refusal)) }
    }

    func stop() {
        stopped.withLock { isStopped = true }
    }

    /// Accepts connections until ``stop()``, polling so that it sees it, then closes the listener.
    private func acceptConnections(answering refusal: [UInt8]) {
        defer { close(listener) }
        while !stopped.withLock({ isStopped }) {
            var ready = pollfd(fd: listener, events: Int16(POLLIN), revents: 0)
            guard poll(&ready, 1, 100) > 0 else { continue }
            let connection = accept(listener, nil, nil)
            guard connection >= 0 else { continue }
            Thread.detachNewThread { Self.serve(connection, refusal: refusal) }
        }
    }

    /// The answer to every `POST /v1/challenges`.
    private static let challenge = Array(
        (#"{"challengeId":"c","challenge":"AAAAAAAAAAAAAAAAAAAAAA==","purpose":"attest","#
            + #""expiresAt":"2100-01-01T00:00:00Z"}"#).utf8)

    /// Answers the requests of one connection until the client closes it.
    private static func serve(_ connection: Int32, refusal: [UInt8]) {
        defer { close(connection) }
        var pending: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 1 << 16)
        let separator = Array("\r\n\r\n".utf8)
        while true {
            var headEnd: Int?
            while headEnd == nil {
                headEnd = pending.indices.dropLast(3).first { Array(pending[$0..<$0 + 4]) == separator }.map { $0 + 4 }
                if headEnd != nil { break }
                let count = read(connection, &chunk, chunk.count)
                guard count > 0 else { return }
                pending += chunk[..<count]
            }
            guard let headEnd else { return }
            let request = String(decoding: pending[..<headEnd], as: UTF8.self).lowercased()
            let lines = request.split(separator: "\r\n")
            let path = lines.first?.split(separator: " ").dropFirst().first.map(String.init) ?? ""
            let length =
                lines.first { $0.hasPrefix("content-length:") }
                .flatMap { Int($0.dropFirst("content-length:".count).trimmingCharacters(in: .whitespaces)) } ?? 0
            while pending.count < headEnd + length {
                let count = read(connection, &chunk, chunk.count)
                guard count > 0 else { return }
                pending += chunk[..<count]
            }
            pending.removeFirst(headEnd + length)
            let (status, body): (String, [UInt8]) =
                switch path {
                case "/v1/challenges": ("201 Created", challenge)
                case "/v1/attestations": ("201 Created", Array("{}".utf8))
                default: ("502 Bad Gateway", refusal)
                }
            let head = "HTTP/1.1 \(status)\r\nContent-Type: application/json\r\nContent-Length: \(body.count)\r\n\r\n"
            let answer = Array(head.utf8) + body
            var written = 0
            while written < answer.count {
                let count = answer[written...].withUnsafeBytes { write(connection, $0.baseAddress, $0.count) }
                guard count > 0 else { return }
                written += count
            }
        }
    }
}
