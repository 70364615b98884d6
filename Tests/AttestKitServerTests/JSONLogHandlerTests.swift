import AttestKitServer
import Foundation
import Logging
import Synchronization
import Testing

@Suite("JSON logs")
struct JSONLogHandlerTests {
    final class Lines: Sendable {
        let lines = Mutex<[String]>([])
        func append(_ line: String) { lines.withLock { $0.append(line) } }
        var all: [String] { lines.withLock { $0 } }
    }

    @Test("one JSON object per line, metadata as strings, control characters escaped")
    func lines() throws {
        let sink = Lines()
        let handler = JSONLogHandler(
            label: "test", level: .info, now: { Date(timeIntervalSince1970: 0) }, sink: { sink.append($0) })
        var logger = Logger(label: "test", factory: { _ in handler })
        logger[metadataKey: "service"] = "attestkit"
        logger.info("line\nbreak \"quoted\" \u{01}", metadata: ["code": "nonce_mismatch", "n": "\(3)"])
        logger.debug("below the level")
        #expect(sink.all.count == 1)
        let line = try #require(sink.all.first)
        #expect(!line.contains("\n"))
        let object = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: String])
        #expect(object["message"] == "line\nbreak \"quoted\" \u{01}")
        #expect(object["level"] == "info")
        #expect(object["label"] == "test")
        #expect(object["time"] == "1970-01-01T00:00:00.000Z")
        #expect(object["code"] == "nonce_mismatch")
        #expect(object["service"] == "attestkit")
    }
}
