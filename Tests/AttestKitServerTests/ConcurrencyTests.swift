import AttestKit
import AttestKitServer
import AttestKitStore
import AttestKitTesting
import AttestKitWire
import Foundation
import NIOHTTP1
import Testing

/// Many copies of one assertion at once: exactly one is accepted, whatever the store.
@Suite("Concurrent replays")
struct ConcurrencyTests {
    static let copies = 50

    @Test(
        "50 concurrent submissions of one assertion: one 200, 49 × 409",
        arguments: await StoreKind.all(), ["challenge", "timestamp", "middleware"])
    func replays(kind: StoreKind, freshness: String) async throws {
        try await ServerHarness.with(kind) { harness in
            let device = try await TestDevice.registered(harness)
            let statuses: [Int]
            if freshness == "middleware" {
                let body = Array("{\"order\":1}".utf8)
                let headers = try device.guardedHeaders(
                    method: "POST", target: "/api/orders", body: body, freshness: device.now)
                statuses = try await Self.concurrently(Self.copies) { _ in
                    let answer = try await harness.send(
                        .POST, "/api/orders", body: body, headers: headers, to: .guarded)
                    #expect(answer.status == 200 || answer.errorCode == "counter_not_increasing", "\(answer)")
                    return answer.status
                }
            } else {
                let proof = freshness == "challenge" ? try await device.assertChallenge() : device.now
                let body = try device.verifyBody(freshness: proof)
                statuses = try await Self.concurrently(Self.copies) { _ in
                    let answer = try await device.verify(body)
                    #expect(
                        answer.status == 200
                            || ["counter_not_increasing", "challenge_consumed"].contains(answer.errorCode ?? ""),
                        "\(answer)")
                    return answer.status
                }
            }
            #expect(statuses.count == Self.copies)
            #expect(statuses.filter { $0 == 200 }.count == 1, "\(statuses)")
            #expect(statuses.filter { $0 == 409 }.count == Self.copies - 1, "\(statuses)")
            let record = try #require(try await harness.store.key(device.keyID))
            #expect(record.counter == 1)
        }
    }

    /// Runs `count` copies of `body` at once and returns their results.
    static func concurrently<T: Sendable>(
        _ count: Int, _ body: @escaping @Sendable (Int) async throws -> T
    ) async throws -> [T] {
        try await withThrowingTaskGroup(of: T.self) { group in
            for index in 0..<count { group.addTask { try await body(index) } }
            var results: [T] = []
            for try await result in group { results.append(result) }
            return results
        }
    }
}
