public import Foundation
#if canImport(FoundationNetworking)
    public import FoundationNetworking
#endif

/// Sends one HTTP request: the seam between the client and the network, so tests can answer in-process.
public protocol HTTPTransport: Sendable {
    /// Sends `request` and returns the body and the response head.
    func send(_ request: URLRequest) async throws -> (Data, HTTPURLResponse)
}

/// ``HTTPTransport`` over a `URLSession` (FoundationNetworking on Linux).
///
/// It uses `dataTask(with:completionHandler:)`, available on every platform the client supports (the `async`
/// `URLSession.data(for:)` needs iOS 15).
public struct URLSessionTransport: HTTPTransport {
    /// The session.
    public let session: URLSession

    /// Creates a transport over `session` (`.shared` by default).
    public init(session: URLSession = .shared) { self.session = session }

    /// Sends `request`.
    /// - Throws: ``AttestKitClientError/Code/transport`` when no answer arrived,
    ///   ``AttestKitClientError/Code/invalidResponse`` for an answer that is not HTTP.
    public func send(_ request: URLRequest) async throws -> (Data, HTTPURLResponse) {
        try await withCheckedThrowingContinuation { continuation in
            let task = session.dataTask(with: request) { data, response, error in
                if let error {
                    let reason = "the request failed: \(error.localizedDescription)"
                    continuation.resume(throwing: AttestKitClientError(.transport, reason: reason))
                } else if let http = response as? HTTPURLResponse {
                    continuation.resume(returning: (data ?? Data(), http))
                } else {
                    continuation.resume(
                        throwing: AttestKitClientError(.invalidResponse, reason: "the answer is not HTTP"))
                }
            }
            task.resume()
        }
    }
}
