import AttestKit
import AttestKitFlows
import AttestKitWire
import Dispatch
import Foundation
import Synchronization
import Testing

extension RecordingTests {
    /// Holds the recorder's thread in its clock until released.
    final class Hold: Sendable {
        private let held = Mutex(true)
        private let semaphore = DispatchSemaphore(value: 0)

        /// The recorder's clock: waits while held.
        func now() -> Date {
            if held.withLock({ $0 }) { semaphore.wait() }
            return Date()
        }

        /// Lets the clock (and every later call) through.
        func release() {
            held.withLock { $0 = false }
            semaphore.signal()
        }
    }

    @Test("refusals are answered while the recorder's thread is held; past maximumPending their bundles are dropped")
    func refusalsDoNotWaitForTheRecorder() async throws {
        let hold = Hold()
        let metrics = RecordingMetrics()
        let recorder = try VerificationRecorder(
            directory: Self.directory(), maximumPending: 2, metrics: FlowMetrics(factory: metrics),
            now: { hold.now() })
        let bench = try FlowBench(recorder: recorder)
        // A key this store does not hold: anyone can send such refusals, as fast as they like.
        let device = try await FlowBench().registeredDevice()
        let now = FlowBench.milliseconds()
        // Answered, or hung behind the held thread (then released after 20 s, so that the test ends either way).
        let answered = await withTaskGroup(of: Bool.self) { group in
            group.addTask {
                for _ in 0..<5 {
                    guard let (assertion, binding) = try? device.assertion(freshness: .timestamp(milliseconds: now))
                    else { return false }
                    let error = await #expect(throws: FlowError.self) {
                        try await bench.gate.verify(keyID: device.keyID, assertion: assertion, binding: binding)
                    }
                    #expect(error?.code == .keyNotFound)
                }
                return true
            }
            group.addTask {
                try? await Task.sleep(for: .seconds(20))
                hold.release()
                return false
            }
            let first = await group.next() ?? false
            group.cancelAll()
            return first
        }
        hold.release()
        #expect(answered, "the refusals waited for the recorder")
        await recorder.settled()
        // The first was being written and the second waited: the other three were dropped, not queued.
        let bundles = try await Self.bundles(recorder)
        #expect(bundles.count == 2)
        #expect(bundles.allSatisfy { $0.outcome.code == "key_not_found" })
        #expect(metrics.count("attestkit_verification_bundles_dropped_total", ["reason": "queue_full"]) == 3)
        // Once caught up, the recorder takes bundles again.
        guard let (assertion, binding) = try? device.assertion(freshness: .timestamp(milliseconds: now)) else {
            Issue.record("no assertion")
            return
        }
        let error = await #expect(throws: FlowError.self) {
            try await bench.gate.verify(keyID: device.keyID, assertion: assertion, binding: binding)
        }
        #expect(error?.code == .keyNotFound)
        #expect(await recorder.bundleNames().count == 3)
    }

    /// A recorder clock whose first calls each wait for a gate of their own.
    final class Gates: Sendable {
        private let calls = Mutex(0)
        private let gates: [DispatchSemaphore]

        init(_ count: Int) { gates = (0..<count).map { _ in DispatchSemaphore(value: 0) } }

        func now() -> Date {
            let call = calls.withLock { count in
                defer { count += 1 }
                return count
            }
            if call < gates.count { gates[call].wait() }
            return Date()
        }

        /// Lets the `call`-th call (from 0) through.
        func open(_ call: Int) { gates[call].signal() }
    }

    @Test("settled() waits for the bundles handed over before it, not for those handed over after")
    func settledWaitsForEarlierBundlesOnly() async throws {
        let gates = Gates(2)
        let recorder = try VerificationRecorder(directory: Self.directory(), now: { gates.now() })
        let bundle = try await Self.refusedBundle()
        recorder.submit { bundle }
        let settled = await withTaskGroup(of: Bool.self) { group in
            group.addTask {
                await recorder.settled()
                return true
            }
            group.addTask {
                // Once the caller waits, a second bundle is handed over (and held), then the first is let through:
                // a steady stream of refusals must not keep the caller waiting.
                while recorder.waitingCallers == 0 { try? await Task.sleep(for: .milliseconds(5)) }
                recorder.submit { bundle }
                gates.open(0)
                try? await Task.sleep(for: .seconds(20))
                return false
            }
            let first = await group.next() ?? false
            group.cancelAll()
            return first
        }
        gates.open(1)
        #expect(settled, "settled() waited for a bundle handed over after it")
        #expect(await recorder.bundleNames().count == 2)
        // A shutdown's wait gives up, and says so, when a bundle cannot be written in time.
        let stuck = Hold()
        let slow = try VerificationRecorder(directory: Self.directory(), now: { stuck.now() })
        slow.submit { bundle }
        #expect(await slow.settled(within: .milliseconds(200)) == false)
        stuck.release()
        #expect(await slow.settled(within: .seconds(60)))
    }

    @Test("a shutdown's wait ends at its limit or when cancelled, whatever the drain does, and releases no one else")
    func settledWithinEndsWhateverTheDrain() async throws {
        let stuck = Hold()
        let recorder = try VerificationRecorder(directory: Self.directory(), now: { stuck.now() })
        let bundle = try await Self.refusedBundle()
        recorder.submit { bundle }
        let other = Task { await recorder.settled() }
        while recorder.waitingCallers == 0 { try? await Task.sleep(for: .milliseconds(5)) }
        // Answered, or hung (then released after 20 s, so that the test ends either way).
        let ended = await withTaskGroup(of: Bool.self) { group in
            group.addTask {
                let timedOut = await recorder.settled(within: .milliseconds(100))
                let cancelled = Task { await recorder.settled(within: .seconds(600)) }
                cancelled.cancel()
                let waitedOn = await cancelled.value
                return !timedOut && !waitedOn
            }
            group.addTask {
                // Released only when the wait hung: cancelled (the wait ended), the drain must stay stuck.
                if (try? await Task.sleep(for: .seconds(20))) != nil { stuck.release() }
                return false
            }
            let first = await group.next() ?? false
            group.cancelAll()
            return first
        }
        #expect(ended, "a wait past its limit or its cancellation")
        // The other caller still waits for its bundle: the shutdown's giving up released only its own waiter.
        #expect(recorder.waitingCallers == 1)
        stuck.release()
        await other.value
        #expect(recorder.waitingCallers == 0)
    }

    /// A bundle of a refused assertion (an unknown key), as the gate hands one over.
    static func refusedBundle() async throws -> VerificationBundle {
        let scratch = try Self.recorder()
        let bench = try FlowBench(recorder: scratch)
        let device = try await FlowBench().registeredDevice()
        let (assertion, binding) = try device.assertion(freshness: .timestamp(milliseconds: FlowBench.milliseconds()))
        _ = try? await bench.gate.verify(keyID: device.keyID, assertion: assertion, binding: binding)
        return try #require(try await Self.bundles(scratch).first)
    }

    @Test("maximumPending is 1 to 100,000")
    func maximumPendingBounds() throws {
        for pending in [0, -1, 100_001] {
            #expect(throws: FlowError.self) {
                try VerificationRecorder(directory: Self.directory(), maximumPending: pending)
            }
        }
    }
}
