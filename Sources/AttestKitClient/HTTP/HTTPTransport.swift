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
public struct URLSessionTransport: HTTPTransport {
    /// The session.
    public let session: URLSession

    /// Creates a transport over `session` (`.shared` by default).
    public init(session: URLSession = .shared) { self.session = session }

    /// Sends `request` with `URLSession.data(for:)`.
    public func send(_ request: URLRequest) async throws -> (Data, HTTPURLResponse) {
        let (data, response): (Data, URLResponse)
        do {
            (data, response) = try await session.data(for: request)
        } catch {
            throw AttestKitClientError(.transport, reason: "the request failed: \(error.localizedDescription)")
        }
        guard let http = response as? HTTPURLResponse else {
            throw AttestKitClientError(.invalidResponse, reason: "the answer is not HTTP")
        }
        return (data, http)
    }
}
