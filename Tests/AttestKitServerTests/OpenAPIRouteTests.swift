import AttestKit
import AttestKitServer
import AttestKitStore
import AttestKitTesting
import AttestKitWire
import Foundation
import NIOHTTP1
import Testing

/// The OpenAPI document lists exactly the routes the server registers.
@Suite("OpenAPI routes")
struct OpenAPIRouteTests {
    /// `docs/openapi.yaml`, found from this file: Tests/AttestKitServerTests/ → ../../docs.
    static let document = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("docs/openapi.yaml")

    static let methods: Set<String> = ["get", "put", "post", "delete", "options", "head", "patch", "trace"]

    /// `METHOD /path` for every operation under `paths:` (paths at two spaces, methods at four), in order.
    static func operations(in text: String) -> [String] {
        var operations: [String] = []
        var inPaths = false
        var path: String?
        for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
            let trimmed = line.trimmingCharacters(in: .whitespaces)
            if trimmed.isEmpty || trimmed.hasPrefix("#") { continue }
            let indent = line.prefix { $0 == " " }.count
            if indent == 0 {
                inPaths = trimmed == "paths:"
                path = nil
                continue
            }
            guard inPaths, trimmed.hasSuffix(":") else { continue }
            let key = String(trimmed.dropLast())
            if indent == 2 {
                path = key.hasPrefix("/") ? key : nil
            } else if indent == 4, let path, methods.contains(key) {
                operations.append("\(key.uppercased()) \(path)")
            }
        }
        return operations
    }

    @Test("docs/openapi.yaml lists exactly AttestKitServer.routes")
    func sameRoutes() throws {
        let text = try String(contentsOf: Self.document, encoding: .utf8)
        let documented = Self.operations(in: text)
        #expect(!documented.isEmpty, "no operations found in \(Self.document.path)")
        #expect(Set(documented).count == documented.count, "duplicates: \(documented)")
        let registered = AttestKitServer.routes
        #expect(Set(registered).count == registered.count, "duplicates: \(registered)")
        let onlyDocumented = Set(documented).subtracting(registered).sorted()
        let onlyRegistered = Set(registered).subtracting(documented).sorted()
        #expect(
            Set(documented) == Set(registered),
            "only documented: \(onlyDocumented); only registered: \(onlyRegistered)")
    }

    @Test("the parser reads paths at two spaces and methods at four, and nothing outside paths:")
    func parser() {
        let text = """
            openapi: 3.1.0
            info:
              title: x
            paths:
              /a:
                get:
                  summary: y
                    post:
                parameters:
                  - name: z
                post:
              /b/{id}:
                # a comment
                delete:
            components:
              /c:
                get:
            """
        #expect(Self.operations(in: text) == ["GET /a", "POST /a", "DELETE /b/{id}"])
    }
}
