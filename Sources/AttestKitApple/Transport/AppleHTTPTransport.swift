import AsyncHTTPClient
import Foundation
import Logging
import NIOCore
import NIOHTTP1

/// Sends one call to an Apple service: a POST with a fresh `Authorization` per attempt, a deadline covering every
/// retry, a response size cap, and retries with backoff for 429, 5xx and connection failures.
///
/// A 429 or 5xx with a valid `Retry-After` (seconds or an IMF-fixdate, see ``RetryAfter``) waits what Apple asks,
/// never less (and no less than the jittered backoff); a malformed one is ignored. When Apple asks for longer than
/// ``RetryPolicy/maximumDelay``, or the wait would end at or past the call's deadline, the call does not retry
/// before Apple's time: it returns the answer it has at once, with the wait asked for
/// (``Response/retryAfter``), so that the caller reports it classified (e.g. `rate_limited` with `attempts` 1 and
/// ``AppleServiceError/retryAfter``) and waits itself rather than time out later.
///
/// The answer of the last attempt is returned whatever its status (callers classify it); only failures without an
/// answer are thrown. The logger receives static messages with the endpoint label, status, attempt and wait, never
/// URLs' secrets, headers, tokens or bodies. AsyncHTTPClient itself gets no logger.
struct AppleHTTPTransport: Sendable {
    /// One call.
    struct Request: Sendable {
        /// A bounded label for logs and metrics, e.g. `query_two_bits`.
        var endpoint: String
        /// The full URL.
        var url: String
        /// The `Content-Type`, if any.
        var contentType: String?
        /// The body.
        var body: [UInt8]
        /// The `Authorization` header value, fetched before each attempt.
        var authorization: @Sendable () async throws(AppleServiceError) -> String
        /// The retries of this call, in place of the configuration's; `nil` for the configuration's.
        var retry: RetryPolicy? = nil
    }

    /// Apple's answer to the last attempt.
    struct Response: Sendable {
        /// The HTTP status.
        var status: Int
        /// The body, at most the configured size.
        var body: [UInt8]
        /// How many requests were sent.
        var attempts: Int
        /// The wait the answer's `Retry-After` asked for, if it had a valid one.
        var retryAfter: Duration? = nil

        /// The body as UTF-8 text (invalid bytes replaced).
        var text: String { String(decoding: body, as: UTF8.self) }
    }

    /// What one attempt produced.
    private enum Outcome {
        case answer(status: Int, body: [UInt8], retryAfter: Duration?)
        case failure(AppleServiceError)
    }

    let client: HTTPClient
    let configuration: TransportConfiguration
    let clock: any Clock<Duration>
    /// The wall clock that `Retry-After` dates are measured from.
    let now: @Sendable () -> Date

    /// Statuses worth another attempt: rate limiting and server failures.
    static func isRetryable(status: Int) -> Bool { status == 429 || (500...599).contains(status) }

    /// Sends `request` with retries and returns the last answer.
    ///
    /// - Throws: ``AppleServiceError/Code/timeout`` past the deadline, ``AppleServiceError/Code/transport`` when no
    ///   answer came, ``AppleServiceError/Code/cancelled`` when the calling task was cancelled before one,
    ///   ``AppleServiceError/Code/responseTooLarge``, or what `authorization` throws.
    func send(_ request: Request, logger: Logger) async throws(AppleServiceError) -> Response {
        let policy = request.retry ?? configuration.retry
        let deadline = NIODeadline.now() + TimeAmount(configuration.timeout)
        var generator = SystemRandomNumberGenerator()
        var attempt = 0
        // Apple's last asked wait: kept when a retry then fails without an answer (the deadline cut it), so that
        // the caller still learns how long Apple asked to wait.
        var askedWait: Duration?
        while true {
            attempt += 1
            let outcome = try await once(request, deadline: deadline)
            let retryAfter: Duration?
            switch outcome {
            case .answer(let status, let body, let after):
                logger.debug(
                    "Apple answered",
                    metadata: [
                        "apple.endpoint": "\(request.endpoint)", "http.status": "\(status)",
                        "apple.attempt": "\(attempt)",
                    ])
                guard Self.isRetryable(status: status), attempt < policy.maximumAttempts,
                    (after ?? .zero) <= policy.maximumDelay
                else {
                    return Response(status: status, body: body, attempts: attempt, retryAfter: after)
                }
                retryAfter = after
                askedWait = after ?? askedWait
            case .failure(let error):
                logger.debug(
                    "Apple call failed without an answer",
                    metadata: [
                        "apple.endpoint": "\(request.endpoint)", "apple.error": "\(error.code)",
                        "apple.attempt": "\(attempt)",
                    ])
                guard error.isRetryable, attempt < policy.maximumAttempts, !Task.isCancelled else {
                    throw error.with(attempts: attempt, retryAfter: error.retryAfter ?? askedWait)
                }
                retryAfter = nil
            }
            let delay = policy.delay(beforeRetry: attempt, retryAfter: retryAfter, using: &generator)
            guard NIODeadline.now() + TimeAmount(delay) < deadline else {
                logger.debug(
                    "Apple call not retried: the deadline is too near",
                    metadata: ["apple.endpoint": "\(request.endpoint)"])
                return try Self.finish(outcome, attempts: attempt, askedWait: askedWait)
            }
            logger.debug(
                "Retrying an Apple call",
                metadata: [
                    "apple.endpoint": "\(request.endpoint)", "apple.attempt": "\(attempt)",
                    "apple.retry_in_ms": "\(RetryPolicy.nanoseconds(delay) / 1_000_000)",
                ])
            do {
                try await clock.sleep(for: delay)
            } catch {
                return try Self.finish(outcome, attempts: attempt, askedWait: askedWait)
            }
        }
    }

