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

    init(storage: String, keys: Int, requests: Int, seconds: Double, latencies: [Double], inProcessPerSecond: Double) {
        self.storage = storage
        self.keys = keys
        self.requests = requests
        self.seconds = seconds
        self.requestsPerSecond = seconds > 0 ? Double(requests) / seconds : 0
        self.p50Milliseconds = Self.percentile(latencies, 0.50)
        self.p90Milliseconds = Self.percentile(latencies, 0.90)
        self.p99Milliseconds = Self.percentile(latencies, 0.99)
        self.inProcessPerSecond = inProcessPerSecond
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
            """
    }

    var json: String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        return (try? encoder.encode(self)).map { String(decoding: $0, as: UTF8.self) } ?? "{}"
    }
}
