public import Logging

/// Loggers for stores. Stores are silent by default and never log keys, receipts or challenges.
public enum StoreLogging {
    /// A logger that drops everything: the default of every store.
    public static let silent = Logger(label: "attestkit.store", factory: { _ in SwiftLogNoOpLogHandler() })
}
