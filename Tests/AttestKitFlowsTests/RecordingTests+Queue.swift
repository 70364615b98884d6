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
        let recorder = try VerificationRecorder(
            directory: Self.directory(), maximumPending: 2, now: { hold.now() })
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

    @Test("maximumPending is 1 to 100,000")
    func maximumPendingBounds() throws {
        for pending in [0, -1, 100_001] {
            #expect(throws: FlowError.self) {
                try VerificationRecorder(directory: Self.directory(), maximumPending: pending)
            }
        }
    }
}
