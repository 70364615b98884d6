import Foundation

/// What `attestkit demo` did and whether each step behaved as expected, printed as text or JSON.
///
/// It names what was started (URLs, the SQLite path) and, per step, what was expected and what came back; never
/// keys, tokens, JWTs, receipts or attestation objects (key identifiers are public and may appear).
struct DemoReport: Encodable, Sendable {
    /// One expectation of a step: a request and its outcome.
    struct Check: Encodable, Sendable {
        /// Whether the outcome was the expected one.
        var ok: Bool
        /// What happened, when expected; else what was sent, what was expected and what came back.
        var summary: String
        /// The expected outcome, e.g. `409 counter_not_increasing`.
        var expected: String
        /// The actual outcome in the same form.
        var got: String

        /// A check that passes when `got` reads exactly as `expected`.
        ///
        /// - Parameters:
        ///   - subject: What was done, e.g. `replayed assertion on DELETE /v1/orders/42`.
        ///   - expected: The expected outcome.
        ///   - got: The actual outcome, written the same way.
        ///   - success: The line shown when it matches.
        init(_ subject: String, expected: String, got: String, success: String) {
            self.ok = expected == got
            self.summary = ok ? success : "\(subject): expected \(expected), got \(got)"
            self.expected = expected
            self.got = got
        }

        /// A step that could not be carried out.
        init(failure subject: String, _ error: any Error) {
            self.ok = false
            self.summary = "\(subject): failed: \(error)"
            self.expected = "no error"
            self.got = "\(error)"
        }
    }

    /// One numbered step and its checks.
    struct Step: Encodable, Sendable {
        /// 1 to 8.
        var number: Int
        /// A short name, e.g. `replay`.
        var title: String
        /// The step's expectations, in order.
        var checks: [Check]
        /// Whether every check passed.
        var ok: Bool { !checks.isEmpty && checks.allSatisfy(\.ok) }

        private enum CodingKeys: String, CodingKey { case number, title, ok, checks }

        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(number, forKey: .number)
            try container.encode(title, forKey: .title)
            try container.encode(ok, forKey: .ok)
            try container.encode(checks, forKey: .checks)
        }
    }

    /// The AttestKit server's base URL.
    var server: String
    /// The mock Apple's base URL.
    var mockApple: String
    /// The server's storage URL (`sqlite:PATH`).
    var storage: String
    /// The temporary directory that held the database.
    var directory: String
    /// Whether the directory was kept (`--keep`).
    var kept: Bool
    /// The steps, in order.
    var steps: [Step]
    /// Seconds from start to shutdown.
    var seconds: Double

    /// How many steps behaved as expected.
    var passed: Int { steps.filter(\.ok).count }
    /// Whether every step did.
    var ok: Bool { passed == steps.count }

    private enum CodingKeys: String, CodingKey {
        case server, mockApple, storage, directory, kept, steps, seconds, passed, total, ok
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(server, forKey: .server)
        try container.encode(mockApple, forKey: .mockApple)
        try container.encode(storage, forKey: .storage)
        try container.encode(directory, forKey: .directory)
        try container.encode(kept, forKey: .kept)
        try container.encode(steps, forKey: .steps)
        try container.encode((seconds * 1_000).rounded() / 1_000, forKey: .seconds)
        try container.encode(passed, forKey: .passed)
        try container.encode(steps.count, forKey: .total)
        try container.encode(ok, forKey: .ok)
    }

    /// The readable report: a header, one line per check, the cleanup and the summary line.
    var text: String {
        var lines = [
            "attestkit demo: App Attest end to end on loopback, signed by a software Apple (a test CA)",
            "  server      \(server)  (AttestKitServer: development keys of \(DemoEnvironment.appID) only)",
            "  mock Apple  \(mockApple)  (DeviceCheck and receipt exchange, risk metric \(DemoEnvironment.riskMetric))",
            "  storage     \(storage)",
            "",
        ]
        for step in steps {
            for check in step.checks {
                lines.append("\(check.ok ? "✔" : "✘") \(step.number). \(check.summary)")
            }
        }
        lines.append("")
        let cleanup = kept ? "kept \(directory) (--keep)" : "removed \(directory)"
        lines.append(String(format: "finished in %.1f s; stopped the server and the mock; ", seconds) + cleanup)
        lines.append("demo: \(passed) of \(steps.count) steps behaved as expected")
        return lines.joined(separator: "\n")
    }

    /// The report as pretty-printed JSON.
    func json() throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        return String(decoding: try encoder.encode(self), as: UTF8.self)
    }
}
