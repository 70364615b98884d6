import AttestKit
import AttestKitFlows
import AttestKitServer
import AttestKitTesting
import AttestKitWire
import Crypto
import Testing

/// A configuration, or a message carrying a token, printed, interpolated into a log line or `dump`ed, shows no
/// secret: the admin, previous admin, backend and debug tokens, Apple's `.p8` key, the database password (alone or
/// in the storage URL), session tokens and DeviceCheck tokens.
extension ServerConfigurationTests {
    static let secrets = (
        admin: "admin-secret-0123456789abcdef", previous: "previous-admin-0123456789abcdef",
        backend: "backend-secret-0123456789abcdef", debug: "debug-token-secret-0123456789abcdef",
        password: "pg-password-hunter2", url: "pg-url-password-swordfish"
    )

    @Test("a configuration's description, debug description and dump hold no secret")
    func configurationHidesSecrets() throws {
        let pem = P256.Signing.PrivateKey().pemRepresentation
        var configuration = ServerConfiguration(
            appIDs: [Fixture.appID], environments: .development,
            storageURL: "postgres://attestkit:\(Self.secrets.url)@db.example/attestkit",
            apple: .init(privateKeyPEM: pem, keyID: Fixture.appleKeyID, teamID: Fixture.teamID),
            trustAnchors: Fixture.apple.trustAnchors, adminToken: Self.secrets.admin,
            adminPreviousTokens: [Self.secrets.previous], backendTokens: [Self.secrets.backend])
        configuration.storagePassword = Self.secrets.password
        configuration.debugTokens = [Self.secrets.debug]
        let texts = [
            Self.printed(configuration), Self.printed(configuration.application), Self.printed(configuration.apple),
            Self.printed(try DebugTokens([Self.secrets.debug], environments: .development)),
        ]
        let pemBody = pem.split(separator: "\n")[1]
        for text in texts {
            for secret in [
                Self.secrets.admin, Self.secrets.previous, Self.secrets.backend, Self.secrets.debug,
                Self.secrets.password, Self.secrets.url, String(pemBody),
            ] {
                #expect(!text.contains(secret), "\(secret) in \(text)")
            }
            // A token's bytes printed as numbers are the token too.
            #expect(!text.contains(Array(Self.secrets.debug.utf8).map(String.init).joined(separator: ", ")))
        }
        #expect(texts[0].contains(Fixture.appID.description), "the description still says what it configures")
    }

    @Test("messages carrying a session token or a DeviceCheck token never print it")
    func messagesHideTokens() {
        let token = "eyJhbGciOiJFUzI1NiJ9.eyJzdWIiOiJ4In0.c2lnbmF0dXJl"
        let deviceToken = "QUFBQUJCQkJDQ0NDRERERA=="
        let texts = [
            Self.printed(TokenResponse(token: token, expiresAt: "2026-11-29T12:00:00.000Z")),
            Self.printed(TokenConsumeRequest(token: token)),
            Self.printed(TokenIntrospectionRequest(token: token)),
            Self.printed(DeviceTokenRequest(deviceToken: deviceToken)),
            Self.printed(DeviceCheckUpdateRequest(deviceToken: deviceToken, bit0: true)),
            Self.printed(
                RequestVerificationRequest(
                    method: "POST", target: "/orders",
                    headers: ["X-AttestKit-Device-Token": deviceToken, "X-AttestKit-Debug-Token": token])),
        ]
        for text in texts {
            #expect(!text.contains(token) && !text.contains(deviceToken), "\(text)")
        }
    }

    /// Every way a value is turned into text: `description`, `debugDescription` (`String(reflecting:)`) and `dump`.
    static func printed(_ value: Any?) -> String {
        var dumped = ""
        dump(value, to: &dumped)
        return "\(String(describing: value))\n\(String(reflecting: value))\n\(dumped)"
    }

    @Test("an Apple timeout that is not a number or under a millisecond is refused, not trapped on")
    func appleTimeoutBounds() {
        for timeout in [Double.nan, 0.0004, -1, .infinity, 601] {
            let configuration = ServerConfiguration(
                appIDs: [Fixture.appID], environments: .development, storageURL: "memory:",
                apple: .init(
                    privateKeyPEM: P256.Signing.PrivateKey().pemRepresentation, keyID: Fixture.appleKeyID,
                    teamID: Fixture.teamID, timeout: timeout),
                trustAnchors: Fixture.apple.trustAnchors)
            #expect { try configuration.validate() } throws: { error in
                (error as? ServerConfigurationError)?.key == "apple.timeout"
            }
        }
    }
}
