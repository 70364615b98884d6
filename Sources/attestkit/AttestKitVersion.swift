/// The version of this AttestKit checkout, which `attestkit --version` prints: the one place it is written.
///
/// A release sets it with CHANGELOG.md's new entry, the documented dependency lines (`from: "X.Y.Z"`) and
/// SECURITY.md's supported versions, and is tagged with it; `scripts/release-check` fails while they disagree.
enum AttestKitVersion {
    /// The semantic version.
    static let current = "0.1.0"
}
