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

    @Test("what a terminal or a log viewer acts on is escaped too: DEL, C1 controls, separators, bidi formatting")
    func invisibleControls() throws {
        let sink = Lines()
        let handler = JSONLogHandler(
            label: "test", level: .info, now: { Date(timeIntervalSince1970: 0) }, sink: { sink.append($0) })
        let logger = Logger(label: "test", factory: { _ in handler })
        let hostile = "\u{9b}2J\u{7f}\u{85}\u{2028}\u{2029}\u{202e}\u{2066}\u{61c}é✓"
        logger.error("x", metadata: ["reason": "\(hostile)"])
        let line = try #require(sink.all.first)
        let raw: Set<UInt32> = [0x9B, 0x7F, 0x85, 0x2028, 0x2029, 0x202E, 0x2066, 0x061C]
        #expect(!line.unicodeScalars.contains { raw.contains($0.value) }, "\(line)")
        let object = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: String])
        #expect(object["reason"] == hostile)
    }
}
