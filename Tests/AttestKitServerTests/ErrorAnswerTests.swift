import AttestKitFlows
import AttestKitTestSupport
import Logging
import Testing

@testable import AttestKitServer

/// The Hummingbird edge's mapping of an error to its answer, and the log line for a bug, as the Vapor edge writes it.
@Suite("Error answers")
struct ErrorAnswerTests {
    /// An error no flow converts: a bug.
    struct Bug: Error {}

    @Test("an error nothing converts answers 500 internal_error and is logged once by its type; mapped errors are not")
    func unexpectedErrorLogged() throws {
        let capture = LogCapture()
        let logger = capture.logger(level: .debug)
        let bug = APIError.answering(Bug(), logger: logger)
        #expect(bug.code == "internal_error")
        let line = try #require(capture.logged.first)
        #expect(capture.logged.count == 1)
        #expect(line.level == .error && line.message == "unexpected error: a bug")
        #expect(line.metadata["error.type"] == "Bug")
        // Mapped once already (the routes' answers), a refusal, and a flow's decided failure: no line here.
        _ = APIError.answering(bug, logger: logger)
        _ = APIError.answering(FlowError.invalidField("keyId", "is required"), logger: logger)
        _ = APIError.answering(FlowError(.internalError, .internalFailure, "decided"), logger: logger)
        #expect(capture.logged.count == 1)
    }
}
