import AttestKitWire
public import Foundation
#if canImport(FoundationNetworking)
    public import FoundationNetworking
#endif

extension AppAttestManager {
    /// An assertion for the request `method target` with `body`, bound with `RequestBinding`.
    ///
    /// When the device no longer knows a key the service has accepted assertions of (``DeviceServiceError/invalidKey``,
    /// as after the app's data moved to another device), the key is replaced and the assertion made again, once. A
    /// key that fails so before the service accepted any of its assertions is replaced only after the backoff: a
    /// device that refuses every new key costs one attestation per backoff period, not one per request. Requests
    /// signing at once that meet the same loss share one replacement: each is signed again with the new key.
    /// - Parameters:
    ///   - method: The HTTP method.
    ///   - target: The path and query exactly as sent, starting with `/`.
    ///   - body: The exact body bytes.
    /// - Throws: ``AttestKitClientError``; ``AttestKitClientError/Code/unavailable`` when the device or the service
    ///   cannot help now; ``AttestKitClientError/Code/attestationDeferred`` while the service's ramp defers the
    ///   key's attestation.
    ///
    /// The manager does not see the answer to a request signed here, so it counts the assertion as accepted: a
    /// request of its own refused as `counter_not_increasing` meanwhile was overtaken by it, and keeps its key
    /// (before, such a refusal was taken for a counter gone back and the key replaced).
    public func assertion(method: String, target: String, body: Data) async throws -> SignedRequest {
        clock += 1
        let started = clock
        pending[started] = PendingAssertion()
        let signed: SignedRequest
        do {
            signed = try await makeAssertion(method: method, target: target, body: body)
        } catch {
            pending[started] = nil
            throw error
        }
        clock += 1
        let ticket = Ticket(
            keyID: signed.keyID, started: started, finished: clock, timestamped: signed.freshness.kind == .timestamp)
        _ = finish(ticket, counterRefused: false)
        return signed
    }

    /// ``assertion(method:target:body:)`` without noting it: the caller tracks it.
    func makeAssertion(method: String, target: String, body: Data) async throws -> SignedRequest {
        var replaced = false
        while true {
            let keyID = try await attestedKeyID()
            let freshness = try await makeFreshness(for: keyID)
            let binding: RequestBinding
            do {
                binding = try RequestBinding(method: method, target: target, body: body, freshness: freshness)
            } catch {
                throw AttestKitClientError(.invalidRequest, reason: "the request cannot be bound: \(error)")
            }
            do {
                let assertion = try await provider.generateAssertion(
                    keyID, clientDataHash: Data(binding.clientDataHash))
                return SignedRequest(keyID: keyID, assertion: assertion, freshness: freshness)
            } catch {
                let deviceError = error as? DeviceServiceError ?? .unknown
                if deviceError.invalidatesKey {
                    // Another request met the same loss first and replaced the key: sign with its replacement.
                    if state?.keyID != keyID && !replaced {
                        replaced = true
                        continue
                    }
                    let proven = state?.keyID == keyID && state?.asserted == true
                    replaceKey(keyID, proven: proven && !replaced)
                    if proven && !replaced {
                        replaced = true
                        continue
                    }
                }
                throw AttestKitClientError(
                    .unavailable, deviceError: deviceError, retryAfter: state?.notBefore,
                    reason: "the device could not sign: \(deviceError)")
            }
        }
    }

    /// `request` with the assertion headers added (``SignedRequest/headers``), or with only
    /// `X-AttestKit-Debug-Token` where ``Configuration/debugToken`` is sent.
    /// - Throws: ``AttestKitClientError/Code/invalidRequest`` for a request without a URL or with a streamed body,
    ///   then as ``assertion(method:target:body:)``.
    public func sign(_ request: URLRequest) async throws -> URLRequest {
        if let debugToken = configuration.activeDebugToken {
            var request = request
            request.setValue(debugToken, forHTTPHeaderField: AttestKitHeaderNames.debugToken)
            return request
        }
        let (request, ticket) = try await signed(request)
        // Not sent by this manager: its answer is unknown, so count it as accepted.
        _ = finish(ticket, counterRefused: false)
        return request
    }

    private func makeFreshness(for keyID: String) async throws -> Freshness {
        switch freshness {
        case .timestamp:
            let milliseconds = (now().timeIntervalSince1970 * 1_000).rounded(.down)
            return .timestamp(milliseconds: Int64(max(0, milliseconds)))
        case .challenge:
            do {
                return .challenge(try await service.challenge(for: .assert, keyID: keyID).id)
            } catch let error as AttestKitClientError where error.isTransient {
                throw error.unavailable("no assertion challenge")
            }
        case .vouched:
            throw AttestKitClientError(.invalidRequest, reason: "an app's assertion names a challenge or a timestamp")
        }
    }

    /// The origin-form request target of `url`: the percent-encoded path (`/` when empty) and query.
    static func target(of url: URL) -> String? {
        guard let components = URLComponents(url: url, resolvingAgainstBaseURL: true) else { return nil }
        let path = components.percentEncodedPath.isEmpty ? "/" : components.percentEncodedPath
        guard let query = components.percentEncodedQuery else { return path }
        return path + "?" + query
    }
}
