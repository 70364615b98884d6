public import AttestKit
public import Foundation

/// A newer receipt for a registered key, usually the `RECEIPT` Apple's exchange endpoint returned.
///
/// ``KeyStore/storeReceipt(_:for:now:)`` keeps it only when it is newer than the stored one, and
/// appends its risk metric to the key's history.
public struct ReceiptUpdate: Sendable, Hashable {
    /// The receipt bytes, exactly as received.
    public let receipt: [UInt8]
    /// When Apple created the receipt.
    public let receiptCreatedAt: Date
    /// The receipt's risk metric, when it has one.
    public let riskMetric: Int?
    /// When to exchange the receipt next, or `nil` for never.
    public let receiptRefreshAt: Date?
    /// When the receipt expires (its field 21), or `nil` when it has no expiration time.
    public let receiptExpiresAt: Date?

    /// Creates an update from its parts.
    /// - Throws: ``StoreError/Code/invalidInput`` when the receipt is empty or over
    ///   ``StoreLimits/maximumReceiptBytes``, the risk metric is negative or too large, or a time is out of range.
    public init(
        receipt: [UInt8], receiptCreatedAt: Date, riskMetric: Int?, receiptRefreshAt: Date?,
        receiptExpiresAt: Date? = nil
    ) throws(StoreError) {
        try StoreLimits.checkReceipt(receipt)
        try StoreLimits.checkRiskMetric(riskMetric)
        self.receipt = receipt
        self.receiptCreatedAt = try StoreTime.normalized(receiptCreatedAt, "receiptCreatedAt")
        self.riskMetric = riskMetric
        self.receiptRefreshAt = try StoreTime.normalized(ifPresent: receiptRefreshAt, "receiptRefreshAt")
        self.receiptExpiresAt = try StoreTime.normalized(ifPresent: receiptExpiresAt, "receiptExpiresAt")
    }

    /// The update for a verified receipt. By default the next exchange is due at the receipt's Not Before
    /// (a `RECEIPT`'s field 19), or never when it has none.
    /// - Throws: ``StoreError/Code/invalidInput`` as
    ///   ``init(receipt:receiptCreatedAt:riskMetric:receiptRefreshAt:receiptExpiresAt:)``.
    public init(_ receipt: Receipt) throws(StoreError) {
        try self.init(receipt, receiptRefreshAt: receipt.notBefore)
    }

    /// The update for a verified receipt with a chosen next exchange time.
    /// - Throws: ``StoreError/Code/invalidInput`` as
    ///   ``init(receipt:receiptCreatedAt:riskMetric:receiptRefreshAt:receiptExpiresAt:)``.
    public init(_ receipt: Receipt, receiptRefreshAt: Date?) throws(StoreError) {
        try self.init(
            receipt: receipt.bytes, receiptCreatedAt: receipt.creationTime, riskMetric: receipt.riskMetric,
            receiptRefreshAt: receiptRefreshAt, receiptExpiresAt: receipt.expirationTime)
    }
}

/// One entry of a key's risk-metric history: the metric of one stored receipt.
public struct RiskMetricEntry: Sendable, Hashable, CustomStringConvertible {
    /// The risk metric Apple reported.
    public let riskMetric: Int
    /// When Apple created the receipt that carried it.
    public let receiptCreatedAt: Date
    /// When the store recorded it.
    public let recordedAt: Date

    /// Creates an entry.
    public init(riskMetric: Int, receiptCreatedAt: Date, recordedAt: Date) {
        self.riskMetric = riskMetric
        self.receiptCreatedAt = receiptCreatedAt
        self.recordedAt = recordedAt
    }

    public var description: String {
        "RiskMetricEntry(riskMetric: \(riskMetric), receiptCreatedAt: \(receiptCreatedAt), recordedAt: \(recordedAt))"
    }
}
