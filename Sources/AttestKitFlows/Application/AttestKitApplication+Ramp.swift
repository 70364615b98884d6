import AttestKit
import AttestKitStore
import Foundation

extension AttestKitApplication {
    /// The attestation ramp's admission of an attest challenge (``AttestationRamp``), before it is issued: the app is
    /// the one `appId` names (one of the accepted apps), or the only accepted one; the install is its key id, which
    /// the share must admit. The day's ceiling is spent once the challenge is stored (``spendRampCeiling(_:)``).
    /// Nothing is asked of the store here.
    ///
    /// - Returns: The app the challenge is admitted for, `nil` when neither the ramp nor `appId` names one.
    /// - Throws: 429 `attestation_deferred` (`share`, counted); `invalid_field` (`appId`, and `keyId` missing while
    ///   the ramp is on); `apps_not_configured`.
    func admitToRamp(appId: String?, keyID: KeyID?) throws(FlowError) -> AppID? {
        let ramp = configuration.ramp
        let appID: AppID
        if let appId {
            appID = try acceptedApp(appId)
            guard ramp.isOn else { return appID }
        } else {
            guard ramp.isOn else { return nil }
            appID = try impliedApp()
        }
        guard let keyID else {
            throw FlowError.invalidField(
                "keyId",
                "is required for an attest challenge while the attestation ramp is on (ramp.*): "
                    + "the key id the app generated, which the ramp admits or defers")
        }
        guard ramp.admits(appID: appID, keyID: keyID) else {
            throw deferred(.share, retryAfter: ramp.recheckAfter)
        }
        return appID
    }

    /// Takes one attestation from `appID`'s ceiling for the UTC day (`ramp.daily-ceiling`), shared by every replica
    /// through the store, once its challenge is stored: a challenge the store could not keep (a 503) spends none.
    /// Nothing is asked of the store without a ceiling.
    /// - Throws: 429 `attestation_deferred` (`ceiling`, counted); `storage_unavailable`.
    func spendRampCeiling(_ appID: AppID) async throws(FlowError) {
        let ramp = configuration.ramp
        guard ramp.dailyCeiling > 0 else { return }
        let wait: Int?
        do {
            let at = now()
            wait = try await store.take(
                from: try RateBudget.daily(name: Self.rampBudgetName(appID), ceiling: ramp.dailyCeiling, now: at),
                now: at)
        } catch {
            throw FlowError(converting: error) ?? FlowError(.internalError, .internalFailure, "internal error")
        }
        if let wait { throw deferred(.ceiling, retryAfter: wait) }
    }

    /// The name of the ceiling's daily budget of `appID` in the store: `ramp/` and the hex SHA-256 of the App ID
    /// (bounded, whatever the App ID's length), to which ``RateBudget/daily(name:ceiling:now:)`` adds the day.
    static func rampBudgetName(_ appID: AppID) -> String {
        "ramp/" + Hex.encode(appID.rpIDHash)
    }

    /// The accepted app `text` names.
    /// - Throws: `invalid_field` (`appId`).
    private func acceptedApp(_ text: String) throws(FlowError) -> AppID {
        let appID: AppID
        do {
            appID = try AppID(text)
        } catch {
            throw FlowError.invalidField("appId", "is an App ID, TEAMID.bundle.id")
        }
        guard configuration.appIDs.contains(appID) else {
            throw FlowError.invalidField("appId", "is not an app this service accepts")
        }
        return appID
    }

    /// The only accepted app, when a challenge names none.
    /// - Throws: `apps_not_configured`; `invalid_field` (`appId`) when several apps are accepted.
    private func impliedApp() throws(FlowError) -> AppID {
        guard let first = configuration.appIDs.first else { throw FlowError.appsNotConfigured }
        guard configuration.appIDs.count == 1 else {
            throw FlowError.invalidField(
                "appId",
                "is required while several apps are accepted and the attestation ramp is on: the App ID to attest")
        }
        return first
    }

    /// Counts an install the ramp deferred and returns the refusal.
    private func deferred(_ reason: FlowError.DeferralReason, retryAfter: Int) -> FlowError {
        metrics.attestationDeferred(reason)
        return FlowError.attestationDeferred(reason, retryAfter: retryAfter)
    }
}
