import AttestKitFlows
import AttestKitTestSupport
import Logging
import NIOHTTP1
import Testing
import Vapor

@testable import AttestKitVapor

/// The Vapor edge's one mapping of an error to its answer, and the log line `attestkit serve` writes for a bug.
@Suite("Vapor error answers")
struct VaporErrorAnswerTests {
    /// An error no flow converts: a bug.
    struct Bug: Error {}

    @Test("an error nothing decided answers 500 internal_error and is logged once; a flow's own errors are not")
    func unexpectedErrorLogged() throws {
        let capture = LogCapture()
        let logger = capture.logger(level: .debug)
        let bug = AttestKitAbort.response(to: Bug(), logger: logger)
        #expect(bug.status.code == 500)
        let line = try #require(capture.logged.first)
        #expect(capture.logged.count == 1)
        #expect(line.level == .error && line.message == "unexpected error: a bug")
        #expect(line.metadata["error.type"] == "Bug")
        // A refusal, and an internal failure a flow decided (and logged where it did), add no line here.
        let refused = AttestKitAbort.response(to: FlowError.invalidField("keyId", "is required"), logger: logger)
        let decided = AttestKitAbort.response(
            to: FlowError(.internalError, .internalFailure, "the answer could not be encoded"), logger: logger)
        #expect(refused.status.code == 400 && decided.status.code == 500)
        #expect(capture.logged.count == 1)
    }
}
