package import Foundation
import Synchronization

/// The expositions the dashboard saw over the last minutes, so that it can show rates per minute without a
/// background task: each view keeps one sample (at most one every 5 seconds, for 10 minutes).
package final class DashboardHistory: Sendable {
    private let samples = Mutex<[(at: Date, samples: [MetricSample])]>([])

    /// An empty history.
    package init() {}

    /// Records `current` at `now` and returns the sample to compare with: the newest one at least a minute old, or
    /// else the oldest kept (`nil` on the first view).
    package func record(_ current: [MetricSample], now: Date) -> (samples: [MetricSample], seconds: Double)? {
        samples.withLock { samples in
            samples.removeAll { now.timeIntervalSince($0.at) > 600 }
            let base =
                samples.last { now.timeIntervalSince($0.at) >= 60 } ?? samples.first
            if let last = samples.last, now.timeIntervalSince(last.at) < 5 {
            } else {
                samples.append((now, current))
            }
            guard let base, now.timeIntervalSince(base.at) >= 1 else { return nil }
            return (base.samples, now.timeIntervalSince(base.at))
        }
    }
}
