import AttestKitTesting
import Foundation

/// What `attestkit load` measured.
struct LoadReport: Encodable {
    let storage: String
    let keys: Int
    let requests: Int
    let seconds: Double
    let requestsPerSecond: Double
    let p50Milliseconds: Double
    let p90Milliseconds: Double
    let p99Milliseconds: Double
    let inProcessPerSecond: Double
    /// The busy share of the whole machine's cores while the level ran (Linux; `nil` elsewhere).
    let machineBusyShare: Double?
    /// The whole machine's busy CPU time per verified request, in microseconds: the server's, the kernel's work for
    /// it, the database's and the load generator's (Linux; `nil` elsewhere, or for a level shorter than a clock
    /// tick). Steadier from run to run than the rate.
    let machineMicrosecondsPerRequest: Double?
    /// With `--population`: `hot` (the keys registered through the service) or `spread` (the population's keys).
    private(set) var run: String?
    /// With `--population`: how many keys were seeded, how many of them the spread run signed for, and how long
    /// seeding took.
    private(set) var population: Int?
    private(set) var signableKeys: Int?
    private(set) var seedSeconds: Double?

    init(
        storage: String, keys: Int, requests: Int, seconds: Double, latencies: [Double], inProcessPerSecond: Double,
        machineBusyShare: Double? = nil, machineMicrosecondsPerRequest: Double? = nil
    ) {
        self.storage = storage
        self.keys = keys
        self.requests = requests
        self.seconds = seconds
        self.requestsPerSecond = seconds > 0 ? Double(requests) / seconds : 0
        self.p50Milliseconds = Self.percentile(latencies, 0.50)
        self.p90Milliseconds = Self.percentile(latencies, 0.90)
        self.p99Milliseconds = Self.percentile(latencies, 0.99)
        self.inProcessPerSecond = inProcessPerSecond
        self.machineBusyShare = machineBusyShare
        self.machineMicrosecondsPerRequest = machineMicrosecondsPerRequest
    }

    /// This report, marked as `run` of a population benchmark.
    func run(_ run: String, population: LoadPopulation) -> LoadReport {
        var report = self
        report.run = run
        report.population = population.count
        report.signableKeys = population.keys.count
        report.seedSeconds = population.seedSeconds
        return report
    }

    /// The nearest-rank percentile of sorted values.
    static func percentile(_ sorted: [Double], _ fraction: Double) -> Double {
        guard !sorted.isEmpty else { return 0 }
        let rank = Int((fraction * Double(sorted.count)).rounded(.up)) - 1
        return sorted[min(max(rank, 0), sorted.count - 1)]
    }

    var text: String {
        func f(_ value: Double, _ digits: Int = 2) -> String { String(format: "%.\(digits)f", value) }
        return """
            storage            \(storage)
            concurrent keys    \(keys)
            requests           \(requests) in \(f(seconds)) s, all 200
            throughput         \(f(requestsPerSecond, 0)) assertion-verified requests/s
            latency            p50 \(f(p50Milliseconds)) ms, p90 \(f(p90Milliseconds)) ms, p99 \(f(p99Milliseconds)) ms
            in-process         \(f(inProcessPerSecond, 0)) assertion verifications/s on one core (AssertionVerifier alone)
            machine CPU        \(cpuText)
            """
    }

    /// The machine's CPU while the level ran, or why it is not shown.
    var cpuText: String {
        guard let share = machineBusyShare, let perRequest = machineMicrosecondsPerRequest else {
            return "not measured (no /proc/stat, or the level was shorter than a clock tick)"
        }
        return String(format: "%.0f µs per request, all processes (%.0f %% of the cores busy)", perRequest, share * 100)
    }

    /// Verified requests per second as a share of the in-process rate.
    var ratio: Double { inProcessPerSecond > 0 ? requestsPerSecond / inProcessPerSecond : 0 }

