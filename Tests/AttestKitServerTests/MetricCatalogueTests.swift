import Foundation
import Testing

@testable import AttestKitServer

/// Every metric the sources make has its own help text, so `/metrics` never prints the generic one, and is named
/// in docs/operations.md.
struct MetricCatalogueTests {
    @Test("every metric label in Sources/ has a help text of its own in MetricCatalogue")
    func everyMetricHasItsHelp() throws {
        let sources = ServerSettingsTests.root.appendingPathComponent("Sources")
        let files = try #require(FileManager.default.enumerator(at: sources, includingPropertiesForKeys: nil))
        var labels: Set<String> = []
        let pattern = try Regex(#"label: "(attestkit_[a-z_]+)""#)
        for case let file as URL in files where file.pathExtension == "swift" {
            let text = try String(contentsOf: file, encoding: .utf8)
            for match in text.matches(of: pattern) {
                if let name = match.output[1].substring { labels.insert(String(name)) }
            }
        }
        #expect(labels.count > 20, "\(labels)")
        let missing = labels.filter { MetricCatalogue.help[$0] == nil }
        #expect(missing.isEmpty, "no help text: \(missing.sorted())")
    }

    @Test("every metric of MetricCatalogue is named in docs/operations.md")
    func everyMetricIsDocumented() throws {
        let file = ServerSettingsTests.root.appendingPathComponent("docs/operations.md")
        let text = try String(contentsOf: file, encoding: .utf8)
        let missing = MetricCatalogue.help.keys.filter { !text.contains("`\($0)`") && !text.contains("`\($0){") }
        #expect(missing.isEmpty, "not in docs/operations.md: \(missing.sorted())")
    }
}
