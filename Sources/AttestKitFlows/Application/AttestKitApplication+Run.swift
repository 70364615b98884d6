import AttestKitStore

extension AttestKitApplication {
    /// Runs one use case under the request's storage deadline (kept when an edge started it earlier), and turns
    /// whatever it throws into the ``FlowError`` the edge answers with, once: a storage failure is counted
    /// (`attestkit_storage_errors_total`) and logged here with the store's reason, and nowhere else.
    func perform<Result>(_ body: () async throws(FlowError) -> Result) async throws(FlowError) -> Result {
        do {
            return try await StoreRequestDeadline.withRequest { () async throws -> Result in try await body() }
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
