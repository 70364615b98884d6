import AttestKitWire
import Foundation
import Testing

@Suite("HTTP dates")
struct HTTPDateTests {
    @Test("an IMF-fixdate reads as its instant; blanks around it are allowed")
    func valid() {
        #expect(HTTPDate.parse("Sun, 06 Nov 1994 08:49:37 GMT") == Date(timeIntervalSince1970: 784_111_777))
        #expect(HTTPDate.parse(" Thu, 29 Feb 2024 00:00:00 GMT\t") == Date(timeIntervalSince1970: 1_709_164_800))
        #expect(HTTPDate.parse("Thu, 01 Jan 1970 00:00:00 GMT") == Date(timeIntervalSince1970: 0))
    }

    @Test(
        "anything else reads as nothing",
        arguments: [
            "", "Sun, 06 Nov 1994 08:49:37 gmt", "Mon, 06 Nov 1994 08:49:37 GMT", "Fri, 29 Feb 2023 00:00:00 GMT",
            "Sun, 06 Nov 1994 24:00:00 GMT", "Sun, 06 Nov 1994 08:60:00 GMT", "Sun, 6 Nov 1994 08:49:37 GMT",
            "Sun 06 Nov 1994 08:49:37 GMT", "Sun, 06 Nov 1994 08:49:37 UTC", "Sunday, 06-Nov-94 08:49:37 GMT",
            "Sun Nov  6 08:49:37 1994", "1994-11-06T08:49:37Z", "Sun, 06 Nov 1994 08:49:37 GMTX",
            "Sun, 06 Nov +994 08:49:37 GMT",
        ])
    func invalid(_ text: String) {
        #expect(HTTPDate.parse(text) == nil)
    }
}
