import ArgumentParser
import AttestKit
import AttestKitConformance
import Crypto
import Foundation

/// `attestkit bench`: the cost of each verification beside the signature checks it cannot avoid.
struct BenchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "bench",
        abstract: "Measure verification cost against raw signature checks, in one run (use a release build).",
        discussion: """
            Runs an attestation with its embedded receipt, an assertion, and a receipt alone on real vectors \
            at their verifyAt, and in the same run the floors: one P-256 ECDSA check, one P-384 ECDSA check, \
            SHA-256 of 1 KiB. Each operation is reported in microseconds and as a ratio to the signature \
            checks it cannot avoid (attestation: one P-384 and two P-256; assertion: one P-256; receipt: \
            two P-256).
            """
    )

    @Flag(name: .long, help: "Print JSON instead of a table.")
    var json = false

    @Option(name: .long, help: "Approximate seconds to spend per measurement.")
    var seconds: Double = 1.0

    @OptionGroup var storageOptions: StorageBenchOptions

    @OptionGroup var receiptRefreshOptions: ReceiptRefreshBenchOptions

    /// Refuses durations that are not a number, not positive or longer than an hour: they became iteration counts
    /// and milliseconds by conversions that trap on such values.
    func validate() throws {
        for (name, value) in [("--seconds", seconds), ("--storage-seconds", storageOptions.storageSeconds)]
        where !(value > 0 && value <= 3_600) {
            throw ValidationError("\(name): more than 0 and at most 3600 seconds")
        }
    }

    func run() async throws {
        if try await storageOptions.runIfRequested(json: json) { return }
        if try await receiptRefreshOptions.runIfRequested(json: json) { return }
        let fixtures = try BenchOperations()
        let bench = Bench(secondsPerMeasurement: seconds)
        let operations: [(String, () async throws -> Void)] = [
            ("p256_verify", fixtures.p256Verify),
            ("p384_verify", fixtures.p384Verify),
            ("sha256_1k", fixtures.sha256OneKiB),
            ("attestation_with_receipt", fixtures.attestation),
            ("assertion", fixtures.assertion),
            ("receipt", fixtures.receipt),
        ]
        let rounds = try await bench.measure(operations)
        let floors: [String: (String, ([String: Double]) -> Double)] = [
            "attestation_with_receipt": (
                "p384 + 2 x p256", { $0["p384_verify", default: 0] + 2 * $0["p256_verify", default: 0] }
            ),
            "assertion": ("p256", { $0["p256_verify", default: 0] }),
            "receipt": ("2 x p256", { 2 * $0["p256_verify", default: 0] }),
        ]
        let rows = operations.map { name, _ in
            let micros = Bench.median(rounds.map { $0[name, default: 0] })
            guard let (floorName, floor) = floors[name] else {
                return BenchRow(name: name, micros: micros, floor: nil, floorName: nil, ratio: nil)
            }
            // Each round measures the operation and its floor back to back, so the ratio of a round is
            // immune to load that changes between rounds; the report gives the median over rounds.
            return BenchRow(
                name: name, micros: micros, floor: Bench.median(rounds.map(floor)), floorName: floorName,
                ratio: Bench.median(rounds.map { $0[name, default: 0] / max(floor($0), 1e-9) }))
        }
        if json {
            try BenchJSON.print(rows)
        } else {
            #if DEBUG
                print(
                    "warning: debug build; run `swift run -c release attestkit bench` for "
                        + "meaningful numbers")
            #endif
            print(
                Self.pad("operation", 26) + Self.pad("µs/op", 10, left: true) + "   " + Self.pad("floor", 16)
                    + "µs      ratio")
            for row in rows {
                var line = Self.pad(row.name, 26) + Self.pad(String(format: "%.1f", row.micros), 10, left: true)
                if let floor = row.floor, let ratio = row.ratio {
                    line +=
                        "   " + Self.pad(row.floorName ?? "", 16)
                        + Self.pad(String(format: "%.1f", floor), 7, left: true)
                    line += String(format: "  %5.2f", ratio)
                }
                print(line)
            }
        }
    }

    private static func pad(_ text: String, _ width: Int, left: Bool = false) -> String {
        let padding = String(repeating: " ", count: max(0, width - text.count))
        return left ? padding + text : text + padding
    }
}

/// One line of the report.
struct BenchRow: Encodable {
    var name: String
    var micros: Double
    var floor: Double?
    var floorName: String?
    var ratio: Double?

    enum CodingKeys: String, CodingKey {
        case name, micros = "microseconds", floor = "floor_microseconds", floorName = "floor", ratio
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(name, forKey: .name)
        try container.encode((micros * 100).rounded() / 100, forKey: .micros)
        try container.encodeIfPresent(floor.map { ($0 * 100).rounded() / 100 }, forKey: .floor)
        try container.encodeIfPresent(floorName, forKey: .floorName)
        try container.encodeIfPresent(ratio.map { ($0 * 1000).rounded() / 1000 }, forKey: .ratio)
    }
}

/// Times operations round-robin: every round runs each operation for a short slice, so that all of them,
/// floors included, see the same machine load.
struct Bench {
    var secondsPerMeasurement: Double

    /// Per round, microseconds per operation by name.
    func measure(_ operations: [(String, () async throws -> Void)]) async throws -> [[String: Double]] {
        let clock = ContinuousClock()
        let rounds = 15
        let slice = max(secondsPerMeasurement / Double(rounds), 0.002)
        // Warm up and size each operation's slice.
        var iterations: [Int] = []
        for (_, body) in operations {
            var count = 1
            while true {
                let elapsed = try await clock.measure { for _ in 0..<count { try await body() } }
                if Self.seconds(elapsed) >= slice / 4 || count >= 1 << 22 {
                    iterations.append(max(1, Int(Double(count) * slice / max(Self.seconds(elapsed), 1e-9))))
                    break
                }
                count *= 2
            }
        }
        var results: [[String: Double]] = []
        for _ in 0..<rounds {
            var round: [String: Double] = [:]
            for ((name, body), count) in zip(operations, iterations) {
                let elapsed = try await clock.measure { for _ in 0..<count { try await body() } }
                round[name] = Self.seconds(elapsed) * 1e6 / Double(count)
            }
            results.append(round)
        }
        return results
    }

    static func median(_ values: [Double]) -> Double {
        let sorted = values.sorted()
        return sorted.isEmpty ? 0 : sorted[sorted.count / 2]
    }

    static func seconds(_ duration: Duration) -> Double {
        Double(duration.components.seconds) + Double(duration.components.attoseconds) * 1e-18
    }
}
