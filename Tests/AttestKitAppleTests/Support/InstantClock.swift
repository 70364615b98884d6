import Synchronization

/// Records every wait a retry loop asks for, without waiting.
final class SleepRecorder: Sendable {
    private let sleeps = Mutex<[Duration]>([])

    var recorded: [Duration] { sleeps.withLock { $0 } }
    var total: Duration { recorded.reduce(.zero, +) }

    func record(_ duration: Duration) { sleeps.withLock { $0.append(duration) } }
}

/// A clock whose sleeps return at once and advance its time, so that backoff tests take no time.
struct InstantClock: Clock {
    struct Instant: InstantProtocol {
        var offset: Duration

        func advanced(by duration: Duration) -> Instant { Instant(offset: offset + duration) }
        func duration(to other: Instant) -> Duration { other.offset - offset }
        static func < (lhs: Instant, rhs: Instant) -> Bool { lhs.offset < rhs.offset }
    }

    let recorder: SleepRecorder

    var now: Instant { Instant(offset: recorder.total) }
    var minimumResolution: Duration { .zero }

    func sleep(until deadline: Instant, tolerance: Duration?) async throws {
        try Task.checkCancellation()
        recorder.record(max(.zero, now.duration(to: deadline)))
    }
}
