import AttestKit
import Testing

/// App IDs as a configuration gives them: `AppID(validating:)` refuses what no device would attest for.
@Suite struct AppIDTests {
    @Test(arguments: ["ABCDE12345.com.example.app", "0123456789.a", "Z9Z9Z9Z9Z9.com.example.app.clip"])
    func wellFormedTeamIDsAreAccepted(text: String) throws {
        let appID = try AppID(validating: text)
        #expect(appID.description == text)
        #expect(appID == (try AppID(text)))
    }

    @Test(arguments: [
        "com.example.app", "abcde12345.com.example.app", "ABCDE1234.com.example.app", "ABCDE123456.com.example.app",
        "ABCDE-1234.com.example.app", "ÄBCDE12345.com.example.app", ".com.example.app", "",
    ])
    func otherTeamIDsAreRefusedWithTheRule(text: String) {
        #expect {
            try AppID(validating: text)
        } throws: { error in
            guard let error = error as? AttestKitError else { return false }
            return error.code == .appIdMalformed && error.reason.contains("10-character Team ID (A-Z, 0-9)")
        }
    }

    @Test func aTeamIDWithoutABundleIDIsStillMalformed() {
        #expect(throws: AttestKitError.self) { try AppID(validating: "ABCDE12345") }
        #expect(throws: AttestKitError.self) { try AppID(validating: "ABCDE12345.") }
    }

    /// The structural parser stays lenient: it reads what real objects and stored rows hold.
    @Test func theStructuralParserIsUnchanged() throws {
        #expect((try AppID("org.sample.AttestSample")).teamID == "org")
        #expect(AppID.isTeamID("ABCDE12345"))
        #expect(!AppID.isTeamID("ABCDE1234"))
    }
}
