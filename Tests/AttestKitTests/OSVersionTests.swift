import AttestKit
import Testing

@Suite("OS versions")
struct OSVersionTests {
    @Test("dotted versions compare by component", arguments: [
        ("17", "17.0", false), ("17.4", "17.10", true), ("16.9.9", "17", true), ("17.0.1", "17", false),
    ])
    func order(lhs: String, rhs: String, less: Bool) throws {
        let left = try #require(OSVersion(lhs))
        let right = try #require(OSVersion(rhs))
        #expect((left < right) == less)
    }

    @Test("17 equals 17.0.0 and hashes alike")
    func equality() throws {
        let a = try #require(OSVersion("17"))
        let b = try #require(OSVersion("17.0.0"))
        #expect(a == b)
        #expect(Set([a, b]).count == 1)
    }

    @Test("malformed versions are refused", arguments: ["", "17.", ".1", "17..1", "a", "17.4b", "1.2.3.4.5", "1234567"])
    func malformed(text: String) {
        #expect(OSVersion(text) == nil)
    }
}
