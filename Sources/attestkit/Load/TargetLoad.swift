import AttestKit
import AttestKitTesting
import AttestKitWire
import Foundation

/// `attestkit load --target`: steady traffic against a service that runs elsewhere (behind a proxy, say), counting
/// every answer that is not the expected one, for a rolling restart to show that no request failed.
///
/// Each key of the device sends, in turn and one at a time (so that its counter increases), a challenge request
/// (`POST /v1/challenges`, 201 expected) and an assertion check (`POST /v1/assertions/verify` with a fresh assertion
/// over a timestamp, 200 expected), until the duration has passed. A connection error, a timeout or any other status
/// is a failure, counted by kind.
struct TargetLoad {
    /// What one run answered.
    struct Outcome: Sendable {
        /// Requests answered as expected.
        var succeeded = 0
        /// Failed requests by kind (`assertion: HTTP 502`, `challenge: connection`), sorted by kind when printed.
        var failures: [String: Int] = [:]

        /// How many requests failed.
        var failed: Int { failures.values.reduce(0, +) }

        mutating func merge(_ other: Outcome) {
            succeeded += other.succeeded
            failures.merge(other.failures, uniquingKeysWith: +)
        }

        /// One line for people, then one per kind of failure (a kind holds the service's error code: escaped).
        var summary: String {
            var lines = ["sent \(succeeded + failed) requests: \(succeeded) succeeded, \(failed) failed"]
            for (kind, count) in failures.sorted(by: { $0.key < $1.key }) {
                lines.append("  \(count) × \(TerminalText.escaped(kind))")
            }
            return lines.joined(separator: "\n")
        }

        /// The outcome as one JSON object, `{"failed", "failures", "succeeded"}`, keys sorted: encoded by
        /// `JSONEncoder`, so that any kind (a service's error code with a quote, a backslash or a control character)
        /// stays valid JSON.
        var json: String {
            struct Report: Encodable {
                var succeeded: Int
                var failed: Int
                var failures: [String: Int]
            }
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
            let report = Report(succeeded: succeeded, failed: failed, failures: failures)
            // Strings and integers always encode; the fallback is never reached.
            guard let data = try? encoder.encode(report) else { return #"{"failed":\#(failed)}"# }
            return String(decoding: data, as: UTF8.self)
        }
    }

    let http: LoadHTTP
    let device: SimulatedDevice
    let keyIDs: [KeyID]
    let duration: Duration

    /// Sends until ``duration`` has passed, every key at once.
    func run() async -> Outcome {
        let end = ContinuousClock.now + duration
        return await withTaskGroup(of: Outcome.self) { group in
            for keyID in keyIDs {
                group.addTask { await self.send(as: keyID, until: end) }
            }
            var all = Outcome()
            for await part in group { all.merge(part) }
            return all
        }
    }

    /// One key's requests, one after the other, until `end`.
    private func send(as keyID: KeyID, until end: ContinuousClock.Instant) async -> Outcome {
        var outcome = Outcome()
        let orderBody = #"{"item":"coffee","quantity":1}"#
        let bodyBase64 = Data(orderBody.utf8).base64EncodedString()
        while ContinuousClock.now < end {
            await check("challenge", expecting: 201, into: &outcome) {
                try await http.post("/v1/challenges", ChallengeRequest(purpose: "attest", keyId: keyID.base64))
            }
            await check("assertion", expecting: 200, into: &outcome) {
                let milliseconds = Int64(Date().timeIntervalSince1970 * 1_000)
                let binding = try RequestBinding(
                    method: "POST", target: "/v1/orders", body: Array(orderBody.utf8),
                    freshness: .timestamp(milliseconds: milliseconds))
                let assertion = try device.generateAssertion(keyID, clientDataHash: binding.clientDataHash)
                return try await http.post(
                    "/v1/assertions/verify",
                    AssertionRequest(
                        keyId: keyID.base64, assertion: Data(assertion).base64EncodedString(),
                        request: .init(
                            method: "POST", target: "/v1/orders", body: bodyBase64, timestamp: milliseconds)))
            }
        }
        return outcome
    }

    /// Runs one request and counts its answer: `status` succeeds, anything else (or an error) fails.
    private func check(
        _ what: String, expecting status: UInt, into outcome: inout Outcome,
        _ request: () async throws -> LoadHTTP.Answer
    ) async {
        do {
            let answer = try await request()
            if answer.status == status {
                outcome.succeeded += 1
            } else {
                let code = answer.errorCode
                outcome.failures["\(what): HTTP \(answer.status)\(code.isEmpty ? "" : " \(code)")", default: 0] += 1
            }
        } catch {
            outcome.failures["\(what): \(String(describing: type(of: error)))", default: 0] += 1
        }
    }
}
