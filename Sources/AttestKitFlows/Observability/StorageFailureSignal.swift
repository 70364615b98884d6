import AttestKitStore
import Logging

extension FlowError {
    /// Counts (`attestkit_storage_errors_total`) and logs (`storage unavailable`, with the store's code and reason,
    /// never a value) a storage failure under this error, and returns whether there was one: the operator's one
    /// signal of a storage outage, given once per request by whoever decided it (a use case of
    /// ``AttestKitApplication``, or a ``RouteGuard``).
    @discardableResult
    func signalStorageFailure(metrics: FlowMetrics, logger: Logger) -> Bool {
        guard case .unavailable = kind, let store = underlying as? StoreError else { return false }
        metrics.storageError()
        logger.error(
            "storage unavailable: answering 503", metadata: ["code": "\(store.code)", "reason": "\(store.reason)"])
        return true
    }
}
