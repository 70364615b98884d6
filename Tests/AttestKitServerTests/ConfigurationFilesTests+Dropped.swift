import AttestKitServer
import Foundation
import Testing

/// A file whose parser would drop a setting without a word, so that its default (weaker, for a policy) applied:
/// two equal keys in one JSON object (JSONSerialization keeps the last), a null (the providers skip it), a YAML
/// merge key (resolved by the check's parser, filed under `<<` by the provider's). Each is refused, naming the key.
extension ConfigurationFilesTests {
    @Test(
        "A file with a key twice in one JSON object, a null or a YAML merge key is refused, naming the key",
        arguments: [
            (
                #"{"policy": {"validation-categories": ["app-store"]}, "policy": {"minimum-os-version": "17.4"}}"#,
                "json", "policy"
            ),
            (
                #"{"policy": {"validation-categories": ["app-store"], "validation-categories": []}}"#, "json",
                "policy.validation-categories"
            ),
            // One key, two spellings: the parser reads both as "http".
            (#"{"http": {"port": 8081}, "\u0068ttp": {"host": "0.0.0.0"}}"#, "json", "http"),
            (#"{"policy": {"validation-categories": null}}"#, "json", "policy.validation-categories"),
            (#"{"apps": ["ABCDE12345.com.example.app", null]}"#, "json", "apps"),
            ("policy:\n  <<: {validation-categories: [app-store]}\n", "yaml", "config-file"),
            ("policy:\n  validation-categories:\n", "yaml", "policy.validation-categories"),
            ("policy:\n  validation-categories: ~\n", "yml", "policy.validation-categories"),
        ])
    func droppedSettings(contents: String, extension: String, key: String) async throws {
        let file = try TemporaryFile(contents: contents, extension: `extension`)
        await #expect {
            _ = try await ServerConfigurationSource.load(environment: [:], file: file.path)
        } throws: { error in
            (error as? ServerConfigurationError)?.key == key
        }
    }

    @Test("Strings that look like JSON syntax, nested objects and arrays still load")
    func jsonLookalikesLoad() async throws {
        let file = try TemporaryFile(
            contents: #"""
                {"http": {"port": 8081, "host": "0.0.0.0"}, "apps": ["ABCDE12345.com.example.app"],
                 "admin": {"token": "a,\"b\":{[\\\"c\"]}-0123456789abcdefghijkl"},
                 "policy": {"minimum-os-version": "17.4"}, "log": {"level": "info"}}
                """#, extension: "json")
        let configuration = try await ServerConfigurationSource.load(environment: [:], file: file.path)
        #expect(configuration.port == 8081)
        #expect(configuration.adminToken == #"a,"b":{[\"c"]}-0123456789abcdefghijkl"#)
    }
}
