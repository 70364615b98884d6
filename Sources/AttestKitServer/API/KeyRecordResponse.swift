import AttestKit
import AttestKitStore
import Foundation

/// A registered key as the API shows it. Holds no key material beyond the public identifier.
struct KeyRecordResponse: Encodable {
    struct ReceiptInfo: Encodable {
        var createdAt: String
        var refreshAt: String?
    }

    struct RiskEntry: Encodable {
        var riskMetric: Int
        var receiptCreatedAt: String
        var recordedAt: String
    }

    var keyId: String
    var appId: String
    var environment: String
    var state: String
    var counter: UInt32
    var createdAt: String
    var lastAssertionAt: String?
    var revokedAt: String?
    var osVersion: String?
    var bundleVersion: String?
    var validationCategory: UInt32?
    var receipt: ReceiptInfo?
    var riskMetric: Int?
    /// `unknown` until Apple rated the key (its receipt traded), then `assessed`.
    var riskStatus: String
    var stepUp: Bool
    var riskHistory: [RiskEntry]?

    init(_ record: KeyRecord, policy: RiskPolicy, riskHistory: [RiskMetricEntry]? = nil) {
        keyId = record.keyID.base64
        appId = record.appID.description
        environment = record.environment.rawValue
        state = record.state.rawValue
        counter = record.counter
        createdAt = APITime.format(record.createdAt)
        lastAssertionAt = record.lastAssertionAt.map(APITime.format)
        revokedAt = record.revokedAt.map(APITime.format)
        osVersion = record.osVersion
        bundleVersion = record.bundleVersion
        validationCategory = record.validationCategory
        receipt = record.receiptCreatedAt.map {
            ReceiptInfo(createdAt: APITime.format($0), refreshAt: record.receiptRefreshAt.map(APITime.format))
        }
        riskMetric = record.riskMetric
        riskStatus = RiskPolicy.status(record.riskMetric)
        stepUp = policy.requiresStepUp(record.riskMetric)
        self.riskHistory = riskHistory?.map {
            RiskEntry(
                riskMetric: $0.riskMetric, receiptCreatedAt: APITime.format($0.receiptCreatedAt),
                recordedAt: APITime.format($0.recordedAt))
        }
    }
}
