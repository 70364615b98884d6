import AttestKitApple
import Foundation

/// The mock's DeviceCheck two-bit API (docs/apple-formats.md §6), with Apple's quirks: `Authorization: Bearer <JWT>`, a
/// JSON body with a Base64 `device_token` without line breaks, a `transaction_id` and a `timestamp` in milliseconds,
/// and a query on a device whose bits the token's team (`iss`) never set answered 200 `Failed to find bit state`:
/// Apple keeps the bits per device for each team, so another team's token does not read them.
///
/// Checks run in Apple's apparent order: the token (400 when missing or not a JWS, 401 when it does not verify or
/// is older than an hour), then the payload, the device token, the transaction id, the timestamp (an integer
/// within a day of the mock's clock, so seconds are refused), and for updates the bits (at least one, Booleans).
struct MockDeviceCheck: Sendable {
    let tokens: MockTokenVerifier
    let state: MockAppleState
    let now: @Sendable () -> Date

    /// The largest body accepted: Apple's device tokens are a few kilobytes.
    static let maximumBodySize = 64 * 1024

    func answer(_ endpoint: MockAppleEndpoint, authorization: String?, body: [UInt8]) async -> MockAppleAnswer {
        guard let authorization, authorization.hasPrefix("Bearer ") else { return .badAuthorization }
        let teamID: String
        switch await tokens.verify(String(authorization.dropFirst("Bearer ".count)), at: now()) {
        case .malformed: return .badAuthorization
        case .unverifiable: return .unverifiedToken
        case .expired: return .expiredToken
        case .valid(let team): teamID = team
        }
        guard let fields = try? JSONDecoder().decode([String: MockJSONValue].self, from: Data(body)) else {
            return .badPayload
        }
        guard let deviceToken = fields["device_token"]?.string, Self.isDeviceToken(deviceToken) else {
            return .badDeviceToken
        }
        guard let transaction = fields["transaction_id"]?.string, !transaction.isEmpty, transaction.utf8.count <= 256
        else {
            return .text(400, "Missing or incorrectly formatted transaction id")
        }
        let time = now()
        guard case .integer(let timestamp) = fields["timestamp"],
            abs(Double(timestamp) - time.timeIntervalSince1970 * 1_000) <= 86_400_000
        else {
            return .badTimestamp
        }
        switch endpoint {
        case .queryTwoBits:
            guard let bits = await state.bits(for: deviceToken, team: teamID) else { return .bitStateNotFound }
            let json = "{\"bit0\":\(bits.bit0),\"bit1\":\(bits.bit1),\"last_update_time\":\"\(bits.lastUpdateTime)\"}"
            return MockAppleAnswer(status: 200, text: json, contentType: "application/json")
        case .updateTwoBits:
            let bit0 = fields["bit0"]
            let bit1 = fields["bit1"]
            guard bit0 != nil || bit1 != nil else { return .badBits }
            var values: [Bool?] = []
            for value in [bit0, bit1] {
                switch value {
                case .none: values.append(nil)
                case .some(.bool(let bit)): values.append(bit)
                case .some: return .badBits
                }
            }
            await state.update(
                deviceToken, team: teamID, bit0: values[0], bit1: values[1], month: DeviceCheckMonth(date: time))
            return .ok
        case .validateDeviceToken:
            return .ok
        case .attestationData:
            return .serverError
        }
    }

    /// Non-empty standard Base64 with padding and no line breaks or other characters.
    static func isDeviceToken(_ text: String) -> Bool {
        guard !text.isEmpty, text.utf8.count % 4 == 0, text.utf8.count <= maximumBodySize else { return false }
        let alphabet = text.utf8.allSatisfy { byte in
            (0x41...0x5A).contains(byte) || (0x61...0x7A).contains(byte) || (0x30...0x39).contains(byte)
                || byte == UInt8(ascii: "+") || byte == UInt8(ascii: "/") || byte == UInt8(ascii: "=")
        }
        return alphabet && Data(base64Encoded: text) != nil
    }
}
