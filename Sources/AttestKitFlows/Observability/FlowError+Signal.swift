import AttestKitApple
import AttestKitStore
package import Logging

extension FlowError {
    /// Counts and logs what the operator must hear about under this error. Given once per request by whoever decided it (a use case of ``AttestKitApplication``, or a
    /// ``RouteGuard``):
    /// - a storage failure: counted (`attestkit_storage_errors_total`) and logged (`storage unavailable`, with the
    ///   store's code and reason, never a value), unless the request's own task was cancelled (a stop past its grace
    ///   period): the store was not found failing then, and counting it would feed the storage alert at every
    ///   rolling restart; logged at debug only;
    /// - Apple refusing this server (its key, its configuration, what it sent) or answering with an error: logged
    ///   (`Apple refused this server`, with the code), as the app sees only a 502;
    /// - Apple unreachable or rate limiting this server: logged at warning (`Apple unavailable`);
    /// - an internal failure (a bug): logged (`unexpected error: a bug`, with its reason and the underlying error's
    ///   type).
    func signal(metrics: FlowMetrics, logger: Logger) {
        switch kind {
        case .unavailable:
            if let store = underlying as? StoreError {
                guard !Task.isCancelled else {
                    logger.debug(
                        "request cancelled during a store call: answering 503", metadata: ["code": "\(store.code)"])
                    return
                }
                metrics.storageError()
                logger.error(
                    "storage unavailable: answering 503",
                    metadata: ["code": "\(store.code)", "reason": "\(store.reason)"])
                return
            }
            if let apple = underlying as? AppleServiceError {
                logger.warning(
                    "Apple unavailable: answering 503",
                    metadata: ["code": "\(code)", "apple.code": "\(apple.code.rawValue)"])
            }
        case .upstreamFailure:
            let appleCode = (underlying as? AppleServiceError)?.code.rawValue ?? "none"
            logger.error(
                "Apple refused this server: answering 502", metadata: ["code": "\(code)", "apple.code": "\(appleCode)"])
        case .internalFailure:
            Self.logUnexpected(underlying ?? self, reason: reason, logger: logger)
        default:
            break
        }
    }

    /// Logs an error nothing decided (a bug), as every edge does for an error no flow converts: its type and the
    /// flow's reason, never the error's description, which may hold a value.
    package static func logUnexpected(_ error: any Error, reason: String? = nil, logger: Logger) {
        var metadata: Logger.Metadata = ["error.type": "\(type(of: error))"]
        if let reason { metadata["reason"] = "\(reason)" }
        logger.error("unexpected error: a bug", metadata: metadata)
    }
}
