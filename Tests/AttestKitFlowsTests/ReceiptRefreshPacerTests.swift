import AttestKitStore
import Foundation
import Logging
import Testing

@testable import AttestKitFlows

/// A shared budget whose store takes `delay` to answer (a pool waiting for a connection), admitting every take.
private struct SlowBudgets: RateBudgetStore {
    let delay: Duration

    func take(from budget: RateBudget, now: Date) async throws(StoreError) -> Int? {
        try? await Task.sleep(for: delay)
        return nil
    }
}

/// The pacer under the fleet's ceiling on Apple calls: an exchange never starts past the round's deadline (half the
/// keys' lease), however long the store takes to hand out the request.
@Suite("Receipt refresh pacer")
struct ReceiptRefreshPacerTests {
    static let logger = Logger(label: "pacer", factory: { _ in SwiftLogNoOpLogHandler() })

    @Test("a request the store hands out after the round's deadline starts no exchange; one before it does")
    func takeAnsweredPastTheDeadline() async {
        var slow = ReceiptRefreshPacer(
            store: SlowBudgets(delay: .milliseconds(300)), maxPerSecond: 50, now: { Date() }, logger: Self.logger)
        #expect(await slow.admit(before: .now + .milliseconds(100)) == .late)
        var quick = ReceiptRefreshPacer(
            store: SlowBudgets(delay: .zero), maxPerSecond: 50, now: { Date() }, logger: Self.logger)
        #expect(await quick.admit(before: .now + .seconds(60)) == .admitted)
    }

    @Test("backing off doubles the wait from twice the interval up to an hour, and never waits less than the interval")
    func backOff() {
        let minute = Duration.seconds(60)
        var waits: [Duration] = []
        var delay = minute
        for _ in 0..<8 {
            delay = ReceiptRefreshService.nextDelay(after: delay, backedOff: true, interval: minute)
            waits.append(delay)
        }
        #expect(waits == [120, 240, 480, 960, 1_920, 3_600, 3_600, 3_600].map { Duration.seconds($0) })
        #expect(ReceiptRefreshService.nextDelay(after: .seconds(3_600), backedOff: false, interval: minute) == minute)
        // An interval of two hours: a round that backs off waits at least that, as a healthy one does.
        let long = Duration.seconds(7_200)
        #expect(ReceiptRefreshService.nextDelay(after: long, backedOff: true, interval: long) == long)
    }
}
