import AttestKitFlows
import AttestKitServer
import Foundation
import Testing

@Suite("Rate limiter")
struct RateLimiterTests {
    let t0 = Date(timeIntervalSince1970: 1_800_000_000)

    @Test("a key spends its budget, then waits; other keys are independent")
    func budget() {
        let limiter = RateLimiter(perMinute: 3)
        #expect((0..<3).allSatisfy { _ in limiter.acquire("a", now: t0) == nil })
        let wait = limiter.acquire("a", now: t0)
        #expect(wait == 20)  // one token every 20 s
        #expect(limiter.acquire("b", now: t0) == nil)
        #expect(limiter.acquire("a", now: t0 + 20) == nil)
        #expect(limiter.acquire("a", now: t0 + 20) != nil)
    }

    @Test("a refund gives back one reservation, never beyond the burst, and never creates a key")
    func refund() {
        let limiter = RateLimiter(perMinute: 2)
        for _ in 0..<10 {
            #expect(limiter.acquire("a", now: t0) == nil)
            limiter.refund("a", now: t0)
        }
        limiter.refund("a", now: t0)
        #expect(limiter.acquire("a", now: t0) == nil && limiter.acquire("a", now: t0) == nil)
        #expect(limiter.acquire("a", now: t0) != nil)
        limiter.refund("never-seen", now: t0)
        #expect(limiter.trackedKeys == 1)
    }

    @Test("zero disables the limit")
    func disabled() {
        let limiter = RateLimiter(perMinute: 0)
        #expect((0..<10_000).allSatisfy { _ in limiter.acquire("a", now: t0) == nil })
        #expect(limiter.trackedKeys == 0)
    }

    @Test("a clock going backwards neither refills nor crashes")
    func backwards() {
        let limiter = RateLimiter(perMinute: 1)
        #expect(limiter.acquire("a", now: t0) == nil)
        #expect(limiter.acquire("a", now: t0 - 3_600) != nil)
    }

    @Test("memory stays bounded by maximumKeys")
    func bounded() {
        let limiter = RateLimiter(perMinute: 5, maximumKeys: 100)
        for index in 0..<10_000 { _ = limiter.acquire("client-\(index)", now: t0) }
        #expect(limiter.trackedKeys <= 100)
    }

    @Test("64 concurrent callers on one key get exactly the budget")
    func concurrent() async {
        let limiter = RateLimiter(perMinute: 40)
        let t0 = self.t0
        let allowed = await withTaskGroup(of: Int.self) { group in
            for _ in 0..<64 {
                group.addTask { (0..<10).filter { _ in limiter.acquire("shared", now: t0) == nil }.count }
            }
            return await group.reduce(0, +)
        }
        #expect(allowed == 40)
    }

    @Test("exhaustion takes nothing: nil while a key has a request left, the seconds to wait once it has none")
    func exhaustion() {
        let limiter = RateLimiter(perMinute: 2)
        #expect(limiter.exhaustion("a", now: t0) == nil)
        #expect(limiter.trackedKeys == 0, "asking creates no bucket")
        #expect(limiter.acquire("a", now: t0) == nil)
        #expect(limiter.exhaustion("a", now: t0) == nil)
        #expect(limiter.acquire("a", now: t0) == nil)
        #expect(limiter.exhaustion("a", now: t0) == 30)
        #expect(limiter.exhaustion("a", now: t0) == 30, "asking again takes nothing")
        #expect(limiter.exhaustion("b", now: t0) == nil)
        #expect(limiter.exhaustion("a", now: t0.addingTimeInterval(30)) == nil, "refilled")
        #expect(RateLimiter(perMinute: 0).exhaustion("a", now: t0) == nil)
    }
}
