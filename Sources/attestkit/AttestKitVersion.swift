/// The version of this AttestKit checkout, which `attestkit --version` prints. Raised with each release tag.
enum AttestKitVersion {
    /// The semantic version.
    static let current = "0.1.0"
}
