/// A statement of the request path that PostgreSQL keeps prepared: parsed and planned once per connection, then only
/// bound and executed (``PostgresPreparedStatements``).
///
/// The statement's text does not depend on how many rows it handles (each column is one array parameter), so one
/// prepared statement serves every batch. The ``SQLStatement`` carrying it still has its whole text, which is what
/// an executor without prepared statements runs and what `EXPLAIN` reads.
enum SQLPreparedStatement: Sendable {
    /// The combined counter advance (``SQLStore/advancingCounters(_:)``).
    case advanceCounters
    /// The combined key read (``SQLStore/readingKeys(_:)``).
    case readKeys
}

extension SQLPreparedStatement {
    /// The name the statement is prepared under on each connection.
    var name: String {
        switch self {
        case .advanceCounters: "attestkit_advance_counters"
        case .readKeys: "attestkit_read_keys"
        }
    }

    /// The statement's PostgreSQL text on the key table `keys` (qualified with its schema, or not when the
    /// connection's `search_path` names the schema).
    func postgresText(keys: String) -> String {
        switch self {
        case .advanceCounters:
            CounterAdvanceText.postgres(table: keys)
        case .readKeys:
            "SELECT \(StoreColumns.keyWithoutReceipt(.postgres)) FROM \(keys) WHERE key_id = ANY($1::bytea[])"
        }
    }
}