    /// One line per concurrency level (one level: the detailed ``text``).
    static func table(_ reports: [LoadReport]) -> String {
        guard reports.count > 1 else { return reports.first?.text ?? "" }
        func f(_ value: Double, _ digits: Int) -> String { String(format: "%.\(digits)f", value) }
        func pad(_ text: String, _ width: Int) -> String {
            String(repeating: " ", count: max(0, width - text.count)) + text
        }
        let header = [
            "storage", "keys", "requests", "req/s", "p50 ms", "p99 ms", "in-process/s", "ratio", "cpu µs/req",
        ]
        let widths = [8, 5, 9, 8, 8, 8, 13, 7, 11]
        var lines = [zip(header, widths).map { pad($0, $1) }.joined(separator: " ")]
        for report in reports {
            let cells = [
                report.storage, "\(report.keys)", "\(report.requests)", f(report.requestsPerSecond, 0),
                f(report.p50Milliseconds, 2), f(report.p99Milliseconds, 2), f(report.inProcessPerSecond, 0),
                f(report.ratio * 100, 1) + " %", report.machineMicrosecondsPerRequest.map { f($0, 0) } ?? "-",
            ]
            lines.append(zip(cells, widths).map { pad($0, $1) }.joined(separator: " "))
        }
        return lines.joined(separator: "\n")
    }

    /// A population benchmark: how the keys were seeded, then the hot and spread runs of every level and the spread
    /// run's rate as a share of the hot run's.
    static func table(hot: [LoadReport], spread: [LoadReport]) -> String {
        func f(_ value: Double, _ digits: Int) -> String { String(format: "%.\(digits)f", value) }
        func pad(_ text: String, _ width: Int) -> String {
            String(repeating: " ", count: max(0, width - text.count)) + text
        }
        guard let first = hot.first, let population = first.population, let seconds = first.seedSeconds else {
            return table(hot + spread)
        }
        var lines = [
            "population \(population) keys seeded and settled in \(f(seconds, 1)) s (\(f(Double(population) / max(seconds, 0.001), 0)) "
                + "keys/s), \(first.signableKeys ?? 0) of them signable",
            ["storage", "keys", "run", "requests", "req/s", "p50 ms", "p99 ms", "cpu µs/req", "spread/hot"].enumerated()
                .map { pad($1, [8, 5, 7, 9, 8, 8, 8, 11, 11][$0]) }.joined(separator: " "),
        ]
        for (hot, spread) in zip(hot, spread) {
            for report in [hot, spread] {
                let share =
                    report.run == "spread"
                    ? f(report.requestsPerSecond / max(hot.requestsPerSecond, 1) * 100, 1) + " %" : ""
                let cells = [
                    report.storage, "\(report.keys)", report.run ?? "", "\(report.requests)",
                    f(report.requestsPerSecond, 0),
                    f(report.p50Milliseconds, 2), f(report.p99Milliseconds, 2),
                    report.machineMicrosecondsPerRequest.map { f($0, 0) } ?? "-", share,
                ]
                lines.append(zip(cells, [8, 5, 7, 9, 8, 8, 8, 11, 11]).map { pad($0, $1) }.joined(separator: " "))
            }
        }
        return lines.joined(separator: "\n")
    }

    /// A population benchmark as JSON: one object per level, `{"hot": …, "spread": …, "spreadShare": …}`.
    static func json(hot: [LoadReport], spread: [LoadReport]) -> String {
        struct Level: Encodable {
            let hot: LoadReport
            let spread: LoadReport
            let spreadShare: Double
        }
        let levels = zip(hot, spread).map { hot, spread in
            Level(
                hot: hot, spread: spread,
                spreadShare: hot.requestsPerSecond > 0 ? spread.requestsPerSecond / hot.requestsPerSecond : 0)
        }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        return (try? encoder.encode(levels)).map { String(decoding: $0, as: UTF8.self) } ?? "[]"
    }

    /// The reports as JSON: one object for one level, an array for several.
    static func json(_ reports: [LoadReport]) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        let data = reports.count == 1 ? try? encoder.encode(reports[0]) : try? encoder.encode(reports)
        return data.map { String(decoding: $0, as: UTF8.self) } ?? "{}"
    }
}