    /// The last outcome as the call's result; a failure without an answer keeps `askedWait`, the wait Apple asked
    /// for in an earlier answer of the call.
    private static func finish(
        _ outcome: Outcome, attempts: Int, askedWait: Duration?
    ) throws(AppleServiceError) -> Response {
        switch outcome {
        case .answer(let status, let body, let retryAfter):
            return Response(status: status, body: body, attempts: attempts, retryAfter: retryAfter)
        case .failure(let error): throw error.with(attempts: attempts, retryAfter: error.retryAfter ?? askedWait)
        }
    }

    /// One request; failures without an answer become ``Outcome/failure(_:)``.
    private func once(_ request: Request, deadline: NIODeadline) async throws(AppleServiceError) -> Outcome {
        var http = HTTPClientRequest(url: request.url)
        http.method = .POST
        http.headers.add(name: "Authorization", value: try await request.authorization())
        if let contentType = request.contentType { http.headers.add(name: "Content-Type", value: contentType) }
        http.body = .bytes(ByteBuffer(bytes: request.body))
        do {
            let response = try await client.execute(http, deadline: deadline)
            let buffer = try await Self.collect(response.body, upTo: configuration.maximumResponseSize, by: deadline)
            return .answer(
                status: Int(response.status.code), body: Array(buffer.readableBytesView),
                retryAfter: response.headers.first(name: "Retry-After").flatMap { RetryAfter.wait($0, now: now()) })
        } catch {
            return .failure(Self.failure(error, deadline: deadline))
        }
    }

    /// The answer's body, read by the call's deadline: AsyncHTTPClient's deadline ends with the answer's head, so an
    /// Apple (or a connection) that sends its headers and then stalls would otherwise hold the call for as long as
    /// the connection stays open.
    static func collect(
        _ body: HTTPClientResponse.Body, upTo maximum: Int, by deadline: NIODeadline
    ) async throws -> ByteBuffer {
        try await withThrowingTaskGroup(of: ByteBuffer?.self) { group in
            group.addTask { try await body.collect(upTo: maximum) }
            group.addTask {
                let remaining = deadline - NIODeadline.now()
                if remaining > .zero { try await Task.sleep(nanoseconds: UInt64(remaining.nanoseconds)) }
                return nil
            }
            defer { group.cancelAll() }
            guard let first = try await group.next(), let buffer = first else {
                throw HTTPClientError.deadlineExceeded
            }
            return buffer
        }
    }

    /// Maps an AsyncHTTPClient or NIO error to a code. A call whose task was cancelled is
    /// ``AppleServiceError/Code/cancelled`` whatever the client made of it (AsyncHTTPClient reports a cancelled
    /// request as `cancelled`, a closed connection or a read that ended): it says nothing of Apple.
    static func failure(_ error: any Error, deadline: NIODeadline) -> AppleServiceError {
        if Task.isCancelled || error is CancellationError {
            return AppleServiceError(.cancelled, "the call was cancelled before an answer")
        }
        if error is NIOTooManyBytesError {
            return AppleServiceError(.responseTooLarge, "the answer is larger than the response size cap")
        }
        if let error = error as? HTTPClientError {
            if error == .deadlineExceeded || NIODeadline.now() >= deadline {
                return AppleServiceError(.timeout, "the call's deadline passed before an answer")
            }
            if [HTTPClientError.invalidURL, .emptyHost, .emptyScheme].contains(error) {
                return AppleServiceError(.invalidConfiguration, "the URL is unusable: \(error.shortDescription)")
            }
            return AppleServiceError(.transport, "no answer: \(error.shortDescription)")
        }
        if NIODeadline.now() >= deadline {
            return AppleServiceError(.timeout, "the call's deadline passed before an answer")
        }
        return AppleServiceError(.transport, "no answer: \(String(describing: type(of: error)))")
    }
}
