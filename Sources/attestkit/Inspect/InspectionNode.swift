import Foundation

/// A labelled tree of facts about an object, rendered as indented text or as JSON.
struct InspectionNode {
    var label: String
    var value: String?
    var children: [InspectionNode] = []

    init(_ label: String, _ value: String? = nil, _ children: [InspectionNode] = []) {
        self.label = label
        self.value = value
        self.children = children
    }

    /// Indented `label: value` lines, each label and value with its control characters escaped
    /// (``TerminalText/escaped(_:)``): an inspected object is untrusted, and its texts are printed before anything
    /// verified them.
    func text(indent: Int = 0) -> String {
        var line = String(repeating: "  ", count: indent) + TerminalText.escaped(label)
        if let value { line += ": " + TerminalText.escaped(value) }
        return ([line] + children.map { $0.text(indent: indent + 1) }).joined(separator: "\n")
    }

    /// A JSON value: a string for leaves, an object for branches (a branch's own value under `"value"`).
    var jsonValue: Any {
        guard !children.isEmpty else { return value ?? NSNull() }
        var object: [String: Any] = [:]
        if let value { object["value"] = value }
        for child in children {
            var key = child.label
            var suffix = 2
            while object[key] != nil {
                key = "\(child.label)#\(suffix)"
                suffix += 1
            }
            object[key] = child.jsonValue
        }
        return object
    }

    func json() throws -> String {
        let data = try JSONSerialization.data(
            withJSONObject: [label: jsonValue], options: [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes])
        return String(decoding: data, as: UTF8.self)
    }
}
