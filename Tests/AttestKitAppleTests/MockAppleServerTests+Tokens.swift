import AttestKitAppleMock
import Crypto
import Foundation
import Testing

extension MockAppleServerTests {
    /// A compact JWS of `header` and `claims` signed with the fixture's key (raw r‖s, as JWS wants).
    static func jws(header: String, claims: String) throws -> String {
        func url(_ data: Data) -> String {
            data.base64EncodedString().replacingOccurrences(of: "+", with: "-")
                .replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
        }
        let input = url(Data(header.utf8)) + "." + url(Data(claims.utf8))
        let signature = try AppleFixture.signingKey.signature(for: Data(input.utf8))
        return input + "." + url(signature.rawRepresentation)
    }

    @Test("a mock told no key id or team id still wants a kid and an iss, and an algorithm other than ES256 is 400")
    func tokensNeedAKeyIDAndATeamID() async throws {
        let clock = TestTime()
        let mock = try MockAppleServer(
            configuration: .init(verificationKeyPEM: AppleFixture.publicKeyPEM, now: clock.closure),
            softwareApple: AppleFixture.apple)
        try await mock.withRunning { baseURL in
            let iat = Int(clock.now().timeIntervalSince1970)
            let team = "{\"iss\":\"\(AppleFixture.teamID)\",\"iat\":\(iat)}"
            let cases: [(header: String, claims: String, status: Int)] = [
                ("{\"alg\":\"ES256\",\"kid\":\"\(AppleFixture.keyID)\"}", team, 200),
                ("{\"alg\":\"ES256\",\"kid\":\"ANYKEYID99\"}", team, 200),
                ("{\"alg\":\"ES256\"}", team, 401),
                ("{\"alg\":\"ES256\",\"kid\":\"\"}", team, 401),
                ("{\"alg\":\"ES256\",\"kid\":\"\(AppleFixture.keyID)\"}", "{\"iss\":\"\",\"iat\":\(iat)}", 401),
                ("{\"alg\":\"ES256\",\"kid\":\"\(AppleFixture.keyID)\"}", "{\"iat\":\(iat)}", 401),
                ("{\"alg\":\"HS256\",\"kid\":\"\(AppleFixture.keyID)\"}", team, 400),
                ("{\"alg\":\"none\",\"kid\":\"\(AppleFixture.keyID)\"}", team, 400),
            ]
            for (header, claims, status) in cases {
                let token = try Self.jws(header: header, claims: claims)
                let answer = try await Self.send(
                    baseURL + "/v1/query_two_bits", headers: [("Authorization", "Bearer \(token)")],
                    body: Self.body())
                #expect(answer.status == status, "\(header) \(claims)")
                if status == 400 { #expect(answer.text == "Missing or badly formatted authorization token") }
                if status == 401 { #expect(answer.text == "Unable to verify authorization token") }
            }
        }
    }
}
