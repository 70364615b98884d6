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
    var seconds: Double = 0.6

    @OptionGroup var storageOptions: StorageBenchOptions

    func run() async throws {
        if try await storageOptions.runIfRequested(json: json) { return }
        let fixtures = try BenchOperations()
        var bench = Bench(secondsPerMeasurement: seconds)

        let p256 = try await bench.measure("p256_verify", fixtures.p256Verify)
        let p384 = try await bench.measure("p384_verify", fixtures.p384Verify)
        let sha = try await bench.measure("sha256_1k", fixtures.sha256OneKiB)
        let attestation = try await bench.measure("attestation_with_receipt", fixtures.attestation)
        let assertion = try await bench.measure("assertion", fixtures.assertion)
        let receipt = try await bench.measure("receipt", fixtures.receipt)

        let rows: [BenchRow] = [
            BenchRow(name: "p256_verify", micros: p256, floor: nil, floorName: nil),
            BenchRow(name: "p384_verify", micros: p384, floor: nil, floorName: nil),
            BenchRow(name: "sha256_1k", micros: sha, floor: nil, floorName: nil),
            BenchRow(
                name: "attestation_with_receipt", micros: attestation, floor: p384 + 2 * p256,
                floorName: "p384 + 2 x p256"),
            BenchRow(name: "assertion", micros: assertion, floor: p256, floorName: "p256"),
            BenchRow(name: "receipt", micros: receipt, floor: 2 * p256, floorName: "2 x p256"),
        ]
        if json {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
            print(String(decoding: try encoder.encode(rows), as: UTF8.self))
        } else {
            #if DEBUG
            print("warning: debug build; run `swift run -c release attestkit bench` for meaningful numbers")
            #endif
            print("operation                   µs/op   floor (µs)           ratio")
            for row in rows {
                let floor = row.floor.map { String(format: "%8.1f  %-11@", $0, row.floorName ?? "") } ?? ""
                let ratio = row.ratio.map { String(format: "%5.2f", $0) } ?? ""
                print(String(format: "%-24@ %9.1f   ", row.name, row.micros) + floor + "  " + ratio)
            }
        }
    }
}

/// One line of the report.
struct BenchRow: Encodable {
    var name: String
    var micros: Double
    var floor: Double?
    var floorName: String?
    var ratio: Double? { floor.map { micros / $0 } }

    enum CodingKeys: String, CodingKey { case name, micros = "microseconds", floor = "floor_microseconds", floorName = "floor", ratio }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(name, forKey: .name)
        try container.encode((micros * 100).rounded() / 100, forKey: .micros)
        try container.encodeIfPresent(floor.map { ($0 * 100).rounded() / 100 }, forKey: .floor)
        try container.encodeIfPresent(floorName, forKey: .floorName)
        try container.encodeIfPresent(ratio.map { ($0 * 1000).rounded() / 1000 }, forKey: .ratio)
    }
}

/// Times a closure: the median per-operation time over several rounds.
struct Bench {
    var secondsPerMeasurement: Double

    mutating func measure(_ name: String, _ body: () async throws -> Void) async throws -> Double {
        let clock = ContinuousClock()
        // Warm up and size the rounds.
        var iterations = 1
        while true {
            let elapsed = try await clock.measure { for _ in 0..<iterations { try await body() } }
            if elapsed > .milliseconds(20) || iterations >= 1 << 20 { break }
            iterations *= 2
        }
        let rounds = 7
        let single = try await clock.measure { for _ in 0..<iterations { try await body() } }
        let perRound = max(secondsPerMeasurement / Double(rounds), 0.005)
        let seconds = Double(single.components.seconds) + Double(single.components.attoseconds) * 1e-18
        let scaled = max(1, Int(Double(iterations) * perRound / max(seconds, 1e-9)))
        var samples: [Double] = []
        for _ in 0..<rounds {
            let elapsed = try await clock.measure { for _ in 0..<scaled { try await body() } }
            let total = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) * 1e-18
            samples.append(total * 1e6 / Double(scaled))
        }
        samples.sort()
        return samples[rounds / 2]
    }
}
