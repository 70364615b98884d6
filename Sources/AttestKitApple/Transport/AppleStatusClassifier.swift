/// Turns an Apple error answer into an ``AppleServiceError``: by status first, then for 400 and 401 by Apple's text
/// (docs/apple-formats.md §5, §6 "Bodies actually seen": the texts differ from Apple's table, so both are matched).
enum AppleStatusClassifier {
    /// Which service answered: their 400s and 404s mean different things.
    enum Service {
        case deviceCheck
        case receiptExchange
    }

    /// The error for a non-success answer, with the wait its `Retry-After` asked for.
    static func error(
        status: Int, text: String, service: Service, attempts: Int, retryAfter: Duration?
    ) -> AppleServiceError {
        let (code, reason) = classify(status: status, text: text.lowercased(), service: service)
        return AppleServiceError(
            code, reason, status: status, appleText: text, attempts: attempts, retryAfter: retryAfter)
    }

    private static func classify(
        status: Int, text: String, service: Service
    ) -> (AppleServiceError.Code, String) {
        switch status {
        case 400:
            switch service {
            case .deviceCheck: return badRequest(text)
            case .receiptExchange:
                if text.contains("environment") {
                    return (.incorrectEnvironment, "the receipt belongs to the other environment")
                }
                return (.badPayload, "Apple could not read the receipt body")
            }
        case 401:
            if text.contains("expired") {
                return (.authorizationTokenExpired, "Apple found the provider token expired")
            }
            return (.invalidAuthorizationToken, "Apple could not verify the provider token")
        case 403:
            return (.forbidden, "Apple does not allow this action for this key or team")
        case 404 where service == .receiptExchange:
            return (.noData, "Apple holds no data for this receipt (it keeps data for 30 days)")
        case 405:
            return (.methodNotAllowed, "Apple says the endpoint was used incorrectly")
        case 429:
            return (.rateLimited, "Apple is rate limiting the calls")
        case 503:
            return (.serviceUnavailable, "Apple's service is unavailable")
        case 500...599:
            return (.serverError, "Apple's service failed")
        default:
            return (.unexpectedResponse, "Apple answered with an unexpected status")
        }
    }

    /// DeviceCheck's 400s, by the words of Apple's table and of the texts actually seen. The device token check
    /// comes first: its text ("... device token payload") also names the payload.
    private static func badRequest(_ text: String) -> (AppleServiceError.Code, String) {
        if text.contains("device token") || text.contains("device_token") {
            return (.badDeviceToken, "Apple rejected the device token as missing or malformed")
        }
        if text.contains("bits") {
            return (.badBits, "Apple rejected the bits as missing or malformed")
        }
        if text.contains("timestamp") || text.contains("time stamp") {
            return (.badTimestamp, "Apple rejected the timestamp as missing or malformed")
        }
        if text.contains("authorization token") || text.contains("authentication token")
            || text.contains("authorization_token") || text.contains("authentication_token")
        {
            return (.badAuthorizationToken, "Apple rejected the provider token as missing or malformed")
        }
        return (.badPayload, "Apple rejected the payload as missing or malformed")
    }
}
