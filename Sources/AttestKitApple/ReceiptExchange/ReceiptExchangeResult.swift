public import AttestKit
public import Foundation

/// What the receipt exchange gave back.
public enum ReceiptExchangeResult: Sendable, Hashable, CustomStringConvertible {
    /// HTTP 200: a new `RECEIPT`, verified (signer chain, type, App ID, key, age). Store it in place of the old
    /// one; its `Receipt.riskMetric` is the fraud risk metric and its `Receipt.notBefore`
    /// the earliest time of the next exchange.
    case refreshed(Receipt)
    /// HTTP 304: too early, the receipt sent cannot be exchanged before its Not Before. Keep it and try again
    /// after `retryAfter` (the sent receipt's Not Before, read without verification; `nil` when it has none).
    case notModified(retryAfter: Date?)

    /// The new receipt, if there is one.
    public var receipt: Receipt? {
        if case .refreshed(let receipt) = self { return receipt }
        return nil
    }

    /// `refreshed(Receipt(...))` or `notModified(retry after ...)`; never the receipt's bytes.
    public var description: String {
        switch self {
        case .refreshed(let receipt): "refreshed(\(receipt))"
        case .notModified(let retryAfter): "notModified(retry after \(retryAfter.map { "\($0)" } ?? "unknown"))"
        }
    }
}
