import ArgumentParser

/// Where `serve` and `migrate` read their settings from besides flags and the environment: a configuration file
/// and a directory of secret files.
struct ConfigurationSourceOptions: ParsableArguments {
    @Option(name: .long, help: "A configuration file: JSON, or YAML when it ends in .yaml or .yml.")
    var config: String?

    @Option(
        name: .long,
        help: "A directory of secret files, one per setting, named like admin-token (default: $ATTESTKIT_SECRETS_DIR).")
    var secretsDir: String?
}
