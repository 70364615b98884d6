import Foundation
import Yams

/// The check of a YAML configuration file before swift-configuration's YAML provider reads it, on the same tree of
/// nodes the provider reads (Yams' composed `Node`s, no Swift value constructed), so that the check and the provider
/// never see two different files.
///
/// Yams' `load`, which the check once used, constructs Swift values from the nodes: it took a `!!set` for one value
/// where the provider files its members under keys nothing reads, kept the last of two keys spelt with different
/// tags (`port`, `!custom port`) where the provider reads both, and trapped on a complex key and on a base-60
/// number beyond `Int` (which the provider's own reading of an integer traps on too). Here every mapping key is
/// text and given once per mapping; a tag is one of the plain core ones (`!!str`, `!!int`, `!!float`, `!!null`,
/// `!!bool`, `!!map`, `!!seq`); no anchor, alias or merge key (`<<`) appears; a list holds scalars; and a plain
/// scalar that YAML 1.1 reads as a base-60 number (`1:30`, whose components Yams' integer constructor multiplies by
/// powers of 60 without checking for overflow) is refused: quoted, it is text.
@available(macOS 15.0, iOS 18.0, watchOS 11.0, tvOS 18.0, visionOS 2.0, *)
enum YAMLFileCheck {
    /// The leaves of the file's one mapping, each checked as the type says.
    ///
    /// - Parameters:
    ///   - text: The file's text.
    ///   - path: The file's path, for errors.
    ///   - resolver: The resolver the scalars' kinds (null, boolean) are judged with.
    /// - Throws: ``ServerConfigurationError`` naming the key at fault, or `config-file` for a file that is not YAML,
    ///   holds no mapping, or uses a complex key, an anchor, an alias or a merge key.
    static func leaves(
        of text: String,
        path: String,
        resolver: Resolver
    ) throws(ServerConfigurationError) -> [FileLeaf] {
        let parser: Parser
        let root: Node?
        do {
            parser = try Parser(yaml: text, resolver: resolver)
            root = try parser.singleRoot()
        } catch YamlError.duplicatedKeysInMapping(let duplicates, _) {
            // Yams refuses a key given twice in one mapping with the same tag (a section given twice included).
            let names = duplicates.map { "'\($0)'" }.joined(separator: ", ")
            throw ServerConfigurationError(
                "config-file", "'\(path)' gives \(names) twice in one mapping: only one would be read")
        } catch {
            throw ServerConfigurationError("config-file", "'\(path)' is not valid YAML")
        }
        // A node's anchor is held weakly, by the parser: keep it while the nodes are read.
        defer { withExtendedLifetime(parser) {} }
        guard root?.anchor == nil else { throw anchorError(path) }
        guard let root, case .mapping(let mapping) = root, allowedMappingTags.contains(mapping.tag.description) else {
            throw ServerConfigurationError("config-file", "'\(path)' does not hold one YAML object")
        }
        var leaves: [FileLeaf] = []
        try collect(mapping, prefix: nil, path: path, into: &leaves)
        return leaves
    }

    /// The tags a scalar may carry: none (`""`, or `!`), a core tag written out, or one the resolver gives a plain
    /// scalar (a key's tag is resolved by then). The others (`!!binary`, a tag of one's own) are read by the
    /// provider as their text, which is not what the tag says.
    private static let allowedScalarTags: Set<String> = [
        "", Tag.Name.nonSpecific.rawValue, Tag.Name.str.rawValue, Tag.Name.int.rawValue, Tag.Name.float.rawValue,
        Tag.Name.null.rawValue, Tag.Name.bool.rawValue, Tag.Name.timestamp.rawValue, Tag.Name.merge.rawValue,
        Tag.Name.value.rawValue,
    ]

    /// The tags a mapping may carry: none, or `!!map` (not `!!set`, a mapping whose keys are its members).
    private static let allowedMappingTags: Set<String> = ["", Tag.Name.nonSpecific.rawValue, Tag.Name.map.rawValue]

    /// The tags a sequence may carry: none, or `!!seq` (not `!!omap` or `!!pairs`, sequences of mappings).
    private static let allowedSequenceTags: Set<String> = ["", Tag.Name.nonSpecific.rawValue, Tag.Name.seq.rawValue]

