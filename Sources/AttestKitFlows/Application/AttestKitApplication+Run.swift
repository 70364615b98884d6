import AttestKitStore
import Logging

extension AttestKitApplication {
    /// Runs one use case under a storage deadline beginning now, when its request's body is in (an edge's earlier
    /// start would have it pay for the body's upload: `StoreRequestDeadline.restarting(_:)`), and turns whatever it
    /// throws into the ``FlowError`` the edge answers with, once: a storage failure is counted
    /// (`attestkit_storage_errors_total`) and logged here with the store's reason, and nowhere else.
    func perform<Result>(_ body: () async throws(FlowError) -> Result) async throws(FlowError) -> Result {
        do {
            return try await StoreRequestDeadline.restarting { () async throws -> Result in try await body() }
        } catch {
            throw failure(error)
        }
    }

    /// The flow error of `error`, with a storage failure under it counted and logged once: what every use case
    /// throws, and what an edge calls for an error raised outside the use cases.
    package func failure(_ error: any Error) -> FlowError {
        let flow =
            (error as? FlowError) ?? FlowError(converting: error)
            ?? FlowError(.internalError, .internalFailure, "internal error", underlying: error)
        flow.signal(metrics: metrics, logger: logger)
        return flow
    }
}

extension AttestKitApplication {
    /// At shutdown, before the store closes: waits up to 5 s for the failure recorder's bundles still waiting to be
    /// written (`record.*`: refusals are answered before their bundles are), so that a stop does not lose them or
    /// have their store reads meet a closed store. Returns at once without a recorder.
    /// A stop that is itself cancelled (the grace period over) does not wait.
    public func settleRecording() async {
        guard let recorder = gate.recorder, await !recorder.settled(within: .seconds(5)) else { return }
        logger.warning(
            Task.isCancelled
                ? "verification bundles still waiting at shutdown were not written: the stop was cancelled"
                : "verification bundles still waiting at shutdown were not written in 5 s")
    }
}