    /// Adds the leaves of `mapping`, whose keys are under `prefix`, to `leaves`.
    private static func collect(
        _ mapping: Node.Mapping,
        prefix: String?,
        path: String,
        into leaves: inout [FileLeaf]
    ) throws(ServerConfigurationError) {
        var names: Set<String> = []
        for (keyNode, value) in mapping {
            // Checked before anything is read below it: an alias repeats its anchor's nodes without their text.
            guard keyNode.anchor == nil else { throw anchorError(path) }
            guard case .scalar(let keyScalar) = keyNode else {
                throw ServerConfigurationError(
                    "config-file", "'\(path)' uses a mapping or a list as a key; keys are setting names")
            }
            let name = keyScalar.string
            let key = prefix.map { "\($0).\(name)" } ?? name
            if name == "<<" || keyNode.tag.description == Tag.Name.merge.rawValue {
                throw ServerConfigurationError(
                    "config-file", "'\(path)' uses a YAML merge key (<<), which is not read")
            }
            try refuseTag(keyScalar.tag, allowed: allowedScalarTags, key: key, path: path)
            guard names.insert(name).inserted else {
                throw ServerConfigurationError(key, "is given twice (in '\(path)'): only one would be read")
            }
            guard value.anchor == nil else { throw anchorError(path) }
            switch value {
            case .mapping(let nested):
                try refuseTag(nested.tag, allowed: allowedMappingTags, key: key, path: path)
                try collect(nested, prefix: key, path: path, into: &leaves)
            case .sequence(let sequence):
                try refuseTag(sequence.tag, allowed: allowedSequenceTags, key: key, path: path)
                var items: [FileValue] = []
                for item in sequence {
                    guard item.anchor == nil else { throw anchorError(path) }
                    guard case .scalar(let scalar) = item else {
                        throw ServerConfigurationError(key, "holds a list or mapping in its list (in '\(path)')")
                    }
                    items.append(try check(scalar, node: item, key: key, path: path))
                }
                leaves.append(FileLeaf(key: key, items: items))
            case .scalar(let scalar):
                leaves.append(FileLeaf(key: key, items: [try check(scalar, node: value, key: key, path: path)]))
            case .alias:
                throw anchorError(path)
            }
        }
    }

    /// The kind of a scalar value of `key`, after refusing a tag the provider does not honour and a base-60
    /// number.
    private static func check(
        _ scalar: Node.Scalar,
        node: Node,
        key: String,
        path: String
    ) throws(ServerConfigurationError) -> FileValue {
        // The tag as written, before `node.tag` resolves it.
        try refuseTag(scalar.tag, allowed: allowedScalarTags, key: key, path: path)
        if scalar.style == .plain || scalar.style == .any, isSexagesimal(scalar.string) {
            throw ServerConfigurationError(
                key,
                "is read by YAML 1.1 as a base-60 number (colon-separated digits); quote it if it is text "
                    + "(in '\(path)')")
        }
        switch node.tag.description {
        case Tag.Name.null.rawValue: return .null
        case Tag.Name.bool.rawValue: return .boolean
        default: return .other
        }
    }

    /// Refuses `tag` unless it is one of `allowed`.
    private static func refuseTag(
        _ tag: Tag,
        allowed: Set<String>,
        key: String,
        path: String
    ) throws(ServerConfigurationError) {
        guard !allowed.contains(tag.description) else { return }
        let shown = tag.description.hasPrefix("tag:yaml.org,2002:") ? "!!" + tag.description.dropFirst(18) : "\(tag)"
        throw ServerConfigurationError(
            key, "has the YAML tag \(shown), which the configuration does not read; leave it out (in '\(path)')")
    }

    /// The refusal of an anchor or alias.
    private static func anchorError(_ path: String) -> ServerConfigurationError {
        ServerConfigurationError(
            "config-file", "'\(path)' uses a YAML anchor or alias (& or *); write each value out instead")
    }

    /// Whether a plain scalar is one that Yams' number constructors read in base 60: colon-separated parts, after a
    /// sign and without `_`, each a number. Its integer constructor multiplies the parts by powers of 60 without
    /// checking for overflow, and traps on `1000000000000000000:0` (or on 12 parts).
    static func isSexagesimal(_ text: String) -> Bool {
        var digits = text.filter { $0 != "_" }
        if digits.hasPrefix("-") || digits.hasPrefix("+") { digits.removeFirst() }
        guard digits.contains(":") else { return false }
        return digits.split(separator: ":", omittingEmptySubsequences: false).allSatisfy { part in
            !part.isEmpty && Double(part) != nil
        }
    }
}

/// A leaf of a configuration file: a dotted key as the providers name it, and its scalars (one, or a list's).
struct FileLeaf {
    /// The dotted key (`http.port`).
    let key: String
    /// The value's scalars: one for a scalar, each item for a list.
    let items: [FileValue]
}

/// A scalar of a configuration file as its check sees it: a null, a boolean, or anything else.
enum FileValue {
    /// `null`, `~` or nothing: the providers drop it, and the default would apply.
    case null
    /// `true` or `false`: no setting takes one.
    case boolean
    /// Text or a number.
    case other
}
